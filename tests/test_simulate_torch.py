"""The simulator on the torch backend: problems, noise and metrics on the device, same rules as numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lptheory import optimizers as O  # noqa: E402
from lptheory._random import TorchRandom  # noqa: E402
from lptheory.simulate import simulate  # noqa: E402
from synthetic.noise import FiniteSupport, Gaussian, Rademacher, StudentT, Uniform  # noqa: E402
from synthetic.oracle import GradientOracle  # noqa: E402
from synthetic.problems import PROBLEMS, make_problem  # noqa: E402

OPTS = [O.StaceyPP(p=3.0, lr=1e-2), O.StaceyP2(p=2.5, lr=1e-2, eps_mode="official"), O.LpDescent(p=4.0, lr=1e-2)]


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_without_noise_torch_float64_matches_numpy(name):
    """Fixed gradient sequence (exact gradients): the two backends agree to 1e-12 (relative)."""
    pr = make_problem(name, d=24)
    orc = GradientOracle(pr, None)
    for opt in OPTS:
        a = simulate(opt, pr, orc, 40, replicates=3, record_every=8)
        b = simulate(opt, pr, orc, 40, replicates=3, record_every=8, backend="torch", device="cpu")
        for key in ("f", "grad_pstar", "grad_2"):
            x, y = getattr(a, key), getattr(b, key)
            np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(x))))
        assert b.config["backend"] == "torch" and b.config["dtype"] == "float64"


def _moments_ok(noise, n, seed=11, rows=40_000, z=5.0):
    """The device sampler's batch mean has mean 0 and variance sigma_i^2 / n (within z standard errors)."""
    x = noise.sample_mean(TorchRandom(seed), n, size=(rows,)).numpy()
    s2 = noise.sigma**2 / n
    mean_ok = np.all(np.abs(x.mean(axis=0)) <= z * np.sqrt(s2 / rows))
    m2 = np.mean(x**2, axis=0)  # E[x^2] = sigma^2 / n, since the mean is 0
    se2 = np.std(x**2, axis=0) / math.sqrt(rows)
    var_ok = np.all(np.abs(m2 - s2) <= z * se2 + 1e-12 * s2)
    return bool(mean_ok and var_ok)


SIG = np.array([0.3, 1.0, 2.5])
NOISES = {
    "gaussian": Gaussian(SIG),
    "uniform": Uniform(SIG),
    "rademacher": Rademacher(SIG),
    "student-t(9)": StudentT(SIG, nu=9.0),
    "two-point(0.2)": FiniteSupport.two_point(SIG, prob=0.2),
    "three-point": FiniteSupport(
        np.array([[-1.0, 0.0, 2.0]] * 3) * SIG[:, None] / math.sqrt(2.0), np.array([[2 / 3, 0.0, 1 / 3]] * 3)
    ),
}


@pytest.mark.parametrize("n", [1, 7])
@pytest.mark.parametrize("kind", sorted(NOISES))
def test_device_noise_has_the_exact_batch_moments(kind, n):
    noise = NOISES[kind]
    assert _moments_ok(noise, n)
    x = noise.sample_mean(TorchRandom(3), n, size=(5, 2))
    assert isinstance(x, torch.Tensor) and tuple(x.shape) == (5, 2, 3) and x.dtype == torch.float64
    if noise.bounded:
        assert torch.all(x.abs() <= torch.as_tensor(noise.bound()) * (1 + 1e-12))


def test_planted_sampler_bug_is_caught(monkeypatch):
    """A Gaussian sampler that forgets the batch size (variance sigma^2 instead of sigma^2 / n) fails."""
    noise = Gaussian(SIG)
    monkeypatch.setattr(
        Gaussian, "_sample_mean", lambda self, rng, n, shape: rng.standard_normal(shape) * rng.asarray(self.sigma)
    )
    assert not _moments_ok(noise, 7)


def test_student_t_needs_integer_nu_on_device():
    with pytest.raises(ValueError, match="nu"):
        StudentT(SIG, nu=3.5).sample_mean(TorchRandom(0), 1, size=(2,))


@pytest.mark.parametrize("kind", ["gaussian", "rademacher", "two-point(0.2)", "uniform"])
def test_noisy_runs_agree_statistically_across_backends(kind):
    """Same model, independent random numbers: final gap means within their 95% intervals' combined
    error (4 standard errors: a few families are tested, each deterministic by seed)."""
    pr = make_problem("separable", d=3)
    orc = GradientOracle(pr, NOISES[kind], batch=4)
    opt = O.StaceyPP(p=3.0, lr=0.05)
    a = simulate(opt, pr, orc, 30, replicates=400, record_every=30)
    b = simulate(opt, pr, orc, 30, replicates=400, record_every=30, backend="torch")
    for key in ("gap", "grad_2"):
        x, y = getattr(a, key)[-1], getattr(b, key)[-1]
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(x.mean() - y.mean()) <= 4.0 * se, (key, x.mean(), y.mean(), se)


