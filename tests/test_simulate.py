import numpy as np
import pytest

from lptheory.app import cli
from lptheory.optimizers import LpDescent, StaceyPP
from lptheory.simulate import simulate
from synthetic.noise import Gaussian, Rademacher
from synthetic.oracle import GradientOracle
from synthetic.problems import QuadraticDiagonal, SeparableNonconvex


def _setup(d=30, batch=2):
    pr = SeparableNonconvex(d=d)
    return pr, GradientOracle(pr, Rademacher(np.full(d, 0.3)), batch=batch)


def test_same_seed_same_bits_and_split_invariance():
    pr, orc = _setup()
    opt = StaceyPP(p=3.0, lr=0.05)
    a = simulate(opt, pr, orc, steps=40, replicates=4, seed=7, snapshots=True)
    b = simulate(opt, pr, orc, steps=40, replicates=4, seed=7, snapshots=True)
    np.testing.assert_array_equal(a.snapshots, b.snapshots)
    lo = simulate(opt, pr, orc, steps=40, replicates=2, seed=7, snapshots=True)
    hi = simulate(opt, pr, orc, steps=40, replicates=2, seed=7, snapshots=True, replicate_offset=2)
    np.testing.assert_array_equal(np.concatenate([lo.snapshots, hi.snapshots], axis=1), a.snapshots)
    c = simulate(opt, pr, orc, steps=40, replicates=4, seed=8, snapshots=True)
    assert not np.array_equal(c.snapshots, a.snapshots)


def test_common_random_numbers_and_recording():
    pr, orc = _setup()
    tr = simulate(LpDescent(p=2.0, lr=0.1), pr, orc, steps=25, replicates=3, seed=1, record_every=10)
    assert tr.steps.tolist() == [0, 10, 20, 25]
    assert tr.f.shape == (4, 3) and np.all(tr.gap >= 0)
    np.testing.assert_allclose(tr.f[0], pr.f(pr.x0(3)))
    # p = 2 descent: noise enters linearly, so theta_T - theta_T' for two learning rates under the same
    # seed differ only through the deterministic part when the problem is quadratic
    q = QuadraticDiagonal(d=10)
    oq = GradientOracle(q, Gaussian(np.ones(10)))
    t1 = simulate(LpDescent(p=2.0, lr=0.1), q, oq, steps=5, replicates=2, seed=3, snapshots=True)
    t2 = simulate(LpDescent(p=2.0, lr=0.1), q, GradientOracle(q, None), steps=5, replicates=2, seed=3, snapshots=True)
    noise_part = t1.snapshots[-1] - t2.snapshots[-1]
    t3 = simulate(LpDescent(p=2.0, lr=0.1), q, oq, steps=5, replicates=2, seed=3, snapshots=True, theta0=q.x0() + 1.0)
    t4 = simulate(
        LpDescent(p=2.0, lr=0.1),
        q,
        GradientOracle(q, None),
        steps=5,
        replicates=2,
        seed=3,
        snapshots=True,
        theta0=q.x0() + 1.0,
    )
    np.testing.assert_allclose(t3.snapshots[-1] - t4.snapshots[-1], noise_part, atol=1e-12)


def test_nonfinite_raises_or_records():
    from lptheory.optimizers import NonFiniteGradientWarning

    pr = QuadraticDiagonal(d=5)
    orc = GradientOracle(pr, None)
    with pytest.raises(FloatingPointError, match="step .* replicate 0"):
        simulate(LpDescent(p=2.0, lr=1e200), pr, orc, steps=50, replicates=2)
    with pytest.warns(NonFiniteGradientWarning, match="LpDescent: a gradient with NaN or inf entries"):
        tr = simulate(LpDescent(p=2.0, lr=1e200), pr, orc, steps=50, replicates=2, on_nonfinite="record")
    assert tr.diverged.all() and np.isnan(tr.f[-1]).all()


def test_bad_arguments():
    pr, orc = _setup()
    with pytest.raises(ValueError, match="steps"):
        simulate(LpDescent(), pr, orc, steps=0)
    with pytest.raises(ValueError, match="on_nonfinite"):
        simulate(LpDescent(), pr, orc, steps=1, on_nonfinite="ignore")


