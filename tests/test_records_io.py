"""Records files from elsewhere (``lptheory diff``, ``check --baseline``): a malformed record is exit 2
naming the file and the key, never a traceback; NaN/Infinity tokens, unknown statuses and string ratios are
refused (a NaN baseline ratio silently turned the ratio-regression check off)."""

from __future__ import annotations

import json

import pytest

from lptheory.app import cli
from proofs_checks.records_io import RecordsFileError, read_records

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


def test_snapshot_from_a_malformed_file_is_exit_2(tmp_path, capsys):
    from proofs_checks import snapshot

    bad = _file(tmp_path, _doc({**GOOD, "params": [1]}), "bad.json")
    assert snapshot.main(["--from", bad, "--out", str(tmp_path / "snap.json")]) == 2
    err = capsys.readouterr().err
    assert f"--from {bad}: claims[0] (c1).params must be an object" in err
