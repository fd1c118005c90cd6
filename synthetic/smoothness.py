"""Empirical lower bounds on the l_p smoothness constant L_p of a problem.

Every number returned is a ratio ||grad f(x) - grad f(y)||_{p*} / ||x - y||_p actually evaluated at a
pair (x, y) (or ||H v||_{p*} / ||v||_p for a constant Hessian H), hence a valid lower bound on L_p;
the search only decides which pairs to evaluate:

* constant Hessian (quadratics): a nonlinear power iteration for the bilinear form
  max u^T H v over ||u||_p, ||v||_p <= 1 (alternating u <- J(H v), v <- J(H u), with J the l_p duality
  map), from several random starts; it increases the objective monotonically;
* otherwise: the same power iteration on finite-difference Hessian-vector products
  (grad f(x + h v) - grad f(x)) / h at random base points, with the ratio of the last pair as the
  bound, plus random pairs at several distances.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from lptheory import config, validate
from lptheory.geometry import dual_exponent, lp_norm

__all__ = [
    "estimate_smoothness",
    "constant_hessian_pair",
    "duality_map",
    "bilinear_power_iteration",
    "small_lp_norm",
    "two_sided_nelder_mead",
    "circle_argmax",
    "circle_refine",
    "quad_forms",
    "pair_ratios",
    "steepest_step_objective",
]


def _route(y: float, norm: bool = False):
    """numpy's route for ``array ** y`` that :mod:`synthetic._smooth_kernel` reproduces (``norm``: lp_norm's
    fast paths for the power p of its sum), or None (no route with numpy's bits: numpy is used)."""
    from . import _smooth_kernel as K

    if y == 2.0:
        return K.SQUARE
    if norm and y == 1.5:
        return K.X_SQRT_X
    if norm and y == 3.0:
        return K.CUBE
    if y == 0.5 and not norm:
        return K.SQRT
    from lptheory.numpy_power import agrees

    return K.SVML if agrees(y) else None


_ROUTES: dict = {}
_KERNEL_OFF = config.kernel_off("LPTHEORY_SMOOTH_KERNEL")


def _duality_kernel(p: float):
    """(kernel module, exponent q - 1 and its route, route of p in lp_norm, route of 1/p) or None."""
    if _KERNEL_OFF:
        return None
    got = _ROUTES.get(p, False)
    if got is False:
        got = None
        try:
            from . import _smooth_kernel as K
        except ImportError:
            K = None
        if K is not None and 2.0 <= p < math.inf:
            q = dual_exponent(p)
            e1 = q - 1.0
            r1, rp, ri = _route(e1), _route(p, norm=True), (K.SQRT if p == 2.0 else _route(1.0 / p))
            if None not in (r1, rp, ri):
                got = (K, e1, r1, rp, ri)
        if len(_ROUTES) > 256:
            _ROUTES.clear()
        _ROUTES[p] = got
    return got


def small_lp_norm(x: np.ndarray, p: float):
    """``lp_norm(x, p)`` of a small finite 1-D float64 vector (p in [2, inf)), with its bits, from one compiled
    call where :mod:`synthetic._smooth_kernel` reproduces numpy's route at p (for inner loops calling it
    ~1e5 times on vectors of a few entries); lp_norm itself otherwise."""
    k = _duality_kernel(p)
    if k is not None and isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype == np.float64 and 0 < x.size <= 128:
        K, _, _, rp, _ = k
        v = K.norm_1d(x, float(p), rp, np.empty(16), np.empty(x.size))
        if v == v:
            return np.float64(v)
    return lp_norm(x, p)


def circle_argmax(U: np.ndarray, H: np.ndarray, p: float):
    """``(i, val[i])`` with ``val = abs(einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2`` and ``i = argmax(val)``
    for points U (n, 2) and a 2x2 H (the dense grid of the two-sided constant of Assumption 1,
    :func:`proofs_checks.stacey.smoothness.two_sided_constant`), bit for bit from one compiled call; None where
    that route does not apply (the caller computes it with numpy)."""
    k = _duality_kernel(p)
    if k is None or not (isinstance(U, np.ndarray) and isinstance(H, np.ndarray)):
        return None
    if U.dtype != np.float64 or H.dtype != np.float64 or U.ndim != 2 or U.shape[1] != 2 or H.shape != (2, 2):
        return None
    if U.shape[0] == 0:
        return None
    K, _, _, rp, ri = k
    if not _probed_once(_CIRCLE_OK, p, _circle_probe, K, float(p), rp, ri):
        return None
    i, v = K.circle_argmax(np.ascontiguousarray(U), H, float(p), rp, 1.0 / p, ri, np.empty(16))
    return None if i < 0 else (int(i), float(v))


def circle_refine(c: float, w: float, passes: int, H: np.ndarray, p: float, n: int = 2001):
    """The maxima of :func:`circle_argmax` over ``passes`` refined grids, each ``linspace(c - 2 w, c + 2 w, n)``
    around the previous pass's best angle c with w its grid step (the refinement of
    :func:`proofs_checks.stacey.smoothness.two_sided_constant`), from one compiled call
    (:func:`synthetic._smooth_kernel.circle_refine`): numpy's linspace, cos and sin (the probe :func:`_refine_probe`
    compares them, and the passes' maxima, with numpy's once per p) and circle_argmax's bits. A list of the passes'
    maxima, or None where the route does not apply (the caller's numpy). two_sided_constant(H, p, grid=2000) (its
    first grid, then these two passes) measured 164-190 -> 129-140 us of CPU; the smoothness check's differential
    evolution asks ~3750."""
    k = _duality_kernel(p)
    if k is None or not (isinstance(H, np.ndarray) and H.dtype == np.float64 and H.shape == (2, 2)) or n < 2:
        return None
    K, _, _, rp, ri = k
    if not (math.isfinite(c) and math.isfinite(w)) or not _probed_once(
        _REFINE_OK, p, _refine_probe, K, float(p), rp, ri
    ):
        return None
    vals = np.empty(passes)
    if not K.circle_refine(
        float(c), float(w), int(passes), H, float(p), rp, 1.0 / p, ri, np.empty(16), np.empty(n), np.empty((n, 2)), vals
    ):
        return None
    return vals.tolist()


def _probed_once(memo: dict, key, probe, *args) -> bool:
    """Whether a compiled route agreed with numpy at ``key`` (a p or a d): ``probe(*args)`` run once per key and
    process, its answer kept in ``memo`` (at most 256 keys); a probe that raises (a compile error) is a
    disagreement, so the caller keeps numpy."""
    ok = memo.get(key)
    if ok is None:
        try:
            ok = bool(probe(*args))
        except Exception:  # a compile error: numpy then
            ok = False
        if len(memo) > 256:
            memo.clear()
        memo[key] = ok
    return ok


_REFINE_OK: dict = {}  # p -> the compiled circle_refine agreed with numpy at p (checked once per p)


def _refine_probe(K, p: float, rp, ri) -> bool:
    """The compiled ``circle_refine`` of ``K`` gives numpy's grids and maxima at p: for random 2x2 H and centers
    (and a zero step), the buffers after one pass against ``linspace`` and ``stack([cos, sin])``, and two passes'
    maxima against the numpy loop of circle_argmax on those grids."""
    rng = np.random.default_rng([20261129, 7, int(p * 1000)])
    n = 2001
    for k in range(8):
        x = rng.uniform(-1, 1, 3)
        H = np.array([[x[0], x[1]], [x[1], x[2]]]) * 10.0 ** rng.uniform(-3, 3)
        c, w = float(rng.uniform(0, np.pi)), (np.pi / 2000, 1e-7, 0.0, 2.5e-3)[k % 4]
        th, U, vals = np.empty(n), np.empty((n, 2)), np.empty(2)
        if not K.circle_refine(c, w, 1, H, p, rp, 1.0 / p, ri, np.empty(16), th, U, vals):
            return False
        want = np.linspace(c - 2 * w, c + 2 * w, n)
        if th.tobytes() != want.tobytes() or U.tobytes() != np.stack([np.cos(want), np.sin(want)], axis=1).tobytes():
            return False
        if not K.circle_refine(c, w, 2, H, p, rp, 1.0 / p, ri, np.empty(16), th, U, vals):
            return False
        tw, cw = w, c
        for j in range(2):
            g = np.linspace(cw - 2 * tw, cw + 2 * tw, n)
            Ug = np.stack([np.cos(g), np.sin(g)], axis=1)
            val = np.abs(np.einsum("ni,ij,nj->n", Ug, H, Ug)) / lp_norm(Ug, p) ** 2
            i = int(np.argmax(val))
            if np.float64(vals[j]).tobytes() != val[i].tobytes():
                return False
            tw, cw = g[1] - g[0], g[i]
    return True


_CIRCLE_OK: dict = {}  # p -> the compiled circle_argmax agreed with numpy at p (checked once per p)


def _circle_probe(K, p: float, rp, ri) -> bool:
    """The compiled ``circle_argmax`` of ``K`` returns numpy's argmax and value (einsum's three-operand sum,
    lp_norm, ``** 2``) at p: random 2x2 H on a grid of the whole half circle and on a narrow window, at
    several scales; a numpy change of einsum's or lp_norm's order then turns the route off instead of
    changing bits unnoticed."""
    rng = np.random.default_rng(20261125)
    for k in range(12):
        x = rng.uniform(-1, 1, 3)
        H = np.array([[x[0], x[1]], [x[1], x[2]]]) if k % 3 else rng.standard_normal((2, 2))
        c = rng.uniform(0, 3)
        th = np.linspace(0.0, np.pi, 400, endpoint=False) if k % 2 else np.linspace(c - 0.01, c + 0.01, 301)
        U = np.stack([np.cos(th), np.sin(th)], axis=1) * (1.0, 1e-5, 3e4)[k % 3]
        val = np.abs(np.einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2
        i = int(np.argmax(val))
        j, v = K.circle_argmax(U, H, p, rp, 1.0 / p, ri, np.empty(16))
        if j != i or np.float64(v).tobytes() != val[i].tobytes():
            return False
    return True


def pair_ratios(u: np.ndarray, H: np.ndarray, v: np.ndarray, p: float):
    """``einsum("ni,ij,nj->n", u, H, v) / (lp_norm(u, p) * lp_norm(v, p))``, the bilinear form's ratio at each row
    pair (the power iteration's estimates of ||H||_{p->p*},
    :func:`proofs_checks.stacey.smoothness.lipschitz_constant`), bit for bit from one compiled call
    (:func:`synthetic._smooth_kernel.pair_ratios`) once a probe at p agreed with numpy (:func:`_pair_probe`, once
    per p); None where that route does not apply (the caller computes it with numpy). The differential evolution
    of the smoothness check asks for ~6000 of them on 6 rows: a lipschitz_constant of 6 starts and 40 sweeps
    measured 84-111 -> 47-53 us of CPU (the power iteration itself ~40 us)."""
    k = _duality_kernel(p)
    arrays = (u, H, v)
    if k is None or not all(type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 2 for a in arrays):
        return None
    n, d = u.shape
    if not (all(a.flags.c_contiguous for a in arrays) and v.shape == (n, d) and H.shape == (d, d) and 1 <= d <= 64):
        return None
    K, _, _, rp, ri = k
    if not _probed_once(_PAIR_OK, p, _pair_probe, K, float(p), rp, ri):
        return None
    out = np.empty(u.shape[0])
    if not K.pair_ratios(u, H, v, float(p), rp, 1.0 / p, ri, np.empty(16), out):
        return None
    return out


_PAIR_OK: dict = {}  # p -> the compiled pair_ratios agreed with numpy at p (checked once per p)


def _pair_probe(K, p: float, rp, ri) -> bool:
    """The compiled ``pair_ratios`` of ``K`` gives numpy's bits at p: rows of d = 2..6 (and 12), 1 to 40 rows, at
    several scales, with zero rows; a numpy change of einsum's, lp_norm's or the power's route then turns the
    route off instead of changing bits unnoticed."""
    rng = np.random.default_rng([20261129, int(p * 1000)])
    for k in range(12):
        d, n = (2, 3, 4, 5, 6, 12)[k % 6], (1, 6, 8, 40)[k % 4]
        u = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-5, 5, (n, 1))
        v = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-5, 5)
        H = rng.standard_normal((d, d))
        if k % 3 == 0:
            H = (H + H.T) / 2
            u[0] = 0.0
        with np.errstate(all="ignore"):
            want = np.einsum("ni,ij,nj->n", u, H, v) / (lp_norm(u, p) * lp_norm(v, p))
        got = np.empty(n)
        if not K.pair_ratios(u, H, v, p, rp, 1.0 / p, ri, np.empty(16), got) or got.tobytes() != want.tobytes():
            return False
    return True


