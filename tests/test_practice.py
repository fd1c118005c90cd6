"""The practice pack: statistics on planted data, the probe on synthetic controls and the pack's wiring (the
protocol and the stacked training: tests/test_practice_protocol.py)."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from proofs_checks.practice import stats
from proofs_checks.practice.probe import (
    batch_grad_bound,
    dual,
    lp_norm,
    noise_profile,
    secant_ratios,
    theorem1_rhs,
    top_coordinates,
)
from proofs_checks.practice.recheck import recheck_best_p, recheck_state

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_SKLEARN = importlib.util.find_spec("sklearn") is not None
torch_only = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the practice extra)")


# -- statistics on planted data -----------------------------------------------------------------------------


def test_compositions_are_the_bootstrap():
    for S in (1, 2, 3, 5):
        K, w = stats.compositions(S)
        assert K.shape[0] == math.comb(2 * S - 1, S)
        assert np.all(K.sum(axis=1) == S)
        assert math.isclose(w.sum(), 1.0, rel_tol=1e-12)


def test_bootstrap_argmin_matches_ordered_enumeration():
    rng = np.random.default_rng(4)
    V = rng.standard_normal((4, 4))
    freq = stats.bootstrap_argmin(V)
    chk = recheck_best_p({"p": [2, 3, 4, 6], "values": V.tolist(), "claimed": 2, "near": 0.1, "level": 0.95})
    assert np.allclose(freq, chk["checks"][0]["probability"], atol=1e-12)


def test_best_p_planted_and_ties():
    V = np.array([[0.9, 0.91, 0.92, 0.9, 0.93], [0.5, 0.52, 0.49, 0.51, 0.5], [0.1, 0.12, 0.11, 0.1, 0.1]])
    freq = stats.bootstrap_argmin(V, maximize=True)
    assert freq[0] == pytest.approx(1.0)
    assert stats.covering_set(freq, [2, 3, 4]) == [2.0]
    tie = stats.bootstrap_argmin(np.ones((2, 3)))
    assert np.allclose(tie, [0.5, 0.5])


def test_state_recheck():
    assert not recheck_state({"buffers": 2, "claimed": 2})["violated"]
    assert recheck_state({"buffers": 1, "claimed": 2})["violated"]


# -- the probe on synthetic controls ------------------------------------------------------------------------


def test_probe_recovers_planted_profile_and_never_exceeds_certificates():
    from proofs_checks.practice.controls import SIGMA_TOL, synthetic_probe

    for seed in (0, 1):
        res = synthetic_probe(m=2000, seed=seed)
        assert res["sigma_rel_err"] <= SIGMA_TOL
        assert res["top"] == res["planted"]
        for p in res["G"]:
            assert 0 < res["G"][p] <= res["G_cert"][p]
            assert 0 < res["L"][p] <= res["L_cert"][p]


def test_probe_controls_fail():
    from proofs_checks.api import Context
    from proofs_checks.practice.controls import run_controls

    recs = run_controls(Context(seed=0, quick=True))
    main = [r for r in recs if ".control" not in r.id]
    ctl = [r for r in recs if ".control" in r.id]
    assert all(r.status == "holds" for r in main) and len(main) == 6
    assert {r.id for r in main} >= {"practice.probe.G.lower", "practice.probe.L.exact"}
    assert len(ctl) == 5 and all(r.status == "inconclusive" and "fails as it must" in r.reason for r in ctl)


def test_probe_formulas():
    x = np.array([3.0, -4.0])
    assert lp_norm(x, 2.0) == pytest.approx(5.0)
    assert lp_norm(x, math.inf) == 4.0
    assert dual(3.0) == pytest.approx(1.5) and dual(math.inf) == 1.0
    g = np.array([[1.0, 0.0], [3.0, 0.0], [1.0, 2.0], [3.0, 2.0]])
    assert np.allclose(noise_profile(g), np.std(g, axis=0, ddof=1))
    # batch means of disjoint pairs: never above the max per-sample norm (convexity)
    G = batch_grad_bound(g, 2, [2.0, 4.0])
    assert all(G[p] <= lp_norm(g, dual(p)).max() + 1e-12 for p in G)
    # a quadratic with Hessian diag(h): secant ratios in l_2 are at most max h and reach it along e_1
    h = np.array([4.0, 1.0])
    xs = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    L = secant_ratios(xs, xs * h, [2.0])
    assert L[2.0] == pytest.approx(4.0)
    t = theorem1_rhs(gap=2.0, T=100, eta=0.1, n=4, L=3.0, G=2.0, sigma_l1=1.0, p=3.0)
    assert t["rhs"] == pytest.approx(2.0 / 10 + 3 * 0.1 * 2.0 / 2 + 2.5 * 2**0.5 / 2)
    assert top_coordinates([0.1, 5.0, 0.2, 3.0], 2) == [1, 3]
    with pytest.raises(ValueError, match="m >= 2"):
        noise_profile(np.ones((1, 3)))


# -- training pieces on tiny configurations -----------------------------------------------------------------


@torch_only
def test_per_sample_grads_match_autograd():
    import torch

    from proofs_checks.practice.probe import loss_of, per_sample_grads

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    g, flat = per_sample_grads(model, loss_of, x, y, chunk=4)
    assert g.shape == (6, flat.size)
    model.zero_grad()
    loss_of(model, x[2:3], y[2:3]).backward()
    ref = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double().numpy()
    assert np.allclose(g[2], ref, atol=1e-6)


@torch_only
def test_memory_overhead_counts():
    import torch

    from proofs_checks.practice.efficiency import _build, state_buffers

    out = {}
    for name in ("adam", "stacey-pp", "stacey-p2", "sgd"):
        m = torch.nn.Linear(8, 4)
        opt = _build(name, m)
        m(torch.ones(2, 8)).sum().backward()
        opt.step()
        out[name] = state_buffers(opt, list(m.parameters()))["per_coordinate"]
    assert out == {"adam": 2.0, "stacey-pp": 2.0, "stacey-p2": 2.0, "sgd": 1.0}


# -- the pack's wiring ----------------------------------------------------------------------------------------


def test_pack_loads_and_validates():
    from proofs_checks.api import load_pack

    pack = load_pack("proofs_checks.practice:PACK")
    assert set(pack.checks) == {"digits", "charlm", "digits-cnn", "cancer", "efficiency", "probe-controls"}
    chk = pack.checks["digits"]
    with pytest.raises(ValueError, match="--p"):
        chk.resolve({"p": [1.5]})
    with pytest.raises(ValueError, match="seeds"):
        chk.resolve({"seeds": 13})
    with pytest.raises(ValueError, match="workers"):
        chk.resolve({"workers": -1})
    with pytest.raises(ValueError, match="device"):
        chk.resolve({"device": "tpu"})


def test_missing_extra_names_it(monkeypatch):
    import proofs_checks.practice as pr

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    with pytest.raises(ValueError, match=r"scikit-learn.*'practice' extra"):
        pr.PACK.checks["digits"].resolve({})


def test_cli_missing_extra_exit_2(tmp_path):
    """Without the extra, the command line says which extra to install, exit 2, no traceback."""
    import os
    import subprocess
    import sys

    stub = tmp_path / "sitecustomize.py"
    stub.write_text(
        "import importlib.util as u\n_f = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n in ('torch', 'sklearn') else _f(n, *a)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    out = subprocess.run(
        [sys.executable, "-m", "lptheory", "check", "proofs_checks.practice:PACK", "digits", "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "practice" in out.stderr and "Traceback" not in out.stderr
    json.dumps(out.stderr)


def test_entry_point_and_extra_declared():
    tomllib = pytest.importorskip("tomllib")

    with open("pyproject.toml", "rb") as fh:
        cfg = tomllib.load(fh)
    assert cfg["project"]["entry-points"]["lptheory.checks"]["practice"] == "proofs_checks.practice:PACK"
    extra = " ".join(cfg["project"]["optional-dependencies"]["practice"])
    assert "torch" in extra and "scikit-learn" in extra


def test_report_section_counts_verdicts_per_task_and_claim():
    from proofs_checks.practice import PACK, SMALL_SCALE_NOTE

    (sec,) = [s for s in PACK.report_sections if s.name == "practice-scope"]
    assert "cannot say" in sec.intro and sec.intro == SMALL_SCALE_NOTE
    recs = [
        {"check": "digits", "id": "practice.outperforms", "status": s, "params": {"task": "digits", "model": "m"}}
        for s in ("holds", "violated", "inconclusive", "inconclusive")
    ]
    recs.append({"check": "digits", "id": "practice.outperforms.control", "status": "inconclusive", "params": {}})
    (row,) = sec.rows(recs)
    assert (row["holds"], row["violated"], row["inconclusive"], row["task"]) == ("1", "1", "2", "digits")
