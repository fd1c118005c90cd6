"""Bad input is refused before any work (exit 2, naming the flag or key), a run that cannot fit in memory
is refused with the numbers, and claim files that fail say where (file, check, line; --traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from lptheory.app import cli
from lptheory.app.resources import available_memory, run_estimate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOMENT = os.path.join(ROOT, "examples", "claim_moment_lemma.py")


def _cli(*args, timeout=120):
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "lptheory", *args],
        env={**os.environ, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return res, time.monotonic() - t0


# -------------------------------------------------------------------------------------------------
# memory


@pytest.mark.parametrize(
    "args",
    [["--replicates", "100000", "--d", "1000000"], ["--steps", "100000000000"], ["--steps", "1e11"]],
)
def test_run_refuses_what_cannot_fit_in_memory(tmp_path, args):
    """Exit 2 with the bytes needed and available, before the problem or the recording schedule is
    built (the 1e11-step run used to build a 1e10-element set first), and no output directory."""
    have = available_memory()
    if have is None:
        pytest.skip("available memory unknown on this platform")
    out = tmp_path / "o"
    res, took = _cli("run", *args, "--out", str(out), "--quiet")
    assert res.returncode == 2, res.stderr
    err = res.stderr
    assert "needs about" in err and "is available" in err and "Traceback" not in err and "MemoryError" not in err
    assert "--replicates" in err and "--d" in err
    assert not out.exists()
    assert took < 60


@pytest.mark.slow
@pytest.mark.parametrize("name, slots, batch", [("adam", 2, 4), ("sgd", 1, 1), ("stacey-pp", 2, 1)])
def test_memory_estimate_covers_the_measured_peak(name, slots, batch):
    """The working-array part of the estimate covers the peak of the arrays a simulated run allocates
    (traced with tracemalloc, which numpy reports to), for R = 16, d = 20000 (2.56 MB per array)."""
    import tracemalloc

    from lptheory.app.resources import state_slots
    from lptheory.optimizers import OPTIMIZERS
    from lptheory.simulate import simulate
    from synthetic.noise import make_noise, sigma_profile
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    R, d, steps = 16, 20000, 4
    opt = OPTIMIZERS[name]()
    assert state_slots(opt) == slots
    problem = make_problem("separable", d=d, seed=0)
    oracle = GradientOracle(problem, make_noise("rademacher", sigma_profile("flat", d, 0.1, seed=0)), batch)
    simulate(opt, problem, oracle, 1, 2, 0, on_nonfinite="record")  # compiled kernels, caches
    tracemalloc.start()
    try:
        simulate(opt, problem, oracle, steps, R, 0, record_every=2, on_nonfinite="record")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    est = run_estimate(replicates=R, d=d, steps=steps, record_every=2, slots=[slots], batch=batch)
    assert est["total"] >= peak, (est, peak / (R * d * 8))
    assert est["total"] <= 4 * peak, (est, peak / (R * d * 8))  # and not wildly above it


def test_run_estimate_arithmetic():
    est = run_estimate(replicates=10, d=100, steps=1000, record_every=10, slots=[2, 0], itemsize=8)
    assert est["recorded_steps"] == 102
    assert est["working"] == (9 + 2) * 10 * 100 * 8
    assert est["records"] == 2 * 6 * 102 * 10 * 8
    assert (
        run_estimate(replicates=10, d=100, steps=10, record_every=1, slots=[1], itemsize=4, batch=3)["working"]
        == (9 + 1 + 3) * 10 * 100 * 4  # batch > 1: the noise's per-thread draw buffers (BATCH_ARRAYS)
    )


# -------------------------------------------------------------------------------------------------
# flags and keys, before any work


@pytest.mark.parametrize(
    "args, named",
    [
        (["check", MOMENT, "--set", "r=abc"], "--set r=abc"),
        (["check", "lemmas", "--set", "p=abc"], "--set p=abc"),
        (["check", "lemmas", "--set", "p=nan"], "--set p=nan"),
        (["check", "lemmas", "--seed", "-1"], "--seed"),
        (["report", "--seed", "99999999999999999999999"], "--seed"),
        (["run", "--seed", "-3"], "--seed"),
        (["run", "--problem-seed", "1e400"], "--problem-seed"),
        (["run", "--steps", "2.5"], "--steps"),
        (["run", "--p", "1e308"], "--p"),
        (["check", "lemmas", "--p", "1e308"], "--p"),
        (["check", "theorem1", "--p", "1e308"], "--p"),
        (["demo", "--p", "1e308"], "--p"),
        (["run", "--p-measure", "inf"], "--p-measure"),
    ],
)
def test_bad_flags_exit_2_naming_them_before_any_work(tmp_path, capsys, args, named):
    out = tmp_path / "never"
    extra = ["--out", str(out)] if args[0] in ("report", "run") else []
    t0 = time.perf_counter()
    rc = cli.main([*args, *extra, "--quick"] if args[0] in ("check", "report") else [*args, *extra])
    took = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert rc == 2, err
    assert named in err and "Traceback" not in err
    assert not out.exists()
    assert took < 10  # nothing ran (a quick report takes minutes)


def test_the_same_p_outcome_in_every_command(capsys):
    msgs = set()
    for args in (["run"], ["check", "lemmas"], ["check", "theorem1"], ["demo"]):
        assert cli.main([*args, "--p", "1e308"]) == 2
        msgs.add(capsys.readouterr().err.strip().splitlines()[-1])
    assert len(msgs) == 1, msgs


def test_set_values_take_the_type_of_the_default(capsys):
    """The command line keeps the text; the check types it from its option's default (one implementation)."""
    assert cli._parse_sets(["r=3,2.5", "name=abc"]) == {"r": "3,2.5", "name": "abc"}
    for arg, msg in (("r=inf-ish", "--set r"), ("r=", "--set r")):
        assert cli.main(["check", MOMENT, "--set", arg, "--quick", "--quiet", "--jobs", "1"]) == 2
        assert msg in capsys.readouterr().err
    with pytest.raises(cli.UsageError, match="expected KEY=VALUE"):
        cli._parse_sets(["novalue"])