def quad_forms(U: np.ndarray, H: np.ndarray, V: np.ndarray | None = None) -> np.ndarray:
    """``np.einsum("ni,ij,nj->n", U, H, V)`` (V = U when not given): the quadratic or bilinear form of each row
    pair, with numpy's bits, from one compiled pass (:func:`synthetic._smooth_kernel.quad_forms`) for C-contiguous
    float64 rows of d <= 64 columns and at least 256 terms, once a probe at that d agreed with numpy
    (:func:`_quad_probe`, once per d and process); numpy's einsum itself otherwise. numpy's three-operand einsum is
    a generic nditer loop: 4008 rows of d = 8 measured 0.57 ms there and 0.09 ms compiled, 4003 rows of d = 3
    0.15 and 0.017 ms (process time, medians of 7 x 100 calls)."""
    V = U if V is None else V
    if not (isinstance(U, np.ndarray) and U.ndim == 2 and U.shape[0] * U.shape[1] ** 2 >= 256):
        return np.einsum("ni,ij,nj->n", U, H, V)
    K = _quad_kernel()
    if K is not None and _quad_route(U, H, V):
        d = U.shape[1]
        if _probed_once(_QUAD_OK, d, _quad_probe, K, d):
            out = np.empty(U.shape[0])
            K.quad_forms(U, H, V, out)
            return out
    return np.einsum("ni,ij,nj->n", U, H, V)


