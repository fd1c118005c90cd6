"""``numpy.power``'s own vector power, called from the fused numba kernels.

On x86-64 processors with AVX-512 numpy computes ``power`` with SVML: ``__svml_pow8_ha`` for float64
(high accuracy: within 1 ulp) and ``__svml_powf16`` for float32; numpy links them and exports the
symbols. The fused engine's kernels call those same functions on blocks of 8 (16) values, so a power
no longer needs a round trip through memory and a numpy call between fused loops (the bits are
numpy's: the function is the one numpy runs, lane by lane; :func:`available` checks this on this
machine, over every binade, special values and subnormals, before the engine uses it, and
:func:`agrees` checks each exponent once: numpy takes other routes at some exponents, 0.5 for one,
which then keep ``numpy.power``).

Where a symbol is missing (another CPU, another numpy build) or a check fails, the engine keeps
``numpy.power`` between fused loops. ``LPTHEORY_SVML=0`` switches the route off.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from .svml_symbols import LANES, SYMBOLS, addresses

__all__ = ["available", "agrees", "pow_block", "addresses", "LANES", "SYMBOLS"]

_LOCK = threading.Lock()
_AGREES: dict = {}


@functools.lru_cache(maxsize=1)
def _kernels():
    """{dtype name: pow_block}, from :mod:`lptheory.fast.svml_kernels`; None without numba or the symbols."""
    if not addresses():
        return None
    try:
        from . import svml_kernels as K
    except ImportError:
        return None
    return K.BLOCKS


def __getattr__(name):
    # the generated kernels' imports (only generated where available() holds)
    if name == "pow_block_jit":
        return _kernels()["float64"]
    if name == "pow_block_f32_jit":
        return _kernels()["float32"]
    raise AttributeError(name)


def pow_block(x, xo, y, out, m, pad):
    """``out[:m] = x[xo:xo + m] ** y`` through SVML (x's dtype; ``pad``: 2 lanes' worth of scratch)."""
    return _kernels()[x.dtype.name](x, xo, y, out, m, pad)


def _values(dtype):
    """Values from every binade (normal and subnormal, both signs), zeros, infinities, NaN, extremes."""
    fi = np.finfo(dtype)
    lo = fi.minexp - fi.nmant  # the smallest subnormal's exponent (integers: exact with denormals flushed too)
    rng = np.random.default_rng(12345)
    e = np.arange(lo, fi.maxexp)
    return np.concatenate(
        [
            np.ldexp(1.0 + rng.random(e.size), e),
            np.ldexp(rng.random(64), lo + rng.integers(0, fi.nmant, 64)),
            [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan],
            -np.ldexp(1.0 + rng.random(64), rng.integers(lo, fi.maxexp - 1, 64)),
        ]
    ).astype(dtype)


def _probe(y: float, dtype="float64") -> bool:
    """SVML's power at exponent ``y`` equals numpy.power's bits (``y`` a Python float, as the engine
    passes it) on :func:`_values` plus the type's extremes."""
    k = _kernels()
    if k is None or dtype not in k:
        return False
    fi = np.finfo(dtype)
    x = np.concatenate([_values(dtype), np.array([fi.tiny, fi.max, fi.smallest_subnormal], dtype=dtype)])
    out = np.empty_like(x)
    with np.errstate(all="ignore"):
        k[dtype](x, 0, float(y), out, x.size, np.empty(2 * LANES[dtype], dtype=dtype))
        ref = np.power(x, float(y))
    if ref.dtype != x.dtype:
        return False
    it = np.int64 if dtype == "float64" else np.int32
    return bool(np.array_equal(out.view(it), ref.view(it)))


def available(dtype="float64") -> bool:
    """The SVML power of ``dtype`` is exported by numpy, compiles, and gives numpy.power's bits here."""
    key = ("_any", dtype)
    got = _AGREES.get(key)
    if got is None:
        with _LOCK:
            got = _AGREES[key] = all(_probe(y, dtype) for y in (2.7, 1.0 / 1.7, 0.7 / 1.7, -0.3))
    return got


def agrees(y: float, dtype="float64") -> bool:
    """:func:`available` and the check at exponent ``y`` (once per value)."""
    if not available(dtype):
        return False
    key = (y, dtype)
    got = _AGREES.get(key)
    if got is None:
        with _LOCK:
            if len(_AGREES) > 4096:
                keep = {k: v for k, v in _AGREES.items() if k[0] == "_any"}
                _AGREES.clear()
                _AGREES.update(keep)
            got = _AGREES[key] = _probe(y, dtype)
    return got
