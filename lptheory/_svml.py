"""``numpy.power``'s own vector power, called from the fused numba kernels.

On x86-64 processors with AVX-512 numpy computes float64 ``power`` with SVML's ``__svml_pow8_ha``
(high accuracy: within 1 ulp; numpy links it and exports the symbol). The fused engine's kernels call
that same function on blocks of 8 values, so a power no longer needs a round trip through memory and a
numpy call between fused loops (the bits are numpy's: the function is the one numpy runs, lane by
lane; :func:`available` checks this on this machine, over every binade, special values and
subnormals, before the engine uses it, and :func:`agrees` checks each exponent once: numpy takes
other routes at some exponents, 0.5 for one, which then keep ``numpy.power``).

Where the symbol is missing (another CPU, another numpy build) or the check fails, the engine keeps
``numpy.power`` between fused loops.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading

import numpy as np

__all__ = ["available", "agrees", "pow_block"]

_SYMBOL = "__svml_pow8_ha"
_LOCK = threading.Lock()
_AGREES: dict = {}


@functools.lru_cache(maxsize=1)
def _address():
    """Address of numpy's ``__svml_pow8_ha`` (None where numpy does not export it)."""
    if os.environ.get("LPTHEORY_SVML", "") == "0":
        return None
    try:
        import numpy._core as core
    except ImportError:  # numpy < 2
        import numpy.core as core  # type: ignore[no-redef]
    for so in glob.glob(os.path.join(os.path.dirname(core.__file__), "_multiarray_umath*")):
        try:
            lib = ctypes.CDLL(so)
            return ctypes.cast(getattr(lib, _SYMBOL), ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
    return None


@functools.lru_cache(maxsize=1)
def _kernels():
    """(pow8_at intrinsic, pow_block), from :mod:`lptheory._svml_kernels`; None without numba or the symbol."""
    if _address() is None:
        return None
    try:
        from . import _svml_kernels as K
    except ImportError:
        return None
    return K.pow8_at, K.pow_block


def __getattr__(name):
    if name == "pow_block_jit":  # the generated kernels' import (only generated where available() holds)
        return _kernels()[1]
    raise AttributeError(name)


def pow_block(x, xo, y, out, m, pad):
    """Python-level entry (tests): ``out[:m] = x[xo:xo + m] ** y`` through SVML."""
    return _kernels()[1](x, xo, y, out, m, pad)


def _probe(y: float) -> bool:
    """SVML's power at exponent ``y`` equals numpy.power's bits on values from every binade (normal and
    subnormal, both signs), zeros, infinities, NaN and the extremes."""
    k = _kernels()
    if k is None:
        return False
    rng = np.random.default_rng(12345)
    e = np.arange(-1074, 1024, dtype=np.float64)
    x = np.concatenate(
        [
            np.ldexp(1.0 + rng.random(e.size), e.astype(int)),
            np.ldexp(rng.random(64), -1074 + rng.integers(0, 52, 64)),
            [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308],
            -np.ldexp(1.0 + rng.random(64), rng.integers(-1074, 1023, 64)),
        ]
    )
    out = np.empty_like(x)
    pad = np.empty(16)
    with np.errstate(all="ignore"):
        k[1](x, 0, float(y), out, x.size, pad)
        ref = np.power(x, float(y))
    return bool(np.array_equal(out.view(np.int64), ref.view(np.int64)))


def available() -> bool:
    """The SVML power is exported by numpy, compiles, and gives numpy.power's bits here."""
    got = _AGREES.get("_any")
    if got is None:
        with _LOCK:
            got = _AGREES["_any"] = all(_probe(y) for y in (2.7, 1.0 / 1.7, 0.7 / 1.7, -0.3))
    return got


def agrees(y: float) -> bool:
    """:func:`available` and the check at exponent ``y`` (once per value)."""
    if not available():
        return False
    got = _AGREES.get(y)
    if got is None:
        with _LOCK:
            if len(_AGREES) > 4096:
                _AGREES.clear()
                _AGREES["_any"] = True
            got = _AGREES[y] = _probe(y)
    return got
