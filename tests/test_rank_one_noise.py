"""The registry's rank-one noise (``synthetic.matrix.RankOneRows``, ``make_noise("rank-one", ...)``): every draw
a rank-one matrix, per-coordinate variance exactly sigma_i^2 / n (Assumption 3 with equality), the law of the
general ``RankOneNoise`` with the same atoms, same seed same bits, bad parameters refused naming them."""

from __future__ import annotations

import numpy as np
import pytest

from synthetic.matrix import RankOneNoise, RankOneRows, split_shape
from synthetic.noise import NOISES, make_noise

SIG = np.array([0.1, 0.0, 0.3, 0.7, 0.2, 0.5])


def test_registered_under_its_name_with_a_matrix_layout():
    assert NOISES["rank-one"] is RankOneRows
    nz = make_noise("rank-one", SIG, shape=(2, 3))
    assert isinstance(nz, RankOneRows) and nz.shape == (2, 3) and nz.name == "rank-one"
    assert make_noise("rank-one", np.ones(12)).shape == split_shape(12) == (3, 4)
    assert make_noise("gaussian", SIG, shape=(2, 3)).name == "gaussian"  # coordinate-wise models ignore it
    np.testing.assert_array_equal(nz.sigma, SIG)
    assert nz.assumptions() == {"unbiased": True, "bounded_variance": True, "bounded": True}


@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (1, 6), (6, 1)])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_exact_law_zero_mean_and_per_coordinate_variance(shape, n):
    """Over the exact law of the batch mean (every outcome with its probability): mean 0 and per-coordinate
    variance sigma_i^2 / n, to rounding; |xi_i| <= bound_i; E||xi||_F^2 = ||sigma||_2^2 / n."""
    nz = RankOneRows(SIG, shape=shape)
    law = nz.batch_outcomes(n)
    assert sum(p for _, p in law) == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(sum(p * v for v, p in law), 0.0, atol=1e-15)
    np.testing.assert_allclose(sum(p * v * v for v, p in law), SIG**2 / n, rtol=1e-12, atol=1e-16)
    assert all(np.all(np.abs(v) <= nz.bound() + 1e-15) for v, _ in law)
    assert sum(p * np.sum(v * v) for v, p in law) == pytest.approx(nz.frobenius_variance(n), rel=1e-12)


def test_every_single_draw_is_rank_one_and_moves_one_row():
    nz = RankOneRows(np.linspace(0.1, 1.0, 12), shape=(3, 4))
    x = nz.sample_mean(np.random.default_rng(5), 1, size=(200,)).reshape(200, 3, 4)
    rows_moved = np.count_nonzero(np.any(x != 0, axis=2), axis=1)
    assert np.all(rows_moved == 1)
    assert all(np.linalg.matrix_rank(m) == 1 for m in x)
    # each row's draw is +- sqrt(m) times that row of sigma
    for m in x:
        j = int(np.flatnonzero(np.any(m != 0, axis=1))[0])
        np.testing.assert_allclose(np.abs(m[j]), np.sqrt(3) * np.linspace(0.1, 1.0, 12).reshape(3, 4)[j])


def test_sampler_matches_the_general_model_with_the_same_atoms():
    """The row sampler (O(m + d) per row, no atoms stored) gives the numbers of :class:`RankOneNoise`'s
    dense sampler with the explicit atoms, from the same stream (the same multinomial counts)."""
    nz = RankOneRows(SIG, shape=(3, 2))
    dense = RankOneNoise(nz.atoms, nz.weights)
    np.testing.assert_allclose(dense.sigma, nz.sigma, rtol=1e-15)  # the rows model: sigma exactly
    a = nz.sample_mean(np.random.default_rng(9), 4, size=(50,))
    b = dense.sample_mean(np.random.default_rng(9), 4, size=(50,))
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(nz.bound(), dense.bound())


def test_monte_carlo_variance_and_same_seed_same_bits():
    nz = RankOneRows(SIG, shape=(2, 3))
    x = nz.sample_mean(np.random.default_rng(0), 2, size=(60000,))
    np.testing.assert_allclose(x.var(axis=0), SIG**2 / 2, rtol=0.05, atol=1e-12)
    y = nz.sample_mean(np.random.default_rng(0), 2, size=(60000,))
    assert x.tobytes() == y.tobytes()
    z = nz.sample_mean(np.random.default_rng(1), 2, size=(60000,))
    assert x.tobytes() != z.tobytes()
    out = np.zeros((3, 6))
    nz.add_means_into([np.random.default_rng(s) for s in range(3)], 2, out)
    rows = np.stack([nz.sample_mean(np.random.default_rng(s), 2) for s in range(3)])
    np.testing.assert_array_equal(out, rows)  # one stream per replicate (0 + -0 is 0: compared as numbers)


