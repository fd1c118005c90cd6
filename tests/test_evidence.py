"""Issue 23: verdicts no stronger than their evidence: evidence levels, proved counterexamples (ball
arithmetic), preconditions in the witness, rates decided by precision, negative controls."""

from __future__ import annotations

import pytest
import sympy as sp

from proofs_checks.engines import DistributionSpace, SearchBudget, adversarial_search
from proofs_checks.expressions import Expect, Expect1, x
from proofs_checks.recheck import prove_expression, recheck
from proofs_checks.records import EVIDENCE, Claim, validate_record
from proofs_checks.spec import Assumption, ClaimSpec
from proofs_checks.verdict import Verdict, control_verdict, decide, decide_rate, gate_on_controls

a, b = sp.symbols("a b", real=True)


def _w(lhs, rhs, rel="<=", **scalars):
    return {"kind": "expression", "relation": rel, "lhs": sp.srepr(lhs), "rhs": sp.srepr(rhs), "scalars": scalars}


# ----------------------------------------------------------------------------------------------- evidence


def test_every_record_carries_an_evidence_level_derived_from_its_method():
    base = {"id": "c", "statement": "s", "source": "src"}
    assert Claim(**base, status="holds", method="exact").evidence == "exact"
    assert Claim(**base, status="holds", method="monte-carlo", ci=[0, 1]).evidence == "measured"
    assert Claim(**base, status="holds", method="simulation").evidence == "measured"
    assert Claim(**base, status="holds", method="adversarial-search").evidence == "searched"
    assert Claim(**base, status="holds", method="exact", relation="rate").evidence == "fit"
    assert Claim(**base, status="holds", method="symbolic", reason="no counterexample in 9 cases").evidence == (
        "searched"
    )
    # the reason's words alone are not a proof (issue 44): "proved" needs the certificate of the toolkit's decision
    said = "sympy reduces lhs - rhs to 0 (x)"
    assert Claim(**base, status="holds", method="symbolic", reason=said).evidence == "searched"
    from proofs_checks.identity import prove_identity

    cert = prove_identity(a**2 - b**2, (a - b) * (a + b))["certificate"]
    rec = Claim(**base, status="holds", method="symbolic", reason=said, data={"certificate": cert})
    assert rec.evidence == "proved"
    with pytest.raises(ValueError, match="evidence"):
        Claim(**base, status="holds", method="exact", evidence="believed")
    rec = Claim(**base, status="holds", method="exact").to_dict()
    validate_record(rec)
    with pytest.raises(ValueError, match="evidence"):
        validate_record({**rec, "evidence": "vibes"})
    assert set(EVIDENCE) == {"proved", "exact", "measured", "searched", "fit", "instance"}


def test_a_violation_is_proved_only_when_the_enclosures_separate():
    w = _w(a**3, b, a=1.25, b=1.9)  # 1.953125 > 1.9
    v = decide("<=", 1.953125, 1.9, method="exact", witness=w)
    assert v.status == "violated" and v.witness["recheck"]["proved"] and "separate" in v.reason
    rec = Claim(id="c", statement="s", source="src", status=v.status, method="exact", witness=v.witness, reason="r")
    assert rec.evidence == "proved"


def test_planted_false_witness_is_not_proved():
    """A planted witness for a * a <= b that holds in exact arithmetic (b = fl(0.1 * 0.1) is above the exact
    square of the binary 0.1 by 8e-19): the verdict's float values claim a failure, the re-check refuses."""
    w = _w(a * a, b, a=0.1, b=0.010000000000000002)
    chk = recheck(w)
    assert not chk["violated"] and not chk["proved"]
    v = decide("<=", 0.0100000000000001, 0.010000000000000002, method="exact", witness=w)
    assert v.status == "inconclusive" and v.witness is None


def test_near_tie_overlapping_enclosures_is_not_proved():
    """sqrt(a) * sqrt(a) against a: equal in the reals; the enclosures overlap, so no proof either way."""
    w = _w(sp.sqrt(a) * sp.sqrt(a), a, a=2.0)
    for backend in ("arb", "iv"):
        pr = prove_expression(w, backend=backend)
        assert not pr["proved"] and "overlap" in pr["proof"], pr
    w2 = _w(sp.sign(a - sp.sqrt(2) ** 2), sp.Integer(0), a=2.0)  # a sign the enclosures cannot decide
    pr = prove_expression(w2)
    assert not pr["proved"]


