"""numba side of :mod:`lptheory.fast.svml_cbrt` (imported only where numba is installed; an ImportError where
numpy exports no SVML cube root): where numpy's symbols are (:func:`addresses`), intrinsics calling them on one
vector of lanes, and the block cube roots built on them.
Importing this module registers the symbols with LLVM's JIT, so numba's on-disk cache of the generated
kernels that call them resolves them in a new process."""

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import numba_cache
from .svml_symbols import numpy_symbols

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

SYMBOLS = {"float64": "__svml_cbrt8_ha", "float32": "__svml_cbrtf16"}
LANES = {"float64": 8, "float32": 16}


def addresses() -> dict:
    """{dtype name: address of numpy's SVML cube root} for the symbols numpy exports (empty: none)."""
    return numpy_symbols(SYMBOLS)


_ADDR = addresses()
if not _ADDR:
    raise ImportError("numpy does not export SVML's cube root")
for _dt, _a in _ADDR.items():
    llvm.add_symbol(SYMBOLS[_dt], _a)


def _make(dtype: str):
    lanes = LANES[dtype]
    elem = ir.DoubleType() if dtype == "float64" else ir.FloatType()
    vec = ir.VectorType(elem, lanes)
    symbol = SYMBOLS[dtype]

    @intrinsic
    def cbrt_at(typingctx, x, xo, out, oo):
        """``out[oo:oo + lanes] = svml_cbrt(x[xo:xo + lanes])``."""
        sig = types.void(x, types.intp, out, types.intp)

        def codegen(context, builder, signature, args):
            xa_, xo_, oa_, oo_ = args
            xa = context.make_array(signature.args[0])(context, builder, xa_)
            oa = context.make_array(signature.args[2])(context, builder, oa_)
            px = builder.bitcast(builder.gep(xa.data, [xo_]), vec.as_pointer())
            po = builder.bitcast(builder.gep(oa.data, [oo_]), vec.as_pointer())
            vx = builder.load(px, align=4)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec]), symbol)
            builder.store(builder.call(fn, [vx]), po, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return cbrt_at


BLOCKS = {}

if "float64" in _ADDR:
    _cbrt8_at = _make("float64")

    @numba.njit(nogil=True, cache=True)
    def cbrt_block(x, xo, out, m, pad):
        """``out[:m] = cbrt(x[xo:xo + m])``, float64, with numpy.cbrt's bits (8 lanes at a time; the last
        partial group through ``pad``, 16 values of scratch, padded with ones)."""
        j = 0
        while j + 8 <= m:
            _cbrt8_at(x, xo + j, out, j)
            j += 8
        if j < m:
            for q in range(8):
                pad[q] = x[xo + j + q] if j + q < m else 1.0
            _cbrt8_at(pad, 0, pad, 8)
            for q in range(m - j):
                out[j + q] = pad[8 + q]

    BLOCKS["float64"] = cbrt_block

if "float32" in _ADDR:
    _cbrtf16_at = _make("float32")

    @numba.njit(nogil=True, cache=True)
    def cbrt_block_f32(x, xo, out, m, pad):
        """``out[:m] = cbrt(x[xo:xo + m])``, float32, with numpy.cbrt's bits (16 lanes at a time; ``pad``: 32
        values of scratch)."""
        j = 0
        while j + 16 <= m:
            _cbrtf16_at(x, xo + j, out, j)
            j += 16
        if j < m:
            for q in range(16):
                pad[q] = x[xo + j + q] if j + q < m else numba.float32(1.0)
            _cbrtf16_at(pad, 0, pad, 16)
            for q in range(m - j):
                out[j + q] = pad[16 + q]

    BLOCKS["float32"] = cbrt_block_f32
