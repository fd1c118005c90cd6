"""Records files from elsewhere (``lptheory diff``, ``check --baseline``): a malformed record is exit 2
naming the file and the key, never a traceback; NaN/Infinity tokens, unknown statuses and string ratios are
refused (a NaN baseline ratio silently turned the ratio-regression check off)."""

from __future__ import annotations

import json
import os

import pytest

from lptheory.app import cli
from proofs_checks.records_io import RecordsFileError, read_records

SAVED = os.path.join(os.path.dirname(__file__), "data", "stacey_quick_records.json")
GOOD = {"id": "c1", "check": "lemmas", "status": "holds", "params": {"p": 3.0}, "ratio": 0.5, "witness": None}


def _file(tmp_path, text: str, name="claims.json"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _doc(*records) -> str:
    return json.dumps({"claims": list(records), "meta": {}})


BAD = [
    (_doc({k: v for k, v in GOOD.items() if k != "id"}), "claims[0].id must be a non-empty string"),
    (_doc({k: v for k, v in GOOD.items() if k != "status"}), "claims[0] (c1).status must be one of"),
    (_doc(GOOD, "a record"), "claims[1] must be an object (a record), got str"),
    (_doc({**GOOD, "params": [3.0]}), "claims[0] (c1).params must be an object, got list"),
    (_doc({**GOOD, "status": "fine"}), "claims[0] (c1).status must be one of holds, violated"),
    (_doc({**GOOD, "ratio": "0.5"}), "claims[0] (c1).ratio must be a finite number or null, got '0.5'"),
    (_doc({**GOOD, "ratio": True}), "claims[0] (c1).ratio must be a finite number or null"),
    (_doc({**GOOD, "witness": "x"}), "claims[0] (c1).witness must be an object or null"),
    (_doc(GOOD).replace("0.5", "NaN"), "NaN is not a JSON number"),
    (_doc(GOOD).replace("0.5", "-Infinity"), "-Infinity is not a JSON number"),
    ('{"claims": [' + "[" * 100000 + "]" * 100000 + "]}", "nested too deeply"),
    ('{"claims": [' + "[" * 100 + "]" * 100 + "]}", "nested too deeply"),
    ('{"claims": {}}', 'expected {"claims": [...]'),
    ("[1, 2]", 'expected {"claims": [...]'),
    ("{not json", "not a claims JSON file"),
    # the format version
    (json.dumps({"claims": [GOOD], "meta": {"format": 2}}), "meta.format 2 is not a records format this version"),
    (json.dumps({"claims": [GOOD], "meta": {"format": "1"}}), "meta.format '1' is not a records format"),
    (json.dumps({"claims": [GOOD], "meta": {"format": True}}), "meta.format True is not a records format"),
    (json.dumps({"claims": [GOOD], "meta": {"format": 1.5}}), "meta.format 1.5 is not a records format"),
    (json.dumps({"claims": [GOOD], "meta": []}), "meta must be an object, got list"),
    # every field a record may carry, not only those the readers use
    (_doc({**GOOD, "method": "guess"}), "claims[0] (c1).method must be one of exact, monte-carlo"),
    (_doc({**GOOD, "relation": "<"}), "claims[0] (c1).relation must be one of <=, >=, ==, rate, got '<'"),
    (_doc({**GOOD, "evidence": "strong"}), "claims[0] (c1).evidence must be one of proved, exact"),
    (_doc({**GOOD, "evidence": None}), "claims[0] (c1).evidence must be one of"),
    (_doc({**GOOD, "empirical": "1.5"}), "claims[0] (c1).empirical must be null, a finite number or 'inf'"),
    (_doc({**GOOD, "bound": False}), "claims[0] (c1).bound must be null, a finite number"),
    (_doc({**GOOD, "bound": [1.0]}), "claims[0] (c1).bound must be null, a finite number"),
    (_doc({**GOOD, "empirical": "Infinity"}), "claims[0] (c1).empirical must be null"),
    (_doc({**GOOD, "ci": [0.1]}), "claims[0] (c1).ci must be null or a list [lo, hi] of two numbers"),
    (_doc({**GOOD, "ci": [0.1, "high"]}), "claims[0] (c1).ci must be null or a list [lo, hi]"),
    (_doc({**GOOD, "ci": {"lo": 0.1, "hi": 0.2}}), "claims[0] (c1).ci must be null or a list [lo, hi]"),
    (_doc({**GOOD, "statement": ["s"]}), "claims[0] (c1).statement must be a string, got list"),
    (_doc({**GOOD, "source": 3}), "claims[0] (c1).source must be a string, got int"),
    (_doc({**GOOD, "reason": {"why": 1}}), "claims[0] (c1).reason must be a string or null, got dict"),
    (_doc({**GOOD, "data": [1, 2]}), "claims[0] (c1).data must be an object or null, got list"),
    (_doc({**GOOD, "status": "violated"}), "claims[0] (c1).witness: a violated record needs a witness object"),
]


@pytest.mark.parametrize("text,needle", BAD)
def test_a_malformed_records_file_is_exit_2_naming_file_and_key(tmp_path, capsys, text, needle):
    bad = _file(tmp_path, text, "bad.json")
    good = _file(tmp_path, _doc(GOOD))
    assert cli.main(["diff", good, bad]) == 2
    err = capsys.readouterr().err
    assert f"NEW {bad}: " in err and needle in err and "Traceback" not in err, err
    with pytest.raises(RecordsFileError, match="--baseline"):
        read_records(bad, "--baseline")


def test_a_good_file_still_reads(tmp_path, capsys):
    good = _file(tmp_path, _doc(GOOD, {**GOOD, "id": "c2", "ratio": None, "status": "violated", "witness": {}}))
    assert cli.main(["diff", good, good]) == 0
    assert "0 changed" in capsys.readouterr().out
    assert [r["id"] for r in read_records(str(tmp_path))] == ["c1", "c2"]  # a report directory: its claims.json


def test_every_field_in_its_range_reads(tmp_path):
    """A record with every field at an edge of what it may hold reads: non-finite values as records.clean writes
    them, a ci with them, null data/reason/witness; and meta.format 1."""
    full = {
        **GOOD,
        "statement": "s",
        "source": "here",
        "reason": None,
        "data": None,
        "method": "monte-carlo",
        "relation": ">=",
        "evidence": "measured",
        "empirical": "inf",
        "bound": "-inf",
        "ci": ["nan", 2],
    }
    path = _file(tmp_path, json.dumps({"claims": [full, {**full, "empirical": -3, "ci": None}], "meta": {"format": 1}}))
    assert [r["empirical"] for r in read_records(path)] == ["inf", -3]


def test_the_writers_put_the_format_version_and_the_reader_reads_it(tmp_path):
    """records.dumps (check --json, check_NAME.json) and the report's claims.json write meta.format = FORMAT; a
    file without it (written before the field) reads as format 1."""
    from figures.report import _write_claims_json
    from proofs_checks.records import dumps
    from proofs_checks.records_io import FORMAT, FORMATS, read_document

    assert FORMAT in FORMATS
    doc = json.loads(dumps([GOOD], {"seed": 0}))
    assert doc["meta"] == {"seed": 0, "format": FORMAT}
    path = _write_claims_json(str(tmp_path), [GOOD], {"seed": 0})
    assert read_document(path)["meta"] == {"seed": 0, "format": FORMAT}
    old = _file(tmp_path, _doc(GOOD), "old.json")  # meta without format
    assert read_records(old) == [GOOD]


def test_files_written_before_the_format_read():
    """Records written before meta.format and before the strict fields still read: the saved quick records
    that ship with the tests (tests/data)."""
    recs = read_records(SAVED)
    assert len(recs) > 100 and {r["status"] for r in recs} <= {"holds", "violated", "inconclusive", "not-applicable"}


def test_snapshot_from_a_malformed_file_is_exit_2(tmp_path, capsys):
    from proofs_checks import snapshot

    bad = _file(tmp_path, _doc({**GOOD, "params": [1]}), "bad.json")
    assert snapshot.main(["--from", bad, "--out", str(tmp_path / "snap.json")]) == 2
    err = capsys.readouterr().err
    assert f"--from {bad}: claims[0] (c1).params must be an object" in err
