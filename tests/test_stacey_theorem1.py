"""Theorem 1 along runs of Algorithm 3 (the Stacey pack on the simulator with observers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lptheory.geometry import dual_exponent, lp_norm
from lptheory.optimizers import LpDescent
from proofs_checks.api import Context, recheck
from proofs_checks.records import validate_record
from proofs_checks.stacey import theorem1 as T1


def test_theorem_rhs_simplifies_to_the_rate_bound():
    """With eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}) and n_t = T, the three terms sum to the paper's
    N^{-1/4}[L^{1/2} G^{1/(p-1)} (f0 - f* + 1/2) + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1] (a transcription)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        p, L, G, s1, gap = rng.uniform(2.1, 9), *rng.uniform(0.1, 10, 4)
        T = int(rng.integers(1, 5000))
        eta = T1.theorem_eta(L, G, T, p)
        assert eta == pytest.approx(1 / (math.sqrt(L) * G ** (1 / (p - 1)) * math.sqrt(T)), rel=1e-14)
        rhs = T1.theorem_rhs(f_gap=gap, eta=eta, T=T, L=L, G=G, p=p, sigma_l1=s1, batches=[T] * 3)["total"]
        a = 1 / (p - 1)
        paper = (T * T) ** -0.25 * (math.sqrt(L) * G**a * (gap + 0.5) + (2 * p - 1) / (p - 1) * G**a * s1)
        assert rhs == pytest.approx(paper, rel=1e-12)


def test_non_finite_bound_is_an_error_naming_the_claim_and_setting():
    with pytest.raises(ValueError, match=r"thm1\.bound.*p=inf"):
        T1.theorem_rhs(f_gap=1.0, eta=0.1, T=10, L=1.0, G=2.0, p=math.inf, sigma_l1=1.0, batches=[1])


@pytest.fixture(scope="module")
def theorem1_quick():
    return T1.run_theorem1(Context(seed=0, quick=True, options={"p": [3.0]}))


def test_theorem1_quick_records(theorem1_quick):
    ids = {r.id for r in theorem1_quick}
    assert ids == {"thm1.bound", "thm1.step", "thm1.rate"}
    for r in theorem1_quick:
        validate_record(r.to_dict())
        if r.params.get("noise") in ("gaussian", "student-t") and r.id == "thm1.bound":
            assert r.status == "not-applicable" and "Assumption 4" in r.reason
        if r.params.get("noise") in ("rademacher", "uniform", "two-point") and r.id == "thm1.bound":
            assert r.status == "holds" and r.ci[1] <= r.bound
        if r.params.get("variant") == "pathwise":
            assert r.status == "holds" and r.method == "exact"
    rate = next(r for r in theorem1_quick if r.id == "thm1.rate")
    assert rate.status in ("holds", "inconclusive")
    assert all(m <= b for m, b in zip(rate.data["lhs"], rate.data["bound"]))


def test_theorem1_seed_reproducible(theorem1_quick):
    again = T1.run_theorem1(Context(seed=0, quick=True, options={"p": [3.0]}))
    assert [r.empirical for r in again] == [r.empirical for r in theorem1_quick]


def test_trajectory_is_the_simulator_run():
    """The proof's terms observed along simulate() see the same iterates as a plain simulate() run."""
    from lptheory.optimizers import LpDescent
    from lptheory.simulate import simulate
    from synthetic.oracle import GradientOracle

    problem, noise = T1.make_setting("rademacher", 0.5, 8, 0)
    oracle = GradientOracle(problem, noise, batch=2)
    tr = T1.trajectory(problem, oracle, p=3.0, eta=0.05, T=20, replicates=4, seed=5, L=1.0)
    ref = simulate(LpDescent(p=3.0, lr=0.05), problem, oracle, 20, 4, 5, record_every=1)
    np.testing.assert_allclose(tr["f"][:, :], ref.f[:-1], rtol=0, atol=0)
    np.testing.assert_allclose(tr["f_next"][-1], ref.f[-1], rtol=0, atol=0)


