"""l_p geometry: norms, dual exponents, the steepest-descent map and the mirror maps of the paper.

All functions accept numpy arrays or torch tensors (the vector is the last axis; leading axes are
batch axes) and return the caller's kind. They share their element-wise kernels with the optimizers
(:mod:`lptheory._kernels`), so a formula exists once.
"""

from __future__ import annotations

import math

import numpy as np

from . import _kernels, _validate
from ._xp import as_float_array
from .fast import rownorm as _rownorm

__all__ = [
    "dual_exponent",
    "lp_norm",
    "steepest_map",
    "regularized_steepest_map",
    "steepest_step",
    "mirror_map",
    "inverse_mirror_map",
    "psi",
]


def dual_exponent(p: float) -> float:
    """p* = p / (p - 1), the dual exponent (1/p + 1/p* = 1); ``inf`` maps to 1.

    Paper: Section 3 ("Preliminaries"), ``||.||_{p*} := ||.||_{p/(p-1)}``. Defined for p in (1, inf].
    """
    p = _validate.exponent("p", p)
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_norm(x, p: float, axis: int = -1):
    """||x||_p along ``axis`` for p in [1, inf], computed without overflow or underflow.

    Paper: Section 3 ("Preliminaries"). Scaled by max|x_i| before the power, so huge and tiny
    vectors keep full precision; the zero vector has norm 0. Fast paths for p = 2, 1.5 (the dual of
    p = 3), 3 and inf (products and square roots instead of powers).
    """
    p = _validate.exponent("p", p, lo=1.0, lo_open=False)
    xp, x = as_float_array(x)
    return _lp_norm(xp, x, p, axis)


def _lp_norm(xp, x, p: float, axis: int):
    if xp is np and axis in (-1, x.ndim - 1) and _rownorm.available(x, p):
        # one pass per row in a numba kernel, same bits as below (lptheory.fast.rownorm), without |x| as a
        # temporary (the kernel's cases are p in {1.5, 2, 3}: never p = 1 or inf)
        from .fast.pool import threads

        s, m = _rownorm.row_sums(x, p, threads(fused=True))
        with np.errstate(invalid="ignore"):
            r = np.sqrt(s) if p == 2.0 else s ** (1.0 / p)
        return r * m
    ax = xp.abs(x)
    if math.isinf(p):
        return xp.max(ax, axis=axis) if xp is np else xp.amax(ax, dim=axis)
    if p == 1.0:
        return xp.sum(ax, axis=axis) if xp is np else xp.sum(ax, dim=axis)
    if xp is np:
        # ufunc reductions are what np.max / np.sum call (same bits), without their wrappers' overhead
        m = np.maximum.reduce(ax, axis=axis, keepdims=True)
        safe = np.where(m > 0, m, 1.0)
        with np.errstate(invalid="ignore"):
            np.divide(ax, safe, out=ax)  # in place: one temporary in all
            if p == 2.0:
                np.multiply(ax, ax, out=ax)
            elif p == 1.5:  # the dual exponent of p = 3: x sqrt(x) (within 1 ulp of x^1.5)
                np.multiply(ax, np.sqrt(ax), out=ax)
            elif p == 3.0:
                np.multiply(ax, np.multiply(ax, ax), out=ax)
            else:
                np.power(ax, p, out=ax)
            s = np.add.reduce(ax, axis=axis)
            r = np.sqrt(s) if p == 2.0 else s ** (1.0 / p)
        return r * m.squeeze(axis=axis)
    m = xp.amax(ax, dim=axis, keepdim=True)
    safe = xp.where(m > 0, m, xp.ones_like(m))
    r = xp.sum((ax / safe) ** p, dim=axis) ** (1.0 / p)
    return r * m.squeeze(axis)


def steepest_map(x, p: float):
    """s_p(x) = sgn(x) |x|^{1/(p-1)} element-wise, for p in (1, inf].

    Paper: Algorithm 3, line 2 (``s_i(x) = x_i / |x_i|^{(p-2)/(p-1)}``) and its rewriting in the proof
    sketch of Section 4.1. s_2 is the identity, s_inf is sign, and s_p(0) = 0 for every p.
    """
    p = _validate.exponent("p", p)
    xp, x = as_float_array(x)
    out = xp.empty_like(x)
    tmp = xp.empty_like(x)
    with np.errstate(divide="ignore"):
        return _kernels.steepest(xp, x, p, out, tmp)


