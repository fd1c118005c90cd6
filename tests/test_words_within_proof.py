"""Issue 44, item 5: every word within its proof. A record's evidence and its scope agree (no ``proved`` with a
scope that opens with a search's words, no "proved for the setting" on a counterexample), every ``proved`` record
carries a certificate, and every status the README quotes beside a number or a record id is one the quick report
(seed 0) gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proofs_checks.certificates import certificates_in
from proofs_checks.records import SCOPE_WORDS, Claim, is_control

ROOT = Path(__file__).resolve().parent.parent
STATUSES = ("holds", "violated", "inconclusive", "not-applicable")


def scope_disagreements(records: list[dict]) -> list[str]:
    """Records whose scope says another evidence level than their own, and proved records without a certificate."""
    bad = []
    others = {lvl: words for lvl, words in SCOPE_WORDS.items() if lvl != "proved"}
    for r in records:
        scope, ev, where = r.get("scope") or "", r.get("evidence"), f"{r['id']} {r.get('params')}"
        if ev == "proved":
            for lvl, words in others.items():
                if scope.startswith(words):
                    bad.append(f"{where}: evidence proved, scope opens with the {lvl} words {words!r}")
            if r["status"] != "holds" and scope.startswith(SCOPE_WORDS["proved"]):
                bad.append(f"{where}: {r['status']} with the scope {SCOPE_WORDS['proved']!r} (a counterexample's)")
            if not certificates_in(r.get("data"), r.get("witness")):
                bad.append(f"{where}: evidence proved without a certificate")
        elif scope.startswith("proved"):
            bad.append(f"{where}: evidence {ev}, scope opens with 'proved'")
    return bad


_NUM_QUOTE = re.compile(
    r"(\d+\.\d+)(?:\s*\[[^\]]*\])?\s*\(`(" + "|".join(STATUSES) + r")`"
)  # "1.974 [1.971, 1.976] (`holds`"
_ID_QUOTE = re.compile(r"`([a-z0-9]+(?:\.[A-Za-z0-9_-]+)+)`,\s*(" + "|".join(STATUSES) + r")\b")  # "`id`, violated"


def readme_status_disagreements(text: str, records: list[dict]) -> list[str]:
    """README quotes of a status that no (non-control) record of the quick report gives: a number followed by
    ``(`status`...`` (the records whose empirical value rounds to the number) and ``"`record.id`, status"``."""
    text = re.sub(r"\s+", " ", text)
    recs = [r for r in records if not is_control(r)]
    bad = []
    for m in _NUM_QUOTE.finditer(text):
        num, status = m.group(1), m.group(2)
        digits = len(num.split(".")[1])
        near = [
            r for r in recs if isinstance(r.get("empirical"), (int, float)) and f"{r['empirical']:.{digits}f}" == num
        ]
        if not near:
            bad.append(f"README quotes {num} (`{status}`): no record of the quick report has that value")
        elif not any(r["status"] == status for r in near):
            got = sorted({f"{r['id']}: {r['status']}" for r in near})
            bad.append(f"README quotes {num} (`{status}`), the quick report gives {got}")
    ids = {r["id"] for r in recs}
    for m in _ID_QUOTE.finditer(text):
        rid, status = m.group(1), m.group(2)
        if rid not in ids:
            continue  # not a record id of this report (a check name, a file)
        if not any(r["id"] == rid and r["status"] == status for r in recs):
            got = sorted({r["status"] for r in recs if r["id"] == rid})
            bad.append(f"README quotes `{rid}`, {status}; the quick report gives {got}")
    return bad


def _rec(**kw) -> dict:
    base = {"id": "c", "statement": "s", "source": "s", "status": "holds", "method": "exact", "params": {"p": 3}}
    return Claim(**{**base, **kw}).to_dict()


def test_the_checks_catch_planted_disagreements():
    ok = _rec(evidence="searched", method="adversarial-search")
    assert scope_disagreements([ok]) == []
    planted = {**ok, "evidence": "proved"}  # proved, with the search's scope and no certificate
    found = scope_disagreements([planted])
    assert any("scope opens with the searched words" in f for f in found)
    assert any("without a certificate" in f for f in found)
    assert scope_disagreements([{**ok, "scope": "proved for every law"}])  # the reverse
    recs = [
        {**_rec(status="inconclusive", reason="r"), "id": "acc.exponent", "empirical": 1.9737},
        {**_rec(status="violated", witness={"kind": "expression"}), "id": "thm1.B2", "empirical": 2.0},
    ]
    assert readme_status_disagreements("fits 1.974 [1.971, 1.976] (`holds`, claim 2)", recs)
    assert readme_status_disagreements("fits 1.974 (`inconclusive`)", recs) == []
    assert readme_status_disagreements("Lemma B2 (`thm1.B2`, holds)", recs)
    assert readme_status_disagreements("Lemma B2 (`thm1.B2`, violated)", recs) == []
    assert readme_status_disagreements("fits 9.999 (`holds`)", recs)  # a number no record has


def test_a_counterexample_is_not_scoped_as_a_proof_of_the_claim():
    import sympy as sp

    from proofs_checks.bnb import branch_and_bound
    from proofs_checks.spec import ClaimSpec
    from proofs_checks.witnesses import bnb_record

    x = sp.Symbol("x")
    rec = bnb_record(branch_and_bound(x**2, x, {"x": (0.0, 3.0)}), ClaimSpec(id="sq", statement="s", source="s"))
    assert (rec.status, rec.evidence) == ("violated", "proved")
    assert rec.scope.startswith("a counterexample proved at the setting")
    assert scope_disagreements([rec.to_dict()]) == []


@pytest.mark.slow
def test_the_quick_reports_evidence_and_scope_agree(stacey_quick_report):
    _, doc = stacey_quick_report
    bad = scope_disagreements(doc["claims"])
    assert not bad, "\n".join(bad[:20])


@pytest.mark.slow
def test_the_readme_quotes_only_statuses_the_quick_report_gives(stacey_quick_report):
    _, doc = stacey_quick_report
    bad = readme_status_disagreements((ROOT / "README.md").read_text(), doc["claims"])
    assert not bad, "\n".join(bad)
