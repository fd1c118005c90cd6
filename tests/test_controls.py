"""Negative controls: one convention for every pack (proofs_checks.verdict.control_verdict), counted apart from
the claims in tables, totals, --fail-on and the report, with reasons a newcomer can read; and distinct labels
on the report summary's evidence links."""

import csv
import re

import pytest

from proofs_checks.api import ClaimSpec, Verdict, control_record, control_verdict, rate_claim, value_claim
from proofs_checks.packs import installed_packs
from proofs_checks.packs import load as load_pack
from proofs_checks.records import control_failed, is_control, status_text

# small grids for the packs' rate checks (the convention, not the rates, is under test here)
SMALL = {"spectral": {"rate-lmo": {"p": [3.0], "T": [8, 16, 32]}, "rate-thm1": {"T": [16, 32, 64]}}}


def _pack_records(name):
    from proofs_checks.api import Context

    pack = load_pack(installed_packs()[name])
    out = []
    for cname, c in pack.checks.items():
        opts = c.resolve(SMALL.get(name, {}).get(cname, {}))
        out += [r.to_dict() | {"check": cname} for r in c.run(Context(seed=0, quick=True, options=opts))]
    return out


@pytest.fixture(scope="module")
def spectral_records():
    return _pack_records("spectral")


def _assert_one_convention(recs, where):
    ctl = [r for r in recs if is_control(r)]
    assert ctl, f"{where}: no negative control ran"
    for r in ctl:
        assert r["status"] in ("inconclusive", "not-applicable"), (where, r["id"], r["status"])
        assert re.match(r"negative control '[^']+' (fails as it must|PASSES the rule it must fail)", r["reason"]), (
            where,
            r["id"],
            r["reason"][:120],
        )
        assert control_failed(r) == ("fails as it must" in r["reason"])


@pytest.mark.slow
def test_every_registered_pack_records_its_controls_by_one_convention(stacey_quick_report, spectral_records):
    """Every control record of every registered pack: never holds, never violated, "negative control 'x'
    fails as it must" (the spectral pack used to record its controls violated)."""
    assert set(installed_packs()) >= {"stacey", "spectral"}
    for name in installed_packs():
        if name == "practice":  # it trains models for minutes: its controls are tested in tests/test_practice.py
            continue
        if name == "stacey":
            recs = stacey_quick_report[1]["claims"]
        elif name == "spectral":
            recs = spectral_records
        else:  # pragma: no cover - another installed pack
            recs = _pack_records(name)
        _assert_one_convention(recs, name)
    assert all(control_failed(r) for r in spectral_records if is_control(r))
    # acc.exponent's controls say what they are (the rate rule's own text alone read as a contradiction)
    acc = [r for r in stacey_quick_report[1]["claims"] if r["id"] == "acc.exponent" and is_control(r)]
    assert acc and all("The control: " in r["reason"] and "expected outcome" in r["reason"] for r in acc)


@pytest.mark.slow
def test_spectral_controls_keep_their_evidence_and_say_plainly_what_failed(spectral_records):
    """A spectral identity control found violated keeps its re-checked witness and evidence level and says
    so; the rate-thm1 controls say what the control is, what the rule said and that the failure is expected;
    the main claims hold only with every control failing."""
    by = {}
    for r in spectral_records:
        by.setdefault(r["id"], []).append(r)
    ns5 = by["spectral.muon-svd-step.control-ns5"][0]
    assert (
        ns5["evidence"] == "exact" and ns5["witness"]["recheck"]["violated"] and ns5["witness"]["recheck"]["dps"] == 60
    )
    assert "finds it violated" in ns5["reason"] and "re-checked from the witness alone (60 digits" in ns5["reason"]
    for cid in ("rate.thm1-schatten.control-still", "rate.thm1-schatten.control-slow"):
        (r,) = by[cid]
        assert r["status"] == "inconclusive" and r["evidence"] == "fit"
        text = r["reason"]
        assert text.startswith(f"negative control '{cid.rsplit('-', 1)[1]}' fails as it must. The control: ")
        assert "The claim's rule, applied to the control, " in text
        assert text.endswith("This failure is the expected outcome (the check's evidence that it can fail), not a "
                             "finding about the paper.")  # fmt: skip
    for main in ("rate.lmo", "spectral.muon-svd-step"):
        assert all(r["status"] == "holds" and "fails as it must" in r["reason"] for r in by[main]), by[main]


