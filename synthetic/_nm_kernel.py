"""numba side of :func:`synthetic.smoothness.two_sided_nelder_mead`: scipy's Nelder-Mead (``method="Nelder-Mead"``,
scipy 1.17's ``_minimize_neldermead``: default coefficients, ``maxfev``, ``xatol``/``fatol``, no bounds) on
``-|u^T H u| / ||u||_p^2`` in one compiled call per start, with the bits of the scipy/numpy run:

* ``u @ H @ u`` through the same BLAS routines numpy's ``matmul`` calls (``cblas_dgemv`` for ``u @ H``,
  ``cblas_ddot`` for the product with u), found in numpy's own OpenBLAS and called by address;
* ``||u||_p`` by :func:`synthetic._smooth_kernel.norm_1d` (lp_norm's bits), squared by libm's ``pow`` as
  Python's ``** 2`` does;
* the simplex arithmetic in numpy's order, element-wise IEEE operations (no contraction into FMAs);
* numpy's ``argsort`` where the sort order is not unique: the kernel returns to Python (``NEED_SORT``) when the
  simplex values hold a tie, Python sorts with numpy and the kernel resumes (numpy's quicksort is not stable
  with AVX-512, so ties are left to it).

Imported only where numba, numpy's SVML power and numpy's ILP64 OpenBLAS symbols are available.
"""

from __future__ import annotations

import ctypes
import glob
import os

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._smooth_kernel import duality_rows, norm_1d

DONE, NEED_SORT, FALLBACK = 0, 1, 2
_DDOT, _DGEMV = "lptheory_numpy_cblas_ddot", "lptheory_numpy_cblas_dgemv"
_NAMES = (
    ("scipy_cblas_ddot64_", "scipy_cblas_dgemv64_", "scipy_cblas_dgemm64_"),
    ("cblas_ddot64_", "cblas_dgemv64_", "cblas_dgemm64_"),
)


def _blas_addresses(libs: str | None = None):
    """(ddot, dgemv, dgemm) addresses in numpy's bundled ILP64 OpenBLAS (the library its matmul calls), or None.

    Only a library already loaded into this process is opened (``RTLD_NOLOAD``: dlopen fails for any other
    file), so a stale or second copy lying in ``numpy.libs`` is never picked up; several loaded copies (which
    one numpy's matmul calls is then unknown) or a platform without ``RTLD_NOLOAD``: None (numpy is used). The
    self-check of :func:`synthetic.smoothness._nm_probe` then compares the products' bits with numpy's at the
    sizes production uses. ``libs``: the folder searched (numpy's ``numpy.libs``; another one in tests)."""
    noload = getattr(os, "RTLD_NOLOAD", None)
    if noload is None:
        return None
    if libs is None:
        libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    found = []
    for so in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
        try:
            lib = ctypes.CDLL(so, mode=noload | os.RTLD_LAZY)
        except OSError:  # not loaded in this process: not numpy's
            continue
        for names in _NAMES:
            try:
                found.append(tuple(ctypes.cast(getattr(lib, nm), ctypes.c_void_p).value for nm in names))
                break
            except AttributeError:
                continue
    return found[0] if len(set(found)) == 1 else None


_ADDR = _blas_addresses()
if _ADDR is None:
    raise ImportError("numpy's ILP64 OpenBLAS symbols not found")
llvm.add_symbol(_DDOT, _ADDR[0])
llvm.add_symbol(_DGEMV, _ADDR[1])
llvm.add_symbol("lptheory_numpy_cblas_dgemm", _ADDR[2])
_I64, _I32, _F64 = ir.IntType(64), ir.IntType(32), ir.DoubleType()
_PF64 = _F64.as_pointer()


