"""Where numpy's SVML power routines are (:func:`addresses`), their symbols and lane counts: shared by
:mod:`lptheory.fast.svml` (the checks) and :mod:`lptheory.fast.svml_kernels` (the numba side), which
import this module and not each other."""

from __future__ import annotations

import ctypes
import functools
import glob
import os

from .. import config

__all__ = ["SYMBOLS", "LANES", "addresses", "numpy_symbols"]

SYMBOLS = {"float64": "__svml_pow8_ha", "float32": "__svml_powf16"}
LANES = {"float64": 8, "float32": 16}


@functools.lru_cache(maxsize=1)
def addresses() -> dict:
    """{dtype name: address of numpy's SVML power} for the symbols numpy exports (empty: none)."""
    return numpy_symbols(SYMBOLS)


def numpy_symbols(symbols: dict) -> dict:
    """{dtype name: address} of the SVML routines ``symbols`` ({dtype name: symbol}) that numpy's
    ``_multiarray_umath`` exports (empty: none, numpy < 2, a CPU without AVX-512 where numpy never runs SVML,
    or ``LPTHEORY_SVML=0``). Shared by the power (:data:`SYMBOLS`) and the cube root
    (:mod:`lptheory.fast.svml_cbrt_kernels`)."""
    if config.svml_off():
        return {}
    try:
        import numpy._core as core
        from numpy._core._multiarray_umath import __cpu_features__ as cpu
    except ImportError:  # numpy < 2
        return {}
    if not cpu.get("AVX512_SKX"):  # numpy runs SVML only there (and calling it elsewhere would fault)
        return {}
    out = {}
    for so in glob.glob(os.path.join(os.path.dirname(core.__file__), "_multiarray_umath*")):
        try:
            lib = ctypes.CDLL(so)
        except OSError:
            continue
        for dt, sym in symbols.items():
            try:
                out[dt] = ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value
            except AttributeError:
                pass
        if out:
            break
    return out
