"""The fair practice protocol on a tiny synthetic task: stacked training against one-at-a-time training, divergence
isolated per trial, the core rules with per-trial scalars, the tuning (spaces, edges, Sobol, equal budgets), the
statistics (Holm, the paired re-check), the records' structure, the controls that must fail, the task value's errors
and a user's task file."""

from __future__ import annotations

import dataclasses
import importlib.util
import math

import numpy as np
import pytest

from proofs_checks.practice import stats
from proofs_checks.practice.recheck import recheck_paired_holm

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_SKLEARN = importlib.util.find_spec("sklearn") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (the practice extra)")

# the stacked training's agreement with one-at-a-time training: float32 models, the same operations batched
# (batched matrix products may sum in another order): 1e-5 relative on every curve point
STACK_RTOL = 1e-5


def _tiny_task(**kw):
    import torch

    from proofs_checks.practice.task import PracticeTask

    def data(seed):
        g = torch.Generator().manual_seed(1234)
        X = torch.randn(240, 6, generator=g)
        w = torch.randn(6, 3, generator=g)
        y = (X @ w).argmax(-1)
        from proofs_checks.practice.task import split_arrays

        return split_arrays(X.numpy(), y.numpy(), seed)

    def model(seed):
        return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    base = dict(
        steps=24,
        quick_steps=24,
        batch_size=8,
        evals=3,
        metric=("accuracy", "accuracy", "max"),
        claimed_p=2.0,
        claim="a planted claim",
    )
    base.update(kw)
    return PracticeTask("tiny", data, model, **base)


def _trials():
    from proofs_checks.practice.stacked import Trial

    out = []
    for k, n in enumerate(("sgd", "adam", "adamw", "lion", "stacey-pp", "stacey-p2")):
        hp = {"lr": [0.05, 0.01, 0.01, 0.001, 0.1, 0.1][k], "weight_decay": 1e-3, "warmup": 0.1}
        if n.startswith("stacey"):
            hp["alpha"] = 0.1
        out.append(Trial(n, 3.0 if n.startswith("stacey") else None, hp, seed=k % 2))
    return out


@needs_torch
def test_stacked_equals_one_at_a_time():
    from proofs_checks.practice.stacked import train_stacked

    task = _tiny_task()
    sp = task.splits(0)
    trials = _trials()
    together = train_stacked(task, sp, trials, steps=24, evals=3)
    for tr, got in list(zip(trials, together))[::4]:  # SGD and Stacey(p,p) alone (the others share the code path)
        (alone,) = train_stacked(task, sp, [tr], steps=24, evals=3)
        for key in ("train_loss", "val_loss", "test_loss", "test_metric"):
            np.testing.assert_allclose(got["curve"][key], alone["curve"][key], rtol=STACK_RTOL, err_msg=key)
    for got in together:
        assert got["curve"]["train_loss"][-1] < got["curve"]["train_loss"][0]  # every optimizer moved


@needs_torch
def test_divergence_is_isolated():
    from proofs_checks.practice.stacked import Trial, train_stacked

    task = _tiny_task()
    sp = task.splits(0)
    trials = _trials()
    bad = Trial("sgd", None, {"lr": 3e38, "weight_decay": 0.0, "warmup": 0.0}, seed=0)  # overflows float32
    clean = train_stacked(task, sp, trials, steps=24, evals=3)
    mixed = train_stacked(task, sp, [bad, *trials], steps=24, evals=3)
    assert mixed[0]["diverged"] and math.isinf(mixed[0]["curve"]["val_loss"][-1])
    assert mixed[0]["curve"]["test_metric"][-1] == 0.0  # accuracy of a diverged run: the worst
    for a, b in zip(clean, mixed[1:]):
        assert not b["diverged"]
        np.testing.assert_allclose(a["curve"]["val_loss"], b["curve"]["val_loss"], rtol=STACK_RTOL)


