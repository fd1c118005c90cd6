"""The efficiency check of the practice pack (issue 42, item 5): operation counts traced from the update rules
against the hand count, the cost rule against a planted 5x optimizer, the exact state count, the CPU-time
ratios, and the peak memory measured in fresh processes (slow)."""

from __future__ import annotations

import importlib.util
import types

import numpy as np
import pytest

from proofs_checks.practice import efficiency as E

HAS_TORCH = importlib.util.find_spec("torch") is not None
torch_only = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the practice extra)")


# -- operation counts ----------------------------------------------------------------------------------------
def test_traced_counts_equal_the_hand_counts():
    table = E.count_table()
    assert set(table) == set(E.HAND_COUNTS)
    for row, hand in E.HAND_COUNTS.items():
        got = {k: table[row][k] for k in hand}
        assert got == hand, row
        assert table[row]["arithmetic"] == hand["add/sub"] + hand["mul"] + hand["div"] + hand["sqrt"]
    # the numbers the docstring's table and the record state
    assert (table["stacey-pp"]["arithmetic"], table["stacey-p2"]["arithmetic"]) == (25, 16)
    assert (table["adam"]["arithmetic"], table["adamw"]["arithmetic"]) == (15, 14)


def test_count_sees_one_planted_operation():
    from lptheory.optimizers import AdamW

    base = E.operation_counts(E._core("adamw"))

    def plus_one(xp, h, b):
        AdamW.rule(xp, h, b)
        xp.multiply(b.new_theta, 0.5, out=b.new_theta)

    got = E.count_rule(plus_one, E._core("adamw").scalars(0), ("m", "v"), 3)
    assert got["mul"] == base["mul"] + 1 and got["arithmetic"] == base["arithmetic"] + 1
    five = E.count_rule(E.planted_rule(5), E._core("adamw").scalars(0), ("m", "v"), 3)
    assert five["arithmetic"] == 5 * base["arithmetic"]


def test_trivial_operations_are_left_out():
    from lptheory import optimizers as O

    c = E.operation_counts(O.Adam(weight_decay=0.0))  # theta * 1.0 in the transcription
    assert c["trivial"] == 1 and c["arithmetic"] == 13
    c = E.operation_counts(O.AdamW(weight_decay=0.05))
    assert c["trivial"] == 0 and c["arithmetic"] == 14


def test_count_input_errors():
    with pytest.raises(TypeError, match="rule"):
        E.count_rule(None, {}, (), 1)
    with pytest.raises(ValueError, match="n_scratch"):
        E.count_rule(E.planted_rule(1), {}, (), -1)
    with pytest.raises(TypeError, match="opt"):
        E.operation_counts(object())
    with pytest.raises(ValueError, match="times"):
        E.planted_rule(0)


def test_cost_rule_holds_for_stacey_and_fails_for_five_times_adam():
    from proofs_checks.recheck import recheck

    counts = E.count_table()
    ok = E._cost_record("stacey-pp", counts["stacey-pp"]["arithmetic"], counts, {}, {}, "")
    assert ok.status == "holds" and ok.empirical == pytest.approx(25 / 14)
    planted = E.count_rule(E.planted_rule(5), E._core("adamw").scalars(0), ("m", "v"), 3)
    bad = E._cost_record("planted", planted["arithmetic"], counts, {}, {}, "", control="five-adam")
    assert bad.status == "violated" and bad.empirical == pytest.approx(5.0)
    # the witnesses re-check alone
    assert recheck(E._opcount_witness(70, 14, E.COMPARABLE))["violated"] is True
    assert recheck(E._opcount_witness(25, 14, E.COMPARABLE))["violated"] is False
    assert recheck(E._opcount_witness(29, 14, E.COMPARABLE))["violated"] is True  # 2.07 > 2


# -- state and timing ----------------------------------------------------------------------------------------
@torch_only
def test_state_buffers_on_parameter_vectors():
    import torch

    out = {}
    for name in ("adam", "adamw", "stacey-pp", "stacey-p2", "sgd"):
        ps = [E._vector(n, i) for i, n in enumerate((50, 7))]
        opt = E._build(name, ps)
        opt.step()
        out[name] = E.state_buffers(opt, ps)
        assert all(torch.isfinite(p).all() for p in ps)
    assert {k: v["per_coordinate"] for k, v in out.items()} == {
        "adam": 2.0,
        "adamw": 2.0,
        "stacey-pp": 2.0,
        "stacey-p2": 2.0,
        "sgd": 1.0,
    }
    assert out["stacey-pp"]["bytes_per_param"] == 8.0  # two float32 buffers, no scalar tensors
    with pytest.raises(ValueError, match="name"):
        E._build("rmsprop", ps)


