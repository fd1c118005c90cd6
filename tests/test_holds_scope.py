"""How far a ``holds`` reaches (issue 35, item 1): a holds is class-wide only from a proof; every other
evidence level holds on what was tested (the record's scope). The counts, the report's tables (HTML,
Markdown, LaTeX), ``results.csv`` and ``--fail-on unproved`` keep the two apart; the status never changes."""

from __future__ import annotations

import csv
import json
import textwrap

import pytest

from lptheory.app import cli
from proofs_checks.records import (
    CLASS_WIDE_EVIDENCE,
    holds_scope,
    holds_scope_sentence,
    status_counts_text,
    status_text,
)
from proofs_checks.regression import compare


def _rec(rid, status, evidence, **kw):
    return {"id": rid, "status": status, "evidence": evidence, "params": {"p": 3.0}, "method": "exact", **kw}


def test_only_a_proof_makes_a_holds_class_wide():
    assert CLASS_WIDE_EVIDENCE == ("proved",)
    assert holds_scope(_rec("a", "holds", "proved")) == "proved"
    for ev in ("exact", "measured", "searched", "fit"):
        assert holds_scope(_rec("a", "holds", ev)) == "tested", ev
    for st in ("violated", "inconclusive", "not-applicable"):
        assert holds_scope(_rec("a", st, "proved")) is None
    assert status_text(_rec("a", "holds", "searched")) == "holds (tested)"
    assert status_text(_rec("a", "holds", "proved")) == "holds (proved)"
    assert status_text(_rec("a", "violated", "proved")) == "violated"


def test_counts_split_the_holds_and_leave_controls_apart():
    rows = [
        _rec("a", "holds", "proved"),
        _rec("b", "holds", "searched"),
        _rec("c", "holds", "measured"),
        _rec("d", "violated", "proved"),
        _rec("e.control", "inconclusive", "searched", reason="negative control 'x' fails as it must"),
    ]
    text = status_counts_text(rows)
    assert text.startswith("3 holds (1 proved, 2 on what was tested), 1 violated, 0 inconclusive, 0 not-applicable")
    assert "1 negative control, counted apart" in text
    assert holds_scope_sentence(rows).startswith("Of the 3 holds, 1 is proved")
    assert holds_scope_sentence([_rec("d", "violated", "proved")]) == ""


def test_fail_on_unproved_names_only_the_tested_holds():
    rows = [_rec("a", "holds", "proved"), _rec("b", "holds", "searched", scope="searched at p=3")]
    got = compare(rows, None, fail_on=("unproved",))
    assert (
        [p["kind"] for p in got] == ["unproved"] and ":b" in got[0]["record"] and "searched at p=3" in got[0]["detail"]
    )
    assert compare(rows, None, fail_on=("violated",)) == []  # the existing values keep their meaning


def _claim_file(tmp_path, evidences):
    # a proved holds is earned (issue 44): a sympy identity decided by the toolkit, with its certificate; the
    # other levels are set on a value claim
    def one(i, ev):
        if ev == "proved":
            return (
                f"    c = identity_claim(t**2 - 1, (t - 1) * (t + 1), id='c{i}', statement='s', source='here', "
                "params={'p': 3.0})\n    out.append(c)"
            )
        return (
            f"    c = value_claim(ClaimSpec(id='c{i}', statement='s', source='here'), 1.0, 2.0, {{'p': 3.0}})\n"
            f"    c.evidence = {ev!r}\n    out.append(c)"
        )

    lines = "\n".join(one(i, ev) for i, ev in enumerate(evidences))
    f = tmp_path / f"claims_{'_'.join(evidences)}.py"
    f.write_text(
        textwrap.dedent(
            """
            import sympy
            from proofs_checks.api import ClaimSpec, Pack, identity_claim, value_claim
            t = sympy.Symbol("t")
            PACK = Pack("scoped", title="scoped claims")

            @PACK.check(title="one")
            def one(ctx):
                out = []
            """
        )
        + lines
        + "\n    return out\n"
    )
    return f


@pytest.mark.parametrize("evidences,rc", [(("proved", "searched"), 1), (("proved",), 0)])
def test_check_fail_on_unproved_exit_code(tmp_path, capsys, evidences, rc):
    f = _claim_file(tmp_path, evidences)
    assert cli.main(["check", str(f), "--jobs", "1", "--quiet", "--fail-on", "unproved"]) == rc
    out, err = capsys.readouterr()
    k = evidences.count("proved")
    assert f"{len(evidences)} holds ({k} proved, {len(evidences) - k} on what was tested)" in out
    assert ("unproved" in err) == (rc == 1)
    # without "unproved" the same pack passes --fail-on violated
    assert cli.main(["check", str(f), "--jobs", "1", "--quiet", "--fail-on", "violated"]) == 0


def test_report_keeps_the_split_in_every_output(tmp_path, capsys):
    f = _claim_file(tmp_path, ("proved", "searched"))
    out = tmp_path / "rep"
    assert cli.main(["report", "--claims", str(f), "--jobs", "1", "--out", str(out), "--quiet"]) == 0
    assert "2 holds (1 proved, 1 on what was tested)" in capsys.readouterr().out
    page = (out / "index.html").read_text()
    md = (out / "report.md").read_text()
    tex = (out / "report.tex").read_text()
    for doc in (page, md):
        assert "holds (proved)" in doc and "holds (tested)" in doc
        assert "Of the 2 holds, 1 is proved" in doc
    assert "1 proved, 1 on what was tested" in page
    assert "& holds (proved) & proved &" in tex and "& holds (tested) & searched &" in tex
    # each record's scope sentence, in the HTML and the Markdown verdict tables
    scopes = [r["scope"] for r in json.loads((out / "claims.json").read_text())["claims"]]
    assert len(scopes) == 2 and all(f'<td class="set">{s}</td>' in page and f"| {s} |" in md for s in scopes)
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["id"], r["holds_scope"]) for r in rows} == {("c0", "proved"), ("c1", "tested")}