@needs_torch
def test_core_rules_take_per_replicate_scalars():
    """A (K, 1) tensor lr / weight decay / alpha gives, row by row, the step of the scalar values (every rule)."""
    import torch

    from lptheory import optimizers as O
    from lptheory.fast import engine

    g = torch.Generator().manual_seed(0)
    theta, grad = (
        torch.randn(3, 7, generator=g, dtype=torch.float64),
        torch.randn(3, 7, generator=g, dtype=torch.float64),
    )
    lrs, wds, alphas = [0.1, 0.01, 0.3], [0.0, 0.1, 0.01], [0.1, 0.5, 1.0]
    for opt in (
        O.SGD(lr=0.0, weight_decay=1.0),
        O.Adam(lr=0.0, weight_decay=1.0),
        O.AdamW(lr=0.0, weight_decay=1.0),
        O.Lion(lr=0.0, weight_decay=1.0),
        O.StaceyPP(p=3.0, lr=0.0, alpha=1.0, weight_decay=1.0),
        O.StaceyP2(p=2.5, lr=0.0, alpha=1.0, weight_decay=1.0),
    ):
        col = lambda v: torch.tensor(v, dtype=torch.float64).reshape(3, 1)  # noqa: E731
        over = {"lr": col(lrs), "weight_decay": col(wds)}
        if "alpha" in {f.name for f in dataclasses.fields(opt)}:
            over["alpha"] = col(alphas)
        th = theta.clone()
        st = opt.init(th)
        old = [st[k] for k in opt.buffers]
        engine.run(opt, opt.scalars(0, **over), opt.named(th, grad.clone(), old, [th, *old]))
        for r in range(3):
            one = {k: float(v[r, 0]) for k, v in over.items()}
            ref, _ = dataclasses.replace(opt, **one).step(theta[r].clone(), grad[r].clone(), opt.init(theta[r].clone()))
            torch.testing.assert_close(th[r], ref, rtol=1e-12, atol=1e-14, msg=type(opt).__name__)


def test_holm_and_its_recheck():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    rng = np.random.default_rng(0)
    p = rng.random(9)
    adj = stats.holm(p)
    assert all(a >= b for a, b in zip(adj, p)) and max(adj) <= 1.0
    fam = [list(0.5 + 0.1 * rng.standard_normal(6)), list(0.1 * rng.standard_normal(6))]
    chk = recheck_paired_holm({"differences": fam, "index": 0, "alpha": 0.05})
    ps = [stats.paired_p(d)[1] for d in fam]
    assert chk["violated"] and chk["checks"][0]["holm"] == pytest.approx(stats.holm(ps), rel=1e-9)
    assert not recheck_paired_holm({"differences": fam, "index": 1, "alpha": 0.05})["violated"]
    with pytest.raises(ValueError, match="index"):
        recheck_paired_holm({"differences": fam, "index": 5})


def test_spaces_edges_and_sobol():
    from proofs_checks.practice.protocol import edges_of, sobol_points, space_for

    sp = space_for("stacey-pp", 0.1)
    assert sp["lr"][:2] == pytest.approx((0.01, 1.0)) and sp["weight_decay"][:2] == pytest.approx((1e-5, 0.1))
    assert set(sp) == {"lr", "weight_decay", "warmup", "alpha"} and set(space_for("adam", 1e-3)) == {
        "lr",
        "weight_decay",
        "warmup",
    }
    assert space_for("adam", 1e-3)["weight_decay"][:2] == (1e-6, 1e-1)  # coupled L2: not scaled by lr
    shifted = space_for("adamw", 0.01, {"lr": 1})
    assert shifted["lr"][:2] == pytest.approx((0.01, 1.0))  # [1e-3, 1e-1] moved up by half its width (a decade)
    mid = {"lr": 0.1, "weight_decay": 1e-3, "warmup": 0.1, "alpha": 0.03}
    assert edges_of("stacey-pp", sp, mid) == []
    assert edges_of("stacey-pp", sp, {**mid, "lr": 0.011}) == ["lr:low"]
    assert edges_of("stacey-pp", sp, {**mid, "weight_decay": 1.1e-5}) == []  # no decay is a natural end
    assert edges_of("stacey-pp", sp, {**mid, "weight_decay": 0.09}) == ["weight_decay:high"]
    pts = sobol_points(sp, 8, seed=3)
    assert pts == sobol_points(sp, 8, seed=3) and len(pts) == 8
    for p in pts:
        assert all(sp[h][0] <= p[h] <= sp[h][1] for h in sp)


