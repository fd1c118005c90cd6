"""lptheory sweep: Dask execution equals a serial run bit for bit, survives a killed worker and a killed
sweep (resume), caches cells, and rejects bad configurations before any work. Real clusters, no mocks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet")

from lptheory.app import cli  # noqa: E402
from proofs_checks import sweep as S  # noqa: E402

VOLATILE = ("date", "seconds")  # provenance: when a cell ran and how long it took

SMALL = """
[sweep]
name = "small"
metrics = ["gap", "grad_pstar_avg"]
rows = "all"
[problem]
name = "separable"
d = 6
[noise]
name = "rademacher"
sigma = 0.2
[optimizer]
lr = 0.02
[sim]
replicates = 5
record_every = 4
[grid]
"optimizer.name" = ["lp-descent", "stacey-pp", "sgd"]
p = [2.0, 3.0]
"sim.steps" = [STEPS]
"""


def _config(tmp_path, steps="16, 32", name="small.toml", text=SMALL):
    path = tmp_path / name
    path.write_text(text.replace("STEPS", steps))
    return str(path)


def _data(out):
    """results.parquet as {column: list} without the volatile provenance columns, rows in file order."""
    t = pq.read_table(os.path.join(out, "results.parquet"))
    return {c: t.column(c).to_pylist() for c in t.column_names if c not in VOLATILE}


def _same(a, b):
    assert set(a) == set(b)
    for k in a:
        x, y = a[k], b[k]
        if k in ("mean", "lo", "hi", "std"):
            np.testing.assert_array_equal(np.array(x, dtype=float), np.array(y, dtype=float))  # bits (NaN = NaN)
        else:
            assert x == y, k


@pytest.mark.slow
def test_local_cluster_equals_serial(tmp_path):
    pytest.importorskip("distributed")
    cfg = _config(tmp_path)
    serial, dask = str(tmp_path / "serial"), str(tmp_path / "dask")
    assert cli.main(["sweep", cfg, "--out", serial, "--workers", "0", "--quiet"]) == 0
    assert cli.main(["sweep", cfg, "--out", dask, "--workers", "2", "--quiet"]) == 0
    a, b = _data(serial), _data(dask)
    _same(a, b)
    assert len(set(a["cell_hash"])) == 12 and set(a["metric"]) == {"gap", "grad_pstar_avg"}
    # a second run computes nothing (every cell cached) and leaves the data as they were
    res = S.run_sweep(S.load_config(cfg), serial, workers=0, progress=False)
    assert res.computed == [] and len(res.cached) == 12
    _same(a, _data(serial))


@pytest.mark.slow
def test_a_local_cluster_keeps_distributed_quiet_until_it_is_closed():
    """While lptheory's local cluster lives, distributed's INFO messages are off in this process and in the
    workers, by the loggers' level and not only by the handlers' (LocalCluster's silence_logs gives the
    handlers their level back inside its close, and a Ctrl-C's "Batched Comm Closed" INFO traceback was
    printed there); after close_dask the logger has its own level again."""
    pytest.importorskip("distributed")
    import logging

    from lptheory.parallel import close_dask, dask_client

    log = logging.getLogger("distributed")
    before = log.level
    client, cluster = dask_client(None, 1)
    try:
        assert not logging.getLogger("distributed.batched").isEnabledFor(logging.INFO)
        on_workers = client.run(lambda: logging.getLogger("distributed.batched").isEnabledFor(logging.INFO))
        assert on_workers and not any(on_workers.values()), on_workers
    finally:
        close_dask(client, cluster)
    assert log.level == before


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args, **kw):
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def _wait_cells(out, n, proc, timeout=120):
    t0 = time.time()
    d = os.path.join(out, "cells")
    while time.time() - t0 < timeout:
        if os.path.isdir(d) and sum(f.endswith(".parquet") for f in os.listdir(d)) >= n:
            return
        if proc.poll() is not None:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {n} cells in {timeout} s")


@pytest.mark.slow
def test_real_scheduler_one_worker_killed(tmp_path):
    """A scheduler and two worker processes started here; one worker is killed (SIGKILL) mid-sweep: the
    sweep completes on the other and its data equal the serial run."""
    pytest.importorskip("distributed")
    cfg = _config(tmp_path, steps="64, 96, 128, 160")
    serial = str(tmp_path / "serial")
    assert cli.main(["sweep", cfg, "--out", serial, "--workers", "0", "--quiet"]) == 0
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    sched = _spawn(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-dashboard",
        ]
    )
    workers = [
        _spawn(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                addr,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--no-dashboard",
            ],
            env={**os.environ, "LPTHEORY_THREADS": "1"},
        )
        for _ in range(2)
    ]
    out = str(tmp_path / "cluster")
    try:
        from distributed import Client

        t0 = time.time()
        while True:  # both workers registered
            try:
                with Client(addr, timeout="5s") as c:
                    if len(c.scheduler_info()["workers"]) == 2:
                        break
            except OSError:
                pass
            assert time.time() - t0 < 60, "the test cluster did not start"
            time.sleep(0.3)
        sweep = subprocess.Popen(
            [sys.executable, "-m", "lptheory", "sweep", cfg, "--out", out, "--scheduler", addr, "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_cells(out, 3, sweep)
        workers[0].kill()
        stdout, stderr = sweep.communicate(timeout=240)
        assert sweep.returncode == 0, stderr
        assert "24 cells: 24 computed" in stdout
    finally:
        for p in [*workers, sched]:
            p.kill()
            p.wait()
    _same(_data(serial), _data(out))


@pytest.mark.slow
def test_killed_sweep_resumes_without_recomputing(tmp_path):
    """SIGKILL the sweep process midway; --resume computes only the missing cells (finished files are not
    touched) and the final data equal an uninterrupted run."""
    cfg = _config(tmp_path, steps="200, 300, 400, 500")
    full, out = str(tmp_path / "full"), str(tmp_path / "killed")
    assert cli.main(["sweep", cfg, "--out", full, "--workers", "0", "--quiet"]) == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "lptheory", "sweep", cfg, "--out", out, "--workers", "0", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_cells(out, 4, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cells = os.path.join(out, "cells")
    before = {f: os.stat(os.path.join(cells, f)).st_mtime_ns for f in os.listdir(cells) if f.endswith(".parquet")}
    assert 4 <= len(before) < 24
    res = S.run_sweep(S.load_config(cfg), out, workers=0, resume=True, progress=False)
    assert sorted(res.cached) == sorted(f[:-8] for f in before)
    assert not set(res.computed) & set(res.cached)
    assert len(res.computed) + len(res.cached) == 24
    for f, mt in before.items():
        assert os.stat(os.path.join(cells, f)).st_mtime_ns == mt
    assert not [f for f in os.listdir(cells) if f.endswith(".part")]
    _same(_data(full), _data(out))


@pytest.mark.parametrize(
    "text,needle",
    [
        (SMALL.replace("lr = 0.02", "lrr = 0.02"), "optimizer.lrr"),
        (SMALL.replace("d = 6", "dd = 6"), "problem.dd"),
        (SMALL.replace("record_every = 4", "record_evry = 4"), "sim.record_evry"),
        (SMALL.replace("replicates = 5", 'replicates = "five"'), "sim.replicates"),
        (SMALL.replace('"sim.steps" = [STEPS]', '"sim.steps" = []'), "grid.sim.steps is empty"),
        (SMALL.replace("[noise]", "[noize]"), "unknown section [noize]"),
        (
            SMALL.replace("p = [2.0, 3.0]", 'p = [2.0, 3.0]\n"optimizer.bias_correction" = [true]'),
            "optimizer.bias_correction: none of the sweep's optimizers",
        ),
        (SMALL.replace("sigma = 0.2", "sigma = -1.0"), "sigma"),
        (
            SMALL.replace(
                '"sim.steps" = [STEPS]', '"sim.steps" = [STEPS]\n"sim.seed" = [' + ", ".join(["0"] * 1) + "]"
            ).replace("[sweep]", "[sweep]\nmax_cells = 5"),
            "pass --yes",
        ),
    ],
)
def test_bad_configs_fail_before_any_work(tmp_path, capsys, text, needle):
    out = tmp_path / "out"
    rc = cli.main(["sweep", _config(tmp_path, text=text), "--out", str(out), "--workers", "0", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err, err
    assert not out.exists()


def test_huge_grid_needs_confirmation(tmp_path, capsys):
    big = SMALL.replace('"sim.steps" = [STEPS]', '"sim.steps" = [STEPS]\n"sim.seed" = ' + str(list(range(1000))))
    big = big.replace("p = [2.0, 3.0]", "p = " + str([2.0 + k / 1000 for k in range(1000)]))
    cfg = _config(tmp_path, text=big, steps=", ".join(str(10 + k) for k in range(1000)))
    assert S._grid_size(S.load_config(cfg)) == 3 * 10**9
    rc = cli.main(["sweep", cfg, "--out", str(tmp_path / "o"), "--dry-run"])
    assert rc == 2 and "3,000,000,000 cells" in capsys.readouterr().err


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_unreachable_scheduler_and_corrupt_cell_are_reported(tmp_path, capsys):
    pytest.importorskip("distributed")
    cfg = _config(tmp_path)
    out = tmp_path / "o"
    rc = cli.main(
        ["sweep", cfg, "--out", str(out), "--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--scheduler-timeout", "4"]
        + ["--quiet"]
    )
    assert rc == 2 and "--scheduler" in capsys.readouterr().err and not out.exists()
    assert cli.main(["sweep", cfg, "--out", str(out), "--workers", "0", "--quiet"]) == 0
    victim = sorted((out / "cells").glob("*.parquet"))[0]
    victim.write_bytes(b"not parquet")
    rc = cli.main(["sweep", cfg, "--out", str(out), "--workers", "0", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and victim.name in err and "not a valid Parquet file" in err
    assert victim.read_bytes() == b"not parquet"  # reported, not overwritten


def test_failed_cell_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    """Cells on a device this machine lacks fail at run time; they are recorded with their error, the other
    cells run, and the exit status is 1."""
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    text = SMALL.replace('"sim.steps" = [STEPS]', '"sim.steps" = [STEPS]\n"sim.device" = ["cpu", "cuda:7"]')
    text = text.replace("[sim]", '[sim]\nbackend = "torch"')
    cfg = _config(tmp_path, steps="8", text=text)
    out = tmp_path / "o"
    rc = cli.main(["sweep", cfg, "--out", str(out), "--workers", "0", "--quiet"])
    captured = capsys.readouterr()
    assert rc == 1 and "failed cells" in captured.err
    failed = json.loads((out / "failed.json").read_text())
    assert len(failed) == 6 and all(f["cell"]["sim.device"] == "cuda:7" for f in failed.values())
    assert "6 computed" in captured.out and "6 failed" in captured.out
    assert set(_data(str(out))["sim.device"]) == {"cpu"}


def test_dry_run_and_plot(tmp_path, capsys):
    cfg = _config(tmp_path)
    out = str(tmp_path / "o")
    assert cli.main(["sweep", cfg, "--out", out, "--dry-run"]) == 0
    assert "12 cells, 0 cached" in capsys.readouterr().out and not os.path.exists(out)
    assert cli.main(["sweep", cfg, "--out", out, "--workers", "0", "--quiet"]) == 0
    assert cli.main(["sweep", cfg, "--out", out, "--dry-run"]) == 0
    assert "12 cells, 12 cached" in capsys.readouterr().out
    rc = cli.main(
        [
            "plot",
            out,
            "--x",
            "sim.steps",
            "--y",
            "gap",
            "--hue",
            "optimizer.name",
            "--col",
            "p",
            "--theory-slope",
            "-0.5",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "fitted slope" in text
    assert os.path.getsize(os.path.join(out, "rate.png")) > 10_000 and os.path.exists(os.path.join(out, "rate.svg"))
    assert cli.main(["plot", out, "--y", "nope"]) == 2


def test_matrix_optimizers_run_per_replicate_in_a_sweep(tmp_path):
    """A sweep cell with Muon on a matrix problem lays each replicate out as the problem's shape (as
    ``lptheory run`` does; without a layout the simulator refuses the matrix optimizer, which would
    otherwise couple the replicates): replicate 0's run is the same with 1 and with 3 replicates, and the
    cell runs and makes progress."""
    grid = '"optimizer.name" = ["lp-descent", "stacey-pp", "sgd"]\np = [2.0, 3.0]'
    text = SMALL.replace('name = "separable"\nd = 6', 'name = "kronecker-quadratic"\nd = 36')
    text = text.replace(grid, '"optimizer.name" = ["muon"]\np = [2.0]')
    from lptheory.simulate import simulate

    path = _config(tmp_path, "8", "m.toml", text)
    (cell,) = S.cells(S.load_config(path))
    problem, _noise, oracle = S._build_setting(cell)
    opt = S._build_optimizer(cell, problem, oracle)
    assert "shape=(6, 6)" in repr(opt)
    one = simulate(opt, problem, oracle, 8, 1, 0, record_every=4)
    three = simulate(opt, problem, oracle, 8, 3, 0, record_every=4)
    assert np.array_equal(one.f[:, 0], three.f[:, 0])  # replicate 0 does not depend on the others
    cols = S.run_cell(cell, metrics=["gap"], rows="all")["columns"]
    assert cols["n"] == [5, 5, 5] and cols["mean"][-1] < cols["mean"][0]


def test_matrix_cells_hash_their_layout_rule():
    """A matrix optimizer's cell hashes differently from the same cell without the layout rule (results
    written before it coupled the replicates, so a resumed sweep must not reuse them); other cells keep their
    hash."""
    cell = {"optimizer.name": "muon", "p": 2.0, "sim.steps": 8}
    assert S.cell_hash(cell) != S._hash({k: cell[k] for k in sorted(cell)})
    plain = {"optimizer.name": "sgd", "p": 2.0, "sim.steps": 8}
    assert S.cell_hash(plain) == S._hash({k: plain[k] for k in sorted(plain)})


def test_sweep_progress_line_on_a_terminal_and_plain_lines_elsewhere():
    """The sweep's progress: on a terminal one line rewritten in place (also where the terminal reports zero
    columns, where tqdm drew nothing) with the cached and failed counts, cleared and followed by one summary
    line; a sweep that stops early says where; elsewhere plain lines."""
    import io

    from proofs_checks.sweep import _Bar

    out = io.StringIO()
    bar = _Bar(5, 2, True, stream=out, tty=True)
    bar.update()
    bar.update(failed=True)
    bar.update()
    bar.close()
    text = out.getvalue()
    assert "\r" in text and "2 cached, 1 failed" in text
    assert text.splitlines()[-1].strip().startswith("lptheory sweep: 5 cells in ")  # the summary, last
    out = io.StringIO()
    bar = _Bar(5, 0, True, stream=out, tty=True)
    bar.update()
    bar.close()
    assert "stopped at 1 of 5 cells" in out.getvalue()
    out = io.StringIO()
    bar = _Bar(3, 0, True, stream=out, tty=False)
    for _ in range(3):
        bar.update()
    bar.close()
    assert "\r" not in out.getvalue() and "[lptheory sweep] 3/3 cells (0 cached, 0 failed)" in out.getvalue()


def test_sweep_lays_out_rank_one_noise_and_matrix_optimizers_as_lptheory_run():
    """``lptheory run --optimizer muon --noise rank-one --d 12`` lays Muon and the noise out as one 3 x 4 matrix
    (a matrix problem: its own shape for both); a sweep cell of the same setting laid Muon out as 1 x 12 and the
    noise as 3 x 4, and the noise of a matrix problem as split_shape(d) instead of the problem's shape. The
    cells' hashes carry the new rule (a resumed sweep recomputes cells written before it)."""
    from synthetic.matrix import split_shape

    cell = {**S.DEFAULTS, "optimizer.name": "muon", "noise.name": "rank-one", "problem.d": 12, "sim.steps": 4}
    problem, noise, oracle = S._build_setting(cell)
    opt = S._build_optimizer(cell, problem, oracle)
    assert noise.shape == split_shape(12) == (3, 4) and opt.shape == (3, 4)
    kron = {k: v for k, v in cell.items() if k != "problem.d"}
    kron.update({"problem.name": "kronecker-quadratic", "problem.m": 2, "problem.n": 6})
    problem, noise, oracle = S._build_setting(kron)
    assert tuple(problem.shape) == (2, 6) != split_shape(12)
    assert tuple(noise.shape) == (2, 6) and S._build_optimizer(kron, problem, oracle).shape == (2, 6)
    plain = {**cell, "noise.name": "gaussian"}
    problem, noise, oracle = S._build_setting(plain)
    assert S._build_optimizer(plain, problem, oracle).shape == (1, 12)  # no noise layout: one row, as run
    old = S._hash({**{k: cell[k] for k in sorted(cell)}, "layout": "laid_out-1"})
    assert S.cell_hash(cell) != old and S.cell_hash(plain) == S._hash(
        {**{k: plain[k] for k in sorted(plain)}, "layout": "laid_out-1"}
    )
    res = S.run_cell({**cell, "sim.replicates": 2}, metrics=["gap"])
    assert res["columns"]["n"] == [2]
