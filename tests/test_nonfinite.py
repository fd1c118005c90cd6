"""Non-finite gradients are reported, not silent: one NonFiniteGradientWarning per optimizer and a count
(numpy, torch tensors through the core optimizers, the torch.optim classes), and a `nonfinite` count in
`lptheory run`'s outputs. A torch state dict of one Stacey variant does not load into the other."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from lptheory.app import cli
from lptheory.optimizers import OPTIMIZERS, NonFiniteGradientWarning, nonfinite_steps


def _steps(opt, grads, theta):
    state = opt.init(theta)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for g in grads:
            theta, state = opt.step(theta, g, state)
    return [w for w in caught if issubclass(w.category, NonFiniteGradientWarning)]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_numpy_nan_gradient_warns_once_and_counts(name):
    opt = OPTIMIZERS[name]()
    theta = np.ones((2, 5))
    good = np.full((2, 5), 0.5)
    nan = good.copy()
    nan[1, 3] = np.nan
    inf = good.copy()
    inf[0, 0] = -np.inf
    caught = _steps(opt, [good, nan, inf, good, nan], theta)
    assert len(caught) == 1 and name.replace("-", "").lower()[:4] in str(caught[0].message).lower().replace("-", "")
    assert nonfinite_steps(opt) == 3


def test_a_finite_gradient_whose_sum_overflows_is_not_flagged():
    opt = OPTIMIZERS["sgd"](lr=1e-300)
    big = np.full((1, 4), 1e308)  # the sum is inf, every entry finite
    assert _steps(opt, [big, big], np.ones((1, 4))) == []
    assert nonfinite_steps(opt) == 0


def test_torch_tensors_and_torch_optim_warn_once_and_count():
    torch = pytest.importorskip("torch")
    from lptheory.torch import StaceyPP

    opt = OPTIMIZERS["stacey-pp"]()
    g = torch.full((2, 3), 0.5, dtype=torch.float64)
    bad = g.clone()
    bad[0, 2] = float("nan")
    assert len(_steps(opt, [bad, g, bad], torch.ones(2, 3, dtype=torch.float64))) == 1
    assert nonfinite_steps(opt) == 2

    w = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    topt = StaceyPP([w], lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for v in (0.5, float("inf"), 0.5, float("nan")):
            w.grad = torch.full((4,), 0.5, dtype=torch.float64)
            w.grad[1] = v
            topt.step()
    assert sum(issubclass(c.category, NonFiniteGradientWarning) for c in caught) == 1
    assert nonfinite_steps(topt) == 2


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_run_reports_nonfinite_gradients(tmp_path, capsys, backend):
    """A step size that makes SGD diverge: the replicates' gradients become non-finite; run.json and the
    table carry the count (numpy and torch backends)."""
    if backend == "torch":
        pytest.importorskip("torch")
    out = tmp_path / "o"
    args = ["run", "--optimizer", "sgd", "--optimizer", "stacey-pp", "--lr", "10", "--problem", "quadratic-diagonal"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = cli.main(
            [*args, "--steps", "400", "--replicates", "3", "--backend", backend, "--out", str(out), "--quiet"]
        )
    assert rc == 0
    text = capsys.readouterr().out
    meta = json.loads((out / "run.json").read_text())
    assert meta["nonfinite"]["sgd"] > 0 and meta["summary"]["sgd"]["nonfinite"] == meta["nonfinite"]["sgd"]
    assert "nonfinite" in text and "gradients with NaN or inf entries reached sgd" in text
    n_sgd = sum(issubclass(c.category, NonFiniteGradientWarning) and "SGD" in str(c.message) for c in caught)
    assert n_sgd == 1


def test_state_dict_of_the_other_stacey_is_refused():
    torch = pytest.importorskip("torch")
    from lptheory.torch import StaceyP2, StaceyPP

    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    a = StaceyP2([w], lr=0.1)
    w.grad = torch.ones(3, dtype=torch.float64)
    a.step()
    sd = a.state_dict()
    with pytest.raises(ValueError, match="saved by StaceyP2"):
        StaceyPP([w], lr=0.1).load_state_dict(sd)
    b = StaceyP2([w], lr=0.1)
    b.load_state_dict(sd)  # the same kind round-trips
    assert b.state_dict()["state"][0]["step"] == 1
    old = {k: v for k, v in sd.items() if k != "lptheory"}  # saved before the marker: loads as before
    StaceyPP([w], lr=0.1).load_state_dict(old)


@pytest.mark.slow
def test_compiled_path_imports_raise_no_deprecation_warning():
    """torch's inductor imports torch.utils.mkldnn, whose 14 torch.jit.script_method decorations are
    deprecated by torch itself: lptheory.torch imports it quietly first. Control: a bare import warns."""
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root}
    quiet = "from lptheory.torch import _quiet_inductor_imports; _quiet_inductor_imports(); import torch.utils.mkldnn"
    bare = "import torch, torch.utils.mkldnn"
    runs = [
        subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", c], env=env, capture_output=True)
        for c in (quiet, bare)
    ]
    assert runs[0].returncode == 0, runs[0].stderr.decode()[-2000:]
    assert runs[1].returncode != 0 and b"script_method" in runs[1].stderr


def test_torch_muon_warns_once_and_counts():
    torch = pytest.importorskip("torch")
    from lptheory.torch import Muon

    w = torch.nn.Parameter(torch.ones(4, 3))
    opt = Muon([w], lr=0.01)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for bad in (True, False, True):
            w.grad = torch.full((4, 3), 0.5)
            if bad:
                w.grad[1, 2] = float("inf")
            opt.step()
    assert sum(issubclass(c.category, NonFiniteGradientWarning) for c in caught) == 1
    assert nonfinite_steps(opt) == 2


def test_large_gradients_are_checked_across_the_worker_threads():
    """The check of a large gradient is split over the engines' threads: a NaN in the last part, an inf in the
    first, are each counted; finite entries whose sum overflows are not."""
    opt = OPTIMIZERS["sgd"](lr=1e-300)
    theta = np.zeros((4, 1 << 17))
    good = np.full(theta.shape, 0.5)
    nan_last = good.copy()
    nan_last[-1, -1] = np.nan
    inf_first = good.copy()
    inf_first[0, 0] = np.inf
    big = np.full(theta.shape, 1e308)
    assert len(_steps(opt, [good, nan_last, big, inf_first], theta)) == 1
    assert nonfinite_steps(opt) == 2