def test_control_verdict_wordings():
    """The legacy wording (the Stacey pack's records) is unchanged; with ``what`` the reason names the control,
    quotes the rule's verdict and says the failure is expected, or that the method's holds is withdrawn."""
    v = Verdict("violated", "2 <= 1: fails", evidence="proved")
    assert control_verdict("static", v).reason == "negative control 'static' fails as it must: 2 <= 1: fails"
    c = control_verdict("static", v, "a method that does not move")
    assert c.status == "inconclusive" and c.evidence == "proved"
    assert c.reason == (
        "negative control 'static' fails as it must. The control: a method that does not move. The claim's rule, "
        "applied to the control, finds it violated: \u201c2 <= 1: fails\u201d. This failure is the expected "
        "outcome (the check's evidence that it can fail), not a finding about the paper."
    )
    h = control_verdict("static", Verdict("holds", "1 <= 2: holds"), "a method that does not move")
    assert h.status == "inconclusive" and h.reason.startswith("negative control 'static' PASSES the rule it must fail")
    assert "the method's holds is withdrawn" in h.reason
    # a stricter gate (the control must be found violated) makes an unconfirmed failure a pass, in words too
    u = control_verdict("x", Verdict("inconclusive", "rounding"), "a false neighbour", failed=False)
    assert "PASSES" in u.reason and "withdrawn" in u.reason
    na = control_verdict("x", Verdict("not-applicable", "assumption broken"))
    assert na.status == "not-applicable"


def test_control_record_keeps_the_measurement_and_needs_a_control_name():
    spec = ClaimSpec(id="x.ident.control-near", statement="(control, false) a = b", source="control of x.ident")
    w = {"kind": "expression", "relation": "<=", "lhs": "Integer(2)", "rhs": "Integer(1)", "scalars": {}}
    raw = value_claim(spec, 2.0, 1.0, {"p": 3.0}, witness=w)
    assert raw.status == "violated"
    rec = control_record(raw, "near", "a false neighbour")
    assert rec.status == "inconclusive" and rec.reason.startswith("negative control 'near' fails as it must.")
    assert (rec.ratio, rec.evidence, rec.witness, rec.id, rec.params) == (
        raw.ratio,
        raw.evidence,
        raw.witness,
        raw.id,
        raw.params,
    )
    assert "re-checked from the witness alone (60 digits" in rec.reason
    other = ClaimSpec(id="x.rate", statement="s", source="src", relation="rate")
    plain = rate_claim(other, [4, 16, 64, 256], [1.0, 0.5, 0.25, 0.125], {}, theory=0.5, pinned=False)
    with pytest.raises(ValueError, match="not named a control"):
        control_record(plain, "x", "a method")


@pytest.mark.slow
def test_report_counts_controls_apart_and_labels_evidence_links_distinctly(stacey_quick_report):
    """In the Stacey report: no control among the open questions or findings, results.csv marks them, the
    verdict line counts them apart, and no summary item repeats a link label (Assumption 1's links name p and
    d: they used to read 'asm1.equivalence (p=3)' three times)."""
    out, doc = stacey_quick_report
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    marked = {int(r["record"]) for r in rows if r["control"] == "True"}
    assert marked == {k for k, c in enumerate(doc["claims"]) if is_control(c)} and marked
    md = (out / "report.md").read_text()
    assert re.search(r"^Verdicts: .*; \d+ negative controls, counted apart \(", md, re.M)
    inconclusive = [ln for ln in md.splitlines() if ln.startswith("**Inconclusive**")]
    assert len(inconclusive) == 1 and "control=" not in inconclusive[0]  # the open questions' line exists
    notes = [ln for ln in md.splitlines() if re.match(r"- \*\*(inconclusive|not-applicable)\*\* \(", ln)]
    assert notes and not any("negative control" in ln for ln in notes)  # controls are not open questions
    groups = [ln for ln in md.splitlines() if ln.startswith("- **negative controls** (")]
    # theorem1, majorization, corrections, acceleration, coverage (issue 35: the planted violations of the searches)
    assert len(groups) == 5 and all(re.search(r"\d+ fails? as (it|they) must", ln) for ln in groups)
    evidence = [ln for ln in md.splitlines() if ln.startswith("Evidence: [") or "Evidence: [" in ln]
    assert evidence
    for ln in evidence:
        labels = re.findall(r"\[([^\]]+)\]\(#", ln.split("Evidence: ", 1)[1])
        assert len(labels) == len(set(labels)), ln
    asm1 = [ln for ln in evidence if "asm1.equivalence (" in ln]
    assert asm1 and re.search(r"asm1\.equivalence \(p=3, d=\d\)", asm1[0])


