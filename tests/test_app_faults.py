"""Every way a command can end (issue 37, Majors 2-4): no worker alive after the parent is killed, no lock
that blocks the next run, SIGTERM/SIGHUP as Ctrl-C; a check that exits or returns no records is a crash
(exit 3), never a green run; a figure that cannot be drawn never discards the data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lptheory.app import cli
from lptheory.app.guard import LOCK_NAME, OutputBusy, OutputLock, descendants
from lptheory.lifetime import process_alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["LPTHEORY_THREADS"] = "1"
    return env


def _workers(pid: int) -> list[int]:
    """The worker processes of ``pid`` once at least two run (its pool of ``--jobs 2``), else []."""
    kids = descendants(pid)
    return kids if len(kids) >= 2 else []


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _wait_for(pred, timeout: float, step: float = 0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(step)
    return pred()


# ---------------------------------------------------------------------------------------------------
# signals and SIGKILL: real processes


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_killed_report_leaves_no_worker_and_no_lock(tmp_path, sig):
    """``lptheory report --quick --jobs 2`` killed (SIGKILL, SIGTERM, SIGHUP) once its worker processes run:
    within a few seconds none of them is alive, and the output directory can be locked again at once.
    SIGTERM and SIGHUP behave like Ctrl-C: exit 130, the new --out removed."""
    out = tmp_path / "rep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lptheory", "report", "--quick", "--jobs", "2", "--out", str(out), "--quiet"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(tmp_path),
    )
    try:
        kids = _wait_for(lambda: _workers(proc.pid), 120)
        assert kids, "the report never started its worker processes"
        time.sleep(0.5)
        kids = sorted(set(kids) | set(descendants(proc.pid)))
        proc.send_signal(sig)
        rc = proc.wait(30)
        err = proc.stderr.read().decode()
        alive = _wait_for(lambda: not [k for k in kids if process_alive(k)], 5) or [k for k in kids if process_alive(k)]
        assert alive is True, f"workers {alive} still alive after the parent ended"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for k in descendants(proc.pid):  # never leave anything behind, whatever failed above
            os.kill(k, signal.SIGKILL)
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL
    else:
        assert rc == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert not out.exists()  # a new --out is removed, as after Ctrl-C
    out.mkdir(exist_ok=True)
    OutputLock(str(out)).acquire().release()  # the next run is not refused


@pytest.mark.slow
def test_sigterm_keeps_an_existing_report(tmp_path):
    """SIGTERM on a report into an existing directory removes only what this run wrote (its staging
    directory): the files there before are kept."""
    out = tmp_path / "rep"
    out.mkdir()
    (out / "index.html").write_text("previous report")
    (out / ".lptheory-command").write_text("report\n")  # a report's directory (a foreign one is refused at once)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lptheory", "report", "--quick", "--jobs", "2", "--out", str(out), "--quiet"],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert _wait_for(lambda: _workers(proc.pid), 120)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
        assert rc == 130, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (out / "index.html").read_text() == "previous report"
    assert not [n for n in os.listdir(out) if n.startswith(".lptheory-staging-")]


def test_a_lock_of_a_dead_process_is_taken_over_with_a_message(tmp_path, capsys):
    """A lock file naming a process that is no longer running (its lock still held by a stray descriptor,
    as a worker that inherited it did) is taken over, with a message naming the pid; a live holder is not."""
    import fcntl

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_NAME).write_text(str(dead.pid))
    fd = os.open(tmp_path / LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held here, but the file names the dead pid
        lock = OutputLock(str(tmp_path)).acquire()
        assert f"taking over its lock from pid {dead.pid}" in capsys.readouterr().err
        with pytest.raises(OutputBusy, match=f"pid {os.getpid()}"):
            OutputLock(str(tmp_path)).acquire()  # a live holder (this process): refused
        lock.release()
    finally:
        os.close(fd)


def test_forked_workers_die_with_their_parent_and_drop_the_lock(tmp_path):
    """A process that took an output lock and forked a worker (``orphan_guard``) is killed with SIGKILL: the
    worker ends within a few seconds, and it never held the lock (a new lock is granted while it lives)."""
    script = textwrap.dedent(
        f"""
        import multiprocessing as mp, os, sys, time
        from lptheory.app.guard import OutputLock, orphan_guard
        orphan_guard()
        lock = OutputLock({str(tmp_path)!r}).acquire()
        def sleep():
            print(os.getpid(), flush=True)  # the at-fork hooks have run
            time.sleep(120)
        w = mp.get_context("fork").Process(target=sleep)
        w.start()
        time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        worker = int(proc.stdout.readline())
        lock_path = os.path.realpath(os.path.join(str(tmp_path), LOCK_NAME))
        if os.path.isdir(f"/proc/{worker}/fd"):  # while its parent lives, the worker has no copy of the lock
            fds = os.listdir(f"/proc/{worker}/fd")
            targets = {_readlink(f"/proc/{worker}/fd/{fd}") for fd in fds}
            assert lock_path not in targets, "the forked worker holds a copy of its parent's output lock"
        proc.kill()
        proc.wait()
        # the worker may already be gone (pdeathsig is immediate): either way, the lock is free now
        OutputLock(str(tmp_path)).acquire().release()
        assert _wait_for(lambda: not process_alive(worker), 5), "the worker outlived its killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
        if "worker" in locals() and process_alive(worker):
            os.kill(worker, signal.SIGKILL)


