"""numba side of :mod:`lptheory.fast.svml` (imported only where numba is installed and numpy exports the
SVML powers): intrinsics calling them on one vector of lanes, and the block powers built on them.
Importing this module registers the symbols with LLVM's JIT, so numba's on-disk cache of the
generated kernels that call them resolves them in a new process."""

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import numba_cache
from .svml_symbols import LANES, SYMBOLS, addresses

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

_ADDR = addresses()
if not _ADDR:
    raise ImportError("numpy does not export SVML's power")
for _dt, _a in _ADDR.items():
    llvm.add_symbol(SYMBOLS[_dt], _a)
_I32 = ir.IntType(32)


def _make(dtype: str):
    lanes = LANES[dtype]
    elem = ir.DoubleType() if dtype == "float64" else ir.FloatType()
    vec = ir.VectorType(elem, lanes)
    nbtype = types.float64 if dtype == "float64" else types.float32
    symbol = SYMBOLS[dtype]

    @intrinsic
    def pow_at(typingctx, x, xo, y, out, oo):
        """``out[oo:oo + lanes] = svml_pow(x[xo:xo + lanes], y)``."""
        sig = types.void(x, types.intp, nbtype, out, types.intp)

        def codegen(context, builder, signature, args):
            xa_, xo_, y_, oa_, oo_ = args
            xa = context.make_array(signature.args[0])(context, builder, xa_)
            oa = context.make_array(signature.args[3])(context, builder, oa_)
            px = builder.bitcast(builder.gep(xa.data, [xo_]), vec.as_pointer())
            po = builder.bitcast(builder.gep(oa.data, [oo_]), vec.as_pointer())
            vx = builder.load(px, align=4)
            vy = builder.insert_element(ir.Constant(vec, ir.Undefined), y_, ir.Constant(_I32, 0))
            zeros = ir.Constant(ir.VectorType(_I32, lanes), [0] * lanes)
            vy = builder.shuffle_vector(vy, ir.Constant(vec, ir.Undefined), zeros)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, vec]), symbol)
            builder.store(builder.call(fn, [vx, vy]), po, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return pow_at


if "float64" in _ADDR:
    _pow8_at = _make("float64")

    @numba.njit(nogil=True, cache=True)
    def pow_block(x, xo, y, out, m, pad):
        """``out[:m] = x[xo:xo + m] ** y``, float64, with numpy.power's bits (8 lanes at a time; the last
        partial group through ``pad``, 16 values of scratch, padded with ones)."""
        j = 0
        while j + 8 <= m:
            _pow8_at(x, xo + j, y, out, j)
            j += 8
        if j < m:
            for q in range(8):
                pad[q] = x[xo + j + q] if j + q < m else 1.0
            _pow8_at(pad, 0, y, pad, 8)
            for q in range(m - j):
                out[j + q] = pad[8 + q]


if "float32" in _ADDR:
    _powf16_at = _make("float32")

    @numba.njit(nogil=True, cache=True)
    def pow_block_f32(x, xo, y, out, m, pad):
        """``out[:m] = x[xo:xo + m] ** y``, float32 (y rounded to float32, as numpy does with a Python
        float), with numpy.power's bits (16 lanes at a time; ``pad``: 32 values of scratch)."""
        yf = numba.float32(y)
        j = 0
        while j + 16 <= m:
            _powf16_at(x, xo + j, yf, out, j)
            j += 16
        if j < m:
            for q in range(16):
                pad[q] = x[xo + j + q] if j + q < m else numba.float32(1.0)
            _powf16_at(pad, 0, yf, pad, 16)
            for q in range(m - j):
                out[j + q] = pad[16 + q]


BLOCKS = {}
if "float64" in _ADDR:
    BLOCKS["float64"] = pow_block
if "float32" in _ADDR:
    BLOCKS["float32"] = pow_block_f32
