"""``lptheory report``: files, schema, catalog coverage, image links, reproducibility, parallel = serial."""

from __future__ import annotations

import json
import re

import pytest

from figures.report import load_config, run_report
from proofs_checks.records import validate_record

CONFIG = """
seed = 3
[checks.lemmas]
p = [4.0]
[checks.theorem1]
p = [3.0]
[checks.symbolic]
[checks.majorization]
p = [4.0]
[checks.smoothness]
p = [4.0]
[checks.claims]
[checks.acceleration]
p = [3.0]
[checks.not-a-check]
"""

CATALOG = {
    "lemmas": {"thm1.A", "thm1.B1", "thm1.B2", "thm1.B", "thm1.C"},
    "theorem1": {"thm1.bound", "thm1.step", "thm1.rate"},
    "majorization": {"maj.lp-smoothness", "maj.tight", "maj.chain"},
    "smoothness": {"asm1.equivalence"},
    "claims": {
        "steepest.closed-form",
        "lionk.first-step",
        "intro.norm-ratio",
        "cor.batch-variance",
        "cor.bounded-gradient",
    },
    "acceleration": {"acc.upper", "acc.exponent", "acc.lower"},
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("rep")
    cfg = base / "cfg.toml"
    cfg.write_text(CONFIG)
    a = run_report(str(base / "a"), config=str(cfg), quick=True, jobs=1, quiet=True)
    b = run_report(str(base / "b"), config=str(cfg), quick=True, jobs=2, quiet=True)
    return base, a, b


def test_report_files_and_schema(reports):
    base, a, _ = reports
    out = base / "a"
    for name in ("index.html", "report.md", "claims.json", "results.csv"):
        assert (out / name).stat().st_size > 0
    doc = json.loads((out / "claims.json").read_text())
    assert doc["meta"]["seed"] == 3 and "date" in doc["meta"]
    for rec in doc["claims"]:
        validate_record(rec)
    ids = {}
    for rec in doc["claims"]:
        ids.setdefault(rec["check"], set()).add(rec["id"])
    for check, expected in CATALOG.items():
        assert expected <= ids[check], (check, expected - ids[check])
    assert any(i.startswith("sym.lemma-B2.") for i in ids["symbolic"])
    assert a["missing"] == ["not-a-check"]
    assert "not-a-check" in (out / "report.md").read_text()  # listed as not yet available, never faked


def test_report_html_has_no_broken_images(reports):
    base, _, _ = reports
    out = base / "a"
    page = (out / "index.html").read_text()
    srcs = re.findall(r"<img src='([^']+)'", page)
    assert len(srcs) >= 6
    for s in srcs:
        assert (out / s).exists(), s
        assert (out / (s[:-4] + ".svg")).exists()
    for s in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (out / "report.md").read_text()):
        assert (out / s).exists(), s


def test_report_reproducible_and_parallel_equals_serial(reports):
    base, _, _ = reports
    da = json.loads((base / "a" / "claims.json").read_text())
    db = json.loads((base / "b" / "claims.json").read_text())
    da["meta"].pop("date"), db["meta"].pop("date")
    assert da == db


def test_violated_claims_carry_witness_and_reproduce_command(reports):
    base, a, _ = reports
    md = (base / "a" / "report.md").read_text()
    assert a["violated"] and all(r["witness"] for r in a["violated"])
    assert "Reproduce: `lptheory check lemmas --p 4 --seed 3 --json`" in md


def test_config_override_merges_value_by_value(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[checks.lemmas]\np = [3.0]\n")
    cfg = load_config(str(f))
    assert cfg["checks"]["lemmas"]["p"] == [3.0]
    assert cfg["checks"]["theorem1"]["p"] == [3.0, 4.0]  # untouched defaults stay


def test_markdown_table_rows_have_the_header_column_count(reports):
    base, _, _ = reports
    lines = (base / "a" / "report.md").read_text().splitlines()
    i = lines.index("## Verdict table") + 2
    ncol = len(re.findall(r"(?<!\\)\|", lines[i]))
    rows = [ln for ln in lines[i + 2 :] if ln.startswith("| ")]
    assert rows and all(len(re.findall(r"(?<!\\)\|", ln)) == ncol for ln in rows)
