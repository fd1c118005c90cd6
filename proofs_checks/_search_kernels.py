"""numba kernel of :mod:`proofs_checks.search` (imported only where numba is installed): scipy's
differential-evolution sample selection for a whole generation, drawing from the solver's PCG64
stream through the bit generator's C ``next_uint32`` (its address is an argument, so the compiled
kernel is cached on disk and reused by every process)."""

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def _next_uint32(typingctx, fn, state):
    """``((uint32_t (*)(void *)) fn)(state)``: the bit generator's ``next_uint32`` on its state."""
    sig = types.uint32(types.uintp, types.uintp)

    def codegen(context, builder, signature, args):
        fa, st = args
        vp = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [vp])
        return builder.call(builder.inttoptr(fa, fnty.as_pointer()), [builder.inttoptr(st, vp)])

    return sig, codegen


@numba.njit(nogil=True, cache=True)
def select_many(fn, st, idx, candidates, k, out):
    """For each candidate: shuffle ``idx`` in place as ``Generator.shuffle`` does (from the end,
    ``j = random_interval(i)``: the smallest bit mask >= i applied to ``next_uint32`` words until the
    value is <= i), then keep the first ``k`` of ``idx[:k + 1]`` that are not the candidate (scipy's
    ``_select_samples``)."""
    n = idx.shape[0]
    one = np.uint64(1)
    for s in range(candidates.shape[0]):
        for i in range(n - 1, 0, -1):
            mask = np.uint64(i)
            mask |= mask >> one
            mask |= mask >> np.uint64(2)
            mask |= mask >> np.uint64(4)
            mask |= mask >> np.uint64(8)
            mask |= mask >> np.uint64(16)
            mask |= mask >> np.uint64(32)
            v = np.uint64(_next_uint32(fn, st)) & mask
            while v > np.uint64(i):
                v = np.uint64(_next_uint32(fn, st)) & mask
            j = np.int64(v)
            t = idx[i]
            idx[i] = idx[j]
            idx[j] = t
        c = candidates[s]
        m = 0
        for q in range(k + 1):
            if idx[q] != c and m < k:
                out[s, m] = idx[q]
                m += 1
