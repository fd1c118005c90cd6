"""Element-wise kernels of the paper's maps, written once for numpy and torch (``out=`` style).

Each kernel writes into caller-provided buffers so that the chunked numpy engine
(:mod:`lptheory.fast.engine`) keeps every intermediate in cache and torch reuses its allocations.
Aliasing rules are stated per kernel; the optimizers' rules rely on them.
"""

from __future__ import annotations

import math

from ._xp import (
    combine,
    copy_into,
    eps_vanishes,
    namespace_helper,
    numpyish,
    pow_abs,
    pow_abs_where,
    pow_is_closed_form,
    select_gt,
)


def steepest(xp, x, p: float, out, tmp):
    """s_p(x) = sgn(x) |x|^{1/(p-1)}, the steepest-descent map of Alg. 3 line 2.

    Paper: Algorithm 3, line 2, ``s_i(x) = x_i / |x_i|^{(p-2)/(p-1)}``, rewritten in the proof sketch of
    Section 4.1 as ``sgn(x_i) |x_i|^{1/(p-1)}``; the second form is used so that s_p(0) = 0 exactly
    (the first is 0/0 at 0 for p > 2). s_2 is the identity, s_inf is sign.

    ``out`` may alias ``tmp`` or ``x``; ``tmp`` must not alias ``x``.
    """
    if p == 2.0:
        return copy_into(xp, out, x)
    if math.isinf(p):
        return xp.sign(x, out=out)
    ax = xp.abs(x, out=tmp)
    r = pow_abs(xp, ax, 1.0 / (p - 1.0), tmp)
    return xp.copysign(r, x, out=out)


def steepest_eps(xp, x, p: float, eps: float, mode: str, out, tmp):
    """The eps-regularized steepest map s^eps of Alg. 1/2 line 4, in the paper's or the authors' form.

    ``mode="paper"`` (Algorithms 1 and 2, line 4): ``x / (|x|^{(p-2)/(p-1)} + eps)``.
    ``mode="official"`` (the authors' code, the authors' public implementation, github.com/xinyuluo8561/Stacey):
    ``x (|x| + eps)^{(2-p)/(p-1)}``, computed as ``x / (|x| + eps)^{(p-2)/(p-1)}``.

    When eps is 0 (or rounds to 0 in the dtype) both reduce to :func:`steepest`, their continuous
    extension, so a zero input gives 0 rather than 0/0. For p = inf the exponent is 1 (a smoothed sign).

    ``out`` may alias ``x`` or ``tmp``; ``tmp`` must not alias ``x``.
    """
    if eps_vanishes(xp, eps, x.dtype):
        return steepest(xp, x, p, out, tmp)
    return xp.divide(x, eps_denominator(xp, x, p, eps, mode, tmp), out=out)


def eps_denominator(xp, x, p: float, eps: float, mode: str, tmp):
    """The denominator of :func:`steepest_eps` (Alg. 1/2 line 4) into ``tmp``: |x|^a + eps (``"paper"``) or
    (|x| + eps)^a (``"official"``), a = (p-2)/(p-1) (1 for p = inf). ``tmp`` must not alias ``x``."""
    a = 1.0 if math.isinf(p) else (p - 2.0) / (p - 1.0)
    ax = xp.abs(x, out=tmp)
    if mode == "paper":
        den = pow_abs(xp, ax, a, tmp)
        return xp.add(den, eps, out=tmp)
    xp.add(ax, eps, out=tmp)
    return pow_abs(xp, tmp, a, tmp)


def steepest_eps_step(xp, theta, k1: float, x, k2: float, p: float, eps: float, mode: str, out, tmp):
    """``out = k1 theta - k2 s^eps(x)``: the primal part of Alg. 1/2 line 7 with the regularized steepest
    map of line 4 (:func:`steepest_eps`), returned.

    numpy (and the fused engine's tracer): :func:`steepest_eps` into ``tmp``, then
    :func:`lptheory._xp.combine`, the operations the rules used before. torch: the denominator into
    ``tmp``, then ``k1 theta`` and one ``addcdiv`` (the division fused into the update: one pass less);
    the same number up to rounding. When eps vanishes in the dtype the exact map is used on every backend.
    ``out`` may alias ``theta``; neither ``out`` nor ``tmp`` may alias ``x``; ``tmp`` must not alias ``out``.
    """
    if numpyish(xp) or eps_vanishes(xp, eps, x.dtype):
        s = steepest_eps(xp, x, p, eps, mode, tmp, tmp)
        return combine(xp, theta, k1, s, k2, out, tmp, sub=True)
    den = eps_denominator(xp, x, p, eps, mode, tmp)
    own = namespace_helper(xp, "addcdiv_scaled")
    if own is not None:  # a multi-tensor namespace
        return own(theta, k1, x, den, -k2, out)
    if out is theta:
        out.mul_(k1)
    else:
        xp.mul(theta, k1, out=out)
    if not isinstance(k2, (int, float)):  # per-replicate step sizes (a (K, 1) tensor): addcdiv takes a number
        return out.sub_(xp.div(x, den, out=tmp).mul_(k2))
    return out.addcdiv_(x, den, value=-k2)


