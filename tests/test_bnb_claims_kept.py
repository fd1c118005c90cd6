"""``lptheory check proved`` keeps its branch-and-bound decisions on disk (proofs_checks/stacey/bnb_claims.py,
``decisions``, through proofs_checks.moment.kept_decision): a run that computes them, a run that reads them back
and a run with the cache off give the same records, and the read-back records stay ``holds (proved)`` (their
certificates re-admitted)."""

from __future__ import annotations

from proofs_checks import moment
from proofs_checks.packs import Context, load
from proofs_checks.stacey import bnb_claims as BC


def _records(quick=True):
    ctx = Context(seed=0, quick=quick, options={"p": [3.0]})
    return [r.to_dict() for r in load("stacey").checks["proved"].run(ctx)]


def test_kept_decisions_give_the_same_records_computed_read_back_and_off(tmp_path, monkeypatch):
    monkeypatch.setattr(moment, "_users_code_loaded", lambda: False)  # claim files other tests loaded
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", "0")
    off = _records()
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", str(tmp_path))
    c0 = moment.kept_counts()
    computed = _records()
    c1 = moment.kept_counts()
    read = _records()
    c2 = moment.kept_counts()
    assert c1["computed"] == c0["computed"] + 1 and c1["read"] == c0["read"]  # one entry for p = 3, made
    assert c2["read"] == c1["read"] + 1 and c2["computed"] == c1["computed"]  # and read back
    assert off == computed == read
    assert [(r["id"], r["status"], r["evidence"]) for r in read] == [
        ("thm1.B2.kappa", "holds", "proved"),
        ("thm1.B2.two-point", "holds", "proved"),
        ("asm1.diag2", "holds", "proved"),
    ]
    assert all(b.get("certificate") for r in read[1:] for b in r["data"]["bnb"])


def test_the_kept_document_is_the_decisions_of_the_old_route(monkeypatch):
    """The decisions equal those the check made before they were kept (kappa_enclosure, _two_point, _asm1 called
    as the check called them), and the witness sides are _two_point's."""
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", "0")
    p, budget = 4.0, 20000
    enc = BC.kappa_enclosure(p)
    K = max(1.0, enc["hi"])
    (rb, lb, rb_), (ra, la, ra_) = BC._two_point(p, K, budget, kappa_hi=enc["hi"] if enc["converged"] else None)
    opp, same = BC._asm1(p, budget)
    doc = BC.decisions(p, budget)
    assert doc["enclosure"]["lo"] == enc["lo"] and doc["enclosure"]["hi"] == enc["hi"]
    assert doc["two_point"] == [moment_json(rb.to_dict()), moment_json(ra.to_dict())]
    assert doc["asm1"] == [moment_json(opp.to_dict()), moment_json(same.to_dict())]
    assert BC._two_point_sides(p) == ((lb, rb_), (la, ra_))


def moment_json(d):
    """``d`` through JSON, as kept_decision passes every decision (tuples become lists)."""
    import json

    return json.loads(json.dumps(d))
