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
