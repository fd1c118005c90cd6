import math

import numpy as np
import pytest
from scipy import stats

from lptheory.geometry import dual_exponent, lp_norm
from synthetic import noise as N
from synthetic import problems as P
from synthetic.oracle import GradientOracle
from synthetic.smoothness import estimate_smoothness

FAMILIES = [
    ("separable", dict(d=40, profile="flat")),
    ("separable", dict(d=40, profile="power")),
    ("separable", dict(d=40, profile="spiked")),
    ("flat-valley", dict(d=300)),
    ("ridge", dict(d=30)),
    ("ridge", dict(d=30, sparsity=0.2)),
    ("logistic", dict(d=20)),
    ("quadratic-diagonal", dict(d=50)),
    ("quadratic-dense", dict(d=25)),
    ("logsumexp", dict(d=20)),
]
PS = [2.0, 2.5, 3.0, 4.0, 8.0]


@pytest.mark.parametrize("name,kw", FAMILIES, ids=lambda x: str(x))
@pytest.mark.parametrize("p", PS)
def test_certified_smoothness_never_below_empirical(name, kw, p):
    pr = P.make_problem(name, **kw)
    emp = estimate_smoothness(pr, p, starts=8, iters=30, pairs=128)
    cert = pr.smoothness(p)
    assert 0 < emp <= cert * (1 + 1e-9), (emp, cert)


@pytest.mark.parametrize("profile", ["flat", "power", "spiked"])
@pytest.mark.parametrize("p", PS)
def test_diagonal_quadratic_bounds_meet(profile, p):
    pr = P.QuadraticDiagonal(d=60, profile=profile)
    emp = estimate_smoothness(pr, p)
    assert emp == pytest.approx(pr.smoothness(p), rel=0.01)


def test_separable_bound_is_the_hoelder_norm():
    pr = P.SeparableNonconvex(d=7, profile="power")
    for p in [2.0, 3.0, 4.0]:
        r = math.inf if p == 2 else p / (p - 2)
        assert pr.smoothness(p) == pytest.approx(float(lp_norm(2 * pr.a, r)))
    # diagonal at the curvature peak: x = b, the Hessian is diag(2a) and the bound is attained
    q = P.QuadraticDiagonal(d=7)
    q.h = 2 * pr.a
    q.hessian_constant = q.h
    assert estimate_smoothness(q, 3.0) == pytest.approx(pr.smoothness(3.0), rel=1e-3)