_QUAD_OK: dict = {}  # d -> the compiled quad_forms agreed with numpy's einsum at d (checked once per d)


def _quad_kernel():
    """The kernel module for :func:`quad_forms`, or None (numba or numpy's power unavailable, or the smooth
    kernels switched off with ``LPTHEORY_SMOOTH_KERNEL=0``)."""
    if _KERNEL_OFF:
        return None
    try:
        from . import _smooth_kernel as K
    except ImportError:
        return None
    return K


def _quad_route(U, H, V) -> bool:
    """The layouts the compiled :func:`quad_forms` serves: float64 C-contiguous 2-D rows U, V of one shape (n, d),
    1 <= d <= 64, n d^2 >= 256, and a C-contiguous float64 (d, d) H (numpy's einsum may order its loop by the strides:
    other layouts keep numpy)."""
    arrays = (U, H, V)
    if not all(type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 2 for a in arrays):
        return False
    if not all(a.flags.c_contiguous for a in arrays):
        return False
    n, d = U.shape
    return (
        V.shape == (n, d) and H.shape == (d, d) and 1 <= d <= 64 and n * d * d >= 256
    )  # (fewer: numpy's call is as fast)


def _quad_probe(K, d: int) -> bool:
    """The compiled ``quad_forms`` of ``K`` gives the bits of numpy's ``einsum("ni,ij,nj->n", U, H, V)`` at d:
    random rows of mixed scales and signs (and V = U), symmetric and general H, zeros, infinities and NaN; a numpy
    change of einsum's summation order then turns the route off instead of changing bits unnoticed."""
    rng = np.random.default_rng([20261129, d])
    for k in range(6):
        U = rng.standard_normal((97, d)) * 10.0 ** rng.uniform(-6, 6, (97, 1))
        V = U if k % 2 else rng.standard_normal((97, d)) * 10.0 ** rng.uniform(-3, 3, (97, d))
        H = rng.standard_normal((d, d)) * 10.0 ** rng.uniform(-4, 4, (d, d))
        if k == 2:
            H = (H + H.T) / 2
        if k == 3:
            U[0] = 0.0
            U[1, 0], U[2, -1], U[3, 0] = np.inf, -np.inf, np.nan
        want = np.einsum("ni,ij,nj->n", U, H, V)
        got = np.empty(97)
        K.quad_forms(U, H, V, got)
        if got.tobytes() != want.tobytes():
            return False
    return True