def mirror(xp, x, p: float, out, tmp):
    """grad psi(x) = |x|^{p-2} x for psi = (1/p)||x||_p^p, the map inside Alg. 2 line 6.

    ``out`` may alias ``tmp``; neither may alias ``x``.
    """
    ax = xp.abs(x, out=tmp)
    r = pow_abs(xp, ax, p - 2.0, tmp)
    return xp.multiply(r, x, out=out)


SERIES_TERMS = 6  # degree of the binomial series of (1 - y)^{p-1} in :func:`mirror_of_steepest_eps`


def binomial_series(k: float, terms: int = SERIES_TERMS):
    """``(coefficients, threshold)`` of the truncated binomial series of ``(1 - y)^k``:
    ``sum_{j <= terms} C(k, j) (-y)^j``, and the largest ``y`` (at most 1/16) for which the first omitted
    term, ``|C(k, terms + 1)| y^(terms + 1)``, is below 2^-56 (a quarter of float64's unit roundoff, the
    terms decreasing geometrically beyond it). Pure arithmetic on ``k`` (a traced scalar stays traced)."""
    coef = [1.0]
    c = 1.0
    for j in range(1, terms + 2):
        c = c * (k - (j - 1)) / j * -1.0
        coef.append(c)
    last = coef.pop()
    mag = last if last > 0.0 else -last
    thr = 0.0625
    if mag != 0.0:
        cand = (2.0**-56 / mag) ** (1.0 / (terms + 1))
        if cand < thr:
            thr = cand
    return coef, thr


def mirror_of_steepest_eps(xp, v, z, y, p: float, out, tmp):
    """grad psi(z) for ``z = s^eps(v) = v / (|v|^{(p-2)/(p-1)} + eps)`` (Alg. 2 line 6 in the paper's
    form), given ``v``, ``z`` and ``y = eps / (|v|^{(p-2)/(p-1)} + eps)``: the dual variable
    ``w_{t+1} = |z_{t+1}|^{p-2} z_{t+1}`` that the next step of Algorithm 2 needs (its line 6 reads
    ``|z_t|^{p-2} z_t``), computed without a power where possible.

    Exactly, ``|z|^{p-2} z = v (1 - y)^{p-1}`` (``|z| = |v|^{1/(p-1)} (1 - y)``). Where the power
    ``|z|^{p-2}`` has a closed form (p in {2, 2.5, 3, 3.5, 4, 5}, and 7/3, 8/3 on numpy) it is
    computed as before, ``|z|^{p-2} z``; otherwise ``v`` times the binomial series of ``(1 - y)^{p-1}``
    (:func:`binomial_series`: within rounding where ``y`` <= its threshold, i.e. unless ``|v|`` is tiny
    against eps), and ``|z|^{p-2} z`` through the power where ``y`` exceeds the threshold
    (:func:`lptheory._xp.pow_abs_where`: the fused engine computes those powers only on blocks that
    need them). p < inf.

    ``out`` and ``tmp`` must alias none of ``v``, ``z``, ``y`` and each other.
    """
    e = p - 2.0
    if pow_is_closed_form(xp, e):
        r = pow_abs(xp, xp.abs(z, out=tmp), e, out)
        return xp.multiply(r, z, out=out)
    coef, thr = binomial_series(p - 1.0)
    # out = v S(y), S by Horner: ((c_J y + c_{J-1}) y + ...) y + 1
    s = xp.multiply(y, coef[-1], out=out)
    for c in reversed(coef[1:-1]):
        xp.add(s, c, out=s)
        xp.multiply(s, y, out=s)
    xp.add(s, 1.0, out=s)
    xp.multiply(s, v, out=s)
    # where y > thr: |z|^{p-2} z through the power
    t = pow_abs_where(xp, xp.abs(z, out=tmp), e, tmp, y, thr)
    xp.multiply(t, z, out=t)
    return select_gt(xp, y, thr, t, s, out)


_eps_denominator = eps_denominator  # the name before it was public
