"""Row-wise l_p norms of large float64 arrays in one pass (numba), with the bits of
:func:`lptheory.geometry.lp_norm`'s numpy path.

For p in {1.5, 2, 3} the numpy path makes ~8 passes over the array (abs, max, divide, powers by products,
sum); this kernel makes two reads per row (max, then the sum of the transformed entries) and no
temporaries. Same bits: the element-wise operations are IEEE-exact and done in numpy's order, the row
maximum is order-free, and the row sum reproduces numpy's pairwise summation (``add.reduce`` over a
contiguous row: blocks of 8 partial sums up to 128 entries, halving above; checked against
``numpy.add.reduce`` for every length in the tests). The final power ``s ** (1/p)`` stays numpy's.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["available", "row_sums"]

_CODES = {2.0: 0, 1.5: 1, 3.0: 2}
MIN_SIZE = 1 << 15  # below this the numpy path is as fast


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    @numba.njit(nogil=True, cache=True, inline="always")
    def term(v, safe, code):
        t = abs(v) / safe
        if code == 0:
            return t * t
        if code == 1:
            return t * np.sqrt(t)
        return t * (t * t)

    @numba.njit(nogil=True, cache=True)
    def pairwise(a, lo, n, safe, code):
        if n < 8:
            res = 0.0
            for i in range(n):
                res += term(a[lo + i], safe, code)
            return res
        if n <= 128:
            r0 = term(a[lo], safe, code)
            r1 = term(a[lo + 1], safe, code)
            r2 = term(a[lo + 2], safe, code)
            r3 = term(a[lo + 3], safe, code)
            r4 = term(a[lo + 4], safe, code)
            r5 = term(a[lo + 5], safe, code)
            r6 = term(a[lo + 6], safe, code)
            r7 = term(a[lo + 7], safe, code)
            i = 8
            m = n - (n % 8)
            while i < m:
                r0 += term(a[lo + i], safe, code)
                r1 += term(a[lo + i + 1], safe, code)
                r2 += term(a[lo + i + 2], safe, code)
                r3 += term(a[lo + i + 3], safe, code)
                r4 += term(a[lo + i + 4], safe, code)
                r5 += term(a[lo + i + 5], safe, code)
                r6 += term(a[lo + i + 6], safe, code)
                r7 += term(a[lo + i + 7], safe, code)
                i += 8
            res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            while i < n:
                res += term(a[lo + i], safe, code)
                i += 1
            return res
        n2 = n // 2
        n2 -= n2 % 8
        return pairwise(a, lo, n2, safe, code) + pairwise(a, lo + n2, n - n2, safe, code)

    @numba.njit(nogil=True, cache=True)
    def rows(x, code, r0, r1, s_out, m_out):
        for r in range(r0, r1):
            row = x[r]
            m = 0.0
            nan = False
            for v in row:
                a = abs(v)
                if a != a:
                    nan = True
                elif a > m:
                    m = a
            if nan:
                m = np.nan
            m_out[r] = m
            safe = m if m > 0 else 1.0
            s_out[r] = 0.0 + pairwise(row, 0, row.size, safe, code)

    return rows


def available(x, p: float) -> bool:
    """The kernel applies: numba installed, a C-contiguous 2-D float64 array of at least MIN_SIZE
    entries with rows of at least one entry, and p in {1.5, 2, 3}."""
    if p not in _CODES or not isinstance(x, np.ndarray) or x.dtype != np.float64 or x.ndim != 2:
        return False
    if x.size < MIN_SIZE or x.shape[1] == 0 or not x.flags.c_contiguous:
        return False
    from . import _fused

    return _fused.available()


def row_sums(x: np.ndarray, p: float, threads: int = 1):
    """``(s, m)``: per row, m = max|x_i| and s = sum (|x_i| / m)^p (m replaced by 1 where it is 0), as
    lp_norm's numpy path computes them."""
    rows = _kernels()
    R = x.shape[0]
    s = np.empty(R)
    m = np.empty(R)
    code = _CODES[p]
    if threads <= 1 or R < 2:
        rows(x, code, 0, R, s, m)
        return s, m
    from ._pool import get_pool

    per = -(-R // threads)
    futs = [get_pool(threads).submit(rows, x, code, lo, min(R, lo + per), s, m) for lo in range(0, R, per)]
    for f in futs:
        f.result()
    return s, m