def steepest_step_objective(g: np.ndarray, eta: float, p: float):
    """u -> ``float(eta * g @ u + 0.5 * small_lp_norm(u, p) ** 2)``: the objective of the steepest step of
    Section 4.1, argmin_u eta <g, u> + ||u||_p^2 / 2, as a Python float, bit for bit from one compiled call
    (numpy's BLAS dot, lp_norm's bits, libm's pow: :func:`synthetic._nm_kernel.steepest_objective`) where it
    applies, from that numpy expression otherwise."""

    validate.real("eta", eta, lo=0.0, lo_open=True)
    validate.exponent("p", p, lo=2.0, lo_open=False)  # (small_lp_norm's range)

    def ref(u):
        return float(eta * g @ u + 0.5 * small_lp_norm(u, p) ** 2)

    K, k = _nm_kernel(), _duality_kernel(p)
    if K is False or k is None or not (isinstance(g, np.ndarray) and g.dtype == np.float64 and g.ndim == 1):
        return ref
    if not 0 < g.size <= 128:
        return ref
    t, rp, pad, tmp = np.ascontiguousarray(eta * g), k[3], np.empty(16), np.empty(g.size)
    fn, pf = K.steepest_objective, float(p)

    def obj(u):
        if type(u) is np.ndarray and u.dtype == np.float64 and u.shape == t.shape and u.flags.c_contiguous:
            v = fn(u, t, pf, rp, pad, tmp, 2.0)
            if v == v:
                return v
        return ref(u)

    return obj


