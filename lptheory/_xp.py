"""Array-namespace helpers shared by every backend.

The update rules of :mod:`lptheory.optimizers` and the maps of :mod:`lptheory.geometry` are written once,
against the numpy-compatible names that both ``numpy`` and ``torch`` expose with an ``out=`` argument
(``multiply``, ``add``, ``subtract``, ``divide``, ``abs``, ``sqrt``, ``exp``, ``log``, ``sign``,
``copysign``). :func:`namespace` returns the module that owns the arrays; the few operations whose
spelling differs between the two (filling, copying, a fast fractional power) live here, each with its
backend-specific fast path behind one function.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["namespace", "is_torch", "fill", "copy_into", "pow_abs", "eps_vanishes", "is_floating"]


def is_torch(x: Any) -> bool:
    """True when ``x`` is a ``torch.Tensor`` (checked without importing torch)."""
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "device")


def namespace(*arrays: Any):
    """Return the array module (``numpy`` or ``torch``) that owns all of ``arrays``.

    Raises
    ------
    TypeError
        If an argument is neither a numpy array nor a torch tensor, or if the two kinds are mixed.
    """
    kinds = set()
    for a in arrays:
        if isinstance(a, np.ndarray):
            kinds.add("numpy")
        elif is_torch(a):
            kinds.add("torch")
        else:
            raise TypeError(
                f"expected numpy.ndarray or torch.Tensor, got {type(a).__name__}; convert with numpy.asarray(...) first"
            )
    if len(kinds) != 1:
        raise TypeError("numpy arrays and torch tensors cannot be mixed in one call")
    if "numpy" in kinds:
        return np
    import torch

    return torch


def is_floating(xp, x) -> bool:
    """True when ``x`` has a real floating dtype."""
    if xp is np:
        return np.issubdtype(x.dtype, np.floating)
    return bool(x.dtype.is_floating_point)


def fill(xp, out, value: float):
    """Fill ``out`` with ``value`` in place and return it."""
    if xp is np:
        out.fill(value)
    else:
        out.fill_(value)
    return out


def copy_into(xp, out, src):
    """Copy ``src`` into ``out`` (no-op when they are the same buffer) and return ``out``."""
    if out is src:
        return out
    if xp is np:
        np.copyto(out, src)
    else:
        out.copy_(src)
    return out


_THIRD = 1.0 / 3.0
_TWO_THIRDS = 2.0 / 3.0


def pow_abs(xp, ax, e: float, out):
    """Return ``ax ** e`` for a non-negative array ``ax`` and a real exponent ``e >= 0``.

    Closed forms where the exponent allows (identity, square root, cube root, small integer powers),
    otherwise ``exp(e * log(ax))`` on numpy (vectorized exp/log are about twice as fast as
    ``numpy.power``) and ``pow`` on torch. ``0 ** e`` is 0 for ``e > 0`` and 1 for ``e == 0``;
    no NaN is produced for finite non-negative input.

    The result lands in ``out``, except for ``e == 1`` where ``ax`` itself is returned (no copy):
    callers must use the returned array. ``out`` may alias ``ax``.
    """
    if e == 0.0:
        return fill(xp, out, 1.0)
    if e == 1.0:
        return ax
    if e == 0.5:
        return xp.sqrt(ax, out=out)
    if e == 2.0:
        return xp.multiply(ax, ax, out=out)
    if e == 1.5 and out is not ax:
        xp.sqrt(ax, out=out)
        return xp.multiply(out, ax, out=out)
    if e == 3.0 and out is not ax:
        xp.multiply(ax, ax, out=out)
        return xp.multiply(out, ax, out=out)
    if xp is np:
        if e == _THIRD:
            return np.cbrt(ax, out=out)
        if e == _TWO_THIRDS:
            np.cbrt(ax, out=out)
            return np.multiply(out, out, out=out)
        # log(0) = -inf and exp(-inf) = 0: exact at zero; the caller silences the divide warning.
        np.log(ax, out=out)
        np.multiply(out, e, out=out)
        return np.exp(out, out=out)
    return xp.pow(ax, e, out=out)


@functools.lru_cache(maxsize=64)
def _eps_is_zero_in(eps: float, dtype_key: str) -> bool:
    if dtype_key.startswith("torch."):
        import torch

        dt = getattr(torch, dtype_key.split(".", 1)[1])
        return float(torch.tensor(eps, dtype=dt)) == 0.0
    return float(np.asarray(eps, dtype=np.dtype(dtype_key))) == 0.0


def eps_vanishes(xp, eps: float, dtype) -> bool:
    """True when ``eps`` is zero, or rounds to zero in ``dtype`` (e.g. 1e-50 in float32).

    The eps-regularized steepest maps then fall back to the exact map ``s_p`` (their continuous
    extension at 0), so that a zero gradient never yields 0/0.
    """
    if eps == 0.0:
        return True
    key = str(dtype) if xp is not np else np.dtype(dtype).str
    return _eps_is_zero_in(float(eps), key)
