"""numba side of :func:`synthetic.smoothness.two_sided_nelder_mead`: the Nelder-Mead simplex search (Nelder & Mead
1965; the iteration of Lagarias, Reeds, Wright & Wright 1998, standard coefficients) with the stopping rule and
budget of scipy's ``method="Nelder-Mead"`` (scipy 1.17: default coefficients, ``maxfev``, ``xatol``/``fatol``, no
bounds) on ``-|u^T H u| / ||u||_p^2``, in one compiled call per start, with the bits of the scipy/numpy run:

* ``u @ H @ u`` through the same BLAS routines numpy's ``matmul`` calls (``cblas_dgemv`` for ``u @ H``,
  ``cblas_ddot`` for the product with u), found in the OpenBLAS numpy has loaded and called by address;
* ``||u||_p`` by :func:`synthetic._smooth_kernel.norm_1d` (lp_norm's bits), squared by libm's ``pow`` as
  Python's ``** 2`` does;
* the simplex arithmetic in the order of scipy's expressions, element-wise IEEE operations (no contraction into
  FMAs);
* numpy's ``argsort`` where the sort order is not unique (numpy's quicksort is not stable with AVX-512): for up
  to 5 points through :func:`argsort_table` (numpy's own permutation for each pattern of ties, read inside the
  kernel); otherwise (more points, a tie at zero, no table) the kernel returns to Python (``NEED_SORT``), Python
  sorts with numpy and the kernel resumes.

Also the compiled power iteration of :func:`synthetic.smoothness.bilinear_power_iteration` (numpy's matmul through
``cblas_dgemm``) and the steepest-step objective of :func:`synthetic.smoothness.steepest_step_objective`.

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

from lptheory.fast import numba_cache

from ._smooth_kernel import duality_rows, norm_1d

numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

DONE, NEED_SORT, FALLBACK = 0, 1, 2
_DDOT, _DGEMV = "lptheory_numpy_cblas_ddot", "lptheory_numpy_cblas_dgemv"
_DGEMM = "lptheory_numpy_cblas_dgemm"
# CBLAS enumerations
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
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
llvm.add_symbol(_DGEMM, _ADDR[2])
_I64, _I32, _F64 = ir.IntType(64), ir.IntType(32), ir.DoubleType()


def _cblas_call(builder, name, ret, args):
    """Emit a call of the BLAS routine registered as ``name`` (see above) with the LLVM values ``args``: the
    function's type is (types of ``args``) -> ``ret``. Shared code generation of the intrinsics below."""
    fnty = ir.FunctionType(ret, [a.type for a in args])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    return builder.call(fn, args)


def _data(context, builder, signature, args, i):
    """Data pointer of the i-th (array) argument of an intrinsic."""
    return context.make_array(signature.args[i])(context, builder, args[i]).data


@intrinsic
def _ddot(typingctx, n, x, y):
    """cblas_ddot(n, x, 1, y, 1) of numpy's OpenBLAS (C-contiguous float64 x, y)."""
    sig = types.float64(types.intp, x, y)

    def codegen(context, builder, signature, args):
        one = ir.Constant(_I64, 1)
        x_, y_ = (_data(context, builder, signature, args, i) for i in (1, 2))
        return _cblas_call(builder, _DDOT, _F64, [args[0], x_, one, y_, one])

    return sig, codegen


