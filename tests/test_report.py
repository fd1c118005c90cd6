"""``lptheory report``: files, provenance, findings first, anchors, tidy results, verdict snapshot,
every witness re-checks, parallel = serial."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from lptheory.app.cli import main
from proofs_checks import snapshot
from proofs_checks.recheck import recheck
from proofs_checks.records import validate_record

SNAPSHOT = Path(__file__).parent / "snapshots" / "stacey_quick_seed0.json"


@pytest.mark.slow
def test_report_files_schema_and_strict_json(stacey_quick_report):
    out, doc = stacey_quick_report
    for name in ("index.html", "report.md", "claims.json", "results.csv"):
        assert (out / name).stat().st_size > 0
    text = (out / "claims.json").read_text()
    assert "NaN" not in text and "Infinity" not in text  # strict JSON
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    meta = doc["meta"]
    assert meta["seed"] == 0 and meta["quick"] is True and meta["date"] and meta["config_hash"]
    assert {"numpy", "scipy", "sympy", "mpmath", "matplotlib"} <= set(meta["versions"])
    assert "git_commit" in meta
    for rec in doc["claims"]:
        validate_record(rec)
    assert not list(out.glob(".*.part"))  # nothing half-written


@pytest.mark.slow
def test_verdicts_match_the_snapshot(stacey_quick_report):
    """Same statuses and ratios (1e-12) as the reviewed snapshot; after a change on purpose, regenerate it with
    `python -m proofs_checks.snapshot --write` (or `--from REPORT/claims.json --write`) and review the diff."""
    _, doc = stacey_quick_report
    snap = json.loads(SNAPSHOT.read_text())
    got = snapshot.take(snapshot.by_check(doc["claims"]), pack="stacey", seed=0, quick=True)
    assert snapshot.compare(snap, got) == []


def test_snapshot_diff_names_every_change():
    base = {"checks": {"a": [["c.1", "p=3", "holds", 0.5], ["c.2", "", "violated", 1.5]]}}
    new = {"checks": {"a": [["c.1", "p=3", "violated", 0.5], ["c.2", "", "violated", 1.5 + 1e-9]], "b": []}}
    diff = snapshot.compare(base, new)
    assert diff == [
        "~ a[0] c.1 (p=3): holds -> violated",
        "~ a[1] c.2: ratio 1.5 -> 1.500000001",
        "+ check b: added (0 records)",
    ]
    assert snapshot.compare(base, base) == []


@pytest.mark.slow
def test_every_violated_record_rechecks_without_the_toolkit(stacey_quick_report):
    _, doc = stacey_quick_report
    violated = [r for r in doc["claims"] if r["status"] == "violated"]
    assert len(violated) >= 12 and {r["witness"]["kind"] for r in violated} == {"expression"}
    for r in violated:
        chk = recheck({k: v for k, v in r["witness"].items() if k != "recheck"})
        assert chk["violated"] and chk["assumptions_ok"], (r["id"], chk)


@pytest.mark.slow
def test_ratio_has_one_meaning(stacey_quick_report):
    """ratio > 1 exactly when the relation fails: violated <=-records have ratio > 1; equalities have none."""
    _, doc = stacey_quick_report
    for r in doc["claims"]:
        if r.get("relation") == "==":
            assert r["ratio"] is None, r["id"]
        if r["status"] == "violated" and r.get("relation") in ("<=", ">=") and r["ratio"] is not None:
            assert r["ratio"] > 1, (r["id"], r["ratio"])
        if r["status"] == "holds" and isinstance(r.get("ratio"), float) and r["method"] == "adversarial-search":
            assert r["ratio"] <= 1 + 1e-6, (r["id"], r["ratio"])


@pytest.mark.slow
def test_corrections_section_after_the_verdict_table(stacey_quick_report):
    """Issue 18: a correction per violated lemma claim, with its own id, evidence and the theorem's consequence;
    every correction holds in its re-check (a correction that failed would be reported violated)."""
    out, doc = stacey_quick_report
    # the planted-violation controls (issue 35) are no corrections: they carry no correction of their own
    cor = [r for r in doc["claims"] if r["check"] == "corrections" and not r["params"].get("control")]
    ids = {r["id"] for r in cor}
    assert {"thm1.B2.corrected", "thm1.corrected", "asm1.corrected", "lionk.corrected"} <= ids
    for r in cor:
        c = r["data"]["correction"]
        assert c["claimed"] and c["corrected"] and c["evidence"], r["id"]
        assert r["status"] == "holds", (r["id"], r["params"])
    b2 = [r for r in cor if r["id"] == "thm1.B2.corrected"]
    kinds = {e["kind"] for r in b2 for e in r["data"]["correction"]["evidence"]}
    assert {"proved-symbolically", "tight-by-witness", "holds-in-search"} <= kinds
    thm = next(r for r in cor if r["id"] == "thm1.corrected")
    assert all(row["holds_empirically"] and row["paper_margin"] > 1 for row in thm["data"]["correction"]["rows"])
    page = (out / "index.html").read_text()
    assert page.index('id="summary"') < page.index('id="corrections"') < page.index('id="sec-lemmas"')
    assert page.index('id="sec-lemmas"') < page.index('id="verdicts"')  # the verdict table last, collapsed
    md = (out / "report.md").read_text()
    assert "## Corrections" in md and "thm1.B2.corrected" in md
    assert (out / "corrections.png").exists() and (out / "corrections.svg").exists()


@pytest.mark.slow
def test_html_puts_findings_first_with_links_and_provenance(stacey_quick_report):
    out, doc = stacey_quick_report
    page = (out / "index.html").read_text()
    for key in ("date (UTC)", "seed", "config hash", "git commit", "versions", "quick"):
        assert key in page
    assert page.index('id="summary"') < page.index('id="sec-lemmas"') < page.index('id="verdicts"')
    findings = page[page.index('id="summary"') : page.index('id="contents"')]
    for rid in ("thm1.B2", "asm1.equivalence", "lionk.first-step", "sym.lemma-B2.combine"):
        assert rid in findings
    # every violated claim is linked from the summary, typos apart from the errors that matter
    errors, typos = findings.split('id="typos"')
    for rid in ("sym.thm1.step2", "sym.thm1.C.step1", "sym.lemma-B2.case1.step5"):
        assert rid in typos and rid not in errors
    for r in doc["claims"]:
        if r["status"] == "violated":
            assert r["id"] in findings, r["id"]
    anchors = set(re.findall(r'id="([^"]+)"', page))
    for link in re.findall(r'href="#([^"]+)"', page):
        assert link in anchors, link
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert len(srcs) >= 7
    for s in srcs:
        assert (out / s).exists() and (out / (s[:-4] + ".svg")).exists()
    assert "reference/acceleration.md" not in (out / "claims.json").read_text()


@pytest.mark.slow
def test_markdown_has_the_same_content(stacey_quick_report):
    out, doc = stacey_quick_report
    md = (out / "report.md").read_text()
    assert md.index("## Summary") < md.index("## Verdict table")
    lines = md.splitlines()
    i = lines.index("## Verdict table") + 2
    head = lines[i]
    assert "| claim |" in head
    ncol = len(re.findall(r"(?<!\\)\|", head))
    end = next((k for k in range(i, len(lines)) if lines[k].startswith("## ")), len(lines))
    rows = [ln for ln in lines[i + 2 : end] if ln.startswith("| ")]
    assert len(rows) == len(doc["claims"]) and all(len(re.findall(r"(?<!\\)\|", ln)) == ncol for ln in rows)
    for s in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / s).exists(), s
    # each B2 witness sits under its own id, not under the combined bound's statement
    b2 = [ln for ln in lines if ln.startswith("- **`thm1.B2`**") and "**violated**" in ln]
    assert len(b2) == 3 and all("Lemma 2 (lem:B2)" in ln for ln in b2)


@pytest.mark.slow
def test_reproduce_commands_run(stacey_quick_report, capsys):
    out, doc = stacey_quick_report
    md = (out / "report.md").read_text()
    cmds = sorted(set(re.findall(r"Reproduce: `lptheory (check [^`]+)`", md)))
    assert "check lemmas --p 4 --seed 0 --quick --json" in cmds
    one_per_check = {c.split()[1]: c for c in cmds}  # the commands of one check differ only in --p
    for cmd in one_per_check.values():
        assert main(cmd.split() + ["--quiet"]) == 0, cmd
        doc = json.loads(capsys.readouterr().out)
        assert doc["claims"] and doc["meta"]["seed"] == 0
        capsys.readouterr()


@pytest.mark.slow
def test_results_csv_is_tidy_and_complete(stacey_quick_report):
    out, doc = stacey_quick_report
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    for col in (
        "check",
        "id",
        "status",
        "p",
        "d",
        "n",
        "noise",
        "problem",
        "method_name",
        "quantity",
        "value",
        "seed",
        "config_hash",
        "git_commit",
        "date",
        "numpy",
    ):
        assert col in rows[0]
    assert {int(r["record"]) for r in rows} == set(range(len(doc["claims"])))  # every record present
    evidence = {int(r["record"]): r["evidence"] for r in rows}  # each record's evidence, as in claims.json
    assert evidence == {k: c["evidence"] for k, c in enumerate(doc["claims"])}
    assert not any(r["setting"].startswith("{") for r in rows)  # no JSON blobs
    b2 = [r for r in rows if r["id"] == "thm1.B2" and r["status"] == "violated" and r["quantity"] == "ratio"]
    assert {float(r["p"]) for r in b2} == {3.0, 4.0, 8.0}


@pytest.mark.slow
def test_results_parquet_equals_csv(stacey_quick_report):
    pq = pytest.importorskip("pyarrow.parquet")
    out, _ = stacey_quick_report
    table = pq.read_table(out / "results.parquet")
    with open(out / "results.csv") as fh:
        n = sum(1 for _ in fh) - 1
    assert table.num_rows == n and "value" in table.column_names


CONFIG = """
seed = 3
[checks.majorization]
p = [4.0]
"""


@pytest.mark.slow
def test_parallel_equals_serial_and_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    base = ["report", "--quick", "--quiet", "--config", str(cfg), "--only", "claims,symbolic,majorization"]
    assert main(base + ["--out", str(tmp_path / "a")]) == 0
    assert main(base + ["--out", str(tmp_path / "b"), "--jobs", "2"]) == 0
    da = json.loads((tmp_path / "a" / "claims.json").read_text())
    db = json.loads((tmp_path / "b" / "claims.json").read_text())
    for d in (da, db):
        d["meta"].pop("date")
        d["meta"].pop("config")  # holds the jobs-independent plan; compared through the claims
    assert da["claims"] == db["claims"] and da["meta"]["seed"] == 3
    assert {r["check"] for r in da["claims"]} == {"claims", "symbolic", "majorization"}
    assert {r["params"]["p"] for r in da["claims"] if r["check"] == "majorization"} == {4.0}


@pytest.mark.parametrize(
    "text,msg",
    [
        ("seedd = 1", "unknown key 'seedd'"),
        ("seed = 1.5", "seed must be an integer"),
        ('[checks.lemmas]\np = "three"', "checks.lemmas.p must be a number"),
        ("[checks.nope]", "unknown check 'checks.nope'"),
        ("[checks.symbolic]\np = [3.0]", "unknown key 'checks.symbolic.p'"),
        ("[checks.theorem1]\np = [2.0]", "checks.theorem1.p must be in (2, inf) for this check, got 2.0"),
    ],
)
def test_bad_config_fails_before_any_work(tmp_path, capsys, text, msg):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    out = tmp_path / "rep"
    assert main(["report", "--quick", "--quiet", "--config", str(cfg), "--out", str(out)]) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists()  # nothing was started, nothing left behind
