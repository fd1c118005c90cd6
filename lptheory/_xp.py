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

__all__ = [
    "namespace",
    "is_torch",
    "fill",
    "copy_into",
    "combine",
    "ema",
    "pow_abs",
    "pow_abs_where",
    "pow_is_closed_form",
    "select_gt",
    "reciprocal",
    "eps_vanishes",
    "is_floating",
    "as_float_array",
    "dtype_name",
]


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


def numpyish(xp) -> bool:
    """numpy itself, or a namespace that promises numpy's results (the fused engine's tracer)."""
    return xp is np or (not _is_torch_module(xp) and getattr(xp, "numpy_semantics", False))


def _is_torch_module(xp) -> bool:
    # the torch module answers unknown attributes through a slow module __getattr__: test its name first
    return getattr(xp, "__name__", None) == "torch"


def namespace_helper(xp, name):
    """A namespace's own implementation of a composite helper (the multi-tensor namespace), or None."""
    return None if (xp is np or _is_torch_module(xp)) else getattr(xp, name, None)


def is_floating(xp, x) -> bool:
    """True when ``x`` has a real floating dtype."""
    if xp is np:
        return np.issubdtype(x.dtype, np.floating)
    return bool(x.dtype.is_floating_point)


def as_float_array(x, name: str = "x"):
    """``(xp, x)``: the array namespace of ``x`` and ``x`` as a floating array (a Python number or sequence as
    float64 numpy, a numpy integer array converted to float64); TypeError naming ``name`` for another dtype."""
    if isinstance(x, (list, tuple, float, int)) and not isinstance(x, bool):
        x = np.asarray(x, dtype=np.float64)
    xp = namespace(x)
    if not is_floating(xp, x):
        if xp is np and np.issubdtype(x.dtype, np.integer):
            x = x.astype(np.float64)
        else:
            raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    return xp, x


def fill(xp, out, value: float):
    """Fill ``out`` with ``value`` in place and return it."""
    if xp is np:
        out.fill(value)
    elif numpyish(xp):  # a recording namespace (the fused engine's tracer)
        return xp.fill(out, value)
    else:
        out.fill_(value)
    return out


def copy_into(xp, out, src):
    """Copy ``src`` into ``out`` (no-op when they are the same buffer) and return ``out``."""
    if out is src:
        return out
    if xp is np:
        np.copyto(out, src)
    elif numpyish(xp):
        return xp.copyto(out, src)
    else:
        out.copy_(src)
    return out


def combine(xp, x, a, y, b: float, out, tmp, *, sub: bool = False):
    """``out = a x + b y`` (``a x - b y`` with ``sub=True``; ``a=None`` means ``x`` itself), returned.

    numpy (and the fused engine's tracer): ``a x`` into ``out``, ``b y`` into ``tmp``, then one add or
    subtract: the operations, in this order, that the rules spelled out before this helper existed, so
    the bits are those. torch: one ``mul`` and one ``add(alpha=)`` (``torch.add`` with ``alpha``: a
    single pass instead of two); a multi-tensor namespace provides its own ``combine``.
    ``out`` may alias ``x``; it must not alias ``y``; ``tmp`` must alias neither ``x`` nor ``out``.
    """
    if numpyish(xp):
        if a is not None:
            x = xp.multiply(x, a, out=out)
        xp.multiply(y, b, out=tmp)
        return (xp.subtract if sub else xp.add)(x, tmp, out=out)
    own = namespace_helper(xp, "combine")
    if own is not None:  # a multi-tensor namespace
        return own(x, a, y, b, out, sub)
    if not isinstance(b, (int, float)):  # per-replicate coefficients (a (K, 1) tensor): add's alpha is a number
        if a is not None:
            x = xp.mul(x, a, out=out)
        return (xp.sub if sub else xp.add)(x, xp.mul(y, b, out=tmp), out=out)
    alpha = -b if sub else b
    if a is None:
        if out is x:
            return out.add_(y, alpha=alpha)
        return xp.add(x, y, alpha=alpha, out=out)
    if out is x:
        out.mul_(a)
    else:
        xp.mul(x, a, out=out)
    return out.add_(y, alpha=alpha)


def ema(xp, m, beta: float, g, out, tmp):
    """``out = beta m + (1 - beta) g`` (an exponential moving average), returned.

    numpy (and the tracer): ``combine(m, beta, g, 1 - beta)``, the rules' original operations. torch:
    one ``lerp`` pass, ``g + beta (m - g)`` (in place on ``m``: ``m + (1 - beta)(g - m)``), as
    ``torch.optim.AdamW`` updates its first moment; the same number up to rounding.
    ``out`` may alias ``m``, not ``g``; ``tmp`` must alias neither ``m`` nor ``out``."""
    if numpyish(xp):
        return combine(xp, m, beta, g, 1.0 - beta, out, tmp)
    own = namespace_helper(xp, "ema")
    if own is not None:
        return own(m, beta, g, out)
    if out is m:
        return out.lerp_(g, 1.0 - beta)
    xp.mul(m, beta, out=out)  # (lerp with out= is slower than these two passes on CPU)
    return out.add_(g, alpha=1.0 - beta)


_THIRD = 1.0 / 3.0
_TWO_THIRDS = 2.0 / 3.0