_NM = None
_NM_LOCK = threading.Lock()


def _nm_kernel():
    """:mod:`synthetic._nm_kernel`, or False where it cannot be imported (no numba, SVML or numpy's OpenBLAS)
    or where its self-check (:func:`_nm_probe`, run on that module before anyone else sees it) fails or raises.
    Published under a lock, once, after the check."""
    global _NM
    NM = _NM
    if NM is None:
        with _NM_LOCK:
            if _NM is None:
                try:
                    from . import _nm_kernel as NM
                except ImportError:
                    NM = False
                if NM is not False:
                    try:
                        ok = _nm_probe(NM)
                    except Exception:  # a compile, link or scipy error: an unchecked kernel is never used
                        ok = False
                    if not ok:
                        NM = False
                _NM = NM
            NM = _NM
    return NM


_TABLES: dict = {}


def _argsort_table(n: int, K=None):
    """:func:`synthetic._nm_kernel.argsort_table` of n (built once; empty where not built: ties go to Python)."""
    t = _TABLES.get(n)
    if t is None:
        t = (_nm_kernel() if K is None else K).argsort_table(n) if n <= 5 else None
        t = _TABLES[n] = t if t is not None else np.full((0, n), -1, dtype=np.int64)
    return t


def _nm_probe(K=None) -> bool:
    """The compiled products of ``K`` (default: the published kernel) equal numpy's (random inputs), and its
    Nelder-Mead run equals this scipy's on a fixed problem (every kind of step, maxfev cut)."""
    from scipy.optimize import minimize

    K = _nm_kernel() if K is None else K
    if K is False:
        return False
    rng = np.random.default_rng(20261124)  # numpy's BLAS is the library the kernels call (products' bits)
    # the sizes production uses: d up to 8 (proofs_checks.stacey.corrections), (starts, d) @ (d, d) with up to
    # 32 starts (proofs_checks.stacey.smoothness, .majorization); OpenBLAS picks its block paths by size
    for d in range(1, 9):
        for i in range(40):
            A, u = rng.standard_normal((d, d)), rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 3)
            if np.float64(K.quad_form(u, A, np.empty(d))).tobytes() != np.float64(u @ A @ u).tobytes():
                return False
            R = (2, 3, 6, 7, 8, 16, 24, 32)[i % 8]
            V = rng.standard_normal((R, d)) * 10.0 ** rng.uniform(-3, 3)
            W = np.empty((R, d))
            if d > 1:
                K.matmul(V, A, W)
                if W.tobytes() != (V @ A).tobytes():
                    return False
    H = np.array([[0.9, -0.4, 0.3], [-0.4, -1.1, 0.2], [0.3, 0.2, 0.5]])
    for x0, fev in ((np.array([0.2, 1.0, -0.7]), 400), (np.array([1.0, 0.0, 0.1]), 57)):
        opts = {"xatol": 1e-10, "fatol": 1e-14, "maxfev": fev}
        ref = minimize(lambda u: -(abs(u @ H @ u) / small_lp_norm(u, 3.0) ** 2), x0, method="Nelder-Mead", options=opts)
        got = two_sided_nelder_mead(H, 3.0, x0, **opts, _K=K)
        if got is None or np.float64(got).tobytes() != np.float64(ref.fun).tobytes():
            return False
    return True


