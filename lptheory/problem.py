"""The problem protocol: objectives (possibly time-varying), domains and certificates.

A problem gives ``f(x, t=None)`` and ``grad(x, t=None)`` vectorized over leading replicate axes
(``x`` has shape ``(..., d)``; a numpy array, or a torch tensor evaluated on its device). ``t`` is
the 0-based step: online (time-varying) problems use it, static ones ignore it. Optional: a
``domain`` (:mod:`lptheory.domains`) and ``x0(R)``.

Certificates are first-class: :class:`Certificate` objects with a name, a value (a number, a vector,
or a function of parameters such as p), a direction (``upper``: the true constant is at most the
value; ``lower``: at least; ``exact``), the derivation as text, and an audit: a function returning an
empirical estimate of the same constant, which the test-suite holds against the value in the stated
direction. The theorems' checks read constants only through certificates (``problem.certificate("L")``).

Where to put a new problem: subclass :class:`Problem` (here for the protocol; concrete families with
certified constants live in :mod:`synthetic.problems`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Certificate", "Problem", "DIRECTIONS"]

DIRECTIONS = ("upper", "lower", "exact")


@dataclass(frozen=True)
class Certificate:
    """A certified constant of a problem.

    Parameters
    ----------
    name : e.g. ``"L"`` (l_p smoothness), ``"f_star"``, ``"grad_sup"``
    value : a number, an array, or a callable of the constant's arguments (e.g. ``p``)
    direction : ``"upper"`` (value >= true constant), ``"lower"`` (value <= true constant), ``"exact"``
    derivation : how the value is obtained (text, with the inequalities used)
    audit : optional callable with the same arguments plus keyword ``seed``, returning an empirical
        estimate that bounds the true constant from the other side (e.g. a ratio actually evaluated
        for an upper certificate); :meth:`audit_ok` compares the two
    args : names of the arguments (documentation and error messages)
    """

    name: str
    value: Any
    direction: str
    derivation: str
    audit: Callable | None = None
    args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"certificate {self.name!r}: direction must be one of {DIRECTIONS}, got {self.direction!r}"
            )
        if not self.derivation or not isinstance(self.derivation, str):
            raise ValueError(f"certificate {self.name!r}: a derivation (text) is required")

    def __call__(self, *args):
        v = self.value(*args) if callable(self.value) else self.value
        arr = np.asarray(v, dtype=np.float64)
        if np.any(np.isnan(arr)):
            raise ValueError(f"certificate {self.name!r} is NaN at {dict(zip(self.args, args))}")
        return float(arr) if arr.ndim == 0 else arr

    def audit_ok(self, *args, seed: int = 0, rtol: float = 1e-9) -> tuple[bool, float, float]:
        """(ok, value, estimate): whether the audit's estimate is on the permitted side of the value."""
        if self.audit is None:
            raise ValueError(f"certificate {self.name!r} has no audit")
        value = np.asarray(self(*args), dtype=np.float64)
        est = np.asarray(self.audit(*args, seed=seed), dtype=np.float64)
        scale = np.maximum(np.abs(value), np.abs(est)) * rtol + 1e-300
        if self.direction == "upper":
            ok = np.all(value >= est - scale)
        elif self.direction == "lower":
            ok = np.all(value <= est + scale)
        else:
            ok = np.all(np.abs(value - est) <= np.maximum(scale, 1e-9 * (1 + np.abs(value))))
        return bool(ok), float(np.max(value)), float(np.max(est))

    def describe(self) -> dict:
        return {"name": self.name, "direction": self.direction, "derivation": self.derivation}


class Problem(ABC):
    """Base of the problem protocol (module docstring). Subclasses set ``d`` and ``name``, implement
    ``f`` and ``grad`` and return their certificates from :meth:`certificates`."""

    name = "problem"
    d: int
    domain = None
    time_varying = False
    stateful = False  # True for query-based oracles whose answers depend on earlier queries
    hessian_constant = None  # a (d, d) or (d,) array when the Hessian does not depend on x

    @abstractmethod
    def f(self, x, t=None):
        """Objective value(s) at ``x`` (shape ``(..., d)`` -> ``(...)``), at step ``t``."""

    @abstractmethod
    def grad(self, x, t=None):
        """Gradient(s) at ``x``, same shape as ``x``, at step ``t``."""

    def certificates(self) -> dict[str, Certificate]:
        """The problem's certified constants by name (default: none)."""
        return {}

    def certificate(self, name: str) -> Certificate:
        certs = self.certificates()
        if name not in certs:
            raise ValueError(f"problem {self.name!r} has no certificate {name!r} (it has {sorted(certs)})")
        return certs[name]

    def x0(self, replicates: int | None = None, seed: int = 0) -> np.ndarray:
        """Default start (``_x0()``), broadcast to ``(replicates, d)`` when ``replicates`` is given."""
        x = self._x0()
        if replicates is None:
            return x
        return np.broadcast_to(x, (replicates, self.d)).copy()

    def _x0(self) -> np.ndarray:
        return np.full(self.d, 2.0)

    def describe(self) -> dict:
        out = {"name": self.name, "d": self.d}
        if self.domain is not None and hasattr(self.domain, "describe"):
            out["domain"] = self.domain.describe()
        return out

    def _check(self, x):
        x = np.asarray(x, dtype=np.float64) if not hasattr(x, "shape") else x
        if x.shape[-1] != self.d:
            raise ValueError(f"x must have last axis of length d={self.d}, got shape {tuple(x.shape)}")
        return x

    def _k(self, x, name):
        """The constant array attribute ``name`` in ``x``'s kind: itself for numpy, a tensor on ``x``'s
        device in ``x``'s dtype for torch (converted once per device and dtype, then cached)."""
        a = getattr(self, name)
        if isinstance(x, np.ndarray):
            return a
        cache = self.__dict__.setdefault("_device_constants", {})
        key = (name, str(x.device), x.dtype)
        hit = cache.get(key)
        if hit is None or hit[0] is not a:
            import torch

            hit = cache[key] = (a, torch.as_tensor(np.asarray(a), dtype=x.dtype, device=x.device))
        return hit[1]