def test_link_labels_tell_settings_apart():
    from figures.report import _link_labels

    def rec(i, p, d, check="c"):
        return {"id": i, "params": {"p": p, "d": d, "search": f"{d} evals"}, "check": check, "show": ["p", "d"]}

    recs = [rec("a", 3.0, 2), rec("a", 3.0, 3), rec("a", 4.0, 2), rec("b", 3.0, 2), rec("b", 3.0, 2, "other")]
    assert _link_labels(recs) == ["a (p=3, d=2)", "a (p=3, d=3)", "a (p=4)", "b (p=3, c)", "b (p=3, other)"]


def test_assert_claim_holds_counts_controls_apart():
    """The pytest helper: a control failing as it must does not fail ``assert_claim_holds``; one that passes
    does (its own record, and the withdrawn holds of its method)."""
    from lptheory.app.testing import assert_claim_holds

    base = {"statement": "s", "source": "src", "method": "exact", "params": {}, "empirical": 1.0, "bound": 2.0}
    claim = {**base, "id": "x.claim", "status": "holds", "reason": None}
    fails = {
        **base,
        "id": "x.claim.control-a",
        "status": "inconclusive",
        "reason": "negative control 'a' fails as it must.",
    }
    passes = {**fails, "reason": "negative control 'a' PASSES the rule it must fail."}
    assert len(assert_claim_holds([claim, fails])) == 2
    with pytest.raises(AssertionError, match="1 of 2 record"):
        assert_claim_holds([claim, passes])


def test_a_claim_whose_id_merely_contains_control_is_a_finding_not_a_control():
    """``is_control`` reads a ``.control`` part of the dotted id, not any text: a violated claim named, say,
    ``sgd.controlled-variance`` is a finding (counted, failing ``--fail-on violated``), never hidden as a
    negative control that "fails as it must"."""
    from proofs_checks.records import status_counts_text
    from proofs_checks.regression import compare

    w = {"kind": "expression", "relation": "<=", "lhs": "Integer(2)", "rhs": "Integer(1)", "scalars": {}}
    base = {"statement": "s", "source": "src", "method": "exact", "params": {}, "witness": w, "reason": "2 <= 1"}
    for rid in ("sgd.controlled-variance.bound", "x.control_variate", "lemma.controls"):
        rec = {**base, "id": rid, "status": "violated"}
        assert not is_control(rec), rid
        assert status_counts_text([rec]).startswith("0 holds, 1 violated") and "negative control" not in (
            status_counts_text([rec])
        )
        assert [p["kind"] for p in compare([rec], None, fail_on=("violated",))] == ["violated"], rid
    for rid in ("x.claim.control", "x.claim.control-ns5", "spectral.schatten2-normalized-sgd.control-p2.5"):
        assert is_control({"id": rid, "params": {}}), rid
    assert is_control({"id": "acc.exponent", "params": {"control": "static"}})


