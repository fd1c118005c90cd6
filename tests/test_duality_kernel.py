"""The compiled duality map (synthetic._smooth_kernel) gives the bits of the numpy code, sign bits and zero
rows included, at every exponent it takes; non-finite inputs go to numpy."""

from __future__ import annotations

import numpy as np
import pytest

from synthetic import smoothness as S


def _kernel_or_skip(p):
    if S._duality_kernel(p) is None:
        pytest.skip("no compiled duality map here (numba or numpy's SVML power missing)")


@pytest.mark.parametrize("p", [2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 3.7])
def test_compiled_duality_map_equals_numpy_bit_for_bit(p):
    _kernel_or_skip(p)
    rng = np.random.default_rng(int(p * 100))
    for trial in range(150):
        R, d = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        w = rng.standard_normal((R, d)) * 10.0 ** rng.integers(-9, 9, (R, 1))
        if trial % 5 == 0:
            w[0] = 0.0
        if trial % 7 == 0:
            w[:, -1] = -0.0
        got, ref = S.duality_map(w, p), S._duality_map_numpy(w, p)
        assert np.array_equal(got.view(np.int64), ref.view(np.int64))


def test_duality_map_non_finite_rows_take_the_numpy_route():
    _kernel_or_skip(3.0)
    w = np.array([[1.0, np.inf], [np.nan, 2.0], [1.0, -2.0]])
    with np.errstate(all="ignore"):
        got, ref = S.duality_map(w, 3.0), S._duality_map_numpy(w, 3.0)
    assert np.array_equal(got, ref, equal_nan=True)


def test_power_iteration_unchanged_by_the_compiled_route(monkeypatch):
    _kernel_or_skip(4.0)
    H = np.random.default_rng(1).standard_normal((3, 3))
    H = H + H.T
    v0 = S.duality_map(np.random.default_rng(2).standard_normal((8, 3)), 4.0)
    u1, v1 = S.bilinear_power_iteration(H, 4.0, v0, 30)
    monkeypatch.setattr(S, "_duality_kernel", lambda p: None)
    u2, v2 = S.bilinear_power_iteration(H, 4.0, v0, 30)
    assert np.array_equal(u1, u2) and np.array_equal(v1, v2)


@pytest.mark.parametrize("p", [2.0, 2.5, 3.0, 4.0, 8.0])
def test_small_lp_norm_is_lp_norm_bit_for_bit(p):
    from lptheory.geometry import lp_norm

    _kernel_or_skip(p)
    rng = np.random.default_rng(int(p * 7))
    for trial in range(400):
        x = rng.standard_normal(int(rng.integers(1, 40))) * 10.0 ** rng.integers(-9, 9)
        if trial % 9 == 0:
            x[:] = 0.0
        got, ref = S.small_lp_norm(x, p), lp_norm(x, p)
        assert type(got) is type(ref) and np.float64(got).view(np.int64) == np.float64(ref).view(np.int64)
    assert np.isnan(S.small_lp_norm(np.array([1.0, np.nan]), p))