def test_tampered_precondition_is_refused():
    """require= is written into the witness; a witness edited to fall outside it does not re-check."""
    G = sp.Symbol("G", positive=True)
    spec = ClaimSpec(
        id="planted",
        statement="E|x| <= 0.5 * sqrt(E1 x^2) (false)",
        source="test",
        assumptions=[Assumption("second moment", G, "==", Expect1(x**2))],
        term=Expect(sp.Abs(x)),
        bound=sp.Rational(1, 2) * sp.sqrt(G),
    )
    rec = adversarial_search(
        spec,
        [DistributionSpace(1, 2)],
        {},
        seed=0,
        budget=SearchBudget(maxiter=20, popsize=6),
        require=sp.Ge(G, sp.Rational(1, 1000)),
    )
    assert rec.status == "violated" and rec.evidence == "proved", rec.reason
    w = {k: v for k, v in rec.witness.items() if k != "recheck"}
    assert "require" in w and recheck(w)["violated"]
    bad = {**w, "scalars": {**w["scalars"], "G": 1e-6}}
    bad["distribution"] = {**w["distribution"], "values": [[1e-4, -1e-4]]}  # now E1 x^2 = 1e-8 < 1e-3
    chk = recheck(bad)
    assert not chk["violated"] and not chk["assumptions_ok"] and not chk["proved"]
    assert any(c.get("precondition") == "require" and c["holds"] is False for c in chk["checks"])
    assert not prove_expression(bad)["proved"]


# ----------------------------------------------------------------------------------------------- rates


def test_upper_bound_rate_needs_the_lower_end_above_claim_minus_margin():
    assert decide_rate(2.0, (1.97, 2.3), 2.0).status == "holds"
    wide = decide_rate(1.194, (-0.22, 2.61), 2.0)  # the example: a wide interval no longer holds
    assert wide.status == "inconclusive" and "does not decide against a = 2.000" in wide.reason
    assert decide_rate(1.194, (-0.22, 2.61), 2.0, tight=True).status == "inconclusive"
    assert wide.evidence == "fit"


def test_a_wider_interval_never_makes_holds_more_likely():
    for half in (0.01, 0.05, 0.2, 1.0, 3.0):
        for e in (1.5, 1.9, 2.0, 2.1, 2.5):
            narrow = decide_rate(e, (e - half, e + half), 2.0).status == "holds"
            wider = decide_rate(e, (e - 2 * half, e + 2 * half), 2.0).status == "holds"
            assert narrow or not wider, (e, half)


def test_tight_rate_is_an_equivalence_test():
    assert decide_rate(1.66, (1.63, 1.70), 5 / 3, tight=True).status == "holds"
    assert decide_rate(1.95, (1.90, 2.00), 5 / 3, tight=True).status == "inconclusive"  # faster than tight
    assert decide_rate(1.66, (1.55, 1.80), 5 / 3, tight=True).status == "inconclusive"  # too imprecise


def test_controls_gate_holds_and_are_never_holds():
    ok = Verdict("holds", "fit fine", evidence="fit")
    vacuous = {"static": decide_rate(2.0, (1.99, 2.01), 2.0)}  # a method that does not move passes too
    g_ = gate_on_controls("accelerated-lp", ok, vacuous)
    assert g_.status == "inconclusive" and "cannot tell accelerated-lp from static" in g_.reason
    good = {"static": decide_rate(0.0, (-0.01, 0.01), 2.0)}
    assert gate_on_controls("accelerated-lp", ok, good).status == "holds"
    for cv in (vacuous["static"], good["static"]):
        assert control_verdict("static", cv).status != "holds"


# -------------------------------------------------------------------------------- assumption-aware search

SIGMA = sp.Symbol("S", positive=True)
M = sp.Symbol("m", real=True)
_MEAN = Assumption("mean", M, "==", Expect1(x))
_SD = Assumption("standard deviation", SIGMA, "==", sp.sqrt(Expect1((x - M) ** 2)))


def _unimodal_symmetric(setting):
    return (bool(setting.get("unimodal") and setting.get("symmetric")), "the noise must be unimodal and symmetric")


def _mad_spec(check):
    """E|X - m| <= (sqrt(3)/2) sd(X): true for symmetric unimodal laws (mixtures of uniforms: Cauchy-Schwarz,
    equality for a uniform law), false for a symmetric two-point law (ratio 2/sqrt(3))."""
    asm = [_MEAN, _SD] + ([Assumption("unimodal symmetric noise", check=_unimodal_symmetric)] if check else [])
    return ClaimSpec(
        id="user.mad",
        statement="E|X - EX| <= (sqrt 3 / 2) sd(X) for unimodal symmetric X",
        source="test",
        assumptions=asm,
        term=Expect(sp.Abs(x - M)),
        bound=sp.sqrt(3) / 2 * SIGMA,
    )


