"""Claim specifications: what a claim says, where it comes from, what it assumes, and how its two sides
are computed. The engines (:mod:`proofs_checks.engines`) take a spec and a setting and return records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp

from .records import RELATIONS

__all__ = ["Assumption", "ClaimSpec", "RateSpec", "ClaimError"]


class ClaimError(ValueError):
    """A claim that cannot be evaluated as written (a missing field, a non-finite bound, ...): the
    message names the claim and the setting."""


def _is_expr(v) -> bool:
    return isinstance(v, sp.Basic)


@dataclass(frozen=True)
class Assumption:
    """One assumption of a claim.

    ``name``: as the source names it (e.g. ``"Assumption 3 (bounded variance)"``).

    Distribution form (checked exactly against a finite distribution, and re-derived by the witness
    re-check): the assumption bounds or defines the constant ``symbol`` through ``symbol <relation>
    value``, ``value`` an expression of the distribution (``Expect1``, ``Sup1``; see
    :mod:`proofs_checks.expressions`); ``per_coordinate`` for per-coordinate constants (``g``,
    ``sigma``). The tightest admissible value of the constant is ``value`` itself, which the search uses.

    Setting form: ``check(setting) -> (ok, why)`` for settings without an exact distribution (a noise
    model's declared properties, an oracle). With neither form the assumption is listed, not checked.
    """

    name: str
    symbol: sp.Symbol | None = None
    relation: str | None = None
    value: sp.Basic | None = None
    per_coordinate: bool = False
    check: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ClaimError("an assumption needs a name")
        if (self.symbol is None) != (self.value is None):
            raise ClaimError(f"assumption {self.name!r}: give both symbol and value (or neither)")
        if self.symbol is not None:
            if self.relation not in ("==", ">=", "<="):
                raise ClaimError(f"assumption {self.name!r}: relation must be ==, >= or <=, got {self.relation!r}")
            if not isinstance(self.symbol, sp.Symbol) or not _is_expr(self.value):
                raise ClaimError(f"assumption {self.name!r}: symbol must be a sympy Symbol and value an expression")
        if self.check is not None and not callable(self.check):
            raise ClaimError(f"assumption {self.name!r}: check must be callable")

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class RateSpec:
    """A rate claim: the measured quantity decays like x^-``exponent`` along ``grid`` (values of the
    x-axis, e.g. N = T^2 gradient calls), fitted on the ``tail`` largest points."""

    exponent: float
    x_label: str = "N"
    grid: tuple = ()
    tail: int | None = None


@dataclass(frozen=True)
class ClaimSpec:
    """A claim.

    Parameters
    ----------
    id : stable identifier (``lemma3.variance``)
    statement : the claim as its source writes it
    source : where (paper, section, equation)
    assumptions : :class:`Assumption` objects (or plain names, listed only)
    term, bound : the two sides: sympy expressions (evaluated fast and re-checked at high precision
        from the same source) or callables of a setting (then the engines take the numbers given)
    relation : ``<=``, ``>=``, ``==`` or ``rate``
    rate : a :class:`RateSpec` for rate claims
    show : the parameters to display in tables
    """

    id: str
    statement: str = ""
    source: str = ""
    assumptions: tuple = ()
    term: sp.Basic | Callable | None = None
    bound: sp.Basic | Callable | None = None
    relation: str = "<="
    rate: RateSpec | None = None
    show: tuple = ()
    notes: dict = field(default_factory=dict)

    def __post_init__(self):
        for name in ("id", "statement", "source"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise ClaimError(f"claim {self.id!r}: field {name!r} must be a non-empty string, got {v!r}")
        if self.relation not in RELATIONS:
            raise ClaimError(f"claim {self.id}: relation must be one of {RELATIONS}, got {self.relation!r}")
        for name in ("term", "bound"):
            v = getattr(self, name)
            if v is not None and not (_is_expr(v) or callable(v)):
                raise ClaimError(
                    f"claim {self.id}: {name} must be a sympy expression or a callable, got {type(v).__name__}"
                )
            if _is_expr(v) and v.has(sp.nan, sp.zoo):
                raise ClaimError(f"claim {self.id}: {name} is not finite as written ({v})")
        asm = tuple(a if isinstance(a, Assumption) else Assumption(str(a)) for a in self.assumptions)
        object.__setattr__(self, "assumptions", asm)

    @property
    def assumption_names(self) -> list[str]:
        return [a.name for a in self.assumptions]

    def defining(self):
        """The assumptions in distribution form (they define the constants), in order."""
        return [a for a in self.assumptions if a.symbol is not None]
