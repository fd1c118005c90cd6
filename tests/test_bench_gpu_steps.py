"""The GPU step benchmark (benchmarks/bench_gpu_steps.py, issue 46) runs on CPU with tiny sizes, writes its JSON
and markdown, derives the bytes moved from the optimizers' buffers, and stops cleanly before its budget."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_gpu_steps.py")
HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_TORCH, reason="needs torch")]


def _load():
    spec = importlib.util.spec_from_file_location("bench_gpu_steps", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cpu_smoke_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("OUT", None)
    cmd = [sys.executable, SCRIPT, "--device", "cpu", "--sizes", "1e4", "1e5", "--quick", "--threads", "1"]
    res = subprocess.run([*cmd, "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads((tmp_path / "gpu_steps.json").read_text())
    rows = {(r["size"], r["name"]): r for r in data["results"]}
    assert not data["errors"], data["errors"]
    for d in (10_000, 100_000):
        # bytes moved per parameter from the buffers found in each optimizer's state
        assert rows[(d, "AdamW(fused=True)")]["bytes_per_param"] == 28
        assert rows[(d, "StaceyPP fused")]["bytes_per_param"] == 28
        assert rows[(d, "StaceyP2 fused")]["bytes_per_param"] == 28
        assert rows[(d, "Lion fused")]["bytes_per_param"] == 20
        assert rows[(d, "LpDescent fused")]["bytes_per_param"] == 12
        assert rows[(d, "AdamW(fused=True)")]["ratio_to_reference"] == 1.0
        assert rows[(d, "lptheory Muon (ns bf16)")]["ns_tflops"] > 0
        for r in rows.values():
            assert r["median_ms"] > 0 and 0 < r["fraction_of_peak"] < 1
    md = (tmp_path / "gpu_steps.md").read_text()
    assert "4.8 TB/s" in md and "StaceyPP fused" in md
    assert "d = 1.00e+04" in res.stdout  # progress lines


def test_budget_alarm_stops_cleanly(tmp_path, monkeypatch):
    """A contender that outlasts the budget is stopped by the alarm and the results so far are written."""
    mod = _load()

    class Slow:
        def __init__(self, ps):
            self.state = {}

        def step(self):
            time.sleep(60)

    monkeypatch.setattr(mod, "elementwise", lambda: {"Slow": (Slow, False)})
    monkeypatch.setattr(mod, "muons", lambda: {})
    t0 = time.monotonic()
    rc = mod.main(["--device", "cpu", "--sizes", "1e3", "--budget-s", "16", "--out", str(tmp_path)])
    took = time.monotonic() - t0
    assert rc == 0 and took < 16
    data = json.loads((tmp_path / "gpu_steps.json").read_text())
    assert data["meta"]["stopped"] is True and data["results"] == []