def test_a_control_that_passes_stays_visible_whatever_its_reason_quotes():
    """Only the reason's opening says whether a control fails as it must: a control that PASSES, whose
    reason quotes a gated rule's words ("every negative control fails as it must"), is still a problem
    (``--fail-on inconclusive``, the totals' "does not fail")."""
    from proofs_checks.records import controls_text
    from proofs_checks.regression import compare

    gated = Verdict("holds", "fitted decay exponent 2.0; every negative control fails as it must (static)")
    v = control_verdict("steepest-lp", gated, "plain steepest descent")
    assert v.reason.startswith("negative control 'steepest-lp' PASSES") and "fails as it must" in v.reason
    rec = {"id": "acc.exponent", "params": {"control": "steepest-lp"}, "status": v.status, "reason": v.reason}
    assert not control_failed(rec)
    assert "1 does not fail (" in controls_text([rec])
    assert [p["kind"] for p in compare([rec], None, fail_on=("inconclusive",))] == ["inconclusive"]
    legacy = control_verdict("it's", gated)  # repr() of a name with a quote: "it's"
    assert not control_failed({"status": legacy.status, "reason": legacy.reason})
    ok = control_verdict("it's", Verdict("violated", "2 <= 1: fails"))
    assert control_failed({"status": ok.status, "reason": ok.reason})


@pytest.mark.slow
def test_latex_claims_table_counts_controls_apart(stacey_quick_report):
    """report.tex's "Claims in the paper's notation": each claim's verdicts count its negative controls
    apart (thm1.rate read "2 holds, 4 inconclusive": its four controls failing as they must, shown as four
    inconclusive settings of Theorem 1's rate)."""
    out, doc = stacey_quick_report
    tex = (out / "report.tex").read_text()
    table = tex.split(r"\section{Claims in the paper's notation}", 1)[1].split(r"\end{longtable}", 1)[0]
    for cid in ("thm1.rate", "acc.exponent"):
        recs = [r for r in doc["claims"] if r["id"] == cid]
        ctl = sum(is_control(r) for r in recs)
        assert ctl and all(control_failed(r) for r in recs if is_control(r))
        tt = r"\texttt{" + r".\allowbreak{}".join(cid.split(".")) + "}"
        (line,) = [ln for ln in table.splitlines() if ln.startswith(tt + " & ")]
        cell = line.rsplit(" & ", 1)[1].removesuffix(r" \\").strip()
        counts = dict(reversed(part.split(" ", 1)) for part in cell.split(", "))
        assert counts.pop("negative controls") == str(ctl), cell
        for st, n in counts.items():
            # a holds reads "holds (proved)" or "holds (tested)" (records.status_text)
            assert int(n) == sum(status_text(r) == st and not is_control(r) for r in recs), (cid, cell)


# ---------------------------------------------------------------------------------------------------
# a control outside the claim's assumptions (not-applicable) shows nothing; naming; the pytest helpers


def test_a_not_applicable_control_does_not_count_as_failing():
    """A control whose rule gives not-applicable has not shown that the check can fail: its record keeps the
    status and says so (it used to read "fails as it must"), ``control_failed`` is False, and a method whose
    every control is not applicable gets no controlled holds (a check with no control at all keeps its holds)."""
    from proofs_checks.records import controls_text
    from proofs_checks.verdict import gate_on_controls

    na = Verdict("not-applicable", "Assumption 1 fails: p < 2")
    for what, failed in ((None, None), ("a method that does not move", None), (None, True)):
        v = control_verdict("static", na, what, failed=failed)
        assert v.status == "not-applicable"
        assert v.reason.startswith(
            "negative control 'static' is not applicable here: it does not show that the check can fail"
        ), v.reason
        assert "fails as it must" not in v.reason
        rec = {"id": "acc.exponent", "params": {"control": "static", "control_for": "AGD"}, "status": v.status,
               "reason": v.reason}  # fmt: skip
        assert is_control(rec) and not control_failed(rec)
    legacy_reason = "negative control 'static' fails as it must (the rule does not give it holds): p < 2"
    legacy = {"id": "x.control", "params": {}, "status": "not-applicable", "reason": legacy_reason}
    assert not control_failed(legacy)
    assert "1 is not applicable here (acc.exponent [control=static, for=AGD])" in controls_text([rec])
    assert controls_text([rec]).startswith("1 negative control, counted apart (0 fail as they must")

    held = Verdict("holds", "exponent 2.0 [1.98, 2.02]")
    fails = Verdict("inconclusive", "exponent 0.0")
    only_na = gate_on_controls("AGD", held, {"static": na})
    assert only_na.status == "inconclusive" and "not controlled" in only_na.reason and "static" in only_na.reason
    mixed = gate_on_controls("AGD", held, {"static": na, "steepest": fails})
    assert mixed.status == "holds" and "(steepest; not applicable here, so not counted: static)" in mixed.reason
    assert gate_on_controls("AGD", held, {"steepest": fails}).reason.endswith(
        "every negative control fails as it must (steepest)"
    )
    none = gate_on_controls("AGD", held, {})
    assert none.status == "holds" and none.reason.endswith("(none)")  # no control run: today's behaviour
    assert gate_on_controls("AGD", held, {"s": Verdict("holds", "x")}).status == "inconclusive"