def test_planted_invalid_smoothness_constant_is_caught():
    """With L scaled down 100x (not a valid l_p smoothness constant), the pathwise one-step inequality
    f(theta_{t+1}) <= f(theta_t) - A + B + C must fail along the run, with a witness that re-checks."""
    recs = T1.bound_records(3.0, seed=0, quick=True, L_scale=0.01)
    path = [r for r in recs if r.params.get("variant") == "pathwise" and r.params["noise"] == "rademacher"]
    assert path and path[0].status == "violated"
    assert recheck({k: v for k, v in path[0].witness.items() if k != "recheck"})["violated"]


def test_theorem1_rejects_bad_p():
    from proofs_checks.packs import load

    pack = load("stacey")
    with pytest.raises(ValueError, match=r"--p must be in \(2, inf\)"):
        pack.checks["theorem1"].resolve({"p": [2.0]})
    with pytest.raises(ValueError, match=r"--p must be in \[2, inf\)"):
        pack.checks["lemmas"].resolve({"p": [1.5]})


def test_rate_negative_controls_fail_and_gate_the_holds(theorem1_quick):
    """thm1.rate runs, by the same measurement, a method that does not move and one with a known slower
    exponent; each control's record carries params.control, is never holds, and fails as it must; Alg. 3's
    holds names them."""
    rates = [r for r in theorem1_quick if r.id == "thm1.rate"]
    method = [r for r in rates if "control" not in r.params]
    ctrl = {r.params["control"]: r for r in rates if "control" in r.params}
    assert len(method) == 1 and set(ctrl) == set(T1.RATE_CONTROLS) == {"static", "slow-step"}
    for name, r in ctrl.items():
        assert r.status != "holds" and "fails as it must" in r.reason, name
        assert r.params["control_for"] == "Alg. 3" and r.data["T"] == method[0].data["T"]
        assert -r.data["slope"] < 0.25  # slower than the claimed N^{-1/4}: the rate rule cannot pass it
    assert ctrl["static"].data["slope"] == pytest.approx(0.0, abs=1e-12)  # it does not move
    if method[0].status == "holds":
        assert "every negative control fails as it must (static, slow-step)" in method[0].reason


def test_rate_planted_control_that_passes_withdraws_the_holds():
    """A planted vacuous check: a 'control' that is Alg. 3 itself passes the rule, so the check cannot tell
    the method from it and Alg. 3's holds is withdrawn (inconclusive); the control's record is not holds."""
    plain = T1.rate_records(4.0, seed=0, quick=True, controls={})
    assert plain[0].status == "holds" and len(plain) == 1
    planted = {"itself": ("Alg. 3 itself (planted)", lambda T: 1.0)}
    recs = T1.rate_records(4.0, seed=0, quick=True, controls=planted)
    assert recs[0].status == "inconclusive" and "cannot tell Alg. 3 from itself" in recs[0].reason
    assert recs[1].status == "inconclusive" and "PASSES the rule it must fail" in recs[1].reason
    assert recs[1].params["control"] == "itself"


