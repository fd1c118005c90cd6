"""One problem protocol, ``lptheory.problem.Problem``: a problem written as the README says works with the
oracle, the simulator and Regret; every registered problem's certificates pass their audits; every registered
noise model builds and declares its assumptions (written from outside the packages, as a user imports them)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lptheory.optimizers import LpDescent
from lptheory.problem import Certificate, Problem, certified
from lptheory.simulate import Regret, simulate
from synthetic.noise import NOISES, make_noise
from synthetic.oracle import GradientOracle
from synthetic.problems import PROBLEMS, make_problem


class Bowl(Problem):
    """f(x) = sum_i (x_i - 1)^2 / 2: f* = 0 at x = 1, L_p <= 1 for p >= 2 (identity Hessian); unbounded gradient."""

    name = "bowl"

    def __init__(self, d=3):
        self.d = d

    def f(self, x, t=None):
        return 0.5 * np.sum((np.asarray(x) - 1.0) ** 2, axis=-1)

    def grad(self, x, t=None):
        return np.asarray(x) - 1.0

    def certificates(self):
        return {
            "f_star": Certificate("f_star", 0.0, "exact", "f >= 0 = f(1)"),
            "L": Certificate("L", lambda p: 1.0, "upper", "Hessian I: ||v||_{p*} <= ||v||_p for p >= 2", args=("p",)),
        }


class Declared(Problem):
    """The same bowl with declared constants (f_star, grad_sup, smoothness) instead of certificates()."""

    name = "declared"
    f_star = 0.0

    def __init__(self, d=3):
        self.d = d

    f = Bowl.f
    grad = Bowl.grad

    def grad_sup(self, p):
        return math.inf

    def smoothness(self, p):
        return 1.0

    def argmin(self):
        return np.ones(self.d)


@pytest.mark.parametrize("cls", [Bowl, Declared])
def test_a_readme_problem_works_with_the_oracle_and_the_simulator(cls):
    pr = cls()
    orc = GradientOracle(pr, make_noise("rademacher", np.full(pr.d, 0.1)))
    a = orc.assumptions()  # read grad_sup through the certificates: no AttributeError
    assert a["unbiased"] and not a["bounded_gradient"] and orc.certified_G(3.0) == math.inf
    tr = simulate(LpDescent(p=3.0, lr=0.1), pr, orc, steps=20, replicates=2, seed=0)
    assert np.all(np.isfinite(tr.gap)) and np.all(tr.gap >= 0)  # f* from the certificate
    assert certified(pr, "L", 4.0) == 1.0 and certified(pr, "nothing", default=7) == 7


def test_declared_constants_become_audited_certificates_and_regret_has_its_default_comparator():
    pr = Declared()
    assert set(pr.certificates()) == {"f_star", "grad_sup", "L"}
    ok, value, est = pr.certificate("f_star").audit_ok()
    assert ok and value == 0.0 and est == pytest.approx(0.0)
    obs = Regret(T=10)
    simulate(LpDescent(p=3.0, lr=0.1), pr, GradientOracle(pr, None), steps=10, replicates=2, seed=0, observers=[obs])
    np.testing.assert_array_equal(obs.u, np.ones(3))
    with pytest.raises(ValueError, match="best_fixed_point"):
        Bowl().best_fixed_point(10)
    assert "_x0" not in (Problem.x0.__doc__ or "")


SMALL = {"flat-valley": {"d": 40}}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_registered_problem_passes_its_certificate_audits(name):
    kw = SMALL.get(name, {"d": 12})
    pr = make_problem(name, **kw)
    assert isinstance(pr, Problem)
    certs = pr.certificates()
    assert {"f_star", "L", "grad_sup"} <= set(certs)
    for cname, cert in certs.items():
        if cert.audit is None:
            continue
        args = (3.0,) if cert.args else ()
        ok, value, est = cert.audit_ok(*args, seed=1)
        assert ok, (name, cname, value, est)


@pytest.mark.parametrize("kind", sorted(NOISES))
def test_every_registered_noise_model_builds_and_states_its_assumptions(kind):
    sig = np.full(4, 0.3)
    noise = make_noise(kind, sig)
    if noise is None:
        assert kind == "none"
        return
    a = noise.assumptions()
    assert {"unbiased", "bounded_variance", "bounded"} <= set(a)
    rng = np.random.default_rng(0)
    x = noise.sample_mean(rng, 2, size=(4000,))
    assert x.shape == (4000, 4) and abs(float(x.mean())) < 0.05
    np.testing.assert_allclose(x.var(axis=0), sig**2 / 2, rtol=0.25)
