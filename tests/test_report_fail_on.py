"""``lptheory report --fail-on`` (the values and the rule of ``lptheory check --fail-on``, exit 1), and the
terminal table's holds marker (the words of the HTML, Markdown and LaTeX tables: ``records.status_text``)."""

from __future__ import annotations

import json
import os

import pytest

from lptheory.app import cli
from proofs_checks.records import status_text

ONLY = ["--only", "claims", "--quick", "--jobs", "1", "--quiet", "--seed", "0"]  # one cheap check of the Stacey pack


def _problems(err: str) -> list[str]:
    """The rows of format_regressions' table (kind and record), as printed on stderr."""
    lines = err.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("kind"))
    return [ln.rstrip() for ln in lines[start + 1 :] if ln and not ln.startswith(" ")]


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_report_fail_on_fails_as_check_does_and_still_writes_the_report(tmp_path, capsys):
    """The claims check has a violated finding (lionk.first-step at tau = 0) and holds on what was tested only:
    report and check fail on the same records, with the same table, exit 1; the report is written all the same."""
    out = tmp_path / "rep"
    rc = cli.main(["report", *ONLY, "--out", str(out), "--fail-on", "violated,unproved"])
    rep = capsys.readouterr()
    assert rc == cli.EXIT_FINDING == 1
    assert (out / "claims.json").is_file() and (out / "index.html").is_file()
    claims = json.loads((out / "claims.json").read_text())["claims"]
    rows = _problems(rep.err)
    assert any(r.startswith("violated") and "lionk.first-step" in r for r in rows)
    n_tested = sum(r["status"] == "holds" and status_text(r) == "holds (tested)" for r in claims)
    assert n_tested > 0 and sum(r.startswith("unproved") for r in rows) == n_tested
    rc = cli.main(
        ["check", "claims", "--quick", "--jobs", "1", "--quiet", "--seed", "0", "--fail-on", "violated,unproved"]
    )
    chk = capsys.readouterr()
    assert rc == 1 and _problems(chk.err) == rows  # the same rule, the same findings, the same words
    # the terminal table of check marks every holds as the other tables do (status_text), one row per record
    for r in claims:
        if r["status"] == "holds":
            assert status_text(r) in chk.out
    assert chk.out.count("holds (tested)") == n_tested
    # nothing to fail on: exit 0 (no inconclusive record in this check)
    assert not any(r["status"] == "inconclusive" for r in claims)
    assert cli.main(["report", *ONLY, "--out", str(out), "--fail-on", "inconclusive"]) == 0
    assert "fail this run" not in capsys.readouterr().err
    assert cli.main(["report", *ONLY, "--out", str(out)]) == 0  # without --fail-on a finding never fails the run


def test_report_fail_on_bad_value_is_exit_2_before_any_work(tmp_path, capsys):
    out = tmp_path / "never"
    assert cli.main(["report", *ONLY, "--out", str(out), "--fail-on", "violated,bogus"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on 'bogus': allowed values are violated, inconclusive, regressed, unproved" in err
    assert not os.path.exists(out)


def test_report_help_documents_fail_on(capsys):
    try:
        cli.main(["report", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--fail-on KINDS exit 1 on findings: comma-separated among violated, inconclusive, regressed, unproved" in text
    )