class _Ctx:
    def __init__(self, **opts):
        self.seed, self.quick, self.jobs, self.options = 0, True, 1, opts
        self.say = lambda m: None

    def get(self, k, d=None):
        return self.options.get(k, d)

    def __getattr__(self, k):
        if k in self.__dict__.get("options", {}):
            return self.options[k]
        raise AttributeError(k)


@pytest.fixture
def small_budget(monkeypatch, tmp_path):
    from proofs_checks.practice import protocol

    monkeypatch.setenv("LPTHEORY_PRACTICE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(protocol.BUDGETS, "quick", protocol.Budget(points=2, tuning_seeds=2, final_seeds=3, widen=1))
    return protocol


@needs_torch
def test_run_task_records_carry_tuning_test_and_controls(small_budget):
    from proofs_checks.practice.experiments import run_task

    task = _tiny_task()
    recs = run_task(_Ctx(p=[2.0, 3.0], seeds=0, device="cpu"), task, task_ref=None)
    ids = [r.id for r in recs]
    assert "practice.outperforms.headline" in ids and "practice.outperforms.control" in ids
    assert "practice.best-p.control" in ids and ids.count("practice.best-p") == 4  # 2 variants x 2 readings
    for r in recs:
        if r.id == "practice.outperforms" or r.id == "practice.best-p":
            tun = r.data["tuning"]
            for entry in tun.values():
                assert {"space", "trials", "chosen", "at_edge", "coupling"} <= set(entry)
                assert entry["trials"] >= 2 and set(entry["chosen"]) == set(entry["space"])
            t = r.data["test"]
            assert t["correction"] == "holm" and t["family"] >= 1 and "paired t" in t["kind"]
    # the same trial budget for every optimizer (points x seeds per round; rounds may differ only by widening)
    head = next(r for r in recs if r.id == "practice.outperforms.headline")
    rounds = {k: v["rounds"] for k, v in head.data["tuning"].items()}
    for k, v in head.data["tuning"].items():
        assert v["trials"] == 2 * rounds[k]
    # p = 2: one algorithm, one comparison (no duplicate in the Holm family)
    fam = {r.data["test"]["family"] for r in recs if r.id == "practice.outperforms"}
    assert fam == {2 * 1 * 4}  # 2 metrics x 1 variant (p = 2) x 4 baselines
    # controls that can fail: the slowed AdamW is found losing, the planted best p is found
    ctl = next(r for r in recs if r.id == "practice.outperforms.control")
    assert "finds it violated" in ctl.reason
    bp = next(r for r in recs if r.id == "practice.best-p.control")
    assert "finds it violated" in bp.reason
    # the paper's cells: a task without them says so (None), and the cache makes a rerun identical
    again = run_task(_Ctx(p=[2.0, 3.0], seeds=0, device="cpu"), task, task_ref=None)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in recs]


@needs_torch
def test_no_claim_gives_comparison_only(small_budget):
    from proofs_checks.practice.experiments import run_task

    recs = run_task(_Ctx(p=[2.0], seeds=0, device="cpu"), _tiny_task(claim=None, claimed_p=None), task_ref=None)
    main = [r for r in recs if ".control" not in r.id]
    assert main and all(r.status == "not-applicable" and "no claim of the paper" in r.reason for r in main)


@needs_torch
def test_damaged_cache_entry_is_a_miss_with_a_warning(small_budget, tmp_path):
    import os

    from proofs_checks.practice.protocol import Runner, run_trials

    task = _tiny_task()
    trials = _trials()[:2]
    kw = dict(steps=24, split_seed=0, device="cpu", budget=small_budget.BUDGETS["quick"], runner=Runner())
    first = run_trials(task, trials, **kw)
    d = os.environ["LPTHEORY_PRACTICE_CACHE"]
    for f in os.listdir(d):
        with open(os.path.join(d, f), "a") as fh:
            fh.write("tampered")
    with pytest.warns(UserWarning, match="practice trial .* ignored"):
        again = run_trials(task, trials, **kw)
    assert again == first