def test_controls_text_names_a_control_by_its_setting_and_counts_in_good_grammar():
    """A control that does not fail is named ``id [control=NAME, for=CONTROL_FOR]`` (acc.exponent has one
    static control per claimed exponent: the id alone named neither); "1 fails as it must"."""
    from proofs_checks.records import controls_text

    ok = {"id": "acc.exponent", "params": {"control": "static", "control_for": "AGD"}, "status": "inconclusive",
          "reason": "negative control 'static' fails as it must. The control: ..."}  # fmt: skip
    bad = {**ok, "params": {"control": "steepest-lp", "control_for": "AGD"},
           "reason": "negative control 'steepest-lp' PASSES the rule it must fail"}  # fmt: skip
    txt = controls_text([ok, bad])
    assert txt.startswith("2 negative controls, counted apart (1 fails as it must: runs built to fail, ")
    assert (
        "1 does not fail (acc.exponent [control=steepest-lp, for=AGD]): the check has not shown that it catches a "
        "failure there, so the holds verdicts it guards are withdrawn (counted as inconclusive)"
    ) in txt
    assert controls_text([ok, ok]).startswith("2 negative controls, counted apart (2 fail as they must: ")
    named_by_id = {**ok, "id": "x.claim.control-a", "params": {}, "reason": "negative control 'a' PASSES"}
    assert "1 does not fail (x.claim.control-a)" in controls_text([named_by_id])


def test_assert_violation_found_skips_a_legacy_violated_control():
    """A pack written before the one convention records a failing control ``violated`` (with a witness that
    re-checks): that is the check's evidence, not a violation of the claim."""
    from lptheory.app.testing import assert_violation_found

    w = {"kind": "expression", "relation": "<=", "lhs": "Integer(2)", "rhs": "Integer(1)", "scalars": {}}
    base = {"statement": "s", "source": "src", "method": "exact", "empirical": 2.0, "bound": 1.0, "witness": w}
    ctl = {**base, "id": "x.claim.control-near", "params": {}, "status": "violated", "reason": "2 <= 1: fails"}
    claim = {**base, "id": "x.claim", "params": {}, "status": "holds", "reason": None, "witness": None}
    with pytest.raises(AssertionError, match="no violation found in 2 record"):
        assert_violation_found([claim, ctl])
    real = {**base, "id": "x.claim", "params": {"p": 3.0}, "status": "violated", "reason": "2 <= 1: fails"}
    assert assert_violation_found([real, ctl]) == [real]


@pytest.mark.slow
def test_acceleration_controls_show_which_claim_they_control(stacey_quick_report):
    """acc.exponent runs one ``static`` control per claimed exponent on each instance: the setting shown names
    ``control_for`` so that the two rows read differently (the record's identity, regression.key, is its params,
    which always had it)."""
    from proofs_checks.records import setting_text
    from proofs_checks.regression import key

    recs = [r for r in stacey_quick_report[1]["claims"] if r["id"] == "acc.exponent" and is_control(r)]
    assert recs
    seen = {}
    for r in recs:
        assert "control_for" in r["show"] and f"control_for={r['params']['control_for']}" in setting_text(
            r["params"], r["show"]
        )
        seen.setdefault(setting_text(r["params"], r["show"]), []).append(r)
    assert all(len(v) == 1 for v in seen.values()), [k for k, v in seen.items() if len(v) > 1]
    assert len({key(r) for r in recs}) == len(recs)
    assert all(key(r) == key({**r, "show": ["p", "method", "instance", "control"]}) for r in recs)


