"""Issue 23, item 7 (coverage): Theorem 1 on three problems and at p = inf, Assumption 1's equivalence decided
in d = 3, 4, Lion-K's first step over p and gradients (proofs_checks/stacey/coverage_more.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from proofs_checks.packs import load
from proofs_checks.records import validate_record
from proofs_checks.stacey import coverage_more as CM
from proofs_checks.stacey.smoothness import lipschitz_constant, two_sided_lower
from proofs_checks.stacey.theorem1 import theorem_eta, theorem_rhs


def test_registered_on_the_pack():
    assert "coverage-more" in load("stacey").checks


@pytest.mark.parametrize("p", [3.0, 8.0])
@pytest.mark.parametrize("d", [3, 4])
def test_asm1_equivalence_decided_in_d3_d4(p, d):
    """The Lipschitz side exceeds the two-sided constant by the closed-form ratio, proved in ball arithmetic;
    the closed forms agree with the numerical estimates (lower bounds that must not exceed them)."""
    lip_rec, two_rec = CM.asm1_diag_records(p, d)
    for r in (lip_rec, two_rec):
        validate_record(r.to_dict())
    assert lip_rec.status == "violated" and lip_rec.evidence == "proved"
    assert lip_rec.witness["recheck"]["proved"]
    r = p / (p - 2)
    want = (1.5 if d == 3 else 2.0) ** (1 / r)
    assert lip_rec.empirical / lip_rec.bound == pytest.approx(want, rel=1e-12)
    assert want <= 2 ** (1 - 2 / p) + 1e-12  # never above the d = 2 maximum over diagonal H
    assert two_rec.status == "holds"
    H = np.diag([1.0, -1.0, 1.0, -1.0][:d])
    est_two = two_sided_lower(H, p, np.random.default_rng(0), n_dirs=500)
    est_lip, _, _ = lipschitz_constant(H, p, starts=8, iters=60)
    assert est_two <= lip_rec.bound * (1 + 1e-9) and est_two >= lip_rec.bound * (1 - 1e-6)
    assert est_lip <= lip_rec.empirical * (1 + 1e-9) and est_lip >= lip_rec.empirical * (1 - 1e-6)


def test_asm1_diag_rejects_other_dimensions():
    with pytest.raises(ValueError, match="d must be 3 or 4"):
        CM.asm1_diag_records(3.0, 5)


def test_theorem1_at_p_inf_is_the_limit_of_the_bound():
    """At p = inf (signSGD) the bound used is the p -> inf limit of Theorem 1's: theorem_rhs at a huge p agrees."""
    recs = CM.thm1_problem_records(math.inf, seed=0, quick=True)
    assert [r.id for r in recs] == ["thm1.p-inf.bound"] * 3
    assert len({r.params["problem"] for r in recs}) == 3
    for r in recs:
        validate_record(r.to_dict())
        assert r.status == "holds" and r.ci[1] <= r.bound
        P, L, G, T = 1e7, r.params["L"], r.params["G"], r.params["T"]
        eta = theorem_eta(L, G, T, P)
        assert eta == pytest.approx(r.params["eta"], rel=1e-5)
        big = theorem_rhs(
            f_gap=r.params["f0-f*"], eta=eta, T=T, L=L, G=G, p=P, sigma_l1=r.params["sigma_l1"], batches=[1] * T
        )["total"]
        assert big == pytest.approx(r.bound, rel=1e-5)


def test_lionk_first_step_over_p_and_gradients():
    recs = CM.lionk_sweep_records(0, ps=(8.0,))
    assert len(recs) == 6 and {r.id for r in recs} == {"lionk.first-step"}
    formula = [r for r in recs if r.params["setting"].startswith("Alg. 1 vs formula")]
    tau0 = [r for r in recs if r.params["setting"].startswith("tau = 0")]
    assert len(formula) == len(tau0) == 3 and len({str(r.params["g0"]) for r in formula}) == 3
    assert all(r.status == "holds" for r in formula)
    assert all(r.status == "violated" and r.evidence == "proved" for r in tau0)


def test_lionk_no_coupling_holds_off_tau_zero_and_its_control_fails():
    """tau in (0, 1): Stacey's first iterate is off the ray of every Lion-K first iterate (holds); tau = 0 (no
    coupling, the control the same rule must fail) puts it on that ray: not holds."""
    recs = CM.lionk_coupling_records(0, ps=(4.0,), taus=(0.0, 0.5))
    ctrl, real = recs
    validate_record(real.to_dict())
    assert real.status == "holds" and real.empirical > 1e-6
    assert ctrl.status != "holds" and ctrl.empirical <= ctrl.bound


def test_appendix_b_at_p_inf():
    """maj.p-inf: holds on random majorized quadratics (the vertex enumeration is exact: no point of the cube
    gives more), and the constant ||L||_1 is attained by diag(L)."""
    recs = CM.maj_inf_records(0, quick=True)
    assert [r.id for r in recs] == ["maj.p-inf"] * 2 and all(r.status == "holds" for r in recs)
    assert recs[0].empirical <= recs[0].bound and recs[1].empirical == pytest.approx(recs[1].bound, rel=1e-12)
    H = np.array(recs[0].witness["matrix"]) if recs[0].witness else None
    if H is None:  # a holds carries no witness: rebuild a majorized matrix
        from proofs_checks.stacey.majorization import majorized_quadratic

        H, _ = majorized_quadratic(np.random.default_rng(1), 4)
    import itertools

    V = np.array(list(itertools.product((-1.0, 1.0), repeat=H.shape[0])))
    exact = np.abs(V @ H.T).sum(axis=1).max()
    pts = np.random.default_rng(2).uniform(-1, 1, (20000, H.shape[0]))
    assert np.abs(pts @ H.T).sum(axis=1).max() <= exact * (1 + 1e-12)
