"""The report writes every violated record's witness to ``witnesses/ID.json`` beside its pages, and the re-check
command it prints (in the details of each violated record, and after the CLI's table of violated claims) names
that file (issue 45: the hint said ``< witness.json``, a file no one had written)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from figures.report import RECHECK_CMD, witness_files
from proofs_checks import recheck
from tests.report_pages import DATA, render_saved


@pytest.fixture(scope="module")
def page_dir(tmp_path_factory):
    return render_saved(tmp_path_factory.mktemp("witnesses"))


def test_every_violated_witness_is_written_and_its_hint_names_the_file(page_dir):
    doc = json.loads(DATA.read_text())
    violated = [r for r in doc["claims"] if r["status"] == "violated"]
    assert len(violated) >= 10
    files = sorted((page_dir / "witnesses").iterdir())
    assert len(files) == len(violated)  # one file per violated record, none for the others
    written = [json.loads(f.read_text()) for f in files]
    # each file holds its record's witness, exactly (the stored copy in claims.json is the same object)
    assert sorted(json.dumps(w, sort_keys=True) for w in written) == sorted(
        json.dumps(r["witness"], sort_keys=True) for r in violated
    )
    page, md = (page_dir / "index.html").read_text(), (page_dir / "report.md").read_text()
    assert "witness.json" not in page and "witness.json" not in md
    named_html = re.findall(r"<code>python -m proofs_checks\.recheck (\S+)</code>", page)
    named_md = re.findall(r"`python -m proofs_checks\.recheck (\S+)`", md)
    assert len(named_html) == len(violated) and sorted(named_html) == sorted(named_md)
    assert sorted(set(named_html)) == sorted(f"witnesses/{f.name}" for f in files)  # each file named once
    for rel in named_html:
        assert (page_dir / rel).is_file(), rel
        assert f'<a href="{rel}">{rel}</a>' in page and f"[{rel}]({rel})" in md  # a link to it


def test_a_witness_file_re_checks_as_the_hint_says(page_dir, monkeypatch, capsys):
    """The printed command, run in the report's folder, confirms the violation from the file (two records of
    the same claim: their own witnesses, not one file twice)."""
    monkeypatch.chdir(page_dir)
    for name in ("thm1.B2.json", "thm1.B2-2.json"):
        argv = shlex.split(RECHECK_CMD.format(path=f"witnesses/{name}"))
        assert argv[:3] == ["python", "-m", "proofs_checks.recheck"]
        assert recheck.main(argv[3:]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["violated"] is True and out["assumptions_ok"] is True, (name, out)
    a, b = (json.loads((page_dir / "witnesses" / n).read_text()) for n in ("thm1.B2.json", "thm1.B2-2.json"))
    assert a != b


def test_witness_file_names_are_unique_safe_and_only_for_violated_records():
    wit = {"kind": "expression"}
    records = {
        "a": [
            {"id": "x.claim", "status": "violated", "witness": wit},
            {"id": "x.claim", "status": "holds", "witness": wit},  # not violated: no file
            {"id": "X.CLAIM", "status": "violated", "witness": wit},  # the same name on a case-insensitive disk
            {"id": "../../etc/passwd", "status": "violated", "witness": wit},  # no way out of witnesses/
            {"id": "v", "status": "violated", "witness": None},  # no witness object: no file
        ],
        "b": [{"id": "x.claim", "status": "violated", "witness": wit}],
    }
    files = witness_files(records)
    assert files == {
        ("a", 0): "witnesses/x.claim.json",
        ("a", 2): "witnesses/X.CLAIM-2.json",
        ("a", 3): "witnesses/_.._etc_passwd.json",
        ("b", 0): "witnesses/x.claim-3.json",
    }
    assert len({f.lower() for f in files.values()}) == len(files)