def two_sided_nelder_mead(H: np.ndarray, p: float, x0: np.ndarray, *, xatol: float, fatol: float, maxfev: int, _K=None):
    """``scipy.optimize.minimize(lambda u: -(abs(u @ H @ u) / small_lp_norm(u, p) ** 2), x0, method="Nelder-Mead",
    options={"xatol": xatol, "fatol": fatol, "maxfev": maxfev}).fun`` bit for bit (scipy 1.17's algorithm, numpy's
    BLAS for the quadratic form, lp_norm's bits for the norm), from one compiled call (:mod:`synthetic._nm_kernel`);
    None where the compiled route does not apply (no kernel, no route at p, a non-finite value on the way):
    the caller runs scipy then. Search of :func:`proofs_checks.stacey.smoothness.two_sided_lower` for the
    two-sided constant sup |u^T H u| / ||u||_p^2 of Assumption 1's "equivalent definition". ``_K``: the kernel
    module to run (the self-check passes the one it checks; default: the published one)."""
    maxfev = validate.integer("maxfev", maxfev, lo=1)  # (scipy compares a float maxfev as is: no truncation here)
    K = _nm_kernel() if _K is None else _K
    k = _duality_kernel(p)
    if K is False or k is None or _KERNEL_OFF:
        return None
    if not (isinstance(H, np.ndarray) and H.dtype == np.float64 and H.ndim == 2 and isinstance(x0, np.ndarray)):
        return None
    d = x0.size
    if x0.dtype != np.float64 or x0.ndim != 1 or not 0 < d <= 128 or H.shape != (d, d):
        return None
    if not (math.isfinite(xatol) and math.isfinite(fatol)) or maxfev < d + 1:  # (scipy stops in the start)
        return None
    H = np.ascontiguousarray(H)
    simplex = np.empty((d + 1, d))
    simplex[0] = x0
    values = np.full(d + 1, np.inf)
    st = np.zeros(2, dtype=np.int64)
    rp = k[3]
    table = _argsort_table(d + 1, K)
    while True:
        code = K.nelder_mead(simplex, values, st, H, float(p), rp, float(xatol), float(fatol), maxfev, 2.0, table)
        if code == K.DONE:
            return np.min(values)
        if code != K.NEED_SORT:
            return None
        ind = np.argsort(values)  # a tie: numpy's order (its quicksort is not stable)
        simplex[:] = np.take(simplex, ind, 0)
        values[:] = np.take(values, ind, 0)


def duality_map(w: np.ndarray, p: float) -> np.ndarray:
    """J_p(w) = argmax_{||u||_p <= 1} <u, w> = sgn(w)|w|^{q-1} / ||w||_q^{q-1}, q = p* (rows of w).
    Small 2-D float64 arrays go through one compiled call with the same bits (:mod:`synthetic._smooth_kernel`)."""
    if isinstance(w, np.ndarray) and w.ndim == 2 and w.dtype == np.float64 and 0 < w.shape[1] <= 128:
        k = _duality_kernel(p)
        if k is not None and w.size < 32768:  # (larger arrays: lp_norm's own one-pass kernel, same bits)
            K, e1, r1, rp, ri = k
            out = np.empty(w.shape)
            norms = np.empty(w.shape[0])
            if K.duality_rows(np.ascontiguousarray(w), e1, r1, float(p), rp, 1.0 / p, ri, out, norms, np.empty(16)):
                return out
    return _duality_map_numpy(w, p)


def _duality_map_numpy(w: np.ndarray, p: float) -> np.ndarray:
    """:func:`duality_map` in numpy (the reference of the compiled route)."""
    q = dual_exponent(p)
    if math.isinf(p):
        u = np.sign(w)
    elif q == 1.0:
        u = np.sign(w)
    else:
        scale = np.maximum.reduce(np.abs(w), axis=-1, keepdims=True)  # = np.max, less overhead
        scale = np.where(scale > 0, scale, 1.0)
        u = np.sign(w) * np.abs(w / scale) ** (q - 1.0)
    n = lp_norm(u, p)[..., None]
    return u / np.where(n > 0, n, 1.0)


def _apply_H(H, v):
    return v * H if H.ndim == 1 else v @ H


