"""Issue 47's newcomer run: bad input found there gets one line and exit 2 before any work."""

from __future__ import annotations

import os
import time

import pytest

from lptheory.app import cli


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("kind", ["device", "file", "under a file"])
def test_a_directory_switch_naming_no_directory_is_refused_before_any_work(tmp_path, monkeypatch, capsys, kind):
    """LPTHEORY_PRACTICE_CACHE=/dev/null trained for 37 s, then exit 3 ('a check failed to run')."""
    afile = tmp_path / "f"
    afile.write_text("x")
    value = {"device": os.devnull, "file": str(afile), "under a file": str(afile / "sub")}[kind]
    monkeypatch.setenv("LPTHEORY_PRACTICE_CACHE", value)
    t0 = time.perf_counter()
    assert cli.main(["check", "practice", "--quick", "--quiet"]) == 2
    assert time.perf_counter() - t0 < 5
    err = _err(capsys)
    assert err.startswith(f"lptheory: error: LPTHEORY_PRACTICE_CACHE={value}: ") and len(err.splitlines()) == 1
    assert afile.read_text() == "x"


def test_a_directory_switch_that_is_a_new_or_writable_directory_passes(tmp_path, monkeypatch, capsys):
    for value in (tmp_path / "new" / "cache", tmp_path, "0"):
        monkeypatch.setenv("LPTHEORY_LIMIT_CACHE", str(value))
        assert cli.main(["info"]) == 0
        assert "LPTHEORY_LIMIT_CACHE" not in _err(capsys)
    assert not (tmp_path / "new").exists()  # nothing made by the check itself