@intrinsic
def _ddot(typingctx, n, x, y):
    """cblas_ddot(n, x, 1, y, 1) of numpy's OpenBLAS (C-contiguous float64 x, y)."""
    sig = types.float64(types.intp, x, y)

    def codegen(context, builder, signature, args):
        n_, x_, y_ = args
        xa = context.make_array(signature.args[1])(context, builder, x_)
        ya = context.make_array(signature.args[2])(context, builder, y_)
        fnty = ir.FunctionType(_F64, [_I64, _PF64, _I64, _PF64, _I64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _DDOT)
        one = ir.Constant(_I64, 1)
        return builder.call(fn, [n_, xa.data, one, ya.data, one])

    return sig, codegen


@intrinsic
def _dgemv(typingctx, order, trans, m, n, a, lda, x, y):
    """cblas_dgemv(order, trans, m, n, 1.0, a, lda, x, 1, 0.0, y, 1) of numpy's OpenBLAS."""
    sig = types.void(types.intp, types.intp, types.intp, types.intp, a, types.intp, x, y)

    def codegen(context, builder, signature, args):
        o_, t_, m_, n_, a_, lda_, x_, y_ = args
        aa = context.make_array(signature.args[4])(context, builder, a_)
        xa = context.make_array(signature.args[6])(context, builder, x_)
        ya = context.make_array(signature.args[7])(context, builder, y_)
        fnty = ir.FunctionType(
            ir.VoidType(), [_I32, _I32, _I64, _I64, _F64, _PF64, _I64, _PF64, _I64, _F64, _PF64, _I64]
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, _DGEMV)
        one = ir.Constant(_I64, 1)
        builder.call(
            fn,
            [
                builder.trunc(o_, _I32),
                builder.trunc(t_, _I32),
                m_,
                n_,
                ir.Constant(_F64, 1.0),
                aa.data,
                lda_,
                xa.data,
                one,
                ir.Constant(_F64, 0.0),
                ya.data,
                one,
            ],
        )
        return context.get_dummy_value()

    return sig, codegen


_DGEMM = "lptheory_numpy_cblas_dgemm"


@intrinsic
def _dgemm(typingctx, m, n, k, a, b, c):
    """cblas_dgemm(RowMajor, NoTrans, NoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n) of numpy's OpenBLAS: what
    numpy's matmul calls for C-contiguous (m, k) @ (k, n) (c = a @ b)."""
    sig = types.void(types.intp, types.intp, types.intp, a, b, c)

    def codegen(context, builder, signature, args):
        m_, n_, k_, a_, b_, c_ = args
        aa = context.make_array(signature.args[3])(context, builder, a_)
        ba = context.make_array(signature.args[4])(context, builder, b_)
        ca = context.make_array(signature.args[5])(context, builder, c_)
        fnty = ir.FunctionType(
            ir.VoidType(), [_I32, _I32, _I32, _I64, _I64, _I64, _F64, _PF64, _I64, _PF64, _I64, _F64, _PF64, _I64]
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, _DGEMM)
        i32 = lambda v: ir.Constant(_I32, v)  # noqa: E731
        builder.call(
            fn,
            [
                i32(101),
                i32(111),
                i32(111),
                m_,
                n_,
                k_,
                ir.Constant(_F64, 1.0),
                aa.data,
                k_,
                ba.data,
                n_,
                ir.Constant(_F64, 0.0),
                ca.data,
                n_,
            ],
        )
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def matmul(a, b, c):
    """c = a @ b with numpy's bits (C-contiguous float64 2-D arrays, a: (m, k), b: (k, n), m, k, n > 1)."""
    _dgemm(a.shape[0], b.shape[1], a.shape[1], a, b, c)


@numba.njit(cache=True, nogil=True)
def power_iteration(H, v, iters, e1, r1, p, rp, inv_p, ri, u_out):
    """:func:`synthetic.smoothness.bilinear_power_iteration` for a C-contiguous square H: ``iters`` sweeps
    u <- J(v @ H), v <- J(u @ H) with numpy's matmul (its BLAS call) and the compiled duality map; ``v``
    is updated in place, u written to ``u_out``. False on a non-finite value (numpy then, from the start)."""
    R, d = v.shape
    w = np.empty((R, d))
    norms = np.empty(R)
    pad = np.empty(16)
    for _ in range(iters):
        _dgemm(R, d, d, v, H, w)
        if not duality_rows(w, e1, r1, p, rp, inv_p, ri, u_out, norms, pad):
            return False
        _dgemm(R, d, d, u_out, H, w)
        if not duality_rows(w, e1, r1, p, rp, inv_p, ri, v, norms, pad):
            return False
    return True


# numpy's matmul for (d,) @ (d, d) C-contiguous: vector @ matrix -> gemv(RowMajor, Trans, n = d, m = d, lda = d)
ROW_MAJOR, TRANS = 101, 112


@numba.njit(cache=True, nogil=True)
def quad_form(u, H, t):
    """numpy's ``u @ H @ u`` (1-D u, C-contiguous square H; ``t`` scratch of u's size)."""
    d = u.size
    _dgemv(ROW_MAJOR, TRANS, d, d, H, d, u, t)
    return 0.0 + _ddot(d, t, u)  # numpy's DOUBLE_dot: sum = 0. then += ddot


@numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0: inf or NaN, as numpy
def objective(u, H, p, rp, pad, tmp, t, two):
    """``-(abs(u @ H @ u) / small_lp_norm(u, p) ** 2)`` (``two`` = 2.0 at run time: libm's pow, as Python's
    ``**``); NaN when the norm is not finite."""
    s = quad_form(u, H, t)
    nrm = norm_1d(u, p, rp, pad, tmp)
    if nrm != nrm:
        return np.nan
    return -(abs(s) / nrm**two)


@numba.njit(cache=True, nogil=True)
def _sort(sim, fsim, table):
    """Sort the simplex by value as ``numpy.argsort`` + ``take`` does (returns 1): directly when the values are
    distinct (one sorted order), through ``table`` on a tie (numpy's permutation for each pattern of ties,
    see :func:`argsort_table`; an empty table: 0, Python sorts with numpy); -1 on a non-finite value."""
    n = fsim.size
    ties = False
    for i in range(n):
        if not np.isfinite(fsim[i]):
            return -1
        for j in range(i):
            if fsim[i] == fsim[j]:
                ties = True
    if ties:
        if table.shape[0] != n**n or table.shape[1] != n:
            return 0
        code = 0
        mul = 1
        for i in range(n):
            if fsim[i] == 0.0:  # (-0.0 and 0.0: left to numpy)
                return 0
            r = 0  # dense rank: how many distinct values lie below fsim[i]
            for j in range(n):
                if fsim[j] < fsim[i]:
                    first = True
                    for k in range(j):
                        if fsim[k] == fsim[j]:
                            first = False
                            break
                    if first:
                        r += 1
            code += r * mul
            mul *= n
        if table[code, 0] < 0:
            return 0
        f2 = fsim.copy()
        s2 = sim.copy()
        for k in range(n):
            q = table[code, k]
            fsim[k] = f2[q]
            for c in range(sim.shape[1]):
                sim[k, c] = s2[q, c]
        return 1
    for i in range(1, n):  # insertion sort (values distinct: the one sorted order)
        j = i
        while j > 0 and fsim[j - 1] > fsim[j]:
            fsim[j - 1], fsim[j] = fsim[j], fsim[j - 1]
            for k in range(sim.shape[1]):
                sim[j - 1, k], sim[j, k] = sim[j, k], sim[j - 1, k]
            j -= 1
    return 1


def argsort_table(n: int):
    """numpy.argsort's permutation of n values for every pattern of ties (dense ranks r_i, code sum r_i n^i),
    rows of -1 for codes that are not such a pattern; None when numpy's permutation is not a function of the
    pattern alone here (three representatives of each pattern, positive and negative, disagree). A
    comparison sort's output depends on the comparisons' outcomes only, i.e. on the pattern."""
    import itertools

    table = np.full((n**n, n), -1, dtype=np.int64)
    for ranks in itertools.product(range(n), repeat=n):
        if set(ranks) != set(range(max(ranks) + 1)):
            continue
        a = np.array(ranks, dtype=np.float64)
        perms = [np.argsort(v) for v in (a + 1.0, a * 3.7 - 50.0, -(1e-3 + (max(ranks) - a) * 0.25))]
        if any(not np.array_equal(perms[0], q) for q in perms[1:]):
            return None
        table[sum(r * n**i for i, r in enumerate(ranks))] = perms[0]
    return table


@numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0: inf or NaN, as numpy
def nelder_mead(sim, fsim, st, H, p, rp, xatol, fatol, maxfev, two, table):
    """scipy 1.17's ``_minimize_neldermead`` (adaptive=False, no bounds, maxiter unset: maxfev bounds the run)
    minimizing :func:`objective` from ``sim[0]`` (x0). ``st`` = [stage, function calls]: stage 0 = start,
    1 = after the first sort, 2 = in the loop; ``table``: :func:`argsort_table` of N + 1 (or empty). Returns
    DONE, NEED_SORT (Python sorts ``sim``/``fsim`` with
    numpy.argsort and calls again) or FALLBACK (a non-finite value: run scipy instead)."""
    N = sim.shape[1]
    pad = np.empty(16)
    tmp = np.empty(N)
    t = np.empty(N)
    x = np.empty(N)
    xbar = np.empty(N)
    xr = np.empty(N)
    stage = st[0]
    fcalls = st[1]
    if stage == 0:
        for k in range(N):
            for j in range(N):
                sim[k + 1, j] = sim[0, j]
            if sim[0, k] != 0:
                sim[k + 1, k] = (1 + 0.05) * sim[0, k]
            else:
                sim[k + 1, k] = 0.00025
        for k in range(N + 1):
            for j in range(N):
                x[j] = sim[k, j]
            fsim[k] = objective(x, H, p, rp, pad, tmp, t, two)
            fcalls += 1
        st[1] = fcalls
        st[0] = 1
        r = _sort(sim, fsim, table)
        if r < 0:
            return FALLBACK
        if r == 0:
            return NEED_SORT
        stage = 1
    if stage == 1:
        st[0] = 2
        r = _sort(sim, fsim, table)
        if r < 0:
            return FALLBACK
        if r == 0:
            return NEED_SORT
    while fcalls < maxfev:
        mx = 0.0
        for j in range(1, N + 1):
            for k in range(N):
                a = abs(sim[j, k] - sim[0, k])
                if not np.isfinite(a):
                    return FALLBACK
                if a > mx:
                    mx = a
        if mx <= xatol:
            mf = 0.0
            for j in range(1, N + 1):
                a = abs(fsim[0] - fsim[j])
                if a > mf:
                    mf = a
            if mf <= fatol:
                break
        for k in range(N):
            s = sim[0, k]
            for j in range(1, N):
                s = s + sim[j, k]
            xbar[k] = s / N
        for k in range(N):
            xr[k] = 2.0 * xbar[k] - sim[N, k]
        # every call checks maxfev first, as scipy's wrapper does (raising before the call); here fcalls < maxfev
        fcalls += 1
        fxr = objective(xr, H, p, rp, pad, tmp, t, two)
        if fxr != fxr:
            return FALLBACK
        if fxr < fsim[0]:
            if fcalls < maxfev:
                for k in range(N):
                    x[k] = 3.0 * xbar[k] - 2.0 * sim[N, k]
                fcalls += 1
                fxe = objective(x, H, p, rp, pad, tmp, t, two)
                if fxe != fxe:
                    return FALLBACK
                if fxe < fxr:
                    sim[N, :] = x
                    fsim[N] = fxe
                else:
                    sim[N, :] = xr
                    fsim[N] = fxr
        elif fxr < fsim[N - 1]:
            sim[N, :] = xr
            fsim[N] = fxr
        else:
            doshrink = False
            if fcalls < maxfev:
                if fxr < fsim[N]:
                    for k in range(N):
                        x[k] = 1.5 * xbar[k] - 0.5 * sim[N, k]
                    fcalls += 1
                    fxc = objective(x, H, p, rp, pad, tmp, t, two)
                    if fxc != fxc:
                        return FALLBACK
                    if fxc <= fxr:
                        sim[N, :] = x
                        fsim[N] = fxc
                    else:
                        doshrink = True
                else:
                    for k in range(N):
                        x[k] = 0.5 * xbar[k] + 0.5 * sim[N, k]
                    fcalls += 1
                    fxcc = objective(x, H, p, rp, pad, tmp, t, two)
                    if fxcc != fxcc:
                        return FALLBACK
                    if fxcc < fsim[N]:
                        sim[N, :] = x
                        fsim[N] = fxcc
                    else:
                        doshrink = True
            if doshrink:
                for j in range(1, N + 1):
                    for k in range(N):
                        sim[j, k] = sim[0, k] + 0.5 * (sim[j, k] - sim[0, k])
                    if fcalls >= maxfev:
                        break
                    for k in range(N):
                        x[k] = sim[j, k]
                    fcalls += 1
                    v = objective(x, H, p, rp, pad, tmp, t, two)
                    if v != v:
                        return FALLBACK
                    fsim[j] = v
        st[1] = fcalls
        r = _sort(sim, fsim, table)
        if r < 0:
            return FALLBACK
        if r == 0:
            return NEED_SORT
    st[1] = fcalls
    st[0] = 3
    return DONE


@numba.njit(cache=True, nogil=True, error_model="numpy")
def steepest_objective(u, t, p, rp, pad, tmp, two):
    """``eta * g @ u + 0.5 * small_lp_norm(u, p) ** 2`` with ``t = eta * g``: numpy's ``t @ u`` (0. + cblas_ddot),
    lp_norm's bits for the norm, libm's pow for the square (numpy's scalar power), then numpy's scalar
    product and sum; NaN when the norm is not finite (the caller evaluates in numpy then)."""
    s = 0.0 + _ddot(u.size, t, u)
    nrm = norm_1d(u, p, rp, pad, tmp)
    if nrm != nrm:
        return np.nan
    return s + 0.5 * nrm**two
