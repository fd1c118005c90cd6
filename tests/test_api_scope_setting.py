"""Issue 44, item 4: ``scope=`` on every engine, ``setting=`` on ``value_claim``, ``identity_claim``."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from proofs_checks.api import (
    Assumption,
    ClaimSpec,
    Distribution,
    DistributionSpace,
    Expect,
    SearchBudget,
    adversarial_search,
    bnb_record,
    branch_and_bound,
    divergence_claim,
    exact_expectation,
    identity_claim,
    interval_claim,
    is_issued,
    monte_carlo,
    rate_claim,
    value_claim,
    x,
)

POSITIVE_STEP = Assumption("the step is positive", check=lambda s: (s["eta"] > 0, f"eta = {s['eta']}"))
SPEC = ClaimSpec(id="t.value", statement="v <= 1", source="test", assumptions=[POSITIVE_STEP])
MEAN = ClaimSpec(id="t.mean", statement="E x^2 <= 2", source="test", term=Expect(x**2), bound=sp.Integer(2))


def test_value_claim_checks_the_setting_form_assumptions():
    ok = value_claim(SPEC, 0.5, 1.0, {"eta": 0.1}, setting={"eta": 0.1})
    assert ok.status == "holds"
    bad = value_claim(SPEC, 0.5, 1.0, {"eta": -0.1}, setting={"eta": -0.1})
    assert bad.status == "not-applicable" and "the step is positive" in bad.reason and "eta = -0.1" in bad.reason
    assert value_claim(SPEC, 0.5, 1.0, {"eta": -0.1}).status == "holds"  # without setting=: not checked (as before)


def test_every_engine_takes_a_scope():
    s = "the five points of the test only"
    dist = Distribution(np.array([[[-1.0, 1.0]]]), np.array([[[0.5, 0.5]]]), 1)
    t = sp.Symbol("t")
    recs = [
        value_claim(SPEC, 0.5, 1.0, {}, scope=s),
        exact_expectation(MEAN, dist, {}, scope=s),
        monte_carlo(MEAN, np.random.default_rng(0).uniform(-1, 1, (200, 1)), {}, scope=s),
        interval_claim(SPEC, [0.1, 0.2, 0.3], 1.0, {}, scope=s),
        adversarial_search(
            MEAN, [DistributionSpace(1, 2)], {}, seed=0, budget=SearchBudget(maxiter=3, popsize=4), scope=s
        ),
        rate_claim(SPEC, [8, 16, 32, 64], [1 / 64, 1 / 256, 1 / 1024, 1 / 4096], {}, theory=2.0, pinned=False, scope=s),
        bnb_record(branch_and_bound(t**2, t + 1, {"t": (0.0, 1.0)}), SPEC, scope=s),
        divergence_claim(SPEC, {"z": 2 * sp.Symbol("z")}, {"z": 1.0}, {}, threshold=100.0, scope=s),
        identity_claim(t * (t + 1), t**2 + t, id="t.id", statement="s", source="s", scope=s),
    ]
    assert [r.scope for r in recs] == [s] * len(recs)
    with pytest.raises(ValueError, match="scope"):
        value_claim(SPEC, 0.5, 1.0, {}, scope=" ")
    with pytest.raises(ValueError, match="scope"):
        bnb_record(branch_and_bound(t**2, t + 1, {"t": (0.0, 1.0)}), SPEC, scope="")


def test_identity_claim_splits_cases_reduces_and_spot_checks():
    y = sp.Symbol("y", real=True)
    u = sp.Symbol("u", positive=True)
    cases = {"y >= 0": {y: u}, "y < 0": {y: -u}}
    rec = identity_claim(sp.Abs(y) * sp.sign(y), y, cases, id="t.abs", statement="|y| sgn(y) = y", source="s")
    assert (rec.status, rec.evidence) == ("holds", "proved")
    certs = rec.data["certificate"]
    assert len(certs) == 2 and all(is_issued(c) and c["kind"] == "sympy-identity" for c in certs)
    assert "y >= 0" in rec.scope and "y < 0" in rec.scope
    # false in one case: violated, the witness re-checked (proved in ball arithmetic)
    bad = identity_claim(sp.Abs(y), y, cases, id="t.abs2", statement="|y| = y", source="s")
    assert bad.status == "violated" and bad.witness["case"] == "y < 0"
    assert bad.evidence == "proved" and is_issued(bad.witness["recheck"]["certificate"])
    with pytest.raises(TypeError, match="cases"):
        identity_claim(y, y, [y], id="t", statement="s", source="s")


def test_search_many_and_correction_record_take_a_scope():
    """Issue 44, item 4: the two engines that lacked ``scope=`` (adversarial_search_many, correction_record) give
    every record the stated scope, keep the derived one without it, and refuse an empty one before searching."""
    from proofs_checks.api import SearchJob, adversarial_search_many, correction_record

    budget = SearchBudget(maxiter=3, popsize=4)
    spaces = [DistributionSpace(1, 2)]
    s = "two-point laws on [-1, 1], a 3-generation search (test)"
    jobs = [SearchJob(MEAN, 0, 1.0, None), SearchJob(MEAN, 1, 1.0, None)]
    recs = adversarial_search_many(jobs, spaces, [{"j": 0}, {"j": 1}], budget=budget, scope=s)
    assert [r.scope for r in recs] == [s, s]
    plain = adversarial_search_many(jobs[:1], spaces, [{"j": 0}], budget=budget)
    assert plain[0].scope and plain[0].scope != s  # the derived scope, untouched
    rec = correction_record(
        MEAN,
        2.0,
        corrected_statement="E x^2 <= 4",
        spaces=spaces,
        params={},
        scalars={},
        seed=0,
        budget=budget,
        scope=s,
    )
    assert rec.id == "t.mean.corrected" and rec.scope == s
    for bad in ("", "  "):
        with pytest.raises(ValueError, match="scope"):
            adversarial_search_many(jobs, spaces, [{}, {}], budget=budget, scope=bad)
        with pytest.raises(ValueError, match="scope"):
            correction_record(
                MEAN,
                2.0,
                corrected_statement="c",
                spaces=spaces,
                params={},
                scalars={},
                seed=0,
                budget=budget,
                scope=bad,
            )