def bilinear_power_iteration(H, p: float, v, iters: int):
    """Alternate u <- J(H v), v <- J(H u) (J the l_p duality map) from the rows of ``v``: each sweep
    does not decrease u^T H v over ||u||_p, ||v||_p <= 1. ``H`` is a matrix or a diagonal (1-D).
    Returns the final (u, v), rows of unit l_p norm. A small square H and small float64 rows run as one
    compiled call with the same bits (numpy's BLAS product and the compiled duality map). The power method
    for l_p norms of Boyd 1974 (Linear Algebra Appl. 9) and Higham 1992 (Numer. Math. 62)."""
    iters = validate.integer("iters", iters, lo=1)  # (both routes: the compiled one would truncate a float)
    got = _power_iteration_compiled(H, p, v, iters)
    if got is not None:
        return got
    for _ in range(iters):
        u = duality_map(_apply_H(H, v), p)
        v = duality_map(_apply_H(H, u), p)
    return u, v


def _power_iteration_compiled(H, p, v, iters):
    """(u, v) of :func:`bilinear_power_iteration` from :func:`synthetic._nm_kernel.power_iteration`, or None."""
    if not (isinstance(H, np.ndarray) and isinstance(v, np.ndarray)):
        return None
    if H.dtype != np.float64 or v.dtype != np.float64:
        return None
    if H.ndim != 2 or v.ndim != 2 or iters < 1:
        return None
    R, d = v.shape
    if H.shape != (d, d) or not (2 <= d <= 128 and 2 <= R and v.size < 32768):  # (duality_map's compiled range)
        return None
    k = _duality_kernel(p)
    NM = _nm_kernel()
    if k is None or NM is False:
        return None
    _, e1, r1, rp, ri = k
    vv = np.array(v, order="C")
    u = np.empty((R, d))
    if NM.power_iteration(np.ascontiguousarray(H), vv, int(iters), e1, r1, float(p), rp, 1.0 / p, ri, u):
        return u, vv
    return None


def constant_hessian_pair(H, p: float, *, rng, starts: int = 16, iters: int = 60):
    """(value, v): the best ratio ||H v||_{p*} / ||v||_p found by the power iteration from ``starts``
    random rows, and the explicit v attaining it (a lower bound on ||H||_{p->p*} with its witness)."""
    q = dual_exponent(p)
    d = H.shape[0]
    _, v = bilinear_power_iteration(H, p, duality_map(rng.standard_normal((starts, d)), p), iters)
    r = lp_norm(_apply_H(H, v), q) / lp_norm(v, p)
    i = int(np.argmax(r))
    return float(r[i]), v[i]


def estimate_smoothness(
    problem, p: float, *, starts: int = 16, iters: int = 60, pairs: int = 256, seed: int = 0, h: float = 1e-4
) -> float:
    """An empirical lower bound on L_p for ``problem`` (see the module docstring). p in [2, inf]."""
    p = validate.exponent("p", p, lo=2.0, lo_open=False)
    starts = validate.integer("starts", starts, lo=1)
    iters = validate.integer("iters", iters, lo=1)
    q = dual_exponent(p)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    d = problem.d
    H = getattr(problem, "hessian_constant", None)
    best = 0.0
    if H is not None:
        return constant_hessian_pair(np.asarray(H), p, rng=rng, starts=starts, iters=iters)[0]
    x0 = np.asarray(problem.x0(), dtype=np.float64)
    scales = np.array([0.1, 0.5, 1.0, 2.0, 3.0])
    base = x0 + rng.standard_normal((starts, d)) * scales[np.arange(starts) % scales.size, None]
    g0 = problem.grad(base)

    def hvp(v):
        return (problem.grad(base + h * v) - g0) / h

    v = duality_map(rng.standard_normal((starts, d)), p)
    for _ in range(iters):
        u = duality_map(hvp(v), p)
        v = duality_map(hvp(u), p)
        # exact ratio at the pair (base, base + h v): a valid lower bound whatever the iteration does
        num = lp_norm(problem.grad(base + h * v) - g0, q)
        best = max(best, float(np.max(num / lp_norm(h * v, p))))
    if pairs:
        x = x0 + rng.standard_normal((pairs, d)) * rng.choice(scales, size=(pairs, 1))
        y = x + rng.standard_normal((pairs, d)) * rng.choice([1e-3, 1e-1, 1.0], size=(pairs, 1))
        ratio = lp_norm(problem.grad(x) - problem.grad(y), q) / lp_norm(x - y, p)
        best = max(best, float(np.max(ratio)))
    return best
