"""The command line as a user meets it: exit statuses, one-line errors naming the flag, divergence as a
result, interruptions, help."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lptheory.app import cli
from lptheory.app.cli import main


def test_no_subcommand_is_usage_error(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_every_flag_has_help():
    parser = cli.build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sp in subs.choices.items():
        for action in sp._actions:
            if action.dest != "help":
                assert action.help, (name, action.dest)


def test_run_divergence_is_a_result(tmp_path, capsys):
    from lptheory.optimizers import NonFiniteGradientWarning

    out = tmp_path / "o"
    with pytest.warns(NonFiniteGradientWarning, match="SGD: a gradient with NaN or inf entries"):
        rc = main(
            [
                "run",
                "--optimizer",
                "sgd",
                "--lr",
                "10",
                "--problem",
                "quadratic-diagonal",
                "--steps",
                "400",
                "--replicates",
                "3",
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert rc == 0
    text = capsys.readouterr().out
    assert "diverged" in text
    meta = json.loads((out / "run.json").read_text())  # strict JSON: no NaN tokens
    assert "NaN" not in (out / "run.json").read_text()
    assert meta["summary"]["sgd"]["diverged"] == 3 and all(s > 0 for s in meta["diverged_at"]["sgd"])
    assert (out / "run.png").stat().st_size > 0 and (out / "run.svg").stat().st_size > 0
    assert {"numpy", "scipy"} <= set(meta["versions"]) and meta["config_hash"]


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["run", "--optimizer", "stacey-pp", "--momentum", "0.5"], "--momentum"),
        (["run", "--device", "cuda"], "--device cuda: only for --backend torch"),
        (["run", "--dtype", "float32"], "--dtype float32: only for --backend torch"),
        (["run", "--steps", "0"], "--steps must be >= 1"),
        (["run", "--p", "1.5", "--steps", "5"], "p must"),
        (["check", "symbolic", "--p", "3"], "does not take --p"),
        (["check", "theorem1", "--p", "2"], "--p must be in (2, inf)"),
        (["check", "no-such-check"], "no-such-check"),
        (["check", "lemmas", "--fail-on", "broken"], "--fail-on"),
        (["report", "--jobs", "0"], "--jobs must be >= 1"),
        (["report", "--only", "nope"], "--only nope"),
        (["report", "--config", "/no/such.toml"], "--config /no/such.toml: no such file"),
        (["check", "lemmas", "--seed", "1.5"], "--seed"),
    ],
)
def test_bad_input_is_exit_2_with_one_line_naming_the_flag(tmp_path, capsys, argv, msg):
    argv = argv + (["--out", str(tmp_path / "o")] if argv[0] in ("run", "report") else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_out_that_is_a_file_or_a_directory_config(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["run", "--steps", "3", "--out", str(f), "--quiet"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert main(["report", "--config", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_unwritable_out(tmp_path, capsys):
    import os

    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    assert main(["run", "--steps", "3", "--out", str(ro / "x"), "--quiet"]) == 2
    assert "not writable" in capsys.readouterr().err


def test_interrupt_is_short_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    import proofs_checks.runner as runner

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_checks", boom)
    out = tmp_path / "rep"
    assert main(["report", "--quick", "--quiet", "--only", "claims", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err
    assert not out.exists()


def test_info_suggests_the_pinned_cpu_wheel():
    import inspect

    # PyTorch's CPU index: PyPI's Linux torch wheel is the CUDA build (issue 45); the README says the same
    assert cli.TORCH_CPU_INSTALL == "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    assert "TORCH_CPU_INSTALL" in inspect.getsource(cli._cmd_info)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert cli.TORCH_CPU_INSTALL in readme


def test_small_replicate_counts_get_student_t_intervals():
    from lptheory.simulate import mean_interval

    m, lo, hi = mean_interval([1.0, 3.0])
    assert m == 2.0 and hi - m == pytest.approx(12.706204736174 * 1.0, rel=1e-9)  # t(0.975, 1) * s / sqrt(2)
    m, lo, hi = mean_interval([1.0])
    assert m == 1.0 and math.isnan(lo) and math.isnan(hi)
    assert mean_interval(np.array([np.nan, 2.0, 2.0]))[0] == 2.0


@pytest.mark.slow
def test_check_out_does_not_clobber_a_report(tmp_path, capsys):
    (tmp_path / "claims.json").write_text('{"claims": [], "meta": {}}')
    (tmp_path / ".lptheory-command").write_text("check\n")  # an earlier check's directory (a foreign one is refused)
    assert main(["check", "claims", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "claims.json").read_text() == '{"claims": [], "meta": {}}'
    assert (tmp_path / "check_claims.json").exists()
    capsys.readouterr()


def test_gitignore_lists_the_example_outputs():
    from pathlib import Path

    text = (Path(__file__).parents[1] / ".gitignore").read_text()
    assert "examples_out/" in text


def test_output_into_a_closed_pipe_is_not_a_traceback(monkeypatch):
    """``lptheory ... | head``: the reader stops, writes raise BrokenPipeError; the CLI exits 0 quietly."""

    class Closed:
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", Closed())
    assert cli.main(["info"]) == 0
