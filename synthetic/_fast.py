"""One-pass numba kernels for the simulator's hot loops (optional: without numba, or with
``LPTHEORY_ENGINE=numpy``, the callers keep their numpy code). Each kernel performs the same IEEE
operations in the same order as the numpy code it replaces, so the results are bit-identical
(tested); rows are split over the engine's worker threads (numba releases the GIL)."""

from __future__ import annotations

import numpy as np

__all__ = ["enabled", "separable_grad", "rademacher_add"]

_K: dict = {}


def enabled() -> bool:
    from lptheory import _fused

    return _fused.available()


def _kernels():
    if _K:
        return _K
    import numba

    jit = numba.njit(nogil=True, error_model="numpy", cache=True)

    @jit
    def sep_grad(x, a, b, out):  # out = a * (2 u / (1 + u u)), u = x - b (the order of the numpy code)
        rows, d = x.shape
        for r in range(rows):
            xr, orow = x[r], out[r]
            for i in range(d):
                u = xr[i] - b[i]
                orow[i] = a[i] * ((u * 2.0) / (u * u + 1.0))

    @jit
    def rad_add(bits, sigma, out):  # out += (2 bit - 1) sigma
        rows, d = out.shape
        for r in range(rows):
            br, orow = bits[r], out[r]
            for i in range(d):
                orow[i] = orow[i] + (br[i] * 2.0 - 1.0) * sigma[i]

    _K.update(sep_grad=sep_grad, rad_add=rad_add)
    return _K


def _rows(fn, first, *rest):
    """Run ``fn(first[r0:r1], *rest_r)`` over row blocks on the engine's threads (rest: row-wise
    arrays or shared vectors)."""
    from lptheory import _engine

    R = first.shape[0]
    nt = _engine.threads(fused=True)
    if nt <= 1 or first.size < (1 << 17) or R < 2:
        fn(first, *rest)
        return
    per = -(-R // nt)
    pool = _engine._get_pool(nt)
    futs = []
    for r0 in range(0, R, per):
        r1 = min(R, r0 + per)
        args = [a[r0:r1] if isinstance(a, np.ndarray) and a.ndim == 2 else a for a in rest]
        futs.append(pool.submit(fn, first[r0:r1], *args))
    for f in futs:
        f.result()


def separable_grad(x, a, b, out) -> None:
    """out = a * (2 u / (1 + u^2)), u = x - b, rows of x (R, d)."""
    _rows(_kernels()["sep_grad"], x, a, b, out)


def rademacher_add(bits, sigma, out) -> None:
    """out += (2 bits - 1) sigma, bits (R, d) int8."""
    _rows(lambda o, bi, s: _kernels()["rad_add"](bi, s, o), out, bits, sigma)
