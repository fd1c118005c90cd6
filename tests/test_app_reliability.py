"""The application floor under stress, with real processes, real signals and a real silent listener:
Ctrl-C within 2 s whatever --jobs with nothing half-written, a lock on an --out another run is writing,
the scheduler handshake timeout, read-only output folders."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from lptheory.app import cli
from lptheory.app.guard import OutputBusy, OutputLock, publish, staging

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A claim file whose checks announce that they started (a file in $LPT_GATE) and wait for $LPT_GATE/go
# (at most 120 s), then return one record that carries the seed: the tests interrupt or race them
# at a known moment, never after a guessed delay.
GATED = """
import os, time
from proofs_checks.api import ClaimSpec, Pack, value_claim

PACK = Pack("gated", title="Checks that wait for a gate")
SPEC = ClaimSpec(id="gated.seed", statement="the seed is below 2**63", source="a test")


def _wait(ctx, name):
    gate = os.environ["LPT_GATE"]
    open(os.path.join(gate, "started-" + name + "-" + str(os.getpid())), "w").close()
    t0 = time.time()
    while not os.path.exists(os.path.join(gate, "go")) and time.time() - t0 < 120:
        time.sleep(0.02)
    return [value_claim(SPEC, float(ctx.seed), 2.0**63, {"s": ctx.seed})]


@PACK.check(title="first gate")
def first(ctx):
    return _wait(ctx, "first")


@PACK.check(title="second gate")
def second(ctx):
    return _wait(ctx, "second")
