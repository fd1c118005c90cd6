"""numba kernels of the simulator's fast step (:mod:`lptheory.simulate`), with numpy fallbacks.

* ``nonfinite_rows(a, out)``: ``out[r] = True`` exactly when row r of the float64 array ``a`` holds a NaN
  or an infinity (the exponent field all ones), by an integer max over the rows' bit patterns: one
  vectorized read, no rounding involved, so the answer is the one of ``~np.isfinite(a).all(axis=-1)``.
* ``dual_and_l2(g, q)``: ``(||g_r||_q^q, ||g_r||_2)`` per row, the recorded gradient metrics, with the
  bits of ``lp_norm(g, q) ** q`` and ``lp_norm(g, 2.0)`` (:func:`lptheory.geometry.lp_norm`): the same
  row maximum (read once for both norms, as an integer max over the bit patterns of |g|: the order
  of non-negative doubles), the same terms ``(|g_i| / m)^p`` computed in a vectorized pass into a row
  buffer, then summed in numpy's pairwise order (as :mod:`lptheory.fast.rownorm`, which reproduces
  ``numpy.add.reduce``), and the same final power.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["nonfinite_rows", "dual_and_l2"]

_EXP = np.uint64(0x7FF0000000000000)


@functools.lru_cache(maxsize=1)
def _kernel():
    from . import fused as _fused

    if not _fused.available():
        return None
    import numba

    from . import numba_cache

    numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

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


_CODES = {2.0: 0, 1.5: 1, 3.0: 2}


@functools.lru_cache(maxsize=1)
def _norm_kernel():
    from . import fused as _fused

    if not _fused.available():
        return None
    # at module level in _rownorm_kernels, so that numba's on-disk cache keeps it (a kernel defined in a
    # function and calling another was compiled again in every process); its sums are lp_norm's pairwise
    from . import rownorm_kernels as _rownorm_kernels

    return _rownorm_kernels.dual_l2_rows


def dual_and_l2(g: np.ndarray, q: float):
    """``(lp_norm(g, q) ** q, lp_norm(g, 2.0))`` over the rows of a C-contiguous 2-D float64 ``g``, the same
    bits, in one kernel for q in {1.5, 2, 3} (None otherwise, or without numba: the caller keeps
    ``lp_norm``)."""
    k = _norm_kernel()
    if k is None or q not in _CODES or g.dtype != np.float64 or g.ndim != 2 or not g.flags.c_contiguous:
        return None
    if g.shape[1] == 0:
        return None
    R = g.shape[0]
    s_q, s_2, m = np.empty(R), np.empty(R), np.empty(R)
    k(g, _CODES[q], s_q, s_2, m)
    with np.errstate(invalid="ignore"):  # lp_norm's final step (lptheory.geometry._lp_norm)
        r_q = np.sqrt(s_q) if q == 2.0 else s_q ** (1.0 / q)
        r_2 = np.sqrt(s_2)
    return (r_q * m) ** q, r_2 * m