def test_report_groups_controls_apart_marks_them_in_tables_and_filters_them(tmp_path, monkeypatch):
    """report.md / index.html / report.tex from saved records plus three controls of thm1.rate (one failing as
    it must, one not applicable, one passing): the controls are one "negative controls" group naming the two
    that do not fail, never an inconclusive / not-applicable note next to the open questions; the verdict
    tables read "inconclusive (control)"; the HTML filter has a "negative controls" choice of its own; and
    write_report's counts say which include the controls."""
    import copy
    import json
    from pathlib import Path

    import figures.report as report

    doc = json.loads((Path(__file__).parent / "data" / "stacey_quick_records.json").read_text())
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        recs.setdefault(r.pop("check"), []).append(r)
    main = next(r for r in recs["theorem1"] if r["id"] == "thm1.rate")
    raw = Verdict("inconclusive", "estimate 2.862, 95% interval [2.862, 2.862], bound 2.207")
    made = {
        "static": control_verdict("static", raw),
        "off": control_verdict("off", Verdict("not-applicable", "Assumption 4 fails: unbounded noise")),
        "slow": control_verdict("slow", Verdict("holds", "estimate 1.0, bound 2.0")),
    }
    for name, v in made.items():
        recs["theorem1"].append(
            {
                **copy.deepcopy(main),
                "status": v.status,
                "reason": v.reason,
                "witness": None,
                "params": {**main["params"], "control": name, "control_for": "Alg. 3"},
                "show": [*main["show"], "control", "control_for"],
            }  # fmt: skip
        )
    monkeypatch.setattr(report, "figures_for", lambda *a, **k: [])
    res = report.write_report(str(tmp_path), pack=load_pack("stacey"), records=recs, meta=doc["meta"])
    n = sum(len(v) for v in recs.values())
    assert sum(res["counts"].values()) == n and sum(res["claim_counts"].values()) == n - 3
    assert len(res["controls"]) == 3 and all(not is_control(r) for r in res["findings"])
    assert "controls" in report.write_report.__doc__ and "INCLUDED" in report.write_report.__doc__

    md = (tmp_path / "report.md").read_text()
    (group,) = [ln for ln in md.splitlines() if ln.startswith("- **negative controls** (3 records")]
    assert "1 fails as it must" in group
    assert "1 is not applicable here (thm1.rate [control=off, for=Alg. 3] at p = 3)" in group
    assert "1 does not fail (thm1.rate [control=slow, for=Alg. 3] at p = 3)" in group
    notes = [ln for ln in md.splitlines() if re.match(r"- \*\*(inconclusive|not-applicable)\*\*", ln)]
    assert notes and not any("negative control" in ln for ln in notes)
    (open_q,) = [ln for ln in md.splitlines() if ln.startswith("**Inconclusive**")]
    assert "control=" not in open_q
    table = md.split("## Verdict table", 1)[1]
    for name, st in (("static", "inconclusive"), ("off", "not-applicable"), ("slow", "inconclusive")):
        (row,) = [ln for ln in table.splitlines() if f"control={name}, control_for=Alg. 3 |" in ln]
        assert f" | {st} (control) | " in row, row

    html = (tmp_path / "index.html").read_text()
    assert re.search(r'<input type="checkbox" class="flt" value="control" checked> negative controls \(3\)', html)
    assert len(re.findall(r'data-status="control"', html)) == 3
    assert "<b>negative controls</b> (3 records" in html
    assert 'class="note control bad"' in html  # one control does not fail: the group is marked
    tex = (tmp_path / "report.tex").read_text()
    assert "not-applicable (control)" in tex and "inconclusive (control)" in tex