def test_proof_terms_evaluated_once_equal_step_by_step():
    """ProofTerms evaluates f, the gradient term, the norms and A, B, C on every step's rows at the end: the
    bits of a step-by-step evaluation."""
    from proofs_checks.engines import pointwise
    from proofs_checks.stacey import formulas as F
    from synthetic.oracle import GradientOracle

    problem, noise = T1.make_setting("rademacher", 0.5, 6, 0)
    oracle = GradientOracle(problem, noise, batch=2)
    obs = T1.ProofTerms(3.0, 0.05, 1.0)
    from lptheory.optimizers import LpDescent
    from lptheory.simulate import simulate

    opt = LpDescent(p=3.0, lr=0.05)
    simulate(opt, problem, oracle, 12, 5, 3, record_every=12, observers=[obs], default_metrics=False)
    steps = {k: list(v) for k, v in obs.steps.items()}
    tr = obs.finish()
    sc = {"p": 3.0, "eta": 0.05, "L": 1.0}
    ps = dual_exponent(3.0)
    bits = lambda a: np.asarray(a, dtype=np.float64).view(np.int64)  # noqa: E731
    for i in range(12):
        th, gt = steps["theta"][i], steps["gt"][i]
        g = problem.grad(th)
        for k, term in (("A", F.A_term), ("B", F.B_path), ("C", F.C_path)):
            one = pointwise(term, gt, scalars=sc, coords={"g": g})
            assert np.array_equal(bits(tr[k][i]), bits(one))
        # f, f(theta_t+1), ||grad f||^{p*}, ||g~||_{p*}: evaluated once on all rows, the per-step bits
        assert np.array_equal(bits(tr["f"][i]), bits(problem.f(th)))
        assert np.array_equal(bits(tr["f_next"][i]), bits(problem.f(steps["new"][i])))
        assert np.array_equal(bits(tr["gp"][i]), bits(np.sum(np.abs(g) ** ps, axis=-1)))
        assert np.array_equal(bits(tr["gt_norm"][i]), bits(lp_norm(gt, ps)))
    assert np.array_equal(bits(steps["new"][3]), bits(steps["theta"][4]))  # theta_t+1 is the next step's theta
    # the bound runs' size (256 steps x 64 x 20): the stacked norms take lp_norm's compiled row kernel, a step's
    # 64 rows its numpy path; the same bits row by row
    big = np.random.default_rng(2).standard_normal((256 * 64, 20))
    per_step = np.concatenate([lp_norm(big[r : r + 64], ps) for r in range(0, big.shape[0], 64)])
    assert np.array_equal(bits(lp_norm(big, ps)), bits(per_step))
    slack = tr["f_next"] - (tr["f"] - tr["A"] + tr["B"] + tr["C"])
    i, r = np.unravel_index(int(np.argmax(slack)), slack.shape)
    assert tr["worst_step"]["t"] == i and tr["worst_step"]["replicate"] == r


@pytest.mark.parametrize("steps", [None, 12, 20, 30])
def test_grad_term_evaluated_once_equals_step_by_step(steps):
    """GradTerm keeps the points and evaluates ||grad f(theta_t)||_{p*}^{p*} once on all of them: the bits
    of the per-step evaluation (int views), whether the run's length is announced (``steps``: exactly,
    too few, too many) or not, and through trajectory(terms=False)."""
    from lptheory.simulate import Observer, simulate
    from synthetic.oracle import GradientOracle

    class PerStep(Observer):
        name = "per-step"
        needs_previous = True

        def __init__(self, ps):
            self.ps, self.gp = ps, []

        def on_step(self, v):
            g = v.problem.grad(v.theta)
            self.gp.append(np.sum(np.abs(g) ** self.ps, axis=-1))

    problem, noise = T1.make_setting("rademacher", 0.5, 8, 0)
    oracle = GradientOracle(problem, noise, batch=2)
    p = 3.0
    obs, ref = T1.GradTerm(p, steps=steps), PerStep(dual_exponent(p))
    simulate(LpDescent(p=p, lr=0.05), problem, oracle, 20, 4, 5, record_every=20, observers=[obs, ref],
             default_metrics=False)  # fmt: skip
    got, want = obs.finish()["gp"], np.stack(ref.gp)
    assert got.shape == want.shape == (20, 4)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    tr = T1.trajectory(problem, oracle, p=p, eta=0.05, T=20, replicates=4, seed=5, L=1.0)
    assert np.array_equal(tr["gp"].view(np.int64), want.view(np.int64))
    assert T1.GradTerm(p, steps=steps).finish()["gp"].size == 0