def test_torch_sampler_has_the_same_law():
    torch = pytest.importorskip("torch")
    from lptheory._random import TorchRandom

    nz = RankOneRows(SIG, shape=(2, 3))
    x = nz.sample_mean(TorchRandom(0), 2, size=(40000,))
    assert isinstance(x, torch.Tensor) and tuple(x.shape) == (40000, 6)
    np.testing.assert_allclose(x.numpy().var(axis=0), SIG**2 / 2, rtol=0.06, atol=1e-12)
    assert nz.sample_mean(TorchRandom(0), 2, size=(40000,)).numpy().tobytes() == x.numpy().tobytes()


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"sigma": SIG, "shape": (2, 2)}, r"shape must be two integers \(m, n\) >= 1 with m \* n = d = 6"),
        ({"sigma": SIG, "shape": (0, 6)}, "shape must be two integers"),
        ({"sigma": SIG, "shape": (2.5, 2.4)}, "shape must be two integers"),
        ({"sigma": SIG, "shape": "ab"}, "shape must be two integers"),
        ({"sigma": SIG, "shape": "23"}, "shape must be two integers"),  # was read as (2, 3)
        ({"sigma": SIG, "shape": ("2", 3)}, "shape must be two integers"),
        ({"sigma": SIG, "shape": (True, 6)}, "shape must be two integers"),  # was read as (1, 6)
        ({"sigma": SIG, "shape": (1, 2, 3)}, "shape must be two integers"),
        ({"sigma": -SIG, "shape": (2, 3)}, "sigma must be finite and >= 0"),
        ({"sigma": np.array([0.1, np.nan]), "shape": None}, "sigma must be finite and >= 0"),
        ({"sigma": np.ones((2, 3)), "shape": None}, "sigma must be a non-empty 1-D vector"),
        ({"sigma": np.array([]), "shape": None}, "sigma must be a non-empty 1-D vector"),
    ],
)
def test_bad_parameters_are_refused_naming_them(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        RankOneRows(**kwargs)


def test_general_model_names_its_bad_parameters():
    with pytest.raises(ValueError, match=r"atoms must have shape \(k, m, n\)"):
        RankOneNoise(np.ones((2, 2)))
    with pytest.raises(ValueError, match="atoms must be finite"):
        RankOneNoise(np.full((1, 2, 2), np.inf))
    with pytest.raises(ValueError, match=r"weights must be k = 2 numbers in \[0, 1\] summing to 1"):
        RankOneNoise(np.ones((2, 2, 2)), [0.5, np.nan])
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        RankOneNoise.random(2, 2, k=0)
    with pytest.raises(ValueError, match=r"sigma must be in \[0, inf\)"):
        RankOneNoise.random(2, 2, sigma=-1.0)


def test_the_two_rank_one_models_describe_themselves_apart():
    """``RankOneNoise`` (any atoms) and ``RankOneRows`` (the registry's ``rank-one``) both called themselves
    ``rank-one`` in records and run.json: the general model is ``rank-one-atoms`` now."""
    rows = RankOneRows(SIG, shape=(2, 3))
    dense = RankOneNoise(rows.atoms, rows.weights)
    assert rows.name == "rank-one" and dense.name == "rank-one-atoms"
    assert rows.describe()["noise"] == "rank-one" and dense.describe()["noise"] == "rank-one-atoms"
    assert all(getattr(f, "name", None) != dense.name for f in NOISES.values() if f is not None)


def test_one_mechanism_says_which_models_take_a_layout():
    """One mechanism (the class attribute ``takes_layout``, read by :func:`synthetic.noise.has_layout`) for the
    registry and the command line, no signature inspection duplicated in both."""
    import synthetic.noise as noise_mod
    from lptheory.app import cli
    from synthetic.noise import Gaussian, has_layout

    assert not hasattr(cli, "_parameters") and not hasattr(noise_mod, "_parameters")
    assert {k for k in NOISES if k != "none" and has_layout(k)} == {"rank-one"}
    assert not has_layout("none") and not has_layout("two-point")
    with pytest.raises(ValueError, match="noise must be one of"):
        has_layout("rank-two")

    class Laid(Gaussian):  # a model that says it takes a layout gets shape=, whatever its signature reads
        name = "laid"
        takes_layout = True

        def __init__(self, sigma, **kw):
            super().__init__(sigma)
            self.shape = kw["shape"]

    NOISES["laid"] = Laid
    try:
        assert has_layout("laid") and make_noise("laid", SIG, shape=(3, 2)).shape == (3, 2)
    finally:
        del NOISES["laid"]
