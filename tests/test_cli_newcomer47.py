"""Issue 47's newcomer run: bad input found there gets one line and exit 2 before any work."""

from __future__ import annotations

import os
import time

import pytest

from lptheory.app import cli


def _quick(tmp_path) -> list:
    """A command that passes the switch checks and returns at once: diff of two empty records files."""
    a = tmp_path / "a.json"
    a.write_text('{"meta": {"format": 1}, "claims": []}')
    return ["diff", str(a), str(a)]


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
        assert cli.main(_quick(tmp_path)) == 0
        assert "LPTHEORY_LIMIT_CACHE" not in _err(capsys)
    assert not (tmp_path / "new").exists()  # nothing made by the check itself


@pytest.mark.parametrize(
    "name,value",
    [
        ("LPTHEORY_ENGINE", "fortran"),
        ("LPTHEORY_SVML", "maybe"),
        ("LPTHEORY_OMP", "2"),
        ("LPTHEORY_THREADS", "abc"),
        ("LPTHEORY_THREADS", "0"),
        ("LPTHEORY_THREADS", "²"),
        ("LPTHEORY_SEARCH_THREADS", "-1"),
        ("LPTHEORY_KERNEL_CACHE_MAX", "1e3"),
        ("LPTHEORY_GN_KERNEL", "yes"),
        ("LPTHEORY_SYMBOLIC_BATCH", "2"),
    ],
)
def test_a_switch_outside_its_documented_values_is_refused(tmp_path, monkeypatch, capsys, name, value):
    """A check that never reads the switch ran with it (LPTHEORY_SVML=maybe taken as unset, exit 0)."""
    monkeypatch.setenv(name, value)
    assert cli.main(_quick(tmp_path)) == 2
    err = _err(capsys)
    assert err.startswith(f"lptheory: error: {name}={value}: must be ") and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "name,value",
    [
        ("LPTHEORY_ENGINE", "NumPy"),
        ("LPTHEORY_SVML", "0"),
        ("LPTHEORY_OMP", "1"),
        ("LPTHEORY_THREADS", "3"),
        ("LPTHEORY_SEARCH_THREADS", "1"),
        ("LPTHEORY_GIT_COMMIT", "abc123"),
        ("LPTHEORY_SVML", ""),
    ],
)
def test_a_documented_switch_value_passes(tmp_path, monkeypatch, capsys, name, value):
    monkeypatch.setenv(name, value)
    assert cli.main(_quick(tmp_path)) == 0
    assert name not in _err(capsys)


def test_an_empty_sweep_config_is_refused(tmp_path, capsys):
    """An empty file (a wrong path) ran a one-cell sweep of the defaults, exit 0."""
    cfg = tmp_path / "empty.toml"
    for text in ("", "# only a comment\n"):
        cfg.write_text(text)
        assert cli.main(["sweep", str(cfg), "--dry-run"]) == 2
        assert f"{cfg}: empty" in _err(capsys)
    assert not (tmp_path / "sweeps").exists()


def test_a_pool_manager_thread_broken_by_the_stop_prints_no_traceback(monkeypatch):
    """Ctrl-C of report --jobs 2 printed 'Exception in thread ... InvalidStateError: CANCELLED' (the pool's manager
    thread setting an exception on a future the interrupted caller had cancelled) above 'lptheory: interrupted'.
    Once a stop is requested, that error of a pool thread is the stop's doing; before it, and for other errors,
    the thread's hook reports it as ever."""
    import concurrent.futures as cf
    import threading
    from concurrent.futures.process import BrokenProcessPool

    from lptheory.app import guard

    seen = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(type(args.exc_value).__name__))

    def report(exc):
        threading.excepthook(threading.ExceptHookArgs([type(exc), exc, None, None]))

    with guard.interruptible():
        report(cf.InvalidStateError("CANCELLED"))  # no stop requested: a real error, reported
        guard._STOPPED.append(2)
        try:
            report(cf.InvalidStateError("CANCELLED"))
            report(BrokenProcessPool("killed"))
            report(RuntimeError("mine"))
        finally:
            guard._STOPPED.clear()
    assert seen == ["InvalidStateError", "RuntimeError"]
    report(cf.InvalidStateError("after"))  # the hook is restored when the block is left
    assert seen[-1] == "InvalidStateError" and len(seen) == 3


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--skip", ""], "--skip '': names no check"),
        (["--skip", ","], "--skip ',': names no check"),
        (["--only", "lemmas", "--skip", "lemmas"], "--skip lemmas: leaves no check of --only lemmas to run"),
        (["--config", os.devnull], f"--config {os.devnull}: not a regular file"),
    ],
)
def test_report_selections_and_configs_that_select_nothing_or_cannot_be_read(tmp_path, capsys, extra, words):
    """--skip '' ran every check; --only X --skip X said 'configuration: no check selected'; --config /dev/zero was
    read until memory ran out (/dev/null here: the same refusal, a character device, without the wait)."""
    out = tmp_path / "o"
    assert cli.main(["report", "--quick", "--quiet", "--out", str(out), *extra]) == 2
    assert words in _err(capsys)
    assert not out.exists()


def test_a_report_config_nested_too_deeply_is_refused(tmp_path, capsys):
    """A 5000-deep TOML array in --config: RecursionError, a traceback and exit 3 ('report crashed ... a bug')."""
    cfg = tmp_path / "deep.toml"
    cfg.write_text("[checks]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    assert cli.main(["report", "--quick", "--quiet", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert f"--config {cfg}: nested too deeply" in _err(capsys)
