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
    ``_select_samples``). The rejection loop is written without a data-dependent branch (a rejected word
    swaps entry i with itself and keeps i): the same words in the same order, 1.7x faster than with the
    branch (rejections, ~25% of the words, mispredicted)."""
    n = idx.shape[0]
    masks = np.empty(max(n, 1), dtype=np.uint64)
    for i in range(n):
        mask = np.uint64(i)
        mask |= mask >> np.uint64(1)
        mask |= mask >> np.uint64(2)
        mask |= mask >> np.uint64(4)
        mask |= mask >> np.uint64(8)
        mask |= mask >> np.uint64(16)
        mask |= mask >> np.uint64(32)
        masks[i] = mask
    for s in range(candidates.shape[0]):
        i = n - 1
        while i > 0:
            v = np.uint64(_next_uint32(fn, st)) & masks[i]
            ok = v <= np.uint64(i)
            j = np.int64(v) if ok else i
            t = idx[i]
            idx[i] = idx[j]
            idx[j] = t
            i -= np.int64(ok)
        c = candidates[s]
        m = 0
        for q in range(k + 1):
            if idx[q] != c and m < k:
                out[s, m] = idx[q]
                m += 1


@numba.njit(nogil=True, cache=True)
def nm_prepare(sims, fs, active, xatol, fatol, rho, chi, psi, idx_out, cand_out):
    """One Nelder-Mead iteration of :func:`proofs_checks.search.nelder_mead` up to the objective call, for
    every active problem: scipy's termination test (max |x_j - x_0| <= xatol and max |f_0 - f_j| <= fatol:
    the problem is made inactive; a NaN difference, from NaN or infinite values, makes the max NaN and the
    test false, as numpy's max does), else the centroid of the N best vertices (summed in order, as numpy's
    ``add.reduce`` over the vertex axis adds them) and the candidates xr, xe, xc, xcc (scipy's formulas,
    the same operations). Returns the number of problems that go on (their indices in ``idx_out``, their
    candidates in ``cand_out``)."""
    B, V, N = sims.shape
    nb = 0
    for b in range(B):
        if not active[b]:
            continue
        dx = 0.0
        for j in range(1, V):
            for q in range(N):
                a = abs(sims[b, j, q] - sims[b, 0, q])
                if a > dx or a != a:  # NaN sticks, as in numpy's max (then the test fails: not converged)
                    dx = a
        df = 0.0
        for j in range(1, V):
            a = abs(fs[b, 0] - fs[b, j])
            if a > df or a != a:  # inf - inf and NaN values: numpy's max gives NaN, so does this
                df = a
        if dx <= xatol and df <= fatol:
            active[b] = False
            continue
        idx_out[nb] = b
        for q in range(N):
            acc = sims[b, 0, q]
            for j in range(1, N):
                acc = acc + sims[b, j, q]
            xbar = acc / N
            w = sims[b, N, q]
            cand_out[nb, 0, q] = (1 + rho) * xbar - rho * w
            cand_out[nb, 1, q] = (1 + rho * chi) * xbar - rho * chi * w
            cand_out[nb, 2, q] = (1 + psi * rho) * xbar - psi * rho * w
            cand_out[nb, 3, q] = (1 - psi) * xbar + psi * w
        nb += 1
    return nb


@numba.njit(nogil=True, cache=True)
def nm_accept(sims, fs, idx, cand, fc, ncalls, maxfev, shrink_out):
    """The rest of the iteration for the problems ``idx`` given their candidates' values ``fc`` (nb, 4):
    scipy's comparisons (reflection, expansion, outside and inside contraction; the expansion and the
    contractions need a second evaluation within ``maxfev``), the accepted point replaces the worst
    vertex; the problems that shrink are returned (``shrink_out``, their count)."""
    nb = idx.shape[0]
    N = sims.shape[2]
    ns = 0
    for i in range(nb):
        b = idx[i]
        fxr, fxe, fxc, fxcc = fc[i, 0], fc[i, 1], fc[i, 2], fc[i, 3]
        f0, fsec, fw = fs[b, 0], fs[b, N - 1], fs[b, N]
        two = (maxfev - ncalls[b]) >= 2
        ncalls[b] += 1
        refl_best = fxr < f0
        refl_mid = (not refl_best) and (fxr < fsec)
        contract = (not refl_best) and (not refl_mid) and two
        if (refl_best and two) or contract:
            ncalls[b] += 1
        take_e = refl_best and two and (fxe < fxr)
        take_r = (refl_best and two and not (fxe < fxr)) or refl_mid
        outside = contract and (fxr < fw)
        take_c = outside and (fxc <= fxr)
        take_cc = contract and not (fxr < fw) and (fxcc < fw)
        if take_e:
            q = 1
        elif take_r:
            q = 0
        elif take_c:
            q = 2
        else:
            q = 3
        if take_e or take_r or take_c or take_cc:
            for t in range(N):
                sims[b, N, t] = cand[i, q, t]
            fs[b, N] = fc[i, q]
        if contract and not take_c and not take_cc:
            shrink_out[ns] = b
            ns += 1
    return ns


@numba.njit(nogil=True, cache=True)
def nm_reorder(sims, fs, idx, ind):
    """Each simplex of ``idx`` in the order ``ind`` (a row per problem: numpy's argsort of its values)."""
    V, N = sims.shape[1], sims.shape[2]
    tmp = np.empty((V, N))
    tf = np.empty(V)
    for i in range(idx.shape[0]):
        b = idx[i]
        for j in range(V):
            tf[j] = fs[b, ind[i, j]]
            for q in range(N):
                tmp[j, q] = sims[b, ind[i, j], q]
        for j in range(V):
            fs[b, j] = tf[j]
            for q in range(N):
                sims[b, j, q] = tmp[j, q]


@numba.njit(nogil=True, cache=True)
def select_batch(fns, sts, idx, which, candidates, k, out):
    """:func:`select_many` for several solvers of one population size in one call: solver ``w`` in
    ``which`` draws from its own generator (``fns[w]``, ``sts[w]``) and shuffles its own index
    ``idx[w]``, its samples in ``out[w]`` (each solver's draws in its own order: the same results)."""
    for w in which:
        select_many(fns[w], sts[w], idx[w], candidates, k, out[w])


@numba.njit(nogil=True, cache=True)
def normalized_weights(x, start, groups, k):
    """``DistributionSpace.decode``'s weights from the raw columns ``x[:, start:start + groups * k]``:
    per group of ``k`` columns, ``|x| / sum |x|`` (the sum added in order from +0.0, as numpy sums fewer
    than 8 terms of a contiguous axis), ``1 / k`` each where the sum is not > 0. The same element-wise
    IEEE operations as the numpy expression, one pass instead of ~8 broadcast ufunc calls."""
    s_rows = x.shape[0]
    w = np.empty((s_rows, groups, k))
    inv = 1.0 / k
    for s in range(s_rows):
        for g in range(groups):
            c0 = start + g * k
            tot = 0.0
            for j in range(k):
                tot += abs(x[s, c0 + j])
            if tot > 0:
                for j in range(k):
                    w[s, g, j] = abs(x[s, c0 + j]) / tot
            else:
                for j in range(k):
                    w[s, g, j] = inv
    return w