@torch_only
def test_build_keeps_the_module_form():
    import torch

    m = torch.nn.Linear(3, 2)
    opt = E._build("stacey-pp", m)
    assert len(opt.param_groups[0]["params"]) == 2


def test_time_ratios_are_ratios_of_medians():
    times = {
        "sizes": [10],
        "10": {
            "a": {"cpu": [2.0, 4.0, 6.0], "wall": [1.0, 1.0, 1.0]},
            "b": {"cpu": [1.0, 2.0, 30.0], "wall": [2.0] * 3},
        },
    }
    r = E.time_ratios(times, "a", "b")["10"]
    assert r["ratio_of_medians"] == pytest.approx(2.0)
    assert r["block_ratio_median"] == pytest.approx(2.0)
    assert r["block_ratio_range"] == pytest.approx([0.2, 2.0])
    assert r["wall_ratio_of_medians"] == pytest.approx(0.5)


@torch_only
def test_step_cpu_times_small_and_restores_threads():
    import torch

    before = torch.get_num_threads()
    t = E.step_cpu_times([3000], blocks=2, min_block_s=0.001)
    assert torch.get_num_threads() == before
    assert t["paths"]["adamw"].startswith(("fused=True", "foreach=True"))
    row = t["3000"]
    for n in ("adamw", "adam", "stacey-pp", "stacey-p2"):
        assert len(row[n]["cpu"]) == 2 and all(np.isfinite(row[n]["cpu"])) and min(row[n]["wall"]) > 0
    with pytest.raises(ValueError, match="sizes"):
        E.step_cpu_times([])
    with pytest.raises(ValueError, match="blocks"):
        E.step_cpu_times([10], blocks=0)


def test_peak_memory_input_errors():
    with pytest.raises(ValueError, match="name"):
        E.peak_memory("rmsprop", 10)
    with pytest.raises(ValueError, match="d must"):
        E.peak_memory("adamw", 0)


# -- slow: fresh processes, the whole check ------------------------------------------------------------------
@torch_only
@pytest.mark.slow
def test_peak_memory_sees_the_state():
    d = 4_000_000
    t = E.memory_table(d, (("baseline", "baseline", True), ("adamw", "adamw", True), ("sgd", "sgd", False)))
    assert all(r["reset"] for r in t.values())
    assert abs(t["baseline"]["step_increase_per_param"]) < 0.5  # nothing built: nothing added
    # AdamW: two float32 moments, 8 bytes per parameter (page-rounded)
    assert 7.5 <= t["adamw"]["step_increase_per_param"] <= 9.0
    assert 7.5 <= t["adamw"]["retained_per_param"] <= 9.0
    # SGD: one buffer retained (4 bytes per parameter)
    assert 3.5 <= t["sgd"]["retained_per_param"] <= 4.6


@torch_only
@pytest.mark.slow
def test_run_efficiency_quick():
    recs = [r.to_dict() for r in E.run_efficiency(types.SimpleNamespace(quick=True))]
    by = {(r["id"], (r.get("params") or {}).get("optimizer")): r for r in recs}
    assert by[("practice.memory", "stacey-pp")]["status"] == "holds"
    assert by[("practice.memory.control", "sgd")]["status"] == "inconclusive"
    assert by[("practice.step-cost", "stacey-pp")]["status"] == "holds"
    assert by[("practice.step-cost.control", "planted-5x-adamw")]["status"] == "inconclusive"
    assert "fails as it must" in by[("practice.step-cost.control", "planted-5x-adamw")]["reason"]
    timing = by[("practice.step-cost", "stacey-pp")]["data"]["timing"]["adamw"]
    assert set(timing) == {"100000", "1000000"}
    mem = by[("practice.memory", "stacey-pp")]["data"]["measured_memory"]["per_optimizer"]
    assert 7.5 <= mem["stacey-pp"]["retained_per_param"] <= 9.0