@intrinsic
def _dgemv(typingctx, order, trans, m, n, a, lda, x, y):
    """cblas_dgemv(order, trans, m, n, 1.0, a, lda, x, 1, 0.0, y, 1) of numpy's OpenBLAS."""
    sig = types.void(types.intp, types.intp, types.intp, types.intp, a, types.intp, x, y)

    def codegen(context, builder, signature, args):
        o_, t_, m_, n_, _, lda_, _, _ = args
        a_, x_, y_ = (_data(context, builder, signature, args, i) for i in (4, 6, 7))
        one, alpha, beta = ir.Constant(_I64, 1), ir.Constant(_F64, 1.0), ir.Constant(_F64, 0.0)
        order32, trans32 = builder.trunc(o_, _I32), builder.trunc(t_, _I32)
        _cblas_call(builder, _DGEMV, ir.VoidType(), [order32, trans32, m_, n_, alpha, a_, lda_, x_, one, beta, y_, one])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _dgemm(typingctx, m, n, k, a, b, c):
    """cblas_dgemm(RowMajor, NoTrans, NoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n) of numpy's OpenBLAS: what
    numpy's matmul calls for C-contiguous (m, k) @ (k, n) (c = a @ b)."""
    sig = types.void(types.intp, types.intp, types.intp, a, b, c)

    def codegen(context, builder, signature, args):
        m_, n_, k_ = args[:3]
        a_, b_, c_ = (_data(context, builder, signature, args, i) for i in (3, 4, 5))
        row_major, no_trans = ir.Constant(_I32, ROW_MAJOR), ir.Constant(_I32, NO_TRANS)
        alpha, beta = ir.Constant(_F64, 1.0), ir.Constant(_F64, 0.0)
        _cblas_call(
            builder,
            _DGEMM,
            ir.VoidType(),
            [row_major, no_trans, no_trans, m_, n_, k_, alpha, a_, k_, b_, n_, beta, c_, n_],
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
    is updated in place, u written to ``u_out``. False on a non-finite value (numpy then, from the start).
    The power method for l_p operator norms: Boyd 1974, "The power method for l^p norms", Linear Algebra
    Appl. 9 (alternating duality maps, monotone in u^T H v); Higham 1992, "Estimating the matrix p-norm",
    Numer. Math. 62 (its use as a lower-bound estimator from several starts)."""
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
def _sort(simplex, values, table):
    """Sort the simplex by value as ``numpy.argsort`` + ``take`` does (returns 1): directly when the values are
    distinct (one sorted order), through ``table`` on a tie (numpy's permutation for each pattern of ties,
    see :func:`argsort_table`; an empty table: 0, Python sorts with numpy); -1 on a non-finite value."""
    n = values.size
    ties = False
    for i in range(n):
        if not np.isfinite(values[i]):
            return -1
        for j in range(i):
            if values[i] == values[j]:
                ties = True
    if ties:
        if table.shape[0] != n**n or table.shape[1] != n:
            return 0
        code = 0
        mul = 1
        for i in range(n):
            if values[i] == 0.0:  # (-0.0 and 0.0: left to numpy)
                return 0
            r = 0  # dense rank: how many distinct values lie below values[i]
            for j in range(n):
                if values[j] < values[i]:
                    first = True
                    for k in range(j):
                        if values[k] == values[j]:
                            first = False
                            break
                    if first:
                        r += 1
            code += r * mul
            mul *= n
        if table[code, 0] < 0:
            return 0
        f2 = values.copy()
        s2 = simplex.copy()
        for k in range(n):
            q = table[code, k]
            values[k] = f2[q]
            for c in range(simplex.shape[1]):
                simplex[k, c] = s2[q, c]
        return 1
    for i in range(1, n):  # insertion sort (values distinct: the one sorted order)
        j = i
        while j > 0 and values[j - 1] > values[j]:
            values[j - 1], values[j] = values[j], values[j - 1]
            for k in range(simplex.shape[1]):
                simplex[j - 1, k], simplex[j, k] = simplex[j, k], simplex[j - 1, k]
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


# Coefficients of the standard Nelder-Mead (Lagarias, Reeds, Wright & Wright 1998, eq. (2.1)): reflection rho = 1,
# expansion chi = 2, contraction gamma = 1/2, shrink sigma = 1/2. Trial points lie on the line from the worst vertex
# w through the centroid c of the others, x(t) = (1 + t) c - t w: reflection t = rho, expansion t = rho chi, outside
# contraction t = rho gamma, inside contraction t = -gamma. Written as (1 + t) c - t w, each is the expression (and
# so the rounding) of scipy's run, whose bits these runs must have; t w is exact for t = 1 and (1 - gamma) c + gamma w
# equals (1 - gamma) c - (-gamma) w bit for bit (a - b is a + (-b) in IEEE arithmetic).
T_REFLECT, T_EXPAND, T_OUTSIDE, T_INSIDE, SIGMA = 1.0, 2.0, 0.5, -0.5, 0.5
# The starting simplex (scipy's, so that the runs start from the same points): vertex k + 1 is x0 with coordinate k
# multiplied by 1 + 5 %, or set to 0.00025 where that coordinate of x0 is zero.
START_SCALE, START_AT_ZERO = 1 + 0.05, 0.00025


@numba.njit(cache=True, nogil=True, inline="always")
def _on_line(out, centre, simplex, worst, t):
    """out = (1 + t) * centre - t * simplex[worst], element by element (see the coefficients above)."""
    for k in range(out.size):
        out[k] = (1.0 + t) * centre[k] - t * simplex[worst, k]


@numba.njit(cache=True, nogil=True, inline="always")
def _take(simplex, values, worst, x, fx):
    """Replace the worst vertex by x (value fx)."""
    for k in range(x.size):
        simplex[worst, k] = x[k]
    values[worst] = fx


@numba.njit(cache=True, nogil=True, error_model="numpy")  # x / 0: inf or NaN, as numpy
def nelder_mead(simplex, values, st, H, p, rp, xatol, fatol, maxfev, two, table):
    """Nelder-Mead simplex search (Nelder & Mead 1965, "A simplex method for function minimization", Comput. J. 7;
    the iteration as stated by Lagarias, Reeds, Wright & Wright 1998, SIAM J. Optim. 9, Algorithm NM of Section 2,
    standard coefficients, no adaptive ones) minimizing :func:`objective` from ``simplex[0]`` (x0), with the
    stopping rule and the function-call budget of scipy 1.17's ``method="Nelder-Mead"`` (no bounds, maxiter
    unset): it stops when every vertex lies within ``xatol`` of the best (max norm) and every value within
    ``fatol`` of the best, or when ``maxfev`` calls are spent (a call the budget forbids is not made, the step
    stops there, and the simplex is ordered once more), and it returns scipy's bits.

    ``st`` = [stage, function calls]: stage 0 = start, 1 = after the first ordering (scipy orders the start
    twice: on ties the second sort may permute again), 2 = in the loop; ``table``: :func:`argsort_table` of
    d + 1 points (or empty). Returns DONE (``values`` final), NEED_SORT (a tie the table does not cover:
    Python orders ``simplex``/``values`` with numpy.argsort and calls again) or FALLBACK (a non-finite value:
    run scipy instead)."""
    d = simplex.shape[1]
    w = d  # the worst vertex after ordering; d - 1 the second worst, 0 the best
    pad = np.empty(16)
    tmp = np.empty(d)
    t = np.empty(d)
    x = np.empty(d)
    centre = np.empty(d)
    x_refl = np.empty(d)
    stage = st[0]
    calls = st[1]
    if stage == 0:
        for k in range(d):
            for j in range(d):
                simplex[k + 1, j] = simplex[0, j]
            simplex[k + 1, k] = START_SCALE * simplex[0, k] if simplex[0, k] != 0 else START_AT_ZERO
        for k in range(d + 1):
            for j in range(d):
                x[j] = simplex[k, j]
            values[k] = objective(x, H, p, rp, pad, tmp, t, two)
            calls += 1
        st[1] = calls
        st[0] = 1
        r = _sort(simplex, values, table)
        if r <= 0:
            return FALLBACK if r < 0 else NEED_SORT
        stage = 1
    if stage == 1:
        st[0] = 2
        r = _sort(simplex, values, table)
        if r <= 0:
            return FALLBACK if r < 0 else NEED_SORT
    while calls < maxfev:
        # stopping rule: the simplex and its values have collapsed onto the best vertex
        spread = 0.0
        for j in range(1, d + 1):
            for k in range(d):
                gap = abs(simplex[j, k] - simplex[0, k])
                if not np.isfinite(gap):
                    return FALLBACK
                if gap > spread:
                    spread = gap
        if spread <= xatol:
            fspread = 0.0
            for j in range(1, d + 1):
                gap = abs(values[0] - values[j])
                if gap > fspread:
                    fspread = gap
            if fspread <= fatol:
                break
        for k in range(d):  # centroid of all vertices but the worst, summed in vertex order
            acc = simplex[0, k]
            for j in range(1, d):
                acc = acc + simplex[j, k]
            centre[k] = acc / d
        _on_line(x_refl, centre, simplex, w, T_REFLECT)
        calls += 1  # (the loop test guarantees the budget allows this call)
        f_refl = objective(x_refl, H, p, rp, pad, tmp, t, two)
        if f_refl != f_refl:
            return FALLBACK
        shrink = False
        if f_refl < values[0]:  # better than the best: try to go twice as far
            if calls < maxfev:
                _on_line(x, centre, simplex, w, T_EXPAND)
                calls += 1
                f_exp = objective(x, H, p, rp, pad, tmp, t, two)
                if f_exp != f_exp:
                    return FALLBACK
                if f_exp < f_refl:
                    _take(simplex, values, w, x, f_exp)
                else:
                    _take(simplex, values, w, x_refl, f_refl)
        elif f_refl < values[w - 1]:  # better than the second worst: keep the reflection
            _take(simplex, values, w, x_refl, f_refl)
        elif calls < maxfev:
            outside = f_refl < values[w]  # contract on the reflected side, or towards the worst vertex
            _on_line(x, centre, simplex, w, T_OUTSIDE if outside else T_INSIDE)
            calls += 1
            f_con = objective(x, H, p, rp, pad, tmp, t, two)
            if f_con != f_con:
                return FALLBACK
            if (f_con <= f_refl) if outside else (f_con < values[w]):
                _take(simplex, values, w, x, f_con)
            else:
                shrink = True
        if shrink:  # every vertex halfway towards the best one
            for j in range(1, d + 1):
                for k in range(d):
                    simplex[j, k] = simplex[0, k] + SIGMA * (simplex[j, k] - simplex[0, k])
                if calls >= maxfev:
                    break
                for k in range(d):
                    x[k] = simplex[j, k]
                calls += 1
                fj = objective(x, H, p, rp, pad, tmp, t, two)
                if fj != fj:
                    return FALLBACK
                values[j] = fj
        st[1] = calls
        r = _sort(simplex, values, table)
        if r <= 0:
            return FALLBACK if r < 0 else NEED_SORT
    st[1] = calls
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