def pow_abs(xp, ax, e: float, out):
    """Return ``ax ** e`` for a non-negative array ``ax`` and a real exponent ``e >= 0``.

    Closed forms where the exponent allows (identity, square root, small integer powers; on numpy also
    the cube root), otherwise ``numpy.power`` on numpy (within 1 ulp of the correctly rounded power;
    the exp(e log x) it replaced was up to 18 ulp off for |x| in [1e-8, 1e2] and about 600 ulp near
    1e+-300), ``exp(e log x)`` inside ``torch.compile`` (2x faster than inductor's pow on CPU) and
    ``pow`` on eager torch. ``0 ** e`` is 0 for ``e > 0`` and 1 for ``e == 0``; no NaN is produced for
    finite non-negative input. Namespaces with ``numpy_semantics`` (the fused engine's tracer) take the
    numpy branches, so that they produce numpy's bits.

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
    if numpyish(xp):
        if e == _THIRD:
            return xp.cbrt(ax, out=out)
        if e == _TWO_THIRDS:
            xp.cbrt(ax, out=out)
            return xp.multiply(out, out, out=out)
        return xp.power(ax, e, out=out)
    if _compiling(xp):
        # inside torch.compile: exp/log fuse into vectorized (SLEEF) code; inductor's generic pow does not
        xp.log(ax, out=out)
        xp.multiply(out, e, out=out)
        return xp.exp(out, out=out)
    return xp.pow(ax, e, out=out)


def pow_is_closed_form(xp, e: float) -> bool:
    """Whether :func:`pow_abs` computes ``ax ** e`` without a general power on ``xp`` (into an ``out`` that is
    not ``ax``): e in {0, 1/2, 1, 3/2, 2, 3}, and on numpy (and the tracer) 1/3 and 2/3 (cube roots)."""
    if e in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
        return True
    return numpyish(xp) and e in (_THIRD, _TWO_THIRDS)


def pow_abs_where(xp, ax, e: float, out, y, thr: float):
    """``ax ** e`` (as :func:`pow_abs`) where it is needed: only the elements with ``y > thr`` are used by
    the caller (through :func:`select_gt` with the same ``y`` and ``thr``); the others may hold anything.

    numpy and torch compute every element (the same numbers as :func:`pow_abs`); the fused engine's tracer
    records a power that its one-pass kernel skips on blocks where no ``y`` exceeds ``thr`` (the values it
    does compute are numpy.power's bits, and :func:`select_gt` picks only those). ``out`` may alias ``ax``.
    """
    if pow_is_closed_form(xp, e) or not numpyish(xp) or xp is np:
        return pow_abs(xp, ax, e, out)
    return xp.power_where(ax, e, y, thr, out)


def select_gt(xp, y, thr: float, a, b, out):
    """``out = a`` where ``y > thr``, else ``b`` (element-wise; NaN in ``y`` selects ``b``), returned.
    ``out`` may alias ``b`` (then only the selected elements are written) or ``a``."""
    if xp is np:
        mask = np.greater(y, thr)
        if out is not b:
            np.copyto(out, b)
        np.copyto(out, a, where=mask)
        return out
    if numpyish(xp):
        return xp.select_gt(y, thr, a, b, out)
    own = namespace_helper(xp, "select_gt")
    if own is not None:
        return own(y, thr, a, b, out)
    return copy_into(xp, out, xp.where(y > thr, a, b))


def reciprocal(xp, x, out):
    """``1 / x`` (the IEEE division, numpy.reciprocal's bits), into ``out`` (which may alias ``x``)."""
    if xp is np or numpyish(xp):
        return xp.reciprocal(x, out=out)
    own = namespace_helper(xp, "reciprocal")
    if own is not None:
        return own(x, out)
    return xp.reciprocal(x, out=out)


def _compiling(xp) -> bool:
    compiler = getattr(xp, "compiler", None)
    return compiler is not None and compiler.is_compiling()


# The smallest positive (subnormal) value of each floating dtype: a positive eps rounds to zero in the
# dtype exactly when eps <= half of it (round to nearest, ties to even, and 0 is even).
_SMALLEST_SUBNORMAL = {
    "float64": 2.0**-1074,
    "float32": 2.0**-149,
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
}


def _dtype_name(xp, dtype) -> str:
    if xp is np or isinstance(dtype, np.dtype):
        return np.dtype(dtype).name
    return str(dtype).rsplit(".", 1)[-1]


def dtype_name(x) -> str:
    """The name of ``x``'s dtype (``"float64"``, ``"float32"``, ...) for numpy arrays, torch tensors and the
    traced or multi-tensor stand-ins (anything with a numpy or torch ``dtype``)."""
    d = x.dtype
    if isinstance(d, np.dtype) or isinstance(d, type):
        return np.dtype(d).name
    return str(d).rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=64)
def _eps_is_zero_by_conversion(eps: float, xp_name: str, name: str) -> bool:
    if xp_name == "torch":
        import torch

        return float(torch.tensor(eps, dtype=getattr(torch, name))) == 0.0
    return float(np.asarray(eps, dtype=np.dtype(name))) == 0.0


def eps_vanishes(xp, eps: float, dtype) -> bool:
    """True when ``eps`` is zero, or rounds to zero in ``dtype`` (e.g. 1e-50 in float32).

    The eps-regularized steepest maps then fall back to the exact map ``s_p`` (their continuous
    extension at 0), so that a zero gradient never yields 0/0. Pure arithmetic for the IEEE dtypes
    (so ``torch.compile`` traces it without a graph break); other dtypes are converted once and cached.
    """
    if eps == 0.0:
        return True
    name = _dtype_name(xp, dtype)
    sub = _SMALLEST_SUBNORMAL.get(name)
    if sub is not None:
        return eps <= 0.5 * sub
    return _eps_is_zero_by_conversion(float(eps), "numpy" if xp is np else "torch", name)
