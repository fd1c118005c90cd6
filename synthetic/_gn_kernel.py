"""numba side of :class:`synthetic.hard_instance.GuzmanNemirovski`: the bisection for the dual root nu in
one compiled call, with numpy's bits (imported only where numba and numpy's own power are available:
:func:`lptheory.numpy_power.pow_block_jit`).

The numpy code it reproduces (``GuzmanNemirovski._root_numpy``) evaluates
phi(nu) = M sum(w) (sum w^q)^((q-2)/q), w = max(c - nu, 0)^(p-1), about 50 times per query, each a few
numpy calls on at most N values: here the same operations in the same order (element-wise arithmetic,
numpy's pairwise summation, numpy.power's SVML routine for arrays, libm's pow for the scalar power)."""

from __future__ import annotations

import numba
import numpy as np

from lptheory.fast import numba_cache
from lptheory.numpy_power import add_reduce_jit, pow_block_jit

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

_POW = pow_block_jit()
if _POW is None:
    raise ImportError("numpy's own power is not callable from numba here")
# numpy's add.reduce of a[lo:lo + n], bit for bit (the pairwise summation lp_norm's kernels use)
pairwise_sum = add_reduce_jit()


@numba.njit(cache=True, nogil=True)
def _clipped_power(c, nu, y, square, w, cbuf, ibuf, pad):
    """w <- max(c - nu, 0)^y with numpy's bits, the power evaluated only where c - nu >= 0 (compacted into
    ``cbuf``, their indices in ``ibuf``; returns their count n): the other entries are +0.0, and
    +0.0^y = +0.0 for y > 0 in numpy.power as in IEEE pow (element-wise, so the compacted block gives each
    entry the bits of the whole-array call). Near the root only a few of the K pieces are active."""
    n = 0
    for i in range(c.size):
        v = c[i] - nu
        if v >= 0.0:
            cbuf[n] = v
            ibuf[n] = i
            n += 1
        w[i] = 0.0
    if square:
        for j in range(n):
            w[ibuf[j]] = cbuf[j] * cbuf[j]
    elif n > 0:
        _POW(cbuf, 0, y, cbuf, n, pad)
        for j in range(n):
            w[ibuf[j]] = cbuf[j]
    return n


@numba.njit(cache=True, nogil=True)
def _sparse_power(w, n, y, square, w2, cbuf, ibuf, pad):
    """w2 <- w^y with numpy's bits, where w is +0.0 outside ``ibuf[:n]`` (so is w2 there: +0.0^y = +0.0)."""
    for i in range(w.size):
        w2[i] = 0.0
    if square:
        for j in range(n):
            v = w[ibuf[j]]
            w2[ibuf[j]] = v * v
    elif n > 0:
        for j in range(n):
            cbuf[j] = w[ibuf[j]]
        _POW(cbuf, 0, y, cbuf, n, pad)
        for j in range(n):
            w2[ibuf[j]] = cbuf[j]


@numba.njit(cache=True, nogil=True)
def phi(c, nu, M, pm1, sq1, q, sq2, qq, w, w2, pad, cbuf, ibuf):
    """M sum(w) (sum w^q)^qq with w = max(c - nu, 0)^(p-1) (0 when sum(w) = 0); ``w`` holds w after the call
    (the powers only on the active pieces, :func:`_clipped_power`; the sums over all K entries, zeros
    included, in numpy's pairwise order)."""
    K = c.size
    n = _clipped_power(c, nu, pm1, sq1, w, cbuf, ibuf, pad)
    s = pairwise_sum(w, 0, K)
    if s == 0.0:
        return 0.0
    _sparse_power(w, n, q, sq2, w2, cbuf, ibuf, pad)
    return M * s * pairwise_sum(w2, 0, K) ** qq


@numba.njit(cache=True, nogil=True)
def root(c, M, pm1, sq1, q, sq2, qq, iters, w, w2, pad):
    """The bisection of ``GuzmanNemirovski._root_numpy`` (same bracket, same midpoints, same stop): the
    lower end lo of the final bracket of phi(nu) = 1."""
    cbuf = np.empty(c.size)
    ibuf = np.empty(c.size, np.int64)
    hi = c[0]
    for i in range(1, c.size):
        if c[i] > hi:
            hi = c[i]
    step = 1.0 / M + 1e-300
    lo = hi - step
    while phi(c, lo, M, pm1, sq1, q, sq2, qq, w, w2, pad, cbuf, ibuf) < 1.0:
        step *= 2.0
        lo = hi - step
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if phi(c, mid, M, pm1, sq1, q, sq2, qq, w, w2, pad, cbuf, ibuf) >= 1.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-16 * max(1.0, abs(hi)):
            break
    return lo


@numba.njit(cache=True, nogil=True)
def finish(c, lo, pm1, sq1, q, sq2, two_over_q, w, w2, pad, idx, xi, grad):
    """After the root: lam = w / sum(w) (w = max(c - lo, 0)^(p-1), left in ``w``), grad[alpha(k)] += lam_k xi_k
    (numpy's add.at on zeros), and returns (sum lam^q)^(2/q), each with the numpy code's bits."""
    K = c.size
    cbuf = np.empty(K)
    ibuf = np.empty(K, np.int64)
    n = _clipped_power(c, lo, pm1, sq1, w, cbuf, ibuf, pad)
    s = pairwise_sum(w, 0, K)
    for i in range(K):
        w[i] = w[i] / s
    _sparse_power(w, n, q, sq2, w2, cbuf, ibuf, pad)
    for j in range(K):
        grad[idx[j]] += w[j] * xi[j]
    return pairwise_sum(w2, 0, K) ** two_over_q


@numba.njit(cache=True, nogil=True)
def reveal(x, used):
    """The unused coordinate with the largest |x_i| (the first on ties; the first NaN if any), as
    ``argmax`` of |x| with the used coordinates set to -1 (``GuzmanNemirovski._reveal``); -1 when every
    coordinate is used."""
    best, arg = -1.0, -1
    for i in range(x.size):
        if used[i]:
            continue
        v = abs(x[i])
        if v != v:
            return i
        if v > best:
            best, arg = v, i
    return arg


@numba.njit(cache=True, nogil=True)
def answer(x, idx, xi, delta, M, pm1, sq1, q, sq2, qq, iters, c, w, w2, pad, grad):
    """One answer of the oracle with the K = idx.size pieces: c_k = xi_k x[alpha(k)] - k delta (into ``c``),
    the root (:func:`root`), then :func:`finish` (lam in ``w``, the gradient in ``grad``, zeros on entry);
    returns (sum lam^q)^(2/q), or NaN without touching ``w``/``grad`` when a c_k is not finite (the caller
    takes the numpy route). The numpy code's bits, operation by operation."""
    K = idx.size
    for k in range(K):
        v = xi[k] * x[idx[k]] - k * delta
        if not (v - v == 0.0):
            return np.nan
        c[k] = v
    lo = root(c, M, pm1, sq1, q, sq2, qq, iters, w, w2, pad)
    return finish(c, lo, pm1, sq1, q, sq2, 2.0 / q, w, w2, pad, idx, xi, grad)
