"""Issue 23, item 8: for a claim that holds with room, the correction engine reports the smallest constant the
evidence supports, labelled as such, never below any value found; statuses unchanged."""

from __future__ import annotations

from proofs_checks.corrections import SUPPORTED_LABEL, annotate_supported, supported_constant
from proofs_checks.engines import claim_record
from proofs_checks.spec import ClaimSpec
from proofs_checks.verdict import Verdict

SPEC = ClaimSpec(id="t.room", statement="E term <= bound", source="test")


def _rec(status, emp, bnd, method="adversarial-search", ci=None):
    return claim_record(SPEC, Verdict(status, "r"), params={}, method=method, empirical=emp, bound=bnd, ci=ci)


def test_supported_constant_is_the_largest_ratio_found():
    sc = supported_constant(_rec("holds", 0.3, 2.0))
    assert sc["kappa"] == 0.15 and sc["label"] == SUPPORTED_LABEL and sc["room"] == 0.85
    # an interval: the upper end, never below the estimate
    sc = supported_constant(_rec("holds", 0.5, 2.0, method="monte-carlo", ci=(0.4, 0.8)))
    assert sc["kappa"] == 0.4 and "upper end" in sc["basis"]
    assert supported_constant(_rec("inconclusive", 3.0, 2.0)) is None
    assert supported_constant(_rec("holds", 0.3, 0.0)) is None


def test_annotate_keeps_statuses_and_labels_only_room():
    recs = [_rec("holds", 0.3, 2.0), _rec("holds", 2.0, 2.0), _rec("holds", 0.3, 2.0, method="exact")]
    before = [(r.status, r.empirical, r.bound) for r in recs]
    annotate_supported(recs)
    assert [(r.status, r.empirical, r.bound) for r in recs] == before
    assert recs[0].data["supported_constant"]["kappa"] == 0.15 and "not proved" in recs[0].reason
    assert recs[1].data is None  # tight: no room, nothing to report
    assert recs[2].data is None  # one setting's ratio is no constant of the claim