"""


@pytest.fixture
def gated(tmp_path, monkeypatch):
    path = tmp_path / "gated_claims.py"
    path.write_text(GATED)
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("LPT_GATE", str(gate))  # for the runs in this process
    return str(path), gate


def _start(args, gate, **kw):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), "LPT_GATE": str(gate)}
    return subprocess.Popen(
        [sys.executable, "-m", "lptheory", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the test sends Ctrl-C as a terminal does
        **kw,
    )


def _wait_for(pred, timeout=90.0, proc=None):
    t0 = time.monotonic()
    while not pred():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"exited early ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def _started(gate):
    return [f for f in os.listdir(gate) if f.startswith("started-")]


def _pids_alive(pids):
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    return alive


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
@pytest.mark.parametrize("jobs", [1, 4])
def test_ctrl_c_stops_within_two_seconds_whatever_jobs(gated, tmp_path, jobs):
    """SIGINT to the process group (a terminal's Ctrl-C) while checks run in this process (--jobs 1) or
    in a pool (--jobs 4): exit 130 within 2 s, every worker gone, the new --out directory removed."""
    claims, gate = gated
    out = tmp_path / "report"
    proc = _start(["report", "--claims", claims, "--out", str(out), "--jobs", str(jobs), "--quiet"], gate)
    _wait_for(lambda: len(_started(gate)) >= (2 if jobs > 1 else 1), proc=proc)
    workers = [int(f.rsplit("-", 1)[1]) for f in _started(gate)]
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    latency = time.monotonic() - t0
    err = proc.stderr.read()
    assert proc.returncode == 130, err
    assert latency < 2.0, f"Ctrl-C took {latency:.2f} s"
    assert "interrupted" in err and "Traceback" not in err
    assert not out.exists()
    time.sleep(0.2)
    assert _pids_alive([p for p in workers if p != proc.pid]) == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_ctrl_c_keeps_an_existing_report_whole(gated, tmp_path):
    """An interrupted report into a directory that holds a finished one: the old files are untouched
    (same bytes), no staging directory, no .part file, no lock file left."""
    claims, gate = gated
    out = tmp_path / "report"
    (gate / "go").touch()
    assert cli.main(["report", "--claims", claims, "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for f in gate.iterdir():
        f.unlink()
    proc = _start(["report", "--claims", claims, "--out", str(out), "--seed", "5", "--jobs", "2", "--quiet"], gate)
    _wait_for(lambda: len(_started(gate)) >= 2, proc=proc)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=10) == 130
    after = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_publish_holds_ctrl_c_until_every_file_is_in_place(tmp_path, monkeypatch):
    """A real SIGINT arriving in the middle of the move: every file is moved first, then the
    interruption is delivered."""
    out = tmp_path / "out"
    out.mkdir()
    stage = staging(str(out))
    for i in range(5):
        with open(os.path.join(stage, f"f{i}.txt"), "w") as fh:
            fh.write(str(i))
    real = os.replace
    calls = []

    def replace(a, b):
        if not calls:
            os.kill(os.getpid(), signal.SIGINT)  # delivered only when publish unblocks it
        calls.append(b)
        real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    # Python's own Ctrl-C handler, also where the suite was started with SIGINT ignored (a background job)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            publish(stage, str(out))
            time.sleep(1)  # not reached: the signal is delivered as publish returns
    finally:
        signal.signal(signal.SIGINT, old)
    assert sorted(p.name for p in out.iterdir()) == [f"f{i}.txt" for i in range(5)]


@pytest.mark.slow
def test_a_second_writer_of_the_same_out_is_refused(gated, tmp_path):
    """Two reports racing for one --out (the issue's seed 0 / seed 1 race): the second exits 2 before any
    work, naming --out and the first one's pid; the first one's files all say seed 0."""
    claims, gate = gated
    out = tmp_path / "same"
    a = _start(["report", "--claims", claims, "--out", str(out), "--seed", "0", "--jobs", "1", "--quiet"], gate)
    _wait_for(lambda: len(_started(gate)) >= 1, proc=a)
    b = _start(["report", "--claims", claims, "--out", str(out), "--seed", "1", "--jobs", "1", "--quiet"], gate)
    rc_b = b.wait(timeout=60)
    err_b = b.stderr.read()
    (gate / "go").touch()
    assert a.wait(timeout=60) == 0, a.stderr.read()
    assert rc_b == 2, err_b
    assert "--out" in err_b and f"pid {a.pid}" in err_b and "Traceback" not in err_b
    assert len(_started(gate)) == 2  # b ran no check (a ran both)
    doc = json.loads((out / "claims.json").read_text())
    assert doc["meta"]["seed"] == 0 and {c["empirical"] for c in doc["claims"]} == {0.0}
    assert "seed" in (out / "report.md").read_text()
    assert not (out / ".lptheory.lock").exists()
    # the lock is gone with its holder: a later run writes there
    assert cli.main(["report", "--claims", claims, "--out", str(out), "--seed", "1", "--jobs", "1", "--quiet"]) == 0
    assert json.loads((out / "claims.json").read_text())["meta"]["seed"] == 1


def test_output_lock_is_exclusive_and_dies_with_its_holder(tmp_path):
    lock = OutputLock(str(tmp_path)).acquire()
    with pytest.raises(OutputBusy, match=f"pid {os.getpid()}"):
        OutputLock(str(tmp_path)).acquire()
    lock.release()
    code = f"from lptheory.app.guard import OutputLock; OutputLock({str(tmp_path)!r}).acquire(); import os; os._exit(0)"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": ROOT})
    with OutputLock(str(tmp_path)):  # the crashed holder's lock went with it
        pass


# -------------------------------------------------------------------------------------------------
# schedulers and read-only folders


def _silent_listener():
    """A real TCP listener on 127.0.0.1 that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []

    def accept():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, conns


SWEEP = """
[sweep]
name = "tiny"
metrics = ["gap"]
[problem]
name = "separable"
d = 3
[noise]
name = "rademacher"
sigma = 0.1
[optimizer]
lr = 0.02
name = "sgd"
[sim]
replicates = 2
record_every = 1
[grid]
"sim.steps" = [4, 8]
"""


@pytest.mark.slow
def test_sweep_gives_up_on_a_silent_scheduler(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    srv, conns = _silent_listener()
    try:
        addr = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        out = tmp_path / "o"
        env = {**os.environ, "PYTHONPATH": ROOT}
        t0 = time.monotonic()
        res = subprocess.run(
            [sys.executable, "-m", "lptheory", "sweep", str(cfg), "--out", str(out), "--scheduler", addr]
            + ["--scheduler-timeout", "2", "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        took = time.monotonic() - t0
    finally:
        srv.close()
    assert conns, "the sweep never connected to the listener"
    assert res.returncode == 2, res.stderr
    assert "--scheduler" in res.stderr and "within 2 s" in res.stderr and "Traceback" not in res.stderr
    assert took < 20, took
    assert not out.exists()


def test_scheduler_timeout_flag_is_validated(tmp_path, capsys):
    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    for bad in ("0", "-1", "nan", "inf"):
        assert cli.main(["sweep", str(cfg), "--scheduler", "tcp://127.0.0.1:1", "--scheduler-timeout", bad]) == 2
        assert "--scheduler-timeout" in capsys.readouterr().err
    assert cli.build_parser().parse_args(["sweep", "x.toml"]).scheduler_timeout <= 30


def _unwritable(path) -> bool:
    try:
        probe = os.path.join(path, ".probe")
        open(probe, "w").close()
        os.remove(probe)
        return False
    except OSError:
        return True


@pytest.fixture
def read_only(tmp_path):
    """(a read-only directory, whether a sweep folder can be made read-only too): a chmod 555 folder, or
    for root (who writes anyway) sysfs, where nobody may create files."""
    if sys.platform == "win32":
        pytest.skip("POSIX permissions")
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        os.chmod(ro, 0o555)
        yield str(ro), True
        os.chmod(ro, 0o755)
    elif os.path.isdir("/sys") and _unwritable("/sys"):
        yield "/sys", False
    else:
        pytest.skip("no read-only folder for root here")


def test_sweep_and_plot_into_a_read_only_folder(tmp_path, capsys, read_only):
    """A clean exit 2 naming the flag, no traceback (they raised PermissionError before)."""
    pytest.importorskip("pyarrow")
    ro, can_chmod = read_only
    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    done = tmp_path / "done"
    assert cli.main(["sweep", str(cfg), "--out", str(done), "--workers", "0", "--quiet"]) == 0
    capsys.readouterr()
    for out in (os.path.join(ro, "s"), ro):
        assert cli.main(["sweep", str(cfg), "--out", out, "--workers", "0", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "--out" in err and "not writable" in err and "Traceback" not in err
    assert cli.main(["plot", str(done), "--out", os.path.join(ro, "rate")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "not writable" in err
    if can_chmod:
        os.chmod(done, 0o555)
        try:
            assert cli.main(["plot", str(done)]) == 2
            assert "SWEEP_DIR" in capsys.readouterr().err
        finally:
            os.chmod(done, 0o755)


def test_a_refused_writer_leaves_the_holders_files_alone(tmp_path, capsys):
    """The holder's staging directory and temporary files survive a second run refused on its --out."""
    out = tmp_path / "busy"
    out.mkdir()
    (out / ".lptheory-staging-999").mkdir()
    (out / ".lptheory-staging-999" / "index.html").write_text("half")
    (out / ".claims.json.part").write_text("half")
    with OutputLock(str(out)):
        for args in (["report", "--quick"], ["run", "--steps", "2"], ["check", "lemmas", "--quick"]):
            assert cli.main([*args, "--out", str(out), "--quiet"]) == 2
            assert "being written by" in capsys.readouterr().err
    assert (out / ".lptheory-staging-999" / "index.html").read_text() == "half"
    assert (out / ".claims.json.part").exists()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_inside_a_longer_lived_process_does_not_end_it(gated, tmp_path):
    """main(argv) called from Python (a notebook, a test): a real SIGINT returns 130 and the caller's
    process lives on (the watchdog stops with the command; only the program exits by it)."""
    claims, gate = gated
    code = f"""
import os, signal, threading, time
from lptheory.app.cli import main

def interrupt():
    while not any(f.startswith("started-") for f in os.listdir({str(gate)!r})):
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
rc = main(["report", "--claims", {claims!r}, "--out", {str(tmp_path / "r")!r}, "--jobs", "1", "--quiet"])
time.sleep(2.0)
print("rc", rc, "alive")
"""
    env = {**os.environ, "PYTHONPATH": ROOT, "LPT_GATE": str(gate)}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "rc 130 alive" in res.stdout
