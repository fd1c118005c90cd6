"""numba kernels of :mod:`lptheory._rownorm` (module level, so that numba's on-disk cache keeps them: kernels
defined inside a function and calling each other were compiled again in every process)."""

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, inline="always")
def term(v, safe, code):
    t = abs(v) / safe
    if code == 0:
        return t * t
    if code == 1:
        return t * np.sqrt(t)
    return t * (t * t)


@numba.njit(nogil=True, cache=True)
def block(a, lo, n, safe, code):
    """numpy's pairwise sum of at most 128 transformed entries: 8 accumulators, then the rest in order."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += term(a[lo + i], safe, code)
        return res
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


@numba.njit(nogil=True, cache=True)
def pairwise(a, lo, n, safe, code):
    """numpy's pairwise summation of the transformed ``a[lo:lo + n]``: its recursion (left part at a multiple
    of 8 near the half, then the right part, summed) run on an explicit stack (numba's on-disk cache does not
    keep recursive functions: a recursive version was compiled again in every process, ~5-15 s)."""
    if n <= 128:
        return block(a, lo, n, safe, code)
    f_lo = np.empty(128, np.int64)
    f_n = np.empty(128, np.int64)
    f_st = np.zeros(128, np.int64)
    vals = np.empty(128)
    sp, vp = 1, 0
    f_lo[0], f_n[0], f_st[0] = lo, n, 0
    while sp > 0:
        t = sp - 1
        k = f_n[t]
        if k <= 128:
            vals[vp] = block(a, f_lo[t], k, safe, code)
            vp += 1
            sp -= 1
            continue
        n2 = k // 2
        n2 -= n2 % 8
        if f_st[t] == 0:
            f_st[t] = 1
            f_lo[sp], f_n[sp], f_st[sp] = f_lo[t], n2, 0
            sp += 1
        elif f_st[t] == 1:
            f_st[t] = 2
            f_lo[sp], f_n[sp], f_st[sp] = f_lo[t] + n2, k - n2, 0
            sp += 1
        else:
            vals[vp - 2] = vals[vp - 2] + vals[vp - 1]
            vp -= 1
            sp -= 1
    return vals[0]


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
