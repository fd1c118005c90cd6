"""numba side of :func:`synthetic.smoothness.duality_map`: the l_p duality map of the rows of a small float64
array in one compiled call, with the bits of the numpy code (element-wise IEEE operations in numpy's order,
numpy's pairwise row sums, numpy.power's own routine through :func:`lptheory.numpy_power.pow_block_jit`, and
numpy's routes at the exponents where it takes another one: x * x at 2, sqrt at 0.5, the products of
lp_norm's fast paths at 1.5 and 3). Imported only where numba and numpy's SVML power are available."""

from __future__ import annotations

import numba
import numpy as np

from lptheory.fast import numba_cache
from lptheory.numpy_power import add_reduce_jit, pow_block_jit

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

_POW = pow_block_jit()
if _POW is None:
    raise ImportError("numpy's own power is not callable from numba here")
_SUM = add_reduce_jit()  # numpy's add.reduce of a[lo:lo + n], bit for bit (lp_norm's pairwise summation)

SQUARE, SQRT, SVML, X_SQRT_X, CUBE = 0, 1, 2, 3, 4


@numba.njit(cache=True, nogil=True)
def _power(x, y, route, pad):
    """x <- x ** y in place, by numpy's route at y (``route``)."""
    if route == SQUARE:
        for i in range(x.size):
            x[i] = x[i] * x[i]
    elif route == SQRT:
        for i in range(x.size):
            x[i] = np.sqrt(x[i])
    elif route == X_SQRT_X:
        for i in range(x.size):
            x[i] = x[i] * np.sqrt(x[i])
    elif route == CUBE:
        for i in range(x.size):
            x[i] = x[i] * (x[i] * x[i])
    else:
        _POW(x, 0, y, x, x.size, pad)


@numba.njit(cache=True, nogil=True)
def duality_rows(w, e1, route1, p, route_p, inv_p, route_inv, out, norms, pad):
    """out = J_p(w) row by row: u = sgn(w)|w/s|^(q-1) (s = max|w|, 1 when 0), then u / ||u||_p (lp_norm's
    numpy path: scaled by max|u|, powers, pairwise sum, ** (1/p) (sqrt at p = 2)); ``e1`` = q - 1.
    Returns False (out unspecified) when w holds a NaN or an infinity: the caller uses numpy then."""
    R, d = w.shape
    tmp = np.empty(d)
    for r in range(R):
        m = 0.0
        for j in range(d):
            a = abs(w[r, j])
            if not np.isfinite(a):
                return False
            if a > m:
                m = a
        scale = m if m > 0 else 1.0
        for j in range(d):
            tmp[j] = abs(w[r, j] / scale)
        _power(tmp, e1, route1, pad)
        for j in range(d):
            x = w[r, j]
            sg = 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
            out[r, j] = sg * tmp[j]
        # lp_norm(u, p) of the row
        mu = 0.0
        for j in range(d):
            a = abs(out[r, j])
            if a > mu:
                mu = a
        safe = mu if mu > 0 else 1.0
        for j in range(d):
            tmp[j] = abs(out[r, j]) / safe
        _power(tmp, p, route_p, pad)
        norms[r] = _SUM(tmp, 0, d)
    _power(norms, inv_p, route_inv, pad)  # s ** (1/p) over the rows (an array power, as numpy does it)
    for r in range(R):
        mu = 0.0
        for j in range(d):
            a = abs(out[r, j])
            if a > mu:
                mu = a
        n = norms[r] * mu
        den = n if n > 0 else 1.0
        for j in range(d):
            out[r, j] = out[r, j] / den
    return True


@numba.njit(cache=True, nogil=True)
def norm_1d(x, p, route_p, pad, tmp):
    """lp_norm(x, p) of a finite 1-D float64 vector by lp_norm's numpy path (max-scaled powers by numpy's
    route at p, pairwise sum, then the scalar power s ** (1/p), sqrt at p = 2); NaN for a non-finite x."""
    d = x.size
    m = 0.0
    for j in range(d):
        a = abs(x[j])
        if not np.isfinite(a):
            return np.nan
        if a > m:
            m = a
    safe = m if m > 0 else 1.0
    for j in range(d):
        tmp[j] = abs(x[j]) / safe
    _power(tmp, p, route_p, pad)
    s = _SUM(tmp, 0, d)
    r = np.sqrt(s) if p == 2.0 else s ** (1.0 / p)
    return r * m


@numba.njit(cache=True, nogil=True)
def circle_argmax(U, H, p, route_p, inv_p, route_inv, pad):
    """``i = argmax(abs(einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2)`` and that value, for unit-circle
    points U (n, 2) and a 2x2 H, with numpy's bits: einsum's order (((U_i0 H_00) U_i0 + (U_i0 H_01) U_i1)
    + (U_i1 H_10) U_i0) + (U_i1 H_11) U_i1, lp_norm's numpy path (max-scaled, powers by numpy's route at p, the
    row sum, the array power 1/p), the square as x * x. Returns (-1, nan) on a non-finite entry (numpy then)."""
    n = U.shape[0]
    a = np.empty(n)
    b = np.empty(n)
    m = np.empty(n)
    for r in range(n):
        x0 = abs(U[r, 0])
        x1 = abs(U[r, 1])
        if not (np.isfinite(x0) and np.isfinite(x1)):
            return -1, np.nan
        mm = x0 if x0 >= x1 else x1
        m[r] = mm
        sf = mm if mm > 0 else 1.0
        a[r] = x0 / sf
        b[r] = x1 / sf
    _power(a, p, route_p, pad)
    _power(b, p, route_p, pad)
    for r in range(n):
        a[r] = a[r] + b[r]
    _power(a, inv_p, route_inv, pad)
    best = -1.0
    ib = -1
    h00, h01, h10, h11 = H[0, 0], H[0, 1], H[1, 0], H[1, 1]
    for r in range(n):
        nrm = a[r] * m[r]
        u0, u1 = U[r, 0], U[r, 1]
        q = (((u0 * h00) * u0 + (u0 * h01) * u1) + (u1 * h10) * u0) + (u1 * h11) * u1
        v = abs(q) / (nrm * nrm)
        if v != v:
            return -1, np.nan
        if v > best:
            best, ib = v, r
    return ib, best


