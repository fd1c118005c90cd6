"""The compiled Nelder-Mead of the two-sided smoothness search (synthetic._nm_kernel) returns scipy's
``minimize(..., method="Nelder-Mead").fun`` bit for bit: random quadratic forms, tie-ridden simplices (sorted
by numpy), runs cut by maxfev, and a non-finite start that goes back to scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from synthetic import smoothness as S

OPTS = {"xatol": 1e-10, "fatol": 1e-14, "maxfev": 2000}


def _scipy(H, p, x0, **opts):
    f = lambda u: abs(u @ H @ u) / S.small_lp_norm(u, p) ** 2  # noqa: E731  (the search's objective)
    return minimize(lambda u: -f(u), x0, method="Nelder-Mead", options=opts).fun


def _bits(v):
    return np.float64(v).view(np.int64)


def _skip_without_kernel(p):
    if S._nm_kernel() is False or S._duality_kernel(p) is None:
        pytest.skip("no compiled Nelder-Mead here (numba, numpy's SVML power or its OpenBLAS missing)")


def test_quad_form_has_numpys_bits():
    _skip_without_kernel(3.0)
    K = S._nm_kernel()
    rng = np.random.default_rng(3)
    for d in (1, 2, 3, 4, 7):
        for _ in range(2000):
            M = rng.standard_normal((d, d))
            H = (M + M.T) / 2
            u = rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 3)
            assert _bits(K.quad_form(u, H, np.empty(d))) == _bits(u @ H @ u)


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 8.0, 2.7])
def test_compiled_nelder_mead_equals_scipy_bit_for_bit(p):
    _skip_without_kernel(p)
    rng = np.random.default_rng(int(p * 10))
    for _ in range(25):
        d = int(rng.integers(2, 5))
        M = rng.standard_normal((d, d))
        H = (M + M.T) / 2 if rng.random() < 0.7 else M @ M.T / d
        x0 = rng.standard_normal(d)
        got = S.two_sided_nelder_mead(H, p, x0, **OPTS)
        assert got is not None
        assert _bits(got) == _bits(_scipy(H, p, x0, **OPTS))


class _HalfBudget:
    """A planted bug: the compiled run stops at half its maxfev (the bit comparisons below must notice)."""

    def __init__(self, K):
        self.K, self.DONE, self.NEED_SORT, self.argsort_table = K, K.DONE, K.NEED_SORT, K.argsort_table

    def nelder_mead(self, simplex, values, st, H, p, rp, xatol, fatol, maxfev, two, table):
        return self.K.nelder_mead(simplex, values, st, H, p, rp, xatol, fatol, maxfev // 2, two, table)


@pytest.mark.parametrize("d", [1, 6, 8])
def test_compiled_nelder_mead_equals_scipy_at_the_edge_dimensions(d):
    # d = 1 (every value -|H_00|: all ties, the 2-point table), d = 6 and 8 (proofs_checks.stacey.corrections: no
    # tie table past 5 points, other gemv block paths in OpenBLAS)
    _skip_without_kernel(3.0)
    rng = np.random.default_rng(100 + d)
    planted = _HalfBudget(S._nm_kernel())
    caught = 0
    for i in range(6):
        M = rng.standard_normal((d, d))
        H = (M + M.T) / 2 if i % 2 else M @ M.T / d
        x0 = rng.standard_normal(d)
        for p in (3.0, 4.0):
            want = _bits(_scipy(H, p, x0, **OPTS))
            got = S.two_sided_nelder_mead(H, p, x0, **OPTS)
            assert got is not None and _bits(got) == want
            caught += _bits(S.two_sided_nelder_mead(H, p, x0, **OPTS, _K=planted)) != want
    assert caught > 0 or d == 1  # (at d = 1 the objective is constant: no run can differ in value)


@pytest.mark.parametrize("maxfev", [3, 4, 7, 40, 111])
def test_runs_cut_by_maxfev_match(maxfev):
    _skip_without_kernel(3.0)
    rng = np.random.default_rng(maxfev)
    for _ in range(10):
        M = rng.standard_normal((3, 3))
        H, x0 = (M + M.T) / 2, rng.standard_normal(3)
        opts = {"xatol": 1e-10, "fatol": 1e-14, "maxfev": maxfev}
        got = S.two_sided_nelder_mead(H, 3.0, x0, **opts)
        if maxfev < 4:  # scipy stops inside the starting simplex: left to scipy
            assert got is None
        else:
            assert _bits(got) == _bits(_scipy(H, 3.0, x0, **opts))


def test_ties_are_sorted_by_numpy():
    # |u^T u| / ||u||_2^2 = 1 everywhere and H = 0 gives 0 everywhere: every sort of the run is a tie
    _skip_without_kernel(2.0)
    for H in (np.eye(3), np.zeros((4, 4)), np.diag([1.0, 1.0, -1.0])):
        x0 = np.linspace(0.3, 1.1, H.shape[0])
        for p in (2.0, 3.0):
            got = S.two_sided_nelder_mead(H, p, x0, **OPTS)
            assert got is not None and _bits(got) == _bits(_scipy(H, p, x0, **OPTS))


def test_non_finite_values_go_back_to_scipy():
    _skip_without_kernel(3.0)
    with np.errstate(all="ignore"):
        assert S.two_sided_nelder_mead(np.eye(3), 3.0, np.zeros(3), **OPTS) is None  # 0 / 0 at the start
    assert S.two_sided_nelder_mead(np.eye(3), 3.0, np.array([1.0, np.inf, 0.0]), **OPTS) is None


def test_probe_switches_the_route_off_on_disagreement(monkeypatch):
    _skip_without_kernel(3.0)
    assert S._nm_probe()
    K = S._nm_kernel()

    class Off:  # a kernel whose runs stop at half their budget: the probe must refuse it
        DONE, NEED_SORT = K.DONE, K.NEED_SORT
        argsort_table, quad_form, matmul = K.argsort_table, K.quad_form, K.matmul

        @staticmethod
        def nelder_mead(simplex, values, st, H, p, rp, xatol, fatol, maxfev, two, table):
            return K.nelder_mead(simplex, values, st, H, p, rp, xatol, fatol, maxfev // 2, two, table)

    monkeypatch.setattr(S, "_NM", Off)
    assert not S._nm_probe()


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 8.0, 2.5])
def test_circle_argmax_equals_numpy(p):
    _skip_without_kernel(p)
    from lptheory.geometry import lp_norm

    rng = np.random.default_rng(int(p * 7))
    for _ in range(60):
        x = rng.uniform(-1, 1, 3)
        H = np.array([[x[0], x[1]], [x[1], x[2]]]) if rng.random() < 0.7 else rng.standard_normal((2, 2))
        c = rng.uniform(0, 3)
        th = np.linspace(c - 0.01, c + 0.01, int(rng.integers(1, 2500)))
        U = np.stack([np.cos(th), np.sin(th)], axis=1) * rng.choice([1.0, 1e-5, 3e4])
        val = np.abs(np.einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2
        i = int(np.argmax(val))
        got = S.circle_argmax(U, H, p)
        assert got is not None and got[0] == i and _bits(got[1]) == _bits(val[i])


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 8.0, 2.5])
def test_circle_argmax_equals_numpy_on_the_full_first_grid(p):
    # the first pass of proofs_checks.stacey.smoothness.two_sided_constant: 20000 angles over [0, pi)
    _skip_without_kernel(p)
    from lptheory.geometry import lp_norm

    th = np.linspace(0.0, np.pi, 20_000, endpoint=False)
    U = np.stack([np.cos(th), np.sin(th)], axis=1)
    rng = np.random.default_rng(int(p * 13))
    for k in range(12):
        x = rng.uniform(-1, 1, 3)
        H = np.array([[x[0], x[1]], [x[1], x[2]]]) if k else np.diag([1.0, -1.0])
        val = np.abs(np.einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2
        i = int(np.argmax(val))
        got = S.circle_argmax(U, H, p)
        assert got is not None and got[0] == i and _bits(got[1]) == _bits(val[i])


def test_circle_argmax_self_check_refuses_a_kernel_without_numpys_bits(monkeypatch):
    _skip_without_kernel(3.0)
    from synthetic import _smooth_kernel as SK

    assert S.circle_argmax(np.array([[1.0, 0.0], [0.6, 0.8]]), np.eye(2), 3.0) is not None
    true = SK.circle_argmax

    def planted(U, H, p, rp, inv_p, ri, pad):  # the value one ulp off (another summation order would do this)
        i, v = true(U, H, p, rp, inv_p, ri, pad)
        return i, np.nextafter(v, np.inf)

    monkeypatch.setattr(SK, "circle_argmax", planted)
    monkeypatch.setattr(S, "_CIRCLE_OK", {})
    assert S.circle_argmax(np.array([[1.0, 0.0], [0.6, 0.8]]), np.eye(2), 3.0) is None  # numpy then


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 8.0, 2.5])
def test_compiled_power_iteration_equals_numpy(p, monkeypatch):
    _skip_without_kernel(p)
    rng = np.random.default_rng(int(p * 11))
    cases = []
    for _ in range(40):
        d, R, it = int(rng.integers(2, 6)), int(rng.integers(2, 40)), int(rng.integers(1, 50))
        M = rng.standard_normal((d, d))
        cases.append(((M + M.T) / 2 if rng.random() < 0.7 else M, S.duality_map(rng.standard_normal((R, d)), p), it))
    got = [S.bilinear_power_iteration(H, p, v, it) for H, v, it in cases]
    assert all(S._power_iteration_compiled(H, p, v, it) is not None for H, v, it in cases)
    monkeypatch.setattr(S, "_NM", False)  # the numpy loop
    for (H, v, it), (u1, v1) in zip(cases, got):
        u0, v0 = S.bilinear_power_iteration(H, p, v, it)
        assert np.array_equal(u0.view(np.int64), u1.view(np.int64))
        assert np.array_equal(v0.view(np.int64), v1.view(np.int64))


def test_matmul_has_numpys_bits():
    _skip_without_kernel(3.0)
    K = S._nm_kernel()
    rng = np.random.default_rng(9)
    for m in (2, 3, 6, 33):
        for d in (2, 3, 4, 7):
            a, b = rng.standard_normal((m, d)) * 10.0 ** rng.uniform(-3, 3), rng.standard_normal((d, d))
            c = np.empty((m, d))
            K.matmul(a, b, c)
            assert np.array_equal(c.view(np.int64), (a @ b).view(np.int64))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_argsort_table_is_numpys_permutation_on_ties(n):
    _skip_without_kernel(3.0)
    table = S._argsort_table(n)
    assert table.shape == (n**n, n)
    rng = np.random.default_rng(n)
    for i in range(4000):
        # (values as the search's: negative, ties) from 2, 3 and n - 1 distinct values: every tie pattern,
        # those with 4 distinct ranks among 5 points included
        k = (2, 3, max(n - 1, 1), max(n - 1, 1))[i % 4]
        x = -np.abs(rng.choice(rng.standard_normal(k), n))
        ranks = np.unique(x, return_inverse=True)[1]
        code = int(sum(int(r) * n**j for j, r in enumerate(ranks)))
        assert np.array_equal(table[code], np.argsort(x))
    import itertools

    patterns = 0
    for ranks in itertools.product(range(n), repeat=n):  # every pattern of ties, once, with fresh values
        k = max(ranks) + 1
        if set(ranks) != set(range(k)):
            continue
        patterns += 1
        x = np.sort(-np.abs(rng.standard_normal(k)) - 1e-3)[list(ranks)]
        assert np.array_equal(table[sum(r * n**j for j, r in enumerate(ranks))], np.argsort(x))
    assert patterns == {2: 3, 3: 13, 4: 75, 5: 541}[n]  # (the ordered Bell numbers)


def test_ties_sorted_in_the_kernel_as_numpy_sorts_them(monkeypatch):
    # the same runs with the table and without it (every tie back to numpy.argsort in Python)
    _skip_without_kernel(2.0)
    rng = np.random.default_rng(4)
    cases = [(np.eye(3), 2.0, np.linspace(0.3, 1.1, 3)), (np.diag([1.0, 1.0, -1.0, 2.0]), 2.0, np.ones(4))]
    for _ in range(20):
        M = rng.standard_normal((3, 3))
        cases.append(((M + M.T) / 2, 3.0, rng.standard_normal(3)))
    with_table = [S.two_sided_nelder_mead(H, p, x0, **OPTS) for H, p, x0 in cases]
    monkeypatch.setattr(S, "_TABLES", {3: np.full((0, 3), -1, dtype=np.int64), 4: np.full((0, 4), -1, dtype=np.int64)})
    without = [S.two_sided_nelder_mead(H, p, x0, **OPTS) for H, p, x0 in cases]
    assert [_bits(v) for v in with_table] == [_bits(v) for v in without]


def test_steepest_step_objective_has_the_numpy_bits():
    _skip_without_kernel(3.0)
    rng = np.random.default_rng(12)
    for _ in range(300):
        p = float(rng.uniform(2.05, 8.0))
        d = int(rng.integers(1, 5))
        g = rng.standard_normal(d)
        eta = float(10 ** rng.uniform(-2, 0))
        obj = S.steepest_step_objective(g, eta, p)
        for _ in range(5):
            u = rng.standard_normal(d) * 10.0 ** rng.uniform(-4, 2)
            want = float(eta * g @ u + 0.5 * S.small_lp_norm(u, p) ** 2)
            got = obj(u)
            assert type(got) is float and _bits(got) == _bits(want)
    with np.errstate(all="ignore"):  # a non-finite u: the numpy expression's own value
        assert np.isnan(S.steepest_step_objective(np.ones(2), 0.1, 3.0)(np.array([np.nan, 1.0])))


def test_probe_refuses_products_without_numpys_bits(monkeypatch):
    _skip_without_kernel(3.0)
    K = S._nm_kernel()

    class Off:  # a quadratic form summed in another order: the probe must refuse the kernels
        DONE, NEED_SORT = K.DONE, K.NEED_SORT
        argsort_table, matmul, nelder_mead = K.argsort_table, K.matmul, K.nelder_mead

        @staticmethod
        def quad_form(u, H, t):
            return float(sum(u[i] * H[i, j] * u[j] for j in range(u.size) for i in range(u.size)))

    monkeypatch.setattr(S, "_NM", Off)
    assert not S._nm_probe()


def test_kernel_published_only_after_a_passing_check(monkeypatch):
    # a self-check that raises (a compile or link error) or fails leaves the route off, and the check runs on the
    # module it is given: nothing is published before it returns
    _skip_without_kernel(3.0)
    seen = []

    def boom(K=None):
        seen.append((K, S._NM))
        raise RuntimeError("planted: the first compile fails")

    monkeypatch.setattr(S, "_NM", None)
    monkeypatch.setattr(S, "_nm_probe", boom)
    assert S._nm_kernel() is False
    assert seen and seen[0][0] is not None and seen[0][0] is not False and seen[0][1] is None
    assert S.two_sided_nelder_mead(np.eye(3), 3.0, np.ones(3), **OPTS) is None  # the numpy/scipy path then
    monkeypatch.setattr(S, "_NM", None)
    monkeypatch.setattr(S, "_nm_probe", lambda K=None: False)
    assert S._nm_kernel() is False


def test_blas_is_taken_only_from_a_library_already_loaded(tmp_path):
    # a copy of numpy's OpenBLAS that this process never loaded (a stale numpy.libs) is not opened
    _skip_without_kernel(3.0)
    import glob
    import os
    import shutil

    from synthetic import _nm_kernel as NM

    assert NM._blas_addresses() == NM._ADDR
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    so = sorted(glob.glob(os.path.join(libs, "*openblas*")))[0]
    shutil.copy(so, tmp_path / "libscipy_openblas64_-stale.so")
    assert NM._blas_addresses(str(tmp_path)) is None


def test_bad_iters_and_maxfev_are_refused_on_every_route(monkeypatch):
    # the compiled routes used to truncate a float (int(2.5) = 2 sweeps, int(2000.7) calls) where the reference
    # raises or compares the float; iters = 0 raised UnboundLocalError in the numpy loop
    H, v = np.eye(3), S.duality_map(np.ones((2, 3)), 3.0)
    for route in ("compiled", "numpy"):
        if route == "numpy":
            monkeypatch.setattr(S, "_NM", False)
        with pytest.raises(TypeError, match="iters"):
            S.bilinear_power_iteration(H, 3.0, v, 2.5)
        with pytest.raises(ValueError, match="iters"):
            S.bilinear_power_iteration(H, 3.0, v, 0)
        with pytest.raises(TypeError, match="maxfev"):
            S.two_sided_nelder_mead(H, 3.0, np.ones(3), xatol=1e-10, fatol=1e-14, maxfev=2000.7)
        with pytest.raises(ValueError, match="maxfev"):
            S.two_sided_nelder_mead(H, 3.0, np.ones(3), xatol=1e-10, fatol=1e-14, maxfev=0)
    assert S.bilinear_power_iteration(H, 3.0, v, np.int64(2))[0].shape == (2, 3)


@pytest.mark.parametrize(
    "eta, p, err",
    [
        (float("nan"), 3.0, ValueError),
        (0.0, 3.0, ValueError),
        (-0.1, 3.0, ValueError),
        ("0.1", 3.0, TypeError),
        (0.1, 1.5, ValueError),
        (0.1, float("nan"), ValueError),
    ],
)
def test_steepest_step_objective_checks_eta_and_p(eta, p, err):
    with pytest.raises(err, match="eta" if eta != 0.1 else "p"):
        S.steepest_step_objective(np.ones(2), eta, p)
