"""Argument checks: every error names the parameter and its allowed range."""

from __future__ import annotations

import math
import numbers


def real(name: str, value, *, lo=None, hi=None, lo_open=False, hi_open=False, allow_inf=False) -> float:
    """Return ``float(value)`` after checking it is a real number in the stated interval.

    Raises ``TypeError`` for non-numbers (bools included) and ``ValueError`` naming ``name`` and the
    allowed range for NaN, infinities (unless ``allow_inf``) and values outside the interval.
    """
    rng = _range_text(lo, hi, lo_open, hi_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in {rng}, got {type(value).__name__}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must be a real number in {rng}, got nan")
    if math.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite, in {rng}, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"{name} must be in {rng}, got {v}")
    if hi is not None and (v > hi or (hi_open and v == hi)):
        raise ValueError(f"{name} must be in {rng}, got {v}")
    return v


def integer(name: str, value, *, lo=None) -> int:
    """Return ``int(value)`` after checking it is an integer (not bool) ``>= lo``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v}")
    return v


def choice(name: str, value, options) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {value!r}")
    return value


def exponent(name: str, p, *, lo: float = 1.0, lo_open: bool = True, allow_inf: bool = True) -> float:
    """The l_p exponent: a real in (lo, inf] (inf allowed unless ``allow_inf`` is False)."""
    return real(name, p, lo=lo, lo_open=lo_open, allow_inf=allow_inf, hi=math.inf)


def _range_text(lo, hi, lo_open, hi_open) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None or hi == math.inf else "]"
    a = "-inf" if lo is None else _fmt(lo)
    b = "inf" if hi is None else _fmt(hi)
    return f"{left}{a}, {b}{right}"


def _fmt(x) -> str:
    return "inf" if x == math.inf else f"{x:g}"
