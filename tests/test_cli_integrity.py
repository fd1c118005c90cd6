"""Bad input to the command line gets one line and exit 2 (or 130 for an interruption), never a traceback,
a silent exit 0, a run of everything, or a file overwritten (issue 45)."""

from __future__ import annotations

import json
import os

import pytest

from lptheory.app import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOMENT = os.path.join(ROOT, "examples", "claim_moment_lemma.py")


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_out_into_a_directory_of_someone_elses_files_is_refused(tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    (out / "report.md").write_text("notes\n")
    assert cli.main(["report", "--claims", MOMENT, "--quick", "--quiet", "--out", str(out)]) == 2
    assert "not made by lptheory" in _err(capsys) and (out / "report.md").read_text() == "notes\n"
    assert sorted(os.listdir(out)) == ["report.md"]  # no lock, no marker left behind


def test_optimizer_module_is_not_imported_for_a_command_without_the_flag(tmp_path, capsys):
    marker = tmp_path / "IMPORTED"
    mod = tmp_path / "mark.py"
    mod.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    for argv in (["info", "--optimizer-module", str(mod)], ["diff", "a", "b", "--optimizer-module", str(mod)]):
        assert cli.main(argv) == 2
        assert "unrecognized arguments: --optimizer-module" in _err(capsys)
        assert not marker.exists()


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [("import sys\nsys.exit(0)\n", 2, "called sys.exit(0)"), ("raise KeyboardInterrupt\n", 130, "interrupted")],
    ids=["exit0", "ctrl-c"],
)
def test_a_module_that_exits_at_import_is_never_a_silent_success(tmp_path, capsys, body, code, words):
    mod = tmp_path / "m.py"
    mod.write_text(body)
    assert cli.main(["check", str(mod), "--quick", "--quiet"]) == code
    assert words in _err(capsys)
    assert cli.main(["run", "--optimizer-module", str(mod), "--steps", "3", "--out", str(tmp_path / "r")]) == code
    err = _err(capsys)
    assert words in err and str(mod) in err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", ""],
        ["check", "  "],
        ["report", "--only", "", "--quick", "--out", "OUT"],
        ["report", "--only", ",", "--quick", "--out", "OUT"],
        ["check", MOMENT, "--quick", "--set", "r=1.5", "--fail-on", ",,"],
        ["check", MOMENT, "--quick", "--set", "r=1.5", "--fail-on", ""],
        ["check", "lemmas", "--quick", "--set", "p=1e308"],
    ],
    ids=["check-empty", "check-blank", "only-empty", "only-comma", "fail-on-commas", "fail-on-empty", "set-p"],
)
def test_empty_or_out_of_range_selections_are_refused(tmp_path, capsys, argv):
    argv = [str(tmp_path / "o") if a == "OUT" else a for a in argv]
    assert cli.main(argv) == 2
    err = _err(capsys)
    assert len(err.strip().splitlines()) <= 2  # the usage line of argparse at most, then one line


def test_set_p_names_the_flag_and_its_range(capsys):
    assert cli.main(["check", "lemmas", "--quick", "--set", "p=1e308"]) == 2
    assert "--set p=1e308: must be a finite number in (1, 1000]" in _err(capsys)


def test_a_config_value_is_named_by_its_key_not_a_flag(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[checks.jensen]\nr = []\n")
    out = tmp_path / "o"
    assert cli.main(["report", "--claims", MOMENT, "--quick", "--config", str(cfg), "--out", str(out)]) == 2
    err = _err(capsys)
    assert "checks.jensen.r: an empty list" in err and "--set" not in err


@pytest.mark.parametrize("value", ["inf", "1e400"])
def test_a_non_finite_claim_parameter_is_refused_naming_it(capsys, value):
    assert cli.main(["check", MOMENT, "--quick", "--quiet", "--set", f"r={value}"]) == 2
    assert "the scalar r = inf is not finite" in _err(capsys)


def _records(path, recs):
    path.write_text(json.dumps({"claims": recs}))
    return str(path)


def test_records_files_that_cannot_be_read_whole_are_refused(tmp_path, capsys):
    rec = {"id": "a", "status": "holds", "check": "x", "evidence": "measured", "ratio": 0.5}
    one = _records(tmp_path / "one.json", [rec])
    big = tmp_path / "big.json"
    big.write_text('{"claims": [{"id": "a", "status": "holds", "ratio": 1' + "0" * 400 + "}]}")
    assert cli.main(["diff", str(big), one]) == 2
    assert "401 digits, beyond float64" in _err(capsys)
    dup = _records(tmp_path / "dup.json", [rec, dict(rec)])
    assert cli.main(["diff", dup, one]) == 2
    assert "records 0 and 1 are the same record" in _err(capsys)
    if os.path.exists("/dev/zero"):
        (tmp_path / "z").mkdir()
        (tmp_path / "z" / "claims.json").symlink_to("/dev/zero")
        assert cli.main(["diff", str(tmp_path / "z"), one]) == 2
        assert "not a regular file" in _err(capsys)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p.mkdir(), "a directory, not a config file"),
        (lambda p: p.write_text("x = " + "[" * 200_000 + "]" * 200_000 + "\n"), "nested too deeply"),
        (lambda p: p.write_bytes(b"\xff\xfe[grid]\n"), "not UTF-8"),
    ],
    ids=["directory", "deep", "not-utf8"],
)
def test_a_sweep_config_that_is_not_one_is_named(tmp_path, capsys, make, words):
    cfg = tmp_path / "cfg.toml"
    make(cfg)
    assert cli.main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    err = _err(capsys)
    assert words in err and str(cfg) in err


def test_sweep_without_its_extra_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed: its import raises ImportError
    cfg = os.path.join(ROOT, "examples", "sweeps", "theorem1_rate.toml")
    assert cli.main(["sweep", cfg, "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    assert "pip install 'lptheory[sweep]'" in _err(capsys)
    assert cli.main(["plot", str(tmp_path / "o")]) == 2
    assert "pip install 'lptheory[sweep]'" in _err(capsys)