_B = SearchBudget(maxiter=30, popsize=8)


def test_families_decode_to_members():
    rng = __import__("numpy").random.default_rng(0)
    for space in (
        DistributionSpace(2, 4, family="symmetric"),
        DistributionSpace(2, 5, family="symmetric"),
        DistributionSpace(1, 7, family="unimodal-symmetric"),
        DistributionSpace(2, 3, support_bound=0.25),
        DistributionSpace(2, 3, variance=2.0),
    ):
        lo, hi = zip(*space.bounds())
        xs = rng.uniform(lo, hi, size=(50, space.dim))
        dist = space.decode(xs)
        for r in range(50):
            st = space.setting(dist, r)
            if space.family != "any":
                assert st["symmetric"], (space, r)
            if space.support_bound is not None:
                assert st["support"] <= 0.25 + 1e-15
            if space.variance is not None:
                assert all(abs(v - 2.0) < 1e-9 for v in st["variance"])
        if space.family == "unimodal-symmetric":  # weights non-increasing away from the center
            w = dist.weights[:, 0, :]
            h = space.k // 2
            assert (w[:, h:-1] >= w[:, h + 1 :] - 1e-15).all() and (w[:, 1 : h + 1] >= w[:, :h] - 1e-15).all()
    with pytest.raises(ValueError, match="odd"):
        DistributionSpace(1, 4, family="unimodal-symmetric")
    with pytest.raises(ValueError, match="family"):
        DistributionSpace(1, 3, family="gaussian")


def test_search_never_reports_violated_outside_a_stated_assumption():
    """The issue's case: a claim stated under unimodal symmetric noise, searched over an unrestricted space, was
    reported violated on a two-point law. Now the setting-form assumption is checked on every candidate: no
    candidate of the unrestricted space meets it, so the record is not-applicable (measured anyway)."""
    rec = adversarial_search(_mad_spec(True), [DistributionSpace(1, 2)], {}, seed=0, budget=_B)
    assert rec.status == "not-applicable" and "unimodal symmetric noise" in rec.reason, rec.reason
    assert rec.ratio == pytest.approx(2 / 3**0.5, rel=1e-6)  # the measurement is kept
    unchecked = adversarial_search(_mad_spec(False), [DistributionSpace(1, 2)], {}, seed=0, budget=_B)
    assert unchecked.status == "violated"  # the same claim without the assumption: a real counterexample
    ok = adversarial_search(
        _mad_spec(True), [DistributionSpace(1, 5, family="unimodal-symmetric")], {}, seed=0, budget=_B
    )
    assert ok.status == "holds" and ok.evidence == "searched" and ok.ratio <= 1.0, ok.reason


def test_search_finds_a_planted_violation_of_known_size():
    """E|X - m| <= sd(X) (Jensen) is tight on symmetric two-point laws (sup ratio exactly 1): with the bound
    planted 0.8 times too small the search must report a violation of size 1/0.8, proved."""
    spec = ClaimSpec(
        id="jensen",
        statement="E|X - m| <= sd(X)",
        source="test",
        assumptions=[_MEAN, _SD],
        term=Expect(sp.Abs(x - M)),
        bound=SIGMA,
    )
    rec = adversarial_search(spec, [DistributionSpace(1, 2)], {}, seed=1, budget=_B, scale=0.8)
    assert rec.status == "violated" and rec.evidence == "proved"
    assert rec.ratio >= 1.25 * (1 - 1e-6)
    rec_sym = adversarial_search(spec, [DistributionSpace(1, 4, family="symmetric")], {}, seed=1, budget=_B, scale=0.8)
    assert rec_sym.status == "violated" and rec_sym.ratio >= 1.25 * (1 - 1e-6)


def test_a_record_that_holds_only_by_its_rounding_tolerance_says_so():
    """A value a few ulps past its bound holds under the check's stated relative tolerance, and the reason
    says so with the exact numbers (its ratio is then above 1); a value within the bound says nothing more; one
    past the tolerance fails."""
    from proofs_checks.verdict import decide

    v = decide("<=", 1.0000000000000426, 1.0, method="exact", tolerance=5e-10)
    assert v.status == "holds" and "within the relative rounding tolerance 5e-10" in v.reason
    assert "1.0000000000000426 <= 1.0" in v.reason
    v = decide("<=", 0.99, 1.0, method="exact", tolerance=5e-10)
    assert v.status == "holds" and "tolerance" not in v.reason
    v = decide("<=", 1.001, 1.0, method="exact", tolerance=5e-10)
    assert v.status != "holds"
