"""numba side of :mod:`lptheory._svml` (imported only where numba is installed and numpy exports
``__svml_pow8_ha``): the intrinsic calling it on 8 float64 lanes, and the block power built on it.
Importing this module registers the symbol with LLVM's JIT, so numba's on-disk cache of the
generated kernels that call it resolves it in a new process."""

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._svml import _SYMBOL, _address

_ADDR = _address()
if _ADDR is None:
    raise ImportError(f"numpy does not export {_SYMBOL}")
llvm.add_symbol(_SYMBOL, _ADDR)
_V8 = ir.VectorType(ir.DoubleType(), 8)
_I32 = ir.IntType(32)


@intrinsic
def pow8_at(typingctx, x, xo, y, out, oo):
    """``out[oo:oo + 8] = __svml_pow8_ha(x[xo:xo + 8], y)`` (float64 arrays, float64 y)."""
    sig = types.void(x, types.intp, types.float64, out, types.intp)

    def codegen(context, builder, signature, args):
        xa_, xo_, y_, oa_, oo_ = args
        xa = context.make_array(signature.args[0])(context, builder, xa_)
        oa = context.make_array(signature.args[3])(context, builder, oa_)
        px = builder.bitcast(builder.gep(xa.data, [xo_]), _V8.as_pointer())
        po = builder.bitcast(builder.gep(oa.data, [oo_]), _V8.as_pointer())
        vx = builder.load(px, align=8)
        vy = builder.insert_element(ir.Constant(_V8, ir.Undefined), y_, ir.Constant(_I32, 0))
        vy = builder.shuffle_vector(vy, ir.Constant(_V8, ir.Undefined), ir.Constant(ir.VectorType(_I32, 8), [0] * 8))
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_V8, [_V8, _V8]), _SYMBOL)
        builder.store(builder.call(fn, [vx, vy]), po, align=8)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(nogil=True, cache=True)
def pow_block(x, xo, y, out, m, pad):
    """``out[:m] = x[xo:xo + m] ** y`` with numpy.power's bits (SVML, 8 lanes at a time; the last
    partial group through ``pad``, 16 float64 of scratch, padded with ones)."""
    j = 0
    while j + 8 <= m:
        pow8_at(x, xo + j, y, out, j)
        j += 8
    if j < m:
        for q in range(8):
            pad[q] = x[xo + j + q] if j + q < m else 1.0
        pow8_at(pad, 0, y, pad, 8)
        for q in range(m - j):
            out[j + q] = pad[8 + q]
