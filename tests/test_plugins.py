"""One plug-in mechanism (lptheory.plugins): a user's file loaded once and remembered, clear errors naming the file
and line, a fresh worker process given the parent's list knows the same optimizers, and ``lptheory sweep
--optimizer-module`` on Dask workers."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from lptheory import plugins

OPT = textwrap.dedent(
    """
    from dataclasses import dataclass
    from typing import ClassVar

    from lptheory.optimizers import ElementwiseOptimizer
    from lptheory.rules import NONNEG, hyper

    @dataclass(frozen=True)
    class HalfStep(ElementwiseOptimizer):
        name: ClassVar[str] = "half-step-{tag}"
        lr: float = hyper(1e-2, NONNEG, help="step size")

        @staticmethod
        def rule(xp, h, b):
            xp.multiply(b.grad, 0.5 * h.lr, out=b.s1)
            xp.subtract(b.theta, b.s1, out=b.new_theta)
    """
)


def _write(tmp_path, tag):
    f = tmp_path / f"opt_{tag}.py"
    f.write_text(OPT.replace("{tag}", tag))
    return str(f)


def test_load_registers_once_and_is_remembered(tmp_path):
    from lptheory.optimizers import OPTIMIZERS

    path = _write(tmp_path, "a")
    m1 = plugins.load(path)
    assert "half-step-a" in OPTIMIZERS and plugins.load(path) is m1
    assert os.path.abspath(path) in plugins.loaded()


def test_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\nraise RuntimeError('boom')\n")
    with pytest.raises(plugins.PluginError, match=r"bad\.py:2: does not import \(RuntimeError: boom\)"):
        plugins.load(str(bad))
    ex = tmp_path / "exits.py"
    ex.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(plugins.PluginError, match=r"called sys.exit\(0\) while being imported"):
        plugins.load(str(ex))
    with pytest.raises(plugins.PluginError, match="no such file"):
        plugins.load(str(tmp_path / "nope.py"))
    with pytest.raises(ValueError, match="group"):
        plugins.entry_point_objects("lptheory.nothing")


def test_a_fresh_worker_given_the_list_knows_the_optimizer(tmp_path):
    path = _write(tmp_path, "b")
    code = (
        "import sys; from lptheory import plugins; from lptheory.optimizers import OPTIMIZERS; "
        "assert 'half-step-b' not in OPTIMIZERS; plugins.ensure(sys.argv[1:]); print('half-step-b' in OPTIMIZERS)"
    )
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs the sweep extra")
def test_sweep_optimizer_module_on_dask_workers(tmp_path):
    """``lptheory sweep --optimizer-module FILE --workers 2``: the Dask workers run the user's optimizer."""
    path = _write(tmp_path, "c")
    cfg = tmp_path / "s.toml"
    cfg.write_text(
        textwrap.dedent(
            """
            [sweep]
            name = "plug"
            rows = "final"
            metrics = ["gap"]
            [problem]
            name = "separable"
            d = 4
            [noise]
            name = "rademacher"
            sigma = 0.2
            [optimizer]
            lr = 0.01
            [sim]
            replicates = 2
            record_every = 1
            seed = 0
            steps = 8
            [grid]
            "optimizer.name" = ["half-step-c", "sgd"]
            """
        )
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lptheory",
            "sweep",
            str(cfg),
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "2",
            "--optimizer-module",
            path,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 computed" in out.stdout + out.stderr or "computed 2" in out.stdout + out.stderr, out.stdout
