"""Issue 23, item 1 in the report: every record's evidence level is shown beside its status (HTML, Markdown,
LaTeX), each level is explained once, and the engines keep the level a verdict sets itself."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import sympy as sp

import figures.report as report
from proofs_checks.engines import claim_record
from proofs_checks.packs import load
from proofs_checks.records import EVIDENCE, holds_scope
from proofs_checks.spec import ClaimSpec
from proofs_checks.verdict import EVIDENCE_TEXT, Verdict, evidence_for

DATA = Path(__file__).parent / "data" / "stacey_quick_records.json"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The saved quick report (written before the field existed) with each record's level derived as the
    records do, one record forced to every level so that each appears; rendered without figures."""
    tmp = tmp_path_factory.mktemp("ev")
    doc = json.loads(DATA.read_text())
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        r["evidence"] = evidence_for(r["method"], r["status"], r.get("relation", "<="), r.get("witness"), r["reason"])
        recs.setdefault(r.pop("check"), []).append(r)
    flat = [r for rs in recs.values() for r in rs]
    for level, r in zip(EVIDENCE, flat[:: max(1, len(flat) // len(EVIDENCE))]):
        r["evidence"] = level
    orig = report.figures_for
    report.figures_for = lambda *a, **k: []
    try:
        report.write_report(str(tmp), pack=load("stacey"), records=recs, meta=doc["meta"])
    finally:
        report.figures_for = orig
    return flat, (tmp / "index.html").read_text(), (tmp / "report.md").read_text(), (tmp / "report.tex").read_text()


def test_every_status_has_its_evidence_beside_it(rendered):
    flat, page, md, tex = rendered
    # HTML verdict table: the cell after the status is the record's evidence, for every record
    cells = re.findall(
        r'<tr class="[a-z-]+" data-status="([a-z-]+)".*?<td>([a-z-]+(?: \((?:proved|tested)\))?)</td>'
        r"<td>([a-z-]+)</td>",
        page,
        re.S,
    )
    assert len(cells) == len(flat)
    # a holds says how far it reaches: "holds (proved)" (class-wide) or "holds (tested)" (records.holds_scope)
    shown = [r["status"] + (f" ({holds_scope(r)})" if holds_scope(r) else "") for r in flat]
    assert [(s, e) for _, s, e in cells] == list(zip(shown, [r["evidence"] for r in flat]))
    # Markdown verdict table: "| status | evidence |"
    md_rows = [ln for ln in md.splitlines() if ln.startswith("| ") and ln.count(" | ") >= 11]
    got = [ln.split(" | ")[6] for ln in md_rows[1:]]
    assert got == [r["evidence"] for r in flat]
    # LaTeX verdict table: the evidence column after the status
    for level in EVIDENCE:
        assert re.search(
            r"& (\\textbf\{violated\}|holds \((?:proved|tested)\)|inconclusive|not-applicable) & " + level + " &", tex
        )
    # details and notes say it too
    assert page.count("evidence: ") >= sum(r["status"] != "holds" for r in flat)


def test_each_level_explained_once(rendered):
    flat, page, md, tex = rendered
    for level, text in EVIDENCE_TEXT.items():
        assert page.count(text) == 1 and md.count(text) == 1, level
        assert tex.count(f"\\item[{level}]") == 1
        n = sum(r["evidence"] == level for r in flat)
        assert f'{level}</span> <span class="same">({n} record' in page


def test_engines_keep_the_verdicts_own_level():
    spec = ClaimSpec(id="t.ev", statement="x <= 1", source="test")
    # a verdict that sets its level: kept (the default derivation would say "exact")
    rec = claim_record(spec, Verdict("holds", "a search", evidence="searched"), params={}, method="exact")
    assert rec.evidence == "searched"
    # "proved" only with the certificate of a toolkit decision (issue 44); written by hand it is refused
    from proofs_checks.bnb import branch_and_bound

    x_ = sp.Symbol("x_")
    cert = branch_and_bound(x_**2, x_ + 1, {"x_": (0.0, 1.0)}).certificate
    rec = claim_record(
        spec, Verdict("holds", "enclosures separate", evidence="proved", certificate=cert), params={}, method="exact"
    )
    assert rec.evidence == "proved" and rec.data["certificate"] == cert
    with pytest.raises(ValueError, match="evidence 'proved' is refused: it carries no certificate"):
        claim_record(spec, Verdict("holds", "enclosures separate", evidence="proved"), params={}, method="exact")
    # a verdict that does not: derived from the method
    rec = claim_record(
        spec, Verdict("holds", "ci below"), params={}, method="monte-carlo", empirical=0.5, bound=1.0, ci=(0.4, 0.6)
    )
    assert rec.evidence == "measured"
    with pytest.raises(ValueError, match="evidence"):
        claim_record(spec, Verdict("holds", "x", evidence="certain"), params={}, method="exact")