def test_set_runs_with_a_coerced_value(capsys):
    assert cli.main(["check", MOMENT, "--set", "r=1.5", "--quick", "--quiet", "--jobs", "1"]) == 0
    assert "moment.jensen" in capsys.readouterr().out


def test_sweep_steps_zero_names_sim_steps(tmp_path, capsys):
    text = open(os.path.join(ROOT, "examples", "sweeps", "theorem1_rate.toml")).read()
    lines = [('"sim.steps" = [0, 64]' if ln.startswith('"sim.steps"') else ln) for ln in text.splitlines()]
    cfg = tmp_path / "c.toml"
    cfg.write_text("\n".join(lines))
    assert cli.main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "sim.steps must be >= 1, got 0" in err and "oracle.batch" not in err


# -------------------------------------------------------------------------------------------------
# claim files that fail


NO_BOUND = """
import sympy as sp
from proofs_checks.api import Assumption, ClaimSpec, DistributionSpace, Expect, Expect1, Pack, SearchBudget
from proofs_checks.api import adversarial_search, g, x

PACK = Pack("nobound", title="A claim without its bound")
SPEC = ClaimSpec(id="nb.claim", statement="E|X - g|^3 <= ?", source="a test",
                 assumptions=[Assumption("mean", g, "==", Expect1(x), per_coordinate=True)],
                 term=Expect(sp.Abs(x - g) ** 3))


@PACK.check(title="no bound")
def nobound(ctx):
    return [adversarial_search(SPEC, [DistributionSpace(d=1, k=2)], {}, seed=0,
                               budget=SearchBudget(maxiter=2, popsize=4))]
"""

RAISES = """
from proofs_checks.api import ClaimSpec, Pack, value_claim

PACK = Pack("raises", title="A check that divides by zero")
SPEC = ClaimSpec(id="raises.one", statement="1 <= 2", source="a test")


def helper(n):
    return 1 / n


@PACK.check(title="fine")
def fine(ctx):
    return [value_claim(SPEC, 1.0, 2.0, {})]


@PACK.check(title="broken")
def broken(ctx):
    return [value_claim(SPEC, helper(0), 2.0, {})]
"""


def test_a_claim_spec_without_bound_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "nobound.py"
    path.write_text(NO_BOUND)
    assert cli.main(["check", str(path), "--quick", "--quiet", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert "ClaimSpec has no bound" in err and "nb.claim" in err and "check 'nobound'" in err
    assert "AttributeError" not in err and "Traceback" not in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_failing_check_names_file_check_and_line(tmp_path, capsys, jobs):
    """In this process (--jobs 1) and from a worker process (--jobs 2: the frames come back as text)."""
    path = tmp_path / "raises.py"
    path.write_text(RAISES)
    out = tmp_path / "r"
    assert cli.main(["report", "--claims", str(path), "--out", str(out), "--jobs", jobs, "--quiet"]) == 3
    err = capsys.readouterr().err
    line = RAISES.splitlines().index("    return 1 / n") + 1
    assert "ZeroDivisionError" in err and "check 'broken'" in err and f"{path}, line {line}" in err
    assert "--traceback" in err and "Traceback (most recent call last)" not in err
    assert not out.exists()
    assert cli.main(["check", str(path), "--quiet", "--jobs", jobs, "--traceback"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "return 1 / n" in err and "check 'broken'" in err
