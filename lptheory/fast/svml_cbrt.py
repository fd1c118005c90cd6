"""``numpy.cbrt``'s own vector cube root, called from the fused numba kernels.

On x86-64 processors with AVX-512 numpy computes ``cbrt`` of contiguous arrays with SVML:
``__svml_cbrt8_ha`` for float64 (high accuracy) and ``__svml_cbrtf16`` for float32 (the low-accuracy
``__svml_cbrt8`` differs from numpy's float64 results: it is not used). numpy exports the symbols; the
one-pass kernels of :mod:`lptheory.fast.fused` call the same functions on blocks of 8 (16) values, so a cube
root (the steepest step's ``|x|^{1/(p-1)}`` at p = 4) no longer needs a numpy call between two fused loops and
a round trip through scratch memory. The bits are numpy's: the function is the one numpy runs, lane by lane;
:func:`available` checks this on this machine (every binade, subnormals, zeros, infinities, NaN, extremes,
random values) before the engine uses it.

Measured (process time, 3 interleaved runs, one optimizer stepping 2 rows of 4096 in place, as in the
acceleration check's tuning runs at p = 4): a Stacey(p,2) step 28-30 -> 23-26 us, a Stacey(p,p) step
46-55 -> 33-38 us (two or four fused loops, numpy's cube roots and the plan's Python between them replaced
by one call).

Where a symbol is missing (another CPU, another numpy build), numba is missing, or the check fails, the
engine keeps ``numpy.cbrt`` between fused loops. ``LPTHEORY_SVML=0`` switches the route off (as the power's).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from .. import config
from . import numba_cache

__all__ = ["available", "cbrt_block", "probe_values"]

numba_cache.register(__file__)  # the generated kernels resolve cbrt_block_jit here

_LOCK = threading.Lock()
_OK: dict = {}


@functools.lru_cache(maxsize=1)
def _blocks() -> dict:
    """{dtype name: cbrt_block}, from :mod:`lptheory.fast.svml_cbrt_kernels` (which finds numpy's symbols);
    empty without numba or the symbols (``LPTHEORY_SVML=0``: none looked for)."""
    if config.svml_off():
        return {}
    try:
        from . import svml_cbrt_kernels as K
    except ImportError:
        return {}
    return K.BLOCKS


def __getattr__(name):
    # the generated kernels' imports (only generated where available() holds)
    if name == "cbrt_block_jit":
        return _blocks()["float64"]
    if name == "cbrt_block_f32_jit":
        return _blocks()["float32"]
    raise AttributeError(name)


def cbrt_block(x, xo, out, m, pad):
    """``out[:m] = cbrt(x[xo:xo + m])`` through SVML (x's dtype; ``pad``: 2 lanes' worth of scratch)."""
    return _blocks()[x.dtype.name](x, xo, out, m, pad)


def probe_values(dtype) -> np.ndarray:
    """The values :func:`available` checks: every binade (normal and subnormal, both signs), zeros,
    infinities, NaN, the type's extremes, and standard normal draws (seeded)."""
    fi = np.finfo(dtype)
    lo = fi.minexp - fi.nmant  # the smallest subnormal's exponent
    rng = np.random.default_rng(20260529)
    e = np.arange(lo, fi.maxexp)
    mant = 1.0 + rng.random(e.size)
    x = np.concatenate(
        [
            np.ldexp(mant, e),
            -np.ldexp(mant[::-1], e),
            [0.0, -0.0, 1.0, -1.0, 8.0, -27.0, np.inf, -np.inf, np.nan],
            rng.standard_normal(4096),
        ]
    ).astype(dtype)
    x = np.concatenate([x, np.array([fi.tiny, fi.max, -fi.max, fi.smallest_subnormal], dtype=dtype)])
    return x if x.size % 16 else x[:-1]  # not a whole number of lanes: the padded last group is checked too


def _probe(dtype: str) -> bool:
    """SVML's cube root equals numpy.cbrt's bits on :func:`probe_values` (an odd count: the last partial
    group goes through the padded lanes too)."""
    k = _blocks().get(dtype)
    if k is None:
        return False
    x = probe_values(dtype)
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        k(x, 0, out, x.size, np.empty(32, dtype=dtype))  # two groups of lanes (16 float32 lanes)
        ref = np.cbrt(x)
    it = np.int64 if dtype == "float64" else np.int32
    return bool(np.array_equal(out.view(it), ref.view(it)))


def available(dtype="float64") -> bool:
    """numpy exports SVML's cube root of ``dtype``, it compiles, and it gives numpy.cbrt's bits here (checked
    once per process and dtype)."""
    dtype = np.dtype(dtype).name
    got = _OK.get(dtype)
    if got is None:
        with _LOCK:
            got = _OK[dtype] = _probe(dtype)
    return got