def regularized_steepest_map(x, p: float, eps: float, mode: str = "paper"):
    """The eps-regularized steepest map s^eps of Algorithms 1 and 2, line 4.

    ``mode="paper"``: ``x / (|x|^{(p-2)/(p-1)} + eps)`` (Alg. 1/2 line 4).
    ``mode="official"``: ``x (|x| + eps)^{(2-p)/(p-1)}`` (the authors' code, the public implementation at
    github.com/xinyuluo8561/Stacey). For eps = 0 both equal :func:`steepest_map`.
    Defined for p in [2, inf] and eps >= 0.
    """
    p = _validate.exponent("p", p, lo=2.0, lo_open=False)
    eps = _validate.real("eps", eps, lo=0.0)
    _validate.choice("mode", mode, {"paper", "official"})
    xp, x = as_float_array(x)
    out = xp.empty_like(x)
    tmp = xp.empty_like(x)
    with np.errstate(divide="ignore"):
        return _kernels.steepest_eps(xp, x, p, eps, mode, out, tmp)


def steepest_step(g, p: float, lr: float = 1.0):
    """The closed-form minimizer u* of ``<lr g, u> + (1/2) ||u||_p^2`` (the normalized steepest step).

    Paper: Section 4.1, the deterministic counterpart of Alg. 3,
    ``theta_{t+1} - theta_t = -lr ||g||_{p*}^{(p-2)/(p-1)} s_p(g)`` (the argmin quoted there).
    For p = 2 this is ``-lr g``; for p = inf, ``-lr ||g||_1 sign(g)``. Vector along the last axis.
    """
    p = _validate.exponent("p", p)
    lr = _validate.real("lr", lr, lo=0.0)
    xp, g = as_float_array(g, "g")
    if p == 2.0:
        return -lr * g
    # ||g||_q^{(p-2)/(p-1)} s_p(g) = n s_p(g / n) with n = ||g||_q, since (p-2)/(p-1) + 1/(p-1) = 1:
    # the scale-free form never forms 0 * inf for tiny or huge g.
    n = lp_norm(g, dual_exponent(p))
    if xp is np:
        n = n[..., None]
        safe = np.where(n > 0, n, 1.0)
    else:
        n = n.unsqueeze(-1)
        safe = xp.where(n > 0, n, xp.ones_like(n))
    return -lr * n * steepest_map(g / safe, p)


def mirror_map(x, p: float):
    """grad psi(x) = sgn(x) |x|^{p-1} = |x|^{p-2} x for psi(x) = (1/p) ||x||_p^p, p in (1, inf).

    Paper: Algorithm 2, line 6 (the numerator ``|z_t|^{p-2} z_t``).
    """
    p = _validate.exponent("p", p, allow_inf=False)
    xp, x = as_float_array(x)
    if p - 2.0 < 0:
        # |x|^{p-2} is infinite at 0 for p < 2: use sgn(x)|x|^{p-1} instead (0 at 0)
        ax = xp.abs(x)
        with np.errstate(divide="ignore"):
            return xp.copysign(ax ** (p - 1.0), x)
    out = xp.empty_like(x)
    with np.errstate(divide="ignore"):
        return _kernels.mirror(xp, x, p, out, out)


def inverse_mirror_map(y, p: float):
    """(grad psi)^{-1}(y) = sgn(y) |y|^{1/(p-1)} = s_p(y), the inverse of :func:`mirror_map`.

    Paper: Algorithm 2, line 6 with eps = 0 (``w / |w|^{(p-2)/(p-1)}``).
    """
    p = _validate.exponent("p", p, allow_inf=False)
    return steepest_map(y, p)


def psi(x, p: float):
    """psi(x) = (1/p) ||x||_p^p along the last axis, the distance-generating function of Alg. 2."""
    p = _validate.exponent("p", p, allow_inf=False)
    return lp_norm(x, p) ** p / p