# ---------------------------------------------------------------------------------------------------
# a check that vanishes


def _claims(tmp_path, body: str):
    f = tmp_path / "claims.py"
    f.write_text(
        textwrap.dedent(
            """
            import sys
            from proofs_checks.api import ClaimSpec, Pack, value_claim
            PACK = Pack("faulty", title="faulty claims")
            S = ClaimSpec(id="c1", statement="s", source="here")

            @PACK.check(title="good")
            def good(ctx):
                return [value_claim(S, 1.0, 2.0, {"p": 3.0})]

            @PACK.check(title="bad")
            def bad(ctx):
            """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return f


VANISHING = [
    ("sys.exit(0)\n", "called sys.exit(0)"),
    ("raise SystemExit\n", "called sys.exit(None)"),
    ("raise SystemExit(2)\n", "called sys.exit(2)"),
    ("return [42, 'x', None]\n", "got list whose element [0] is int 42"),
    ("return [value_claim(S, 1.0, 2.0, {'p': 3.0}), 'x']\n", "got list whose element [1] is str 'x'"),
    ("pass\n", "got NoneType (it returned nothing"),
]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("body,msg", VANISHING)
def test_a_check_that_exits_or_returns_no_records_is_a_crash(tmp_path, capsys, body, msg, jobs):
    """``lptheory check`` (in this process and in worker processes) with ``--fail-on``: exit 3 naming the
    check, never 0; ``lptheory report``: exit 3 and no report."""
    f = _claims(tmp_path, body)
    assert cli.main(["check", str(f), "--jobs", jobs, "--fail-on", "violated,inconclusive", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert msg in err and "'bad'" in err
    out = tmp_path / "rep"
    assert cli.main(["report", "--claims", str(f), "--jobs", jobs, "--out", str(out), "--quiet"]) == 3
    assert msg in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_check_json_is_valid_json_when_a_claim_file_prints(tmp_path):
    """A claim file that prints to stdout (at import and in its checks, also in worker processes): ``check
    --json`` still writes one JSON document on stdout; the prints go to stderr."""
    f = _claims(tmp_path, "print('noise from the check')\nreturn [value_claim(S, 1.5, 2.0, {'p': 3.0})]\n")
    f.write_text(f.read_text() + "\nprint('noise at import')\n")
    for jobs in ("1", "2"):
        res = subprocess.run(
            [sys.executable, "-m", "lptheory", "check", str(f), "--json", "--quiet", "--jobs", jobs],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert len(doc["claims"]) == 2
        assert "noise from the check" in res.stderr


# ---------------------------------------------------------------------------------------------------
# failures after the work


def test_a_figure_that_cannot_be_drawn_keeps_the_data(tmp_path, capsys):
    """``lptheory run --optimizer lp-descent --p 1.0000001``: the gradient metric is 0 everywhere, matplotlib
    refuses its log scale; the table is printed, trace.csv and run.json are written, the figure is skipped
    with a warning naming it, exit 0."""
    out = tmp_path / "o"
    argv = ["run", "--optimizer", "lp-descent", "--p", "1.0000001", "--steps", "20", "--d", "10"]
    assert cli.main([*argv, "--replicates", "4", "--out", str(out), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "lp-descent" in cap.out
    assert sorted(n for n in os.listdir(out) if not n.startswith(".")) == ["run.json", "trace.csv"]
    assert f"figure {out / 'run.png'}" in cap.err and "not drawn" in cap.err
    assert json.loads((out / "run.json").read_text())["argv"]["p"] == 1.0000001


@pytest.mark.parametrize("command", ["info", "demo", "run", "check", "report", "sweep", "plot", "diff"])
def test_every_command_takes_traceback(command):
    args = {"check": ["x"], "sweep": ["x.toml"], "plot": ["d"], "diff": ["a", "b"]}.get(command, [])
    assert cli.build_parser().parse_args([command, *args, "--traceback"]).traceback is True


@pytest.mark.slow
def test_ctrl_c_on_a_sweep_spares_the_resource_tracker(tmp_path):
    """Ctrl-C on a Dask sweep: exit 130, no traceback (killing multiprocessing's resource tracker with the
    workers made a relaunched tracker print a KeyError traceback per semaphore, about twelve), no worker
    left."""
    pytest.importorskip("distributed")
    text = open(os.path.join(ROOT, "examples", "sweeps", "theorem1_rate.toml")).read()
    cfg = tmp_path / "slow.toml"
    cfg.write_text(text.replace('"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [20000, 40000]'))
    proc = subprocess.Popen(
        [sys.executable, "-m", "lptheory", "sweep", str(cfg), "--out", str(tmp_path / "o"), "--workers", "2"],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait_for(lambda: len(descendants(proc.pid)) >= 3, 120), "the sweep never started its workers"
        time.sleep(3)
        kids = descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
        err = proc.stderr.read()
        assert "Traceback" not in err and "KeyError" not in err and "interrupted" in err, err
        assert _wait_for(lambda: not [k for k in kids if process_alive(k)], 5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kill_descendants_spares_the_resource_tracker():
    from lptheory.app.guard import kill_descendants

    code = "import time; 'multiprocessing.resource_tracker'; time.sleep(60)"
    tracker = subprocess.Popen([sys.executable, "-c", code])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert kill_descendants() >= 1
        assert other.wait(5) == -signal.SIGKILL
        assert tracker.poll() is None  # spared: it ends by itself with its parent
    finally:
        for p in (tracker, other):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_check_out_keeps_its_records_when_a_figure_fails(tmp_path, capsys, monkeypatch):
    """``check --out``: a pack figure that raises is skipped with a warning naming the check; check_NAME.json is
    written and the exit status is 0."""
    import figures

    def broken(*a, **k):
        raise ValueError("Data cannot be log-scaled because all values are <= 0.")

    monkeypatch.setattr(figures, "figures_for", broken)
    f = _claims(tmp_path, "return [value_claim(S, 1.5, 2.0, {'p': 3.0})]\n")
    out = tmp_path / "o"
    assert cli.main(["check", str(f), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert (out / "check_good.json").exists() and (out / "check_bad.json").exists()
    err = capsys.readouterr().err
    assert "warning: the figures of check good not drawn: ValueError: Data cannot be log-scaled" in err