class _PerStepTerms:
    """The reference of the observers' numbers: every term evaluated at its step, on that step's R rows
    (what ProofTerms and GradTerm did before they kept the points)."""

    def __init__(self, p, eta, L):
        from lptheory.simulate import Observer

        ps = dual_exponent(p)
        sc = {"p": p, "eta": eta, "L": L}
        rows = self.rows = {k: [] for k in ("gp", "f", "f_next", "gt_norm", "A", "B", "C")}

        class Ref(Observer):
            name = "per-step-terms"
            needs_previous = True

            def on_step(self, v):
                from proofs_checks.engines import pointwise
                from proofs_checks.stacey import formulas as F

                pr, th, new, gt = v.problem, v.theta, v.new_theta, v.grad_tilde
                g = pr.grad(th)
                vals = {"gp": np.sum(np.abs(g) ** ps, axis=-1), "f": pr.f(th), "f_next": pr.f(new),
                        "gt_norm": lp_norm(gt, ps)}  # fmt: skip
                for k, term in (("A", F.A_term), ("B", F.B_path), ("C", F.C_path)):
                    vals[k] = pointwise(term, gt, scalars=sc, coords={"g": g})
                for k, val in vals.items():
                    rows[k].append(np.array(val, dtype=np.float64))

        self.observer = Ref()


@pytest.mark.parametrize(
    "name, kw, R",
    [
        ("quadratic-dense", {"d": 7}, 1),
        ("logsumexp", {"d": 7}, 1),
        ("ridge", {"d": 7, "m": 9}, 1),
        ("quadratic-dense", {"d": 7}, 4),
        ("separable", {"d": 7}, 1),
    ],
)
def test_observers_equal_per_step_on_matrix_problems(name, kw, R):
    """ProofTerms and GradTerm give the bits of a per-step evaluation on every problem, also where f and the
    gradient are matrix products: with one replicate, one product over all steps' rows is not row by row
    the product of one row (BLAS takes another kernel; review finding M3), so these problems are
    evaluated at each step; the separable problem (``rows_independent``) once at the end."""
    from lptheory.simulate import simulate
    from synthetic.noise import make_noise
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    problem = make_problem(name, **kw)
    d = problem.d
    oracle = GradientOracle(problem, make_noise("gaussian", np.full(d, 0.3)), batch=2)
    p, eta, L, T = 3.0, 0.02, 1.0, 40
    ref = _PerStepTerms(p, eta, L)
    obs, gterm = T1.ProofTerms(p, eta, L), T1.GradTerm(p, steps=T)
    simulate(LpDescent(p=p, lr=eta), problem, oracle, T, R, 7, record_every=T,
             observers=[obs, gterm, ref.observer], default_metrics=False)  # fmt: skip
    tr, gp = obs.finish(), gterm.finish()["gp"]
    bits = lambda a: np.asarray(a, dtype=np.float64).view(np.int64)  # noqa: E731
    for k, rows in ref.rows.items():
        want = np.stack(rows)
        assert tr[k].shape == want.shape == (T, R), k
        assert np.array_equal(bits(tr[k]), bits(want)), k
    assert np.array_equal(bits(gp), bits(np.stack(ref.rows["gp"])))
    slack = tr["f_next"] - (tr["f"] - tr["A"] + tr["B"] + tr["C"])
    i, r = np.unravel_index(int(np.argmax(slack)), slack.shape)
    assert tr["worst_step"]["t"] == i and tr["worst_step"]["replicate"] == r
    assert tr["worst_step"]["slack"] == slack[i, r]


@pytest.mark.parametrize("steps", [None, 3, 8])
def test_grad_term_mixed_point_types_keeps_every_step_in_order(steps):
    """GradTerm with steps whose points are numpy arrays (kept, evaluated at once) and steps whose points are
    not (here lists; torch tensors in a torch run: evaluated at the step): every step's sum, in the steps'
    order, the bits of the per-step evaluation (review finding L10: the second kind was dropped)."""
    from types import SimpleNamespace

    problem, _ = T1.make_setting("rademacher", 0.5, 6, 0)
    rng = np.random.default_rng(4)
    points = [rng.standard_normal((3, 6)) for _ in range(7)]
    kinds = [True, True, False, True, True, True, False]  # numpy point or not
    ps = dual_exponent(3.0)
    obs = T1.GradTerm(3.0, steps=steps)
    for th, numpy in zip(points, kinds):
        obs.on_step(SimpleNamespace(theta=th if numpy else th.tolist(), problem=problem))
    got = obs.finish()["gp"]
    want = np.stack([np.sum(np.abs(problem.grad(th)) ** ps, axis=-1) for th in points])
    assert got.shape == want.shape == (7, 3)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
