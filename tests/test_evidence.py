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
    assert Claim(**base, status="holds", method="symbolic", reason="sympy reduces lhs - rhs to 0 (x)").evidence == (
        "proved"
    )
    with pytest.raises(ValueError, match="evidence"):
        Claim(**base, status="holds", method="exact", evidence="believed")
    rec = Claim(**base, status="holds", method="exact").to_dict()
    validate_record(rec)
    with pytest.raises(ValueError, match="evidence"):
        validate_record({**rec, "evidence": "vibes"})
    assert set(EVIDENCE) == {"proved", "exact", "measured", "searched", "fit"}


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