@needs_torch
def test_task_value_errors_name_the_field():
    import torch

    from proofs_checks.practice.task import PracticeTask

    with pytest.raises(ValueError, match="PracticeTask.name"):
        PracticeTask("bad name!", lambda s: {}, lambda s: None)
    with pytest.raises(ValueError, match="PracticeTask.steps"):
        _tiny_task(steps=0)
    with pytest.raises(ValueError, match="PracticeTask.metric"):
        _tiny_task(metric=("acc", "accuracy", "up"))
    with pytest.raises(TypeError, match="PracticeTask.data"):
        PracticeTask("x", 3, lambda s: None)
    t = _tiny_task()
    no_val = dataclasses.replace(t, data=lambda s: {"train": t.data(s)["train"], "test": t.data(s)["test"]})
    with pytest.raises(ValueError, match="no 'val' split"):
        no_val.validate()
    mism = dataclasses.replace(t, data=lambda s: {**t.data(s), "val": (torch.zeros(5, 6), torch.zeros(4))})
    with pytest.raises(ValueError, match="5 inputs and 4 targets"):
        mism.validate()
    with pytest.raises(ValueError, match="no parameters"):
        dataclasses.replace(t, model=lambda s: torch.nn.ReLU()).validate()
    with pytest.raises(ValueError, match="scalar tensor"):
        dataclasses.replace(t, loss=lambda o, y: o.sum(-1)).validate()


@needs_torch
@pytest.mark.skipif(not HAS_SKLEARN, reason="needs scikit-learn")
def test_user_task_file_is_a_pack(tmp_path):
    from proofs_checks.api import load_pack

    pack = load_pack("examples/practice_wine.py")
    assert set(pack.checks) == {"wine"}
    bad = tmp_path / "bad.py"
    bad.write_text("TASK = 3\n")
    from proofs_checks.packs import PackError

    with pytest.raises(PackError, match="PracticeTask"):
        load_pack(str(bad))


@needs_torch
@pytest.mark.slow
@pytest.mark.skipif(not HAS_SKLEARN or importlib.util.find_spec("distributed") is None, reason="needs the extras")
def test_dask_workers_give_the_same_records(monkeypatch, tmp_path):
    """The wine example's records on a LocalCluster of 2 workers equal those trained in this process (fresh caches)."""
    from proofs_checks.api import load_pack
    from proofs_checks.practice import protocol
    from proofs_checks.practice.experiments import run_task

    monkeypatch.setitem(protocol.BUDGETS, "quick", protocol.Budget(points=2, tuning_seeds=2, final_seeds=3, widen=0))
    pack = load_pack("examples/practice_wine.py")
    import os

    from proofs_checks.practice.task_ref import resolve

    ref = f"{os.path.abspath('examples/practice_wine.py')}:wine"
    task = resolve(ref)
    out = {}
    for workers in (0, 2):
        monkeypatch.setenv("LPTHEORY_PRACTICE_CACHE", str(tmp_path / f"cache{workers}"))
        recs = run_task(_Ctx(p=[2.0], seeds=0, device="cpu", workers=workers), task, task_ref=ref)
        out[workers] = [r.to_dict() for r in recs]
    assert out[0] == out[2] and set(pack.checks) == {"wine"}


@needs_torch
@pytest.mark.gpu
def test_stacked_on_cuda_matches_cpu():
    """``--set device=cuda``: the same trials on the GPU give the CPU's curves to float32 rounding (1e-3 relative:
    other kernels, other summation orders) and the same record structure."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from proofs_checks.practice.stacked import train_stacked

    task = _tiny_task()
    trials = _trials()
    cpu = train_stacked(task, task.splits(0), trials, steps=24, evals=3)
    gpu = train_stacked(task, task.splits(0, "cuda"), trials, steps=24, evals=3, device="cuda")
    for a, b in zip(cpu, gpu):
        assert a["curve"].keys() == b["curve"].keys()
        np.testing.assert_allclose(a["curve"]["val_loss"], b["curve"]["val_loss"], rtol=1e-3)


def test_spare_tokens_take_only_free_ones():
    """A check's own pool takes only the budget's free tokens (no more busy processes than --jobs)."""
    from proofs_checks import pools

    with pools.spare_tokens(3) as n:
        assert n == 3  # no budget: as many as asked
    if pools.fork_context() is None:
        pytest.skip("no fork start method")
    with pools.process_budget(2):
        with pools.holding():  # this check's own token
            with pools.spare_tokens(3) as n:
                assert n == 1
                with pools.spare_tokens(3) as m:
                    assert m == 0
            with pools.spare_tokens(1) as n:
                assert n == 1  # released again
