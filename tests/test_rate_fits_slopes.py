"""proofs_checks.rate_fits._slopes: the bootstrap's polyfit slopes from one lstsq call, polyfit's bits."""

import warnings

import numpy as np
import pytest

from proofs_checks import rate_fits


def _loop(lx, Y):
    return np.array([np.polyfit(lx, ys, 1)[0] for ys in Y])


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_the_bits_of_polyfit(k):
    rng = np.random.default_rng(k)
    lx = np.log(2.0 ** np.arange(6, 6 + k))
    Y = -0.25 * lx + rng.standard_normal((1000, k)) * 10.0 ** rng.uniform(-6, 1, (1000, 1))
    assert rate_fits._slopes(lx, Y).tobytes() == _loop(lx, Y).tobytes()


def test_fit_slope_as_before():
    rng = np.random.default_rng(7)
    x = [64, 128, 256, 512]
    samples = [np.exp(rng.standard_normal(32)) * v**-0.25 for v in x]
    slope, lo, hi = rate_fits.fit_slope(x, samples, seed=[0, 404], n_boot=300)
    boots = _loop(
        np.log(np.asarray(x, dtype=float)),
        rate_fits._boot_log_means(samples, np.random.default_rng(np.random.SeedSequence([0, 404])), 300),
    )
    assert (lo, hi) == tuple(float(v) for v in np.quantile(boots, [0.025, 0.975]))


def test_a_rank_deficient_grid_is_polyfits_own():
    lx = np.ones(4)  # one x: rank 1, polyfit warns
    Y = np.random.default_rng(1).standard_normal((5, 4))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = rate_fits._slopes(lx, Y)
        want = _loop(lx, Y)
    assert out.tobytes() == want.tobytes()
    assert sum("poorly conditioned" in str(w.message) for w in got) == 2 * len(Y)  # each polyfit's own warning


def test_a_planted_disagreement_falls_back(monkeypatch):
    real = rate_fits._lstsq_rows

    def off(*a):
        c, rank = real(*a)
        return c * (1 + 1e-15), rank

    monkeypatch.setattr(rate_fits, "_lstsq_rows", off)
    rng = np.random.default_rng(2)
    lx = np.log([64.0, 128.0, 256.0])
    Y = rng.standard_normal((50, 3))
    assert rate_fits._slopes(lx, Y).tobytes() == _loop(lx, Y).tobytes()
    c, _ = off(*_args(lx, Y))
    assert c[..., 0][:, 0].tobytes() != real(*_args(lx, Y))[0][..., 0][:, 0].tobytes()  # the plant is a change


def _args(lx, Y):
    lhs = np.vander(lx + 0.0, 2)
    lhs /= np.sqrt((lhs * lhs).sum(axis=0))
    return lhs, (Y + 0.0)[:, :, None], len(lx) * np.finfo(np.float64).eps
