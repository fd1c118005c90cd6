"""numba kernels of :mod:`lptheory.fast.rownorm` (module level, so that numba's on-disk cache keeps them: kernels
defined inside a function and calling each other were compiled again in every process)."""

import numba
import numpy as np

from . import numba_cache

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code


@numba.njit(nogil=True, cache=True)  # inlined by LLVM; numba's inline="always" cost 2.7 s more to compile
def term(v, safe, code):
    if code == 3:  # the entry itself: pairwise(a, lo, n, 1.0, 3) is numpy's add.reduce of a[lo:lo + n]
        return v
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
def add_reduce(a, lo, n):
    """numpy's ``add.reduce`` of the contiguous float64 ``a[lo:lo + n]``, bit for bit (its pairwise order)."""
    return pairwise(a, lo, n, 1.0, 3)


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


@numba.njit(nogil=True, cache=True)
def dual_l2_rows(x, code, s_q, s_2, m_out):
    """Per row of ``x``: ``m_out`` the max |x_i|, ``s_q`` and ``s_2`` the pairwise sums of ``(|x_i|/m)^q`` (code 0:
    q = 2, 1: 1.5, 2: 3) and ``(|x_i|/m)^2``: the terms and sums of ``lp_norm`` (:mod:`lptheory.fast.simkernels`)."""
    d = x.shape[1]
    bits = x.view(np.uint64)
    tq = np.empty(d)
    t2 = np.empty(d)
    mag = np.uint64(0x7FFFFFFFFFFFFFFF)
    inf_bits = np.uint64(0x7FF0000000000000)
    one = np.empty(1, dtype=np.uint64)
    one_f = one.view(np.float64)
    for r in range(x.shape[0]):
        row, brow = x[r], bits[r]
        mb = np.uint64(0)
        for i in range(d):  # max |x_i| through the bit patterns (NaN patterns lie above inf's)
            v = brow[i] & mag
            if v > mb:
                mb = v
        if mb > inf_bits:
            m = np.nan
        else:
            one[0] = mb
            m = one_f[0]
        m_out[r] = m
        safe = m if m > 0 else 1.0
        for i in range(d):
            t = abs(row[i]) / safe
            t2[i] = t * t
            if code == 0:
                tq[i] = t * t
            elif code == 1:
                tq[i] = t * np.sqrt(t)
            else:
                tq[i] = t * (t * t)
        s_q[r] = 0.0 + add_reduce(tq, 0, d)
        s_2[r] = 0.0 + add_reduce(t2, 0, d)
