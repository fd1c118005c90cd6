"""numba side of :class:`synthetic.hard_instance.GuzmanNemirovski`: the bisection for the dual root nu in
one compiled call, with numpy's bits (imported only where numba and numpy's own power are available:
:func:`lptheory.numpy_power.pow_block_jit`).

The numpy code it reproduces (``GuzmanNemirovski._root_numpy``) evaluates
phi(nu) = M sum(w) (sum w^q)^((q-2)/q), w = max(c - nu, 0)^(p-1), about 50 times per query, each a few
numpy calls on at most N values: here the same operations in the same order (element-wise arithmetic,
numpy's pairwise summation, numpy.power's SVML routine for arrays, libm's pow for the scalar power)."""

from __future__ import annotations

import numba

from lptheory.numpy_power import add_reduce_jit, pow_block_jit

_POW = pow_block_jit()
if _POW is None:
    raise ImportError("numpy's own power is not callable from numba here")
# numpy's add.reduce of a[lo:lo + n], bit for bit (the pairwise summation lp_norm's kernels use)
pairwise_sum = add_reduce_jit()


@numba.njit(cache=True, nogil=True)
def _power(x, y, square, pad):
    """x <- x ** y in place: numpy's x * x at y = 2 (its route there), its SVML routine otherwise."""
    if square:
        for i in range(x.size):
            x[i] = x[i] * x[i]
    else:
        _POW(x, 0, y, x, x.size, pad)


@numba.njit(cache=True, nogil=True)
def phi(c, nu, M, pm1, sq1, q, sq2, qq, w, w2, pad):
    """M sum(w) (sum w^q)^qq with w = max(c - nu, 0)^(p-1) (0 when sum(w) = 0); ``w`` holds w after the call."""
    K = c.size
    for i in range(K):
        v = c[i] - nu
        w[i] = v if v >= 0.0 else 0.0
    _power(w, pm1, sq1, pad)
    s = pairwise_sum(w, 0, K)
    if s == 0.0:
        return 0.0
    for i in range(K):
        w2[i] = w[i]
    _power(w2, q, sq2, pad)
    return M * s * pairwise_sum(w2, 0, K) ** qq


@numba.njit(cache=True, nogil=True)
def root(c, M, pm1, sq1, q, sq2, qq, iters, w, w2, pad):
    """The bisection of ``GuzmanNemirovski._root_numpy`` (same bracket, same midpoints, same stop): the
    lower end lo of the final bracket of phi(nu) = 1."""
    hi = c[0]
    for i in range(1, c.size):
        if c[i] > hi:
            hi = c[i]
    step = 1.0 / M + 1e-300
    lo = hi - step
    while phi(c, lo, M, pm1, sq1, q, sq2, qq, w, w2, pad) < 1.0:
        step *= 2.0
        lo = hi - step
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if phi(c, mid, M, pm1, sq1, q, sq2, qq, w, w2, pad) >= 1.0:
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
    for i in range(K):
        v = c[i] - lo
        w[i] = v if v >= 0.0 else 0.0
    _power(w, pm1, sq1, pad)
    s = pairwise_sum(w, 0, K)
    for i in range(K):
        w[i] = w[i] / s
        w2[i] = w[i]
    _power(w2, q, sq2, pad)
    for j in range(K):
        grad[idx[j]] += w[j] * xi[j]
    return pairwise_sum(w2, 0, K) ** two_over_q