def test_cli_run_smoke(tmp_path, capsys):
    rc = cli.main(
        [
            "run",
            "--optimizer",
            "stacey-pp",
            "--optimizer",
            "sgd",
            "--p",
            "3",
            "--steps",
            "30",
            "--replicates",
            "3",
            "--d",
            "20",
            "--out",
            str(tmp_path),
            "--quiet",
            "--lr",
            "0.01",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "stacey-pp" in out and "sgd" in out
    for f in ["trace.csv", "run.png", "run.json"]:
        assert (tmp_path / f).stat().st_size > 0
    lines = (tmp_path / "trace.csv").read_text().splitlines()
    assert lines[0].startswith("optimizer,step,replicate") and len(lines) == 1 + 2 * 4 * 3


def test_cli_run_defaults_and_errors(tmp_path, capsys):
    assert (
        cli.main(["run", "--optimizer", "stacey-pp", "--p", "3", "--steps", "5", "--out", str(tmp_path), "--quiet"])
        == 0
    )
    assert cli.main(["run", "--p", "1.5", "--steps", "5", "--out", str(tmp_path), "--quiet"]) == 2
    assert "p must" in capsys.readouterr().err


def _snapshot_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "snapshots" / "make_simulate_snapshot.py"
    spec = importlib.util.spec_from_file_location("make_simulate_snapshot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path.with_name("simulate_bits.json")


@pytest.mark.parametrize("engine", ["fused", "numpy"])
def test_simulator_bits_snapshot(engine, monkeypatch):
    """The simulator's bits are pinned: 180 cells (4 problems x 5 noise models x batch 1/3 x 4
    optimizers, d = 32 and 30) against tests/snapshots/simulate_bits.json, on the fused engine and the
    reference engine. The snapshot's note says which cells changed since cc74f3c and why. On a machine
    whose numpy dispatches to other SIMD code (other CPU features), transcendental functions may round
    differently: there the sums are compared to 1e-12 instead of the bits."""
    import json

    if engine == "numpy":
        monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    mod, path = _snapshot_module()
    stored = json.loads(path.read_text())
    same_machine = stored["cpu_features"] == mod.cpu_features() and stored["numpy"] == np.__version__
    cells = list(mod.cells())
    assert len(cells) == len(stored["cells"]) == 180
    bad = []
    for key, *args in cells:
        got, want = mod.run_cell(*args), stored["cells"][key]
        if same_machine:
            if got["sha256"] != want["sha256"]:
                bad.append(key)
        elif not (
            np.isclose(got["sum"], want["sum"], rtol=1e-12) and np.isclose(got["sumsq"], want["sumsq"], rtol=1e-12)
        ):
            bad.append(key)
    assert not bad, f"{len(bad)} simulator cells changed: {bad[:5]}"


def test_record_at_records_those_steps_with_the_bits_of_every_step():
    from lptheory.simulate import Observer

    pr, orc = _setup()
    opt = StaceyPP(p=3.0, lr=0.05)
    every = simulate(opt, pr, orc, steps=23, replicates=3, seed=2, snapshots=True)
    at = simulate(opt, pr, orc, steps=23, replicates=3, seed=2, snapshots=True, record_at=[17, 5, 11, 5])
    assert at.steps.tolist() == [0, 5, 11, 17, 23]  # sorted, once each, with t = 0 and T
    for name in ("f", "grad_pstar", "grad_2", "snapshots"):
        np.testing.assert_array_equal(getattr(at, name), getattr(every, name)[at.steps])
    with pytest.raises(ValueError, match="record_every"):
        simulate(opt, pr, orc, steps=5, record_every=2, record_at=[3])
    with pytest.raises(ValueError, match="record_at"):
        simulate(opt, pr, orc, steps=5, record_at=[6])
    with pytest.raises(ValueError, match="record_at"):
        simulate(opt, pr, orc, steps=5, record_at=[-1])

    class Steps(Observer):  # an on_step observer still sees every step, a record-only one every record
        def __init__(self):
            self.seen, self.recorded = [], []

        def on_step(self, v):
            self.seen.append(v.t)

        def on_record(self, v):
            self.recorded.append(v.t)
            return {}

    ob = Steps()
    simulate(opt, pr, orc, steps=6, replicates=1, seed=2, observers=[ob], record_at=[4])
    assert ob.seen == list(range(6)) and ob.recorded == [0, 4, 6]
