"""The application's minor faults of issue 37: a full disk is exit 2 naming the path, ``--out`` refuses the
root and another command's directory, provenance writes nothing into the source checkout, the pytest
plugin's seed is checked."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from lptheory.app import cli

from .test_app_faults import _claims as faulty_claims

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = ["run", "--optimizer", "sgd", "--steps", "4", "--d", "4", "--replicates", "2", "--quiet"]


def _claims(tmp_path):
    """A claim file whose two checks return one record each."""
    return str(faulty_claims(tmp_path, "return [value_claim(S, 1.0, 2.0, {'p': 3.0})]\n"))


def _enospc(path):
    def fail(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    return fail


def test_a_full_disk_is_exit_2_naming_the_path(tmp_path, capsys, monkeypatch):
    """``run`` and ``report`` whose writes meet ENOSPC: exit 2 'no space left on device (PATH)', no
    traceback, no 'crashed (a bug)', and no partial --out left."""
    from lptheory.app import guard

    out = tmp_path / "o"
    monkeypatch.setattr(guard, "publish", _enospc(str(out / "trace.csv")))
    assert cli.main([*RUN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"no space left on device ({out / 'trace.csv'})" in err
    assert "Traceback" not in err and "crashed" not in err and not out.exists()

    import figures.report

    rep = tmp_path / "rep"
    monkeypatch.setattr(figures.report, "write_report", _enospc(None))
    assert cli.main(["report", "--claims", _claims(tmp_path), "--out", str(rep), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"no space left on device ({rep})" in err and "Traceback" not in err and not rep.exists()


def test_out_refuses_the_root_directory(capsys):
    assert cli.main([*RUN, "--out", "/"]) == 2
    assert "--out /: the root directory" in capsys.readouterr().err
    assert not os.path.exists("/trace.csv")


def test_out_refuses_a_directory_of_another_command(tmp_path, capsys):
    """A report into a check's --out (or a sweep's) is refused naming the other command; the same command
    may write there again."""
    claims, out = _claims(tmp_path), tmp_path / "shared"
    assert cli.main(["check", claims, "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    before = sorted(os.listdir(out))
    assert cli.main(["report", "--claims", claims, "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--out {out} holds the output of `lptheory check`" in err
    assert sorted(os.listdir(out)) == before  # nothing written, nothing removed
    assert cli.main(["check", claims, "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert cli.main([*RUN, "--out", str(out)]) == 2


def test_provenance_takes_no_lock_in_the_source_checkout(tmp_path):
    """The commit and its dirty flag are read without writing the checkout's index (``git status`` would
    refresh a stale index under .git/index.lock)."""
    from proofs_checks import records

    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("a")
    git("add", "f.txt")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x")
    os.utime(tmp_path / "f.txt", (1, 1))  # stale stat data: a plain `git status` rewrites the index
    index = tmp_path / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    head = records._git_head(str(tmp_path))
    assert head and not head.endswith("-dirty")
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain"], check=True, capture_output=True)
    assert index.stat().st_mtime_ns != before[1]  # the control: a plain git status does write it


@pytest.mark.parametrize("value", ["-1", "1e23", "9223372036854775808", "x"])
def test_the_pytest_plugin_refuses_a_bad_seed(tmp_path, value):
    (tmp_path / "test_x.py").write_text("def test_x(lptheory_seed):\n    assert lptheory_seed >= 0\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--lptheory-seed={value}", "test_x.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 4  # pytest's usage error
    assert "--lptheory-seed: must be an integer in [0, 2**63 - 1]" in res.stderr


# ---------------------------------------------------------------------------------------------------
# sweep files

EXAMPLE = os.path.join(ROOT, "examples", "sweeps", "theorem1_rate.toml")


def _sweep_file(tmp_path, old: str, new: str) -> str:
    text = open(EXAMPLE).read()
    assert old in text
    path = tmp_path / "s.toml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


@pytest.mark.parametrize(
    "old,new,needle",
    [
        ('rows = "final"', 'rows = "final"\nmax_cells = inf', "sweep.max_cells must be an integer in [1, 2**63 - 1]"),
        ('rows = "final"', 'rows = "final"\nmax_cells = "many"', "sweep.max_cells must be an integer"),
        ('metrics = ["grad_pstar_avg", "grad_pstar", "gap"]', "metrics = [1]", "sweep.metrics: unknown metric 1"),
        ("seed = 0", "seed = 9223372036854775808", "sim.seed must be an integer of at most 2**63 - 1"),
        ("d = 4", "d = 1000000000000", "problem.d = 1000000000000 x sim.replicates = 16"),
        ("d = 4", "d = 1e12", "problem.d must be an integer in [1, 2**63 - 1], got 1000000000000.0"),
        ('"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [10**15]', "not valid TOML"),
        ('"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [1000000000000000]', "sim.steps = 1000000000000000"),
        ('x = "sim.steps"', "x = 3", "plot.x must be a column name"),
        ('x = "sim.steps"', 'x = "sim.steps"\ncolour = "red"', "plot.colour: unknown key"),
        ('y = "grad_pstar_avg"', 'y = "grad_2"', "plot.y = 'grad_2' is not among sweep.metrics"),
    ],
)
def test_bad_sweep_files_are_exit_2_naming_the_file_and_key_even_with_dry_run(tmp_path, capsys, old, new, needle):
    """Each was a traceback, a bare "invalid literal for int()", a MemoryError (also with --dry-run), cells
    failing one by one after the work, or a [plot] error found only by ``lptheory plot``."""
    cfg = _sweep_file(tmp_path, old, new)
    assert cli.main(["sweep", cfg, "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert needle in err and cfg in err and "Traceback" not in err, err


def test_dry_run_of_a_huge_grid_is_instant(tmp_path, capsys):
    """``--dry-run --yes`` on a 4e9-cell grid: counts from the axes' lengths, every axis value validated, in
    well under a second of CPU and without listing the cells; a bad value anywhere on an axis is found."""
    import time

    steps = '"sim.steps" = ' + str([10 + k for k in range(1000)]) + '\n"sim.seed" = ' + str(list(range(1000)))
    cfg = _sweep_file(tmp_path, '"sim.steps" = [64, 256, 1024, 4096]', steps)
    text = open(cfg).read().replace("p = [2.0, 3.0, 4.0, 8.0]", "p = " + str([2.0 + k / 1000 for k in range(1000)]))
    open(cfg, "w").write(text)
    t0 = time.process_time()
    assert cli.main(["sweep", cfg, "--out", str(tmp_path / "o"), "--dry-run", "--yes"]) == 0
    assert time.process_time() - t0 < 5.0
    out = capsys.readouterr().out
    assert "4,000,000,000 cells" in out and "work: at most 32,608,000,000,000 replicate-steps" in out
    open(cfg, "w").write(text.replace("1009]", "0]"))  # the last value of the steps axis: 0
    assert cli.main(["sweep", cfg, "--out", str(tmp_path / "o"), "--dry-run", "--yes"]) == 2
    assert "sim.steps must be >= 1, got 0" in capsys.readouterr().err


def test_a_corrupt_sweep_json_is_named(tmp_path, capsys):
    cfg = _sweep_file(tmp_path, '"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [4]')
    out = tmp_path / "o"
    out.mkdir()
    (out / ".lptheory-command").write_text("sweep\n")  # a sweep's directory (a foreign one is refused before)
    (out / "sweep.json").write_text("{not json")
    assert cli.main(["sweep", cfg, "--out", str(out), "--resume", "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'sweep.json'}: not a sweep's sweep.json" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------
# report configuration and the precision of p


@pytest.mark.parametrize(
    "value,needle",
    [
        ("[]", "checks.lemmas.p is empty"),
        ("[1e308]", "checks.lemmas.p: each exponent must be a number in (1, 1000]"),
        ("[nan]", "checks.lemmas.p: an exponent is NaN"),
        ("[inf]", "checks.lemmas.p must be in [2, inf) for this check, got inf"),
        ("[1.0000001]", "checks.lemmas.p must be in [2, inf) for this check, got 1.0000001"),
    ],
)
def test_report_config_refusals_name_the_file_and_key(tmp_path, capsys, value, needle):
    """``p = []`` was accepted (the check ran its default p, claims.json recorded []), ``1e308`` was blamed on
    the pack, NaN was said to allow inf, 1.0000001 read 'got 1'."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[checks.lemmas]\np = {value}\n")
    out = tmp_path / "rep"
    argv = ["report", "--config", str(cfg), "--only", "lemmas", "--quick", "--jobs", "1", "--out", str(out)]
    assert cli.main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--config {cfg}: " in err and needle in err and "inf allowed" not in err, err
    assert not out.exists()


def test_p_is_printed_in_full_precision(capsys):
    from lptheory.app.console import fmt_exact

    assert [fmt_exact(v) for v in (1.0000001, 3.0, 2.5, float("inf"))] == ["1.0000001", "3", "2.5", "inf"]
    assert cli.main(["check", "lemmas", "--p", "1.0000001", "--quick"]) == 2
    assert "got 1.0000001" in capsys.readouterr().err