@pytest.mark.parametrize("name,kw", FAMILIES, ids=lambda x: str(x))
def test_f_star_and_grad_sup_certificates(name, kw, rng):
    pr = P.make_problem(name, **kw)
    X = pr.x0() + rng.standard_normal((400, pr.d)) * rng.choice([0.1, 1.0, 5.0], size=(400, 1))
    assert np.all(pr.f(X) >= pr.f_star - 1e-12)
    for p in [2.0, 3.0]:
        gs = pr.grad_sup(p)
        assert np.all(lp_norm(pr.grad(X), dual_exponent(p)) <= gs * (1 + 1e-12))
    # gradient is the gradient of f (central differences)
    x = X[:3]
    e = 1e-6
    for i in range(min(pr.d, 4)):
        ei = np.zeros(pr.d)
        ei[i] = e
        fd = (pr.f(x + ei) - pr.f(x - ei)) / (2 * e)
        np.testing.assert_allclose(pr.grad(x)[:, i], fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", ["gaussian", "uniform", "rademacher", "two-point", "student-t"])
@pytest.mark.parametrize("n", [1, 7])
def test_oracle_moments(kind, n):
    d = 6
    sigma = np.linspace(0.5, 2.0, d)
    pr = P.SeparableNonconvex(d=d)
    noise = N.make_noise(kind, sigma)
    orc = GradientOracle(pr, noise, batch=n)
    R = 4000
    rngs = [np.random.default_rng(np.random.SeedSequence([3, r])) for r in range(R)]
    theta = pr.x0(R)
    xi = orc(theta, 0, rngs) - pr.grad(theta)
    # mean: 4.5-sigma z-test per coordinate; variance: the true mean is 0, so mean(xi^2) estimates
    # sigma_i^2 / n without bias, with standard error std(xi^2)/sqrt(R): a 5-sigma interval
    se_mean = sigma / math.sqrt(n * R)
    assert np.all(np.abs(xi.mean(0)) < 4.5 * se_mean)
    sq = xi**2
    se_var = sq.std(0, ddof=1) / math.sqrt(R)
    assert np.all(np.abs(sq.mean(0) - sigma**2 / n) < 5 * se_var + 1e-12 * sigma**2)


def test_moment_check_catches_a_planted_variance_bug():
    """A Rademacher noise whose batch mean is scaled by sqrt(1.1) must fail the variance check above."""
    sigma = np.ones(6)
    R, n = 4000, 3
    noise = N.Rademacher(sigma)
    rngs = [np.random.default_rng(np.random.SeedSequence([3, r])) for r in range(R)]
    xi = np.stack([noise.sample_mean(g, n) for g in rngs]) * math.sqrt(1.1)
    sq = xi**2
    se_var = sq.std(0, ddof=1) / math.sqrt(R)
    assert not np.all(np.abs(sq.mean(0) - sigma**2 / n) < 5 * se_var)


@pytest.mark.parametrize("kind", ["rademacher", "two-point"])
def test_exact_batch_mean_agrees_with_brute_force(kind):
    d, n, R = 3, 5, 20000
    sigma = np.array([0.3, 1.0, 2.0])
    noise = N.make_noise(kind, sigma)
    rng = np.random.default_rng(1)
    fast = noise.sample_mean(rng, n, (R,))
    brute = np.mean([noise.sample_mean(rng, 1, (R,)) for _ in range(n)], axis=0)
    for i in range(d):
        # discrete distributions on the same lattice: chi-square test of the value counts
        vals = np.union1d(np.round(fast[:, i], 9), np.round(brute[:, i], 9))
        a = np.array([np.sum(np.round(fast[:, i], 9) == v) for v in vals])
        b = np.array([np.sum(np.round(brute[:, i], 9) == v) for v in vals])
        keep = (a + b) > 10
        assert stats.chi2_contingency(np.stack([a[keep], b[keep]]))[1] > 1e-4


def test_finite_support_validation_and_two_point():
    with pytest.raises(ValueError, match="mean 0"):
        N.FiniteSupport([[1.0, 2.0]], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to 1"):
        N.FiniteSupport([[1.0, -1.0]], [[0.5, 0.6]])
    tp = N.FiniteSupport.two_point(np.array([1.0, 3.0]), prob=0.2)
    np.testing.assert_allclose(tp.sigma, [1.0, 3.0])
    assert tp.assumptions()["bounded"] and tp.bound().shape == (2,)
    with pytest.raises(ValueError, match="nu"):
        N.StudentT(np.ones(2), nu=2.0)
    with pytest.raises(ValueError, match="noise must be one of"):
        N.make_noise("cauchy", np.ones(2))


def test_oracle_assumptions_and_certified_G():
    pr = P.SeparableNonconvex(d=5)
    assert GradientOracle(pr, N.Gaussian(np.ones(5))).assumptions()["bounded_gradient"] is False
    o = GradientOracle(pr, N.Rademacher(np.full(5, 0.5)))
    assert o.assumptions() == {"unbiased": True, "bounded_variance": True, "bounded_gradient": True}
    G = o.certified_G(3.0)
    rngs = [np.random.default_rng(r) for r in range(500)]
    x = pr.x0(500) + np.random.default_rng(0).standard_normal((500, 5))
    assert np.all(lp_norm(o(x, 0, rngs), 1.5) <= G)
    assert GradientOracle(P.QuadraticDiagonal(d=5), N.Rademacher(np.ones(5))).certified_G(3.0) == math.inf
    with pytest.raises(ValueError, match="d="):
        GradientOracle(pr, N.Gaussian(np.ones(4)))


def _ahead_runs(noise, n, d, T=9, R=5):
    from lptheory.simulate import replicate_generators

    pr = P.SeparableNonconvex(d=d, profile="flat", seed=1)
    theta = np.random.default_rng(3).standard_normal((R, d))
    runs = []
    for nz in (noise, noise.drawing_ahead(T)):
        o, rngs = GradientOracle(pr, nz, batch=n), replicate_generators(11, R)
        runs.append(([o(theta, t, rngs).copy() for t in range(T)], [g.bit_generator.state for g in rngs], nz))
    return runs


@pytest.mark.parametrize("n, d", [(2, 6), (7, 6), (64, 6), (300, 6), (1, 12), (1, 20), (1, 6), (1, 16)])
def test_rademacher_drawing_ahead_gives_the_bits_and_stream_states_of_step_by_step_draws(n, d):
    """One run of T oracle calls with batch n: the copy drawing each stream's T counts in one call gives the
    same gradients, bit for bit, and leaves every stream where the step-by-step draws leave it (n = 1: drawn
    ahead at d = 12, 20; the usual path at d = 6, 16)."""
    (g1, s1, _), (g2, s2, ahead) = _ahead_runs(N.Rademacher(np.linspace(0.1, 0.7, d)), n, d)
    assert all(np.array_equal(a.view(np.int64), b.view(np.int64)) for a, b in zip(g1, g2))
    assert s1 == s2
    assert ahead.rows_independent is False
    assert (ahead._ahead[1] not in (None, False)) == (n > 1 or d in (12, 20))  # drawn ahead where it applies


@pytest.mark.parametrize("kind", ["gaussian", "uniform", "student-t", "two-point"])
@pytest.mark.parametrize("n", [1, 3, 64, 70])
def test_drawing_ahead_gives_every_family_the_bits_of_step_by_step_draws(kind, n):
    """The same for the other families (the chunked mean of uniform and Student-t over two chunks at n = 70;
    two-point's multinomial counts): same gradients bit for bit, same stream states, drawn ahead."""
    d = 12
    (g1, s1, _), (g2, s2, ahead) = _ahead_runs(N.make_noise(kind, np.linspace(0.1, 0.7, d)), n, d)
    assert all(np.array_equal(a.view(np.int64), b.view(np.int64)) for a, b in zip(g1, g2))
    assert s1 == s2
    assert ahead._ahead[1] not in (None, False)


def test_rademacher_drawing_ahead_refuses_what_would_reorder_the_streams():
    from lptheory.simulate import replicate_generators

    out = np.zeros((2, 3))
    noise = N.Rademacher(np.ones(3)).drawing_ahead(2)
    rngs = replicate_generators(0, 2)
    noise.add_means_into(rngs, 4, out)
    with pytest.raises(ValueError, match="batch size"):
        noise.add_means_into(rngs, 5, out)
    with pytest.raises(ValueError, match="streams"):
        noise.add_means_into(replicate_generators(1, 2), 4, out)
    noise.add_means_into(rngs, 4, out)
    with pytest.raises(ValueError, match="2 calls"):
        noise.add_means_into(rngs, 4, out)
    with pytest.raises(ValueError, match="steps"):
        N.Rademacher(np.ones(3)).drawing_ahead(0)
