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
    from .rownorm_kernels import rows

    return rows


def available(x, p: float) -> bool:
    """The kernel applies: numba installed, a C-contiguous 2-D float64 array of at least MIN_SIZE
    entries with rows of at least one entry, and p in {1.5, 2, 3}."""
    if p not in _CODES or not isinstance(x, np.ndarray) or x.dtype != np.float64 or x.ndim != 2:
        return False
    if x.size < MIN_SIZE or x.shape[1] == 0 or not x.flags.c_contiguous:
        return False
    from . import fused as _fused

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
    from .pool import get_pool

    per = -(-R // threads)
    futs = [get_pool(threads).submit(rows, x, code, lo, min(R, lo + per), s, m) for lo in range(0, R, per)]
    for f in futs:
        f.result()
    return s, m
