"""numba kernels of the simulator's fast step (:mod:`lptheory.simulate`), with a numpy fallback.

``nonfinite_rows(a, out)``: ``out[r] = True`` exactly when row r of the float64 array ``a`` holds a NaN
or an infinity (the exponent field all ones), by an integer max over the rows' bit patterns: one
vectorized read, no rounding involved, so the answer is the one of ``~np.isfinite(a).all(axis=-1)``.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["nonfinite_rows"]

_EXP = np.uint64(0x7FF0000000000000)


@functools.lru_cache(maxsize=1)
def _kernel():
    from . import _fused

    if not _fused.available():
        return None
    import numba

    @numba.njit(nogil=True, cache=True)
    def rows(bits, out):  # bits: the (rows, d) uint64 view of a float64 array
        e = np.uint64(0x7FF0000000000000)
        for r in range(bits.shape[0]):
            row = bits[r]
            m = np.uint64(0)
            for i in range(row.size):
                v = row[i] & e
                if v > m:
                    m = v
            out[r] = m == e

    return rows


def nonfinite_rows(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[r] = not all(isfinite(a[r]))`` for a C-contiguous 2-D float64 ``a``; returns ``out``."""
    k = _kernel()
    if k is None or a.dtype != np.float64 or not a.flags.c_contiguous or a.ndim != 2:
        np.logical_not(np.isfinite(a).all(axis=-1), out=out)
        return out
    k(a.view(np.uint64), out)
    return out