def test_report_control_group_has_an_anchor_when_every_control_is_a_legacy_violated_one(tmp_path, monkeypatch):
    """A pack written before the one convention records a failing control ``violated``: it is shown with the
    findings' details, so the section's "negative controls" group has no row of its own; its anchor is then
    the first control's (it was empty: ``<a id=""></a>`` in report.md, ``id=""`` in index.html)."""
    import copy
    import json
    from pathlib import Path

    import figures.report as report

    doc = json.loads((Path(__file__).parent / "data" / "stacey_quick_records.json").read_text())
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        recs.setdefault(r.pop("check"), []).append(r)
    check, i = next((c, k) for c, rs in recs.items() for k, r in enumerate(rs) if r["status"] == "violated")
    legacy = copy.deepcopy(recs[check][i])
    legacy["params"] = {**legacy["params"], "control": "near"}
    recs[check].append(legacy)
    monkeypatch.setattr(report, "figures_for", lambda *a, **k: [])
    report.write_report(str(tmp_path), pack=load_pack("stacey"), records=recs, meta=doc["meta"])
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "index.html").read_text()
    assert '<a id=""></a>' not in md and 'id=""' not in html
    anchor = f"c-r-{check}-{len(recs[check]) - 1}"
    assert f'<a id="{anchor}"></a>\n- **negative controls** (1 record; not open questions): 1 fails as it must' in md
    assert f'id="{anchor}"><b>negative controls</b>' in html


def test_distinguishing_keys_adds_only_what_tells_records_apart():
    """The one mechanism behind the evidence links' labels and the report's violated table: rows that would
    read alike get the fewest parameters that tell them apart (``show`` first); rows already distinct get
    nothing; a parameter that differs only as a non-scalar (a list) is never shown."""
    from proofs_checks.records import distinguishing_keys

    recs = [
        {"id": "a", "params": {"p": 3.0, "d": 2, "seed": 1, "grid": [1]}, "show": ["d"]},
        {"id": "a", "params": {"p": 3.0, "d": 4, "seed": 2, "grid": [2]}, "show": ["d"]},
        {"id": "a", "params": {"p": 4.0, "d": 4, "seed": 3, "grid": [3]}, "show": ["d"]},
        {"id": "b", "params": {"p": 3.0, "grid": [1]}},
        {"id": "b", "params": {"p": 3.0, "grid": [2]}},
    ]

    def same(i, ks):
        return (recs[i]["id"], tuple((k, recs[i]["params"][k]) for k in ks))

    keys = distinguishing_keys(recs, [["p"]] * 5, same)
    assert keys[:3] == [["p", "d"], ["p", "d"], ["p"]]  # d (shown) suffices; seed is not needed; p = 4 alone
    assert keys[3:] == [["p"], ["p"]]  # only a list tells them apart: nothing scalar to add


def test_the_counts_line_names_each_failing_control_once_with_its_settings_in_plain_words():
    """Issue 45: "2 do not fail (maj.lp-smoothness [control=planted-violation, for=...]): their method's holds is
    withdrawn" named one control for two records and said what follows in jargon. Each control is named once,
    with the values of p its records have (or their number), ``for=`` left out where it repeats the id, and the
    line says in words what a control is and what follows when one does not fail."""
    from proofs_checks.records import control_names, controls_text

    def rec(p, fails, **params):
        head = "fails as it must" if fails else "PASSES the rule it must fail"
        params = {"control": "planted-violation", "control_for": "maj.lp-smoothness", "p": p, **params}
        return {"id": "maj.lp-smoothness", "status": "inconclusive", "reason": f"negative control 'pv' {head}.",
                "params": params}  # fmt: skip

    recs = [rec(3.0, True), rec(4.0, False), rec(8.0, False), rec(8.0, False, problem="other")]
    txt = controls_text(recs)
    assert txt == (
        "4 negative controls, counted apart (1 fails as it must: runs built to fail, which show that the check can "
        "fail; not findings about the paper; 3 do not fail (maj.lp-smoothness [control=planted-violation] at p = 4, "
        "8): the check has not shown that it catches a failure there, so the holds verdicts they guard are withdrawn "
        "(counted as inconclusive))"
    )
    assert "their method's holds" not in txt and txt.count("maj.lp-smoothness") == 1
    no_p = {"id": "x.claim.control-a", "params": {}, "status": "inconclusive", "reason": "negative control 'a' PASSES"}
    assert control_names([no_p, no_p]) == "x.claim.control-a (2 records)"
    assert control_names([no_p]) == "x.claim.control-a"
    other = {**no_p, "params": {"control": "static", "control_for": "AGD"}, "id": "acc.exponent"}
    assert control_names([other, no_p]) == "acc.exponent [control=static, for=AGD]; x.claim.control-a"