@numba.njit(cache=True, nogil=True)
def quad_forms(U, H, V, out):
    """``out[r] = einsum("ni,ij,nj->n", U, H, V)[r]`` for C-contiguous float64 U, V (n, d) and H (d, d), with
    numpy's bits: one running sum per row from 0.0, the terms (U[r, i] * H[i, j]) * V[r, j] added in (i, j)
    row-major order (the order of numpy's einsum loop for these layouts; :func:`synthetic.smoothness.quad_forms`
    checks it against numpy at each d before using it). Four rows at a time, each with its own sum in that
    order (independent additions in flight: the same bits, ~2x fewer cycles than one row's chain)."""
    n, d = U.shape
    r = 0
    while r + 4 <= n:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for i in range(d):
            u0, u1, u2, u3 = U[r, i], U[r + 1, i], U[r + 2, i], U[r + 3, i]
            for j in range(d):
                h = H[i, j]
                a0 += (u0 * h) * V[r, j]
                a1 += (u1 * h) * V[r + 1, j]
                a2 += (u2 * h) * V[r + 2, j]
                a3 += (u3 * h) * V[r + 3, j]
        out[r] = a0
        out[r + 1] = a1
        out[r + 2] = a2
        out[r + 3] = a3
        r += 4
    while r < n:
        acc = 0.0
        for i in range(d):
            ui = U[r, i]
            for j in range(d):
                acc += (ui * H[i, j]) * V[r, j]
        out[r] = acc
        r += 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _row_norms(x, p, route_p, inv_p, route_inv, pad, tmp, out):
    """out[r] = lp_norm(x, p)[r] for the rows of a finite 2-D x by lp_norm's numpy path (each row max-scaled,
    powers by numpy's route at p, pairwise sum; then s ** (1/p) as one array power over the rows, sqrt at
    p = 2, times the row's max). False on a non-finite entry."""
    R, d = x.shape
    for r in range(R):
        m = 0.0
        for j in range(d):
            a = abs(x[r, j])
            if not np.isfinite(a):
                return False
            if a > m:
                m = a
        safe = m if m > 0 else 1.0
        for j in range(d):
            tmp[j] = abs(x[r, j]) / safe
        _power(tmp, p, route_p, pad)
        out[r] = _SUM(tmp, 0, d)
    _power(out, inv_p, route_inv, pad)
    for r in range(R):
        m = 0.0
        for j in range(d):
            a = abs(x[r, j])
            if a > m:
                m = a
        out[r] = out[r] * m
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0: inf or NaN, as numpy
def pair_ratios(u, H, v, p, route_p, inv_p, route_inv, pad, out):
    """``out = einsum("ni,ij,nj->n", u, H, v) / (lp_norm(u, p) * lp_norm(v, p))`` for finite C-contiguous float64
    rows u, v (n, d) and H (d, d), with numpy's bits (:func:`quad_forms`' order, :func:`_row_norms`); False on a
    non-finite entry (numpy then)."""
    n, d = u.shape
    tmp = np.empty(d)
    nu = np.empty(n)
    nv = np.empty(n)
    if not (
        _row_norms(u, p, route_p, inv_p, route_inv, pad, tmp, nu)
        and _row_norms(v, p, route_p, inv_p, route_inv, pad, tmp, nv)
    ):
        return False
    for r in range(n):
        acc = 0.0
        for i in range(d):
            ui = u[r, i]
            for j in range(d):
                acc += (ui * H[i, j]) * v[r, j]
        out[r] = acc / (nu[r] * nv[r])
    return True


@numba.njit(cache=True, nogil=True)
def circle_refine(c, w, passes, H, p, route_p, inv_p, route_inv, pad, th, U, vals):
    """The refinement passes of :func:`proofs_checks.stacey.smoothness.two_sided_constant` after its first grid:
    each pass th = numpy's ``linspace(c - 2 w, c + 2 w, n)`` (delta = stop - start, step = delta / (n - 1), then
    k * step + start, the last point stop; k / (n - 1) * delta + start where the step is 0), U = (cos th, sin th)
    (libm's, as numpy's float64 cos and sin: :func:`synthetic.smoothness.circle_refine` checks both against numpy
    before using it), :func:`circle_argmax` on U, then w = th[1] - th[0] and c = th[argmax] for the next pass.
    ``vals[k]`` gets pass k's maximum; returns False where circle_argmax does (numpy then)."""
    n = th.size
    div = n - 1
    for k in range(passes):
        start = c - 2.0 * w
        stop = c + 2.0 * w
        delta = stop - start
        step = delta / div
        if step == 0:
            for j in range(n):
                th[j] = (j / div) * delta + start
        else:
            for j in range(n):
                th[j] = j * step + start
        th[n - 1] = stop
        for j in range(n):
            U[j, 0] = np.cos(th[j])
            U[j, 1] = np.sin(th[j])
        i, v = circle_argmax(U, H, p, route_p, inv_p, route_inv, pad)
        if i < 0:
            return False
        vals[k] = v
        w = th[1] - th[0]
        c = th[i]
    return True