def test_torch_backend_same_seed_same_bits_and_float32():
    pr = make_problem("ridge", d=16)
    orc = GradientOracle(pr, Rademacher(np.full(16, 0.2)), batch=3)
    opt = O.StaceyP2(p=3.0, lr=0.02)
    a = simulate(opt, pr, orc, 25, replicates=4, seed=5, backend="torch", snapshots=True)
    b = simulate(opt, pr, orc, 25, replicates=4, seed=5, backend="torch", snapshots=True)
    c = simulate(opt, pr, orc, 25, replicates=4, seed=6, backend="torch", snapshots=True)
    assert np.array_equal(a.snapshots, b.snapshots) and not np.array_equal(a.snapshots, c.snapshots)
    f32 = simulate(opt, pr, orc, 25, replicates=4, seed=5, backend="torch", dtype="float32")
    assert f32.config["dtype"] == "float32" and f32.f.dtype == np.float64
    np.testing.assert_allclose(f32.f, a.f, rtol=1e-4)


def test_torch_backend_reports_divergence_like_numpy():
    from lptheory.optimizers import NonFiniteGradientWarning

    pr = make_problem("quadratic-diagonal", d=10, profile="flat")
    orc = GradientOracle(pr, None)
    opt = O.SGD(lr=3.0, momentum=0.0)  # |1 - 3| > 1: geometric blow-up, overflow after a few hundred steps
    with pytest.raises(FloatingPointError) as e_np:
        simulate(opt, pr, orc, 2000, replicates=2, record_every=500)
    with pytest.raises(FloatingPointError) as e_t:
        simulate(opt, pr, orc, 2000, replicates=2, record_every=500, backend="torch")
    assert str(e_np.value).split("(")[0] == str(e_t.value).split("(")[0]
    # each backend warns once for a fresh optimizer (an optimizer warns once, then counts)
    with pytest.warns(NonFiniteGradientWarning, match="SGD: a gradient with NaN or inf entries"):
        a = simulate(O.SGD(lr=3.0, momentum=0.0), pr, orc, 2000, replicates=2, record_every=500, on_nonfinite="record")
    with pytest.warns(NonFiniteGradientWarning, match="SGD: a gradient with NaN or inf entries"):
        b = simulate(
            O.SGD(lr=3.0, momentum=0.0),
            pr,
            orc,
            2000,
            replicates=2,
            record_every=500,
            on_nonfinite="record",
            backend="torch",
        )
    assert a.diverged.all() and b.diverged.all()
    assert np.array_equal(np.isnan(a.f), np.isnan(b.f))


def test_torch_backend_bad_input():
    pr = make_problem("separable", d=4)
    orc = GradientOracle(pr, None)
    opt = O.LpDescent(p=3.0, lr=0.1)
    with pytest.raises(ValueError, match="backend"):
        simulate(opt, pr, orc, 3, backend="jax")
    with pytest.raises(ValueError, match="dtype"):
        simulate(opt, pr, orc, 3, dtype="float32")
    with pytest.raises(ValueError, match="dtype"):
        simulate(opt, pr, orc, 3, backend="torch", dtype="int64")
    with pytest.raises(ValueError, match="device"):
        simulate(opt, pr, orc, 3, backend="torch", device="nonsense")
    with pytest.raises(ValueError, match="device"):
        simulate(opt, pr, orc, 3, device="cuda")


@pytest.mark.gpu
def test_cuda_simulation_matches_cpu():
    pr = make_problem("logsumexp", d=32)
    exact = GradientOracle(pr, None)
    a = simulate(OPTS[0], pr, exact, 30, replicates=3, backend="torch", device="cpu")
    b = simulate(OPTS[0], pr, exact, 30, replicates=3, backend="torch", device="cuda")
    np.testing.assert_allclose(b.f, a.f, rtol=1e-12)
    noisy = GradientOracle(pr, Gaussian(np.full(32, 0.3)), batch=2)
    x = simulate(OPTS[0], pr, noisy, 30, replicates=400, record_every=30)
    y = simulate(OPTS[0], pr, noisy, 30, replicates=400, record_every=30, backend="torch", device="cuda")
    gx, gy = x.gap[-1], y.gap[-1]
    assert abs(gx.mean() - gy.mean()) <= 4.0 * math.sqrt(gx.var() / gx.size + gy.var() / gy.size)
