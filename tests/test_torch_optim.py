"""lptheory.torch: torch.optim wrappers over the shared update rules."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lptheory import optimizers as core  # noqa: E402
from lptheory.torch import LpDescent, StaceyP2, StaceyPP  # noqa: E402


@pytest.fixture(autouse=True)
def _multi_tensor_on_cpu(monkeypatch):
    """Run foreach=True through the multi-tensor namespace on CPU too (by default CPU takes the per-tensor
    primitives, see lptheory.torch._multi_tensor), and the eager per-tensor path through torch's operations
    (by default CPU runs it on the numba engine, tested in test_cpu_default_path_*), so that these tests
    exercise the paths other devices take."""
    import lptheory.torch as lt

    monkeypatch.setattr(lt, "_FOREACH_ON_CPU", True)
    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", False)


HYPER = dict(lr=0.05, p=3.0, alpha=0.02, tau=0.1, betas=(0.8, 0.95), eps=1e-8, weight_decay=0.01)


def _grads(n, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(n)]


@pytest.mark.parametrize("cls,core_cls", [(StaceyP2, core.StaceyP2), (StaceyPP, core.StaceyPP)])
@pytest.mark.parametrize("eps_mode", ["paper", "official"])
def test_matches_the_core_rule(cls, core_cls, eps_mode):
    w = torch.nn.Parameter(torch.randn(3, 5, dtype=torch.float64))
    opt = cls([w], **HYPER, eps_mode=eps_mode)
    ref = core_cls(
        p=3.0, lr=0.05, alpha=0.02, tau=0.1, beta1=0.8, beta2=0.95, eps=1e-8, weight_decay=0.01, eps_mode=eps_mode
    )
    theta = w.detach().numpy().copy()
    st = ref.init(theta)
    for g in _grads(6, (3, 5)):
        w.grad = g.clone()
        opt.step()
        theta, st = ref.step(theta, g.numpy(), st)
        np.testing.assert_allclose(w.detach().numpy(), theta, rtol=1e-12, atol=1e-14)
    key = core_cls.buffers[0]  # "z" (StaceyP2) or "w" (StaceyPP's dual state)
    np.testing.assert_allclose(opt.state[w][key].numpy(), st[key], rtol=1e-12, atol=1e-14)
    assert opt.state[w]["step"] == 6


def test_lp_descent_matches_core():
    w = torch.nn.Parameter(torch.randn(7, dtype=torch.float64))
    opt = LpDescent([w], lr=0.1, p=4.0)
    theta = w.detach().numpy().copy()
    ref = core.LpDescent(p=4.0, lr=0.1)
    st = ref.init(theta)
    for g in _grads(3, (7,)):
        w.grad = g
        opt.step()
        theta, st = ref.step(theta, g.numpy(), st)
    np.testing.assert_allclose(w.detach().numpy(), theta, rtol=1e-13)


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def _train(model, opt, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(16, 6, generator=g)

        def closure(x=x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            return loss

        loss = opt.step(closure)
        assert isinstance(loss, torch.Tensor)
    return [q.detach().clone() for q in model.parameters()]


def test_state_dict_round_trip_resumes_bit_identically():
    m1 = _model()
    o1 = StaceyPP(m1.parameters(), **HYPER)
    _train(m1, o1, 5)
    m2 = copy.deepcopy(m1)
    o2 = StaceyPP(m2.parameters(), **HYPER)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))
    a = _train(m1, o1, 5, seed=7)
    b = _train(m2, o2, 5, seed=7)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    sd = o1.state_dict()["state"]
    assert all({"w", "m", "step"} == set(v) for v in sd.values())
    assert o1.state_dict()["lptheory"] == {"optimizer": "StaceyPP", "state_layout": 2}


def test_deepcopy_and_add_param_group():
    m = _model()
    o = StaceyP2(m.parameters(), **HYPER)
    _train(m, o, 2)
    m2 = copy.deepcopy(m)
    o2 = copy.deepcopy(o)
    assert len(o2.state) == len(o.state)
    extra = torch.nn.Parameter(torch.ones(3))
    o.add_param_group({"params": [extra], "lr": 0.01})
    extra.grad = torch.full((3,), 0.5)
    o.step()
    assert o.state[extra]["step"] == 1 and not torch.equal(extra.detach(), torch.ones(3))
    del m2, o2


def test_grad_none_is_skipped_and_scheduler_changes_lr():
    a = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    b = torch.nn.Parameter(torch.ones(4, dtype=torch.float64))
    opt = StaceyPP([a, b], **HYPER)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    a.grad = torch.full((4,), 2.0, dtype=torch.float64)
    opt.step()
    sched.step()
    assert torch.equal(b.detach(), torch.ones(4, dtype=torch.float64)) and len(opt.state[b]) == 0
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)
    # the second step uses lr = 0.025: compare with the core rule
    ref = core.StaceyPP(p=3.0, lr=0.05, alpha=0.02, tau=0.1, beta1=0.8, beta2=0.95, eps=1e-8, weight_decay=0.01)
    theta = np.ones(4)
    st = ref.init(theta)
    theta, st = ref.step(theta, np.full(4, 2.0), st)
    ref2 = core.StaceyPP(p=3.0, lr=0.025, alpha=0.02, tau=0.1, beta1=0.8, beta2=0.95, eps=1e-8, weight_decay=0.01)
    theta, st = ref2.step(theta, np.full(4, -1.0), st)
    a.grad = torch.full((4,), -1.0, dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), theta, rtol=1e-13)


def test_maximize_equals_negated_gradient():
    a = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    b = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    oa = StaceyP2([a], **HYPER, maximize=True)
    ob = StaceyP2([b], **HYPER)
    for g in _grads(3, (5,)):
        a.grad, b.grad = g.clone(), -g
        oa.step()
        ob.step()
    assert torch.equal(a, b)


def test_bfloat16_parameters_update_in_float32():
    w16 = torch.nn.Parameter(torch.randn(64).to(torch.bfloat16))
    w32 = torch.nn.Parameter(w16.detach().float().clone())
    o16 = StaceyPP([w16], **HYPER)
    o32 = StaceyPP([w32], **HYPER)
    g = torch.randn(64)
    w16.grad, w32.grad = g.to(torch.bfloat16), g.to(torch.bfloat16).float()
    o16.step()
    o32.step()
    assert w16.dtype == torch.bfloat16 and o16.state[w16]["w"].dtype == torch.float32
    assert torch.equal(w16.detach(), w32.detach().to(torch.bfloat16))


def test_bad_hyperparameters_raise():
    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="tau"):
        StaceyPP([w], tau=2.0)
    with pytest.raises(ValueError, match="betas"):
        StaceyPP([w], betas=0.9)


def test_lion_matches_core():
    from lptheory.torch import Lion

    w = torch.nn.Parameter(torch.randn(6, dtype=torch.float64))
    opt = Lion([w], lr=0.01, betas=(0.9, 0.99), weight_decay=0.1)
    ref = core.Lion(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1)
    theta = w.detach().numpy().copy()
    st = ref.init(theta)
    for g in _grads(4, (6,)):
        w.grad = g
        opt.step()
        theta, st = ref.step(theta, g.numpy(), st)
    np.testing.assert_allclose(w.detach().numpy(), theta, rtol=1e-13)


@pytest.mark.slow
def test_example_script_runs(tmp_path, capsys):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_mlp.py"
    spec = importlib.util.spec_from_file_location("train_mlp", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--steps", "15", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert all(n in out for n in ("stacey-pp", "stacey-p2", "adamw", "lion"))
    assert (tmp_path / "losses.png").exists()


# ------------------------------------------------------------------------------------------------
# execution paths: single-tensor, multi-tensor (foreach) and compiled must agree
# ------------------------------------------------------------------------------------------------
def _run_path(cls, kw, path, dtype, steps=5, lrs=None):
    """Three parameters of different shapes; the second has no grad at step 1 (so its step count lags and
    the foreach path must bucket by step); a second param group with its own lr; lr edited between steps."""
    g = torch.Generator().manual_seed(3)
    shapes = [(5, 3), (7,), (2, 2, 2)]
    ps = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype)) for s in shapes]
    extra = torch.nn.Parameter(torch.randn(4, generator=g, dtype=dtype))
    flags = {
        "single": dict(foreach=False),
        "foreach": dict(foreach=True),
        "compiled": dict(compiled=True),
        "fused": dict(fused=True),
    }[path]
    opt = cls([{"params": ps}, {"params": [extra], "lr": 0.003}], lr=0.01, **kw, **flags)
    for it in range(steps):
        for i, p in enumerate([*ps, extra]):
            p.grad = None if (it == 1 and i == 1) else torch.randn(p.shape, generator=g, dtype=dtype)
        if lrs is not None:
            opt.param_groups[0]["lr"] = lrs[it]
        opt.step()
    return [p.detach().clone() for p in [*ps, extra]], opt


PATH_CASES = [
    (StaceyPP, dict(p=3.0)),
    (StaceyPP, dict(p=2.7, eps_mode="official", weight_decay=0.1)),
    (StaceyPP, dict(p=2.0)),
    (StaceyP2, dict(p=4.0, weight_decay=0.1, alpha=0.05, tau=0.2)),
    (StaceyP2, dict(p=float("inf"))),
    (StaceyP2, dict(p=2.5, eps=0.0)),
    (LpDescent, dict(p=3.0)),
    (LpDescent, dict(p=float("inf"))),
]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("cls,kw", PATH_CASES)
def test_foreach_path_is_bit_identical_to_single_tensor_path(cls, kw, dtype):
    lrs = [0.01, 0.02, 0.005, 0.01, 0.001]
    a, oa = _run_path(cls, kw, "single", dtype, lrs=lrs)
    b, ob = _run_path(cls, kw, "foreach", dtype, lrs=lrs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    for pa, pb in zip(oa.state.values(), ob.state.values()):
        assert pa["step"] == pb["step"]
        assert all(torch.equal(pa[k], pb[k]) for k in pa if k != "step")
    assert [s["step"] for s in ob.state.values()] == [5, 4, 5, 5]


def test_foreach_path_lion_and_low_precision():
    from lptheory.torch import Lion

    a, _ = _run_path(Lion, dict(weight_decay=0.1), "single", torch.float32)
    b, _ = _run_path(Lion, dict(weight_decay=0.1), "foreach", torch.float32)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    w = [torch.nn.Parameter(torch.randn(9).to(torch.bfloat16)) for _ in range(2)]
    v = [torch.nn.Parameter(x.detach().clone()) for x in w]
    o1, o2 = StaceyPP(w, **HYPER, foreach=True), StaceyPP(v, **HYPER, foreach=False)
    for x, y in zip(w, v):
        x.grad = torch.randn(9).to(torch.bfloat16)
        y.grad = x.grad.clone()
    o1.step()
    o2.step()
    assert all(torch.equal(x, y) and x.dtype == torch.bfloat16 for x, y in zip(w, v))
    assert o1.state[w[0]]["w"].dtype == torch.float32


def test_planted_foreach_bug_is_caught(monkeypatch):
    """A foreach namespace whose divide swaps its operands, or whose combine ignores ``sub``, must break
    the agreement."""
    from lptheory.fast import foreach as _foreach

    def wrong_divide(self, a, b, out):
        if isinstance(b, _foreach.TensorList):
            a, b = b, a
        return self._binary("div", a, b, out, False)

    real_combine = _foreach.ForeachNamespace.combine
    a, _ = _run_path(StaceyPP, dict(p=3.5), "single", torch.float64)
    for name, planted in [
        ("divide", wrong_divide),
        ("combine", lambda self, x, al, y, be, out, sub: real_combine(self, x, al, y, be, out, False)),
    ]:
        with monkeypatch.context() as mp:
            mp.setattr(_foreach.ForeachNamespace, name, planted)
            b, _ = _run_path(StaceyPP, dict(p=3.5), "foreach", torch.float64)
        assert not all(torch.equal(x, y) for x, y in zip(a, b)), name


def test_foreach_default_follows_torch_convention(monkeypatch):
    """foreach=None: multi-tensor only when the group's parameters are on CUDA (as torch.optim does)."""
    import lptheory.torch as lt

    calls = []
    real = lt.apply_foreach
    monkeypatch.setattr(lt, "apply_foreach", lambda *a, **k: (calls.append(1), real(*a, **k)))
    _run_path(StaceyPP, dict(p=3.0), "single", torch.float64, steps=1)
    assert calls == []
    w = torch.nn.Parameter(torch.ones(3))
    w.grad = torch.ones(3)
    StaceyPP([w], foreach=None).step()
    assert calls == []
    StaceyPP([w], foreach=True).step()
    assert calls == [1]
    monkeypatch.setattr(lt, "_FOREACH_ON_CPU", False)  # the default: CPU runs the per-tensor primitives
    StaceyPP([w], foreach=True).step()
    assert calls == [1]


def test_path_flags_are_validated():
    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="foreach=True and compiled=True"):
        StaceyPP([w], foreach=True, compiled=True)
    with pytest.raises(ValueError, match="foreach=True and fused=True"):
        StaceyPP([w], foreach=True, fused=True)
    with pytest.raises(TypeError, match="fused"):
        StaceyPP([w], fused="yes")
    with pytest.raises(TypeError, match="foreach"):
        StaceyPP([w], foreach="yes")
    with pytest.raises(TypeError, match="compiled"):
        LpDescent([w], compiled=1)


def test_official_mode_matches_the_published_update():
    """eps_mode="official" with the authors' initialization (z_0 = theta_0, m_0 = 0) reproduces their
    update (reference/official-code.md items 1-4), transcribed plainly in tests/transcriptions.py."""
    from tests import transcriptions as tr

    hp = dict(p=3.0, eta=0.05, alpha=0.02, tau=0.1, beta1=0.8, beta2=0.95, eps=1e-8, lam=0.01)
    for cls, variant in [(StaceyP2, "p2"), (StaceyPP, "pp")]:
        for path in ("single", "foreach"):
            w = torch.nn.Parameter(torch.randn(11, dtype=torch.float64, generator=torch.Generator().manual_seed(5)))
            theta = w.detach().numpy().copy()
            z, m = theta.copy(), np.zeros_like(theta)
            opt = cls([w], **HYPER, eps_mode="official", z_init="params", foreach=path == "foreach")
            for g in _grads(4, (11,)):
                w.grad = g
                opt.step()
                theta, z, m = tr.stacey(theta, g.numpy(), z, m, **hp, variant=variant, mode="official")
            np.testing.assert_allclose(w.detach().numpy(), theta, rtol=1e-12, atol=1e-15)
            zt = opt._core_for(opt.param_groups[0]).z_of(opt.state[w]).numpy()
            np.testing.assert_allclose(zt, z, rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_compiled_path_matches_and_lr_changes_do_not_recompile():
    """compiled=True (torch.compile/inductor) gives the eager results; changing lr (an LR schedule) and
    parameter shapes reuses the compiled kernel."""
    pytest.importorskip("torch._inductor")
    from torch._dynamo.utils import counters

    lrs = [0.01, 0.02, 0.005, 0.01, 0.001]
    for dtype, tol in [(torch.float64, 1e-12), (torch.float32, 1e-5)]:
        a, oa = _run_path(StaceyPP, dict(p=2.7, eps_mode="official"), "single", dtype, lrs=lrs)
        before = counters["stats"]["unique_graphs"]
        b, ob = _run_path(StaceyPP, dict(p=2.7, eps_mode="official"), "compiled", dtype, steps=1, lrs=lrs)
        compiled_once = counters["stats"]["unique_graphs"] - before
        b, ob = _run_path(StaceyPP, dict(p=2.7, eps_mode="official"), "compiled", dtype, lrs=lrs)
        assert counters["stats"]["unique_graphs"] - before == compiled_once <= 2
        for x, y in zip(a, b):
            np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=tol, atol=tol)
        for pa, pb in zip(oa.state.values(), ob.state.values()):
            np.testing.assert_allclose(pb["w"].numpy(), pa["w"].numpy(), rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["single", "foreach", "compiled"])
def test_cuda_paths_match_cpu(path):
    """On CUDA, every path gives the CPU single-tensor iterates (float64, 1e-12)."""
    ref, _ = _run_path(StaceyPP, dict(p=3.0), "single", torch.float64)
    flags = {"single": dict(foreach=False), "foreach": dict(foreach=True), "compiled": dict(compiled=True)}[path]
    g = torch.Generator().manual_seed(3)
    shapes = [(5, 3), (7,), (2, 2, 2)]
    ps = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=torch.float64).cuda()) for s in shapes]
    extra = torch.nn.Parameter(torch.randn(4, generator=g, dtype=torch.float64).cuda())
    opt = StaceyPP([{"params": ps}, {"params": [extra], "lr": 0.003}], lr=0.01, p=3.0, **flags)
    for it in range(5):
        for i, p in enumerate([*ps, extra]):
            p.grad = None if (it == 1 and i == 1) else torch.randn(p.shape, generator=g, dtype=torch.float64).cuda()
        opt.step()
    for x, y in zip(ref, [*ps, extra]):
        np.testing.assert_allclose(y.detach().cpu().numpy(), x.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_compiled_path_handles_non_contiguous_parameters():
    pytest.importorskip("torch._inductor")
    base = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    res = []
    for flags in (dict(foreach=False), dict(compiled=True)):
        w = torch.nn.Parameter(base.clone().t())  # a transposed, non-contiguous parameter
        v = torch.nn.Parameter(base[0].clone())
        assert not w.is_contiguous()
        opt = StaceyPP([w, v], lr=0.01, p=2.7, eps_mode="official", **flags)
        for g in _grads(3, (3, 4), seed=4):
            w.grad, v.grad = g.clone(), g[:, 0].clone()
            opt.step()
        res.append((w.detach().clone(), v.detach().clone()))
    for a, b in zip(*res):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-14)


def test_loading_another_optimizers_state_dict_fails_at_load_time():
    m = _model()
    adam = torch.optim.AdamW(m.parameters(), lr=1e-3)
    _train(m, adam, 2)
    opt = StaceyPP(m.parameters(), **HYPER)
    with pytest.raises(ValueError, match="param group 0 lacks .*another optimizer"):
        opt.load_state_dict(adam.state_dict())


def test_loading_an_older_state_dict_and_one_with_tensor_steps():
    m1 = _model()
    o1 = StaceyPP(m1.parameters(), **HYPER)
    _train(m1, o1, 3)
    sd = copy.deepcopy(o1.state_dict())
    for g in sd["param_groups"]:  # saved before the execution-path options existed
        g.pop("foreach")
        g.pop("compiled")
    for st in sd["state"].values():
        st["step"] = torch.tensor(float(st["step"]))
    m2 = copy.deepcopy(m1)
    o2 = StaceyPP(m2.parameters(), **HYPER)
    o2.load_state_dict(sd)
    assert all(isinstance(s["step"], int) for s in o2.state.values())
    a, b = _train(m1, o1, 2, seed=9), _train(m2, o2, 2, seed=9)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_tensor_lr_is_accepted():
    w1 = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    w2 = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    a = StaceyPP([w1], **{**HYPER, "lr": torch.tensor(0.05, dtype=torch.float64)})
    b = StaceyPP([w2], **HYPER)
    for _ in range(3):
        w1.grad = torch.full((5,), 0.3, dtype=torch.float64)
        w2.grad = w1.grad.clone()
        a.step()
        b.step()
    assert torch.equal(w1.detach(), w2.detach())


def test_step_hooks_run_around_each_step():
    w = torch.nn.Parameter(torch.ones(3))
    opt = StaceyP2([w], **HYPER)
    seen = []
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append("post"))
    w.grad = torch.ones(3)
    opt.step()
    assert seen == ["pre", "post"]


@pytest.mark.parametrize("cls", [StaceyP2, StaceyPP, LpDescent])
def test_zero_gradient_step_is_finite_and_matches_the_core(cls):
    w = torch.nn.Parameter(torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64))
    kw = {"lr": 0.1, "p": 3.0} if cls is LpDescent else HYPER
    opt = cls([w], **kw)
    w.grad = torch.zeros(3, dtype=torch.float64)
    opt.step()
    assert torch.isfinite(w).all()
    if cls is LpDescent:
        assert torch.equal(w.detach(), torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64))


def test_param_groups_behave_as_separate_optimizers():
    torch.manual_seed(0)
    a, b = (
        torch.nn.Parameter(torch.randn(4, dtype=torch.float64)),
        torch.nn.Parameter(torch.randn(6, dtype=torch.float64)),
    )
    a2, b2 = torch.nn.Parameter(a.detach().clone()), torch.nn.Parameter(b.detach().clone())
    joint = StaceyPP(
        [{"params": [a], "lr": 0.05, "p": 3.0}, {"params": [b], "lr": 0.01, "p": 4.0}],
        **{k: v for k, v in HYPER.items() if k not in ("lr", "p")},
    )
    sa = StaceyPP([a2], **{**HYPER, "lr": 0.05, "p": 3.0})
    sb = StaceyPP([b2], **{**HYPER, "lr": 0.01, "p": 4.0})
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        ga, gb = torch.randn(4, generator=g, dtype=torch.float64), torch.randn(6, generator=g, dtype=torch.float64)
        a.grad, b.grad, a2.grad, b2.grad = ga, gb, ga.clone(), gb.clone()
        joint.step()
        sa.step()
        sb.step()
    assert torch.equal(a.detach(), a2.detach()) and torch.equal(b.detach(), b2.detach())


# ------------------------------------------------------------------------------------------------
# fused=True: one compiled call per (device, dtype) bucket over flat buffers
# ------------------------------------------------------------------------------------------------
_SLOW = pytest.mark.slow  # each case compiles its own inductor kernels (1-3 s cold): one per class in the default run
FUSED_CASES = [
    (StaceyPP, dict(p=3.0)),
    pytest.param(StaceyPP, dict(p=3.0, eps_mode="official"), marks=_SLOW),
    pytest.param(StaceyPP, dict(p=2.7, eps_mode="official", weight_decay=0.1), marks=_SLOW),
    pytest.param(StaceyPP, dict(p=2.7, eps=0.0), marks=_SLOW),
    (StaceyP2, dict(p=4.0, weight_decay=0.1, alpha=0.05, tau=0.2)),
    pytest.param(StaceyP2, dict(p=float("inf"), eps_mode="official"), marks=_SLOW),
    (LpDescent, dict(p=3.0)),
    pytest.param(LpDescent, dict(p=float("inf")), marks=_SLOW),
]


def _fused_dtype_cases() -> list:
    """FUSED_CASES in float64 and float32 (each dtype compiles its own inductor graph, ~2 s cold): float32 with
    the slow tests except for the first case (its float32 graph keeps the tolerance path in the default run)."""
    out = []
    for i, case in enumerate(FUSED_CASES):
        values, marks = (case.values, list(case.marks)) if hasattr(case, "values") else (case, [])
        for name, dtype, tol in (("float64", torch.float64, 1e-12), ("float32", torch.float32, 5e-6)):
            slow = [_SLOW] if name == "float32" and i > 0 and not marks else []
            out.append(pytest.param(*values, dtype, tol, marks=marks + slow, id=f"{values[0].__name__}-kw{i}-{name}"))
    return out


@pytest.mark.parametrize("cls,kw,dtype,tol", _fused_dtype_cases())
def test_fused_path_matches_single_tensor(cls, kw, dtype, tol):
    """Iterates and state of fused=True against the single-tensor path: 1e-12 in float64; in float32 5e-6
    relative (inductor may contract or reorder operations; the rule is the same). The run has a second
    param group, an lr edited between steps and a parameter without grad at one step (its bucket then
    takes the per-parameter compiled call)."""
    pytest.importorskip("torch._inductor")
    lrs = [0.01, 0.02, 0.005, 0.01, 0.001]
    a, oa = _run_path(cls, kw, "single", dtype, lrs=lrs)
    b, ob = _run_path(cls, kw, "fused", dtype, lrs=lrs)
    for x, y in zip(a, b):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=tol, atol=tol)
    for pa, pb in zip(oa.state.values(), ob.state.values()):
        assert pa["step"] == pb["step"]
        for k in pa:
            if k != "step":
                np.testing.assert_allclose(pb[k].numpy(), pa[k].numpy(), rtol=tol, atol=tol)


def test_fused_lion_maximize_and_low_precision():
    pytest.importorskip("torch._inductor")
    from lptheory.torch import Lion

    a, _ = _run_path(Lion, dict(weight_decay=0.1), "single", torch.float64)
    b, _ = _run_path(Lion, dict(weight_decay=0.1), "fused", torch.float64)
    assert all(torch.allclose(x, y, rtol=1e-12, atol=1e-14) for x, y in zip(a, b))
    res = []
    for flags in (dict(foreach=False), dict(fused=True)):
        w = torch.nn.Parameter(torch.linspace(-1, 1, 9, dtype=torch.float64))
        v = torch.nn.Parameter(torch.linspace(-1, 1, 9).to(torch.bfloat16))
        opt = StaceyPP([w, v], **HYPER, maximize=True, **flags)
        for g in _grads(3, (9,), seed=2):
            w.grad, v.grad = g.clone(), g.to(torch.bfloat16)
            opt.step()
        assert v.dtype == torch.bfloat16 and opt.state[v]["w"].dtype == torch.float32
        res.append((w.detach().clone(), v.detach().clone()))
    np.testing.assert_allclose(res[1][0].numpy(), res[0][0].numpy(), rtol=1e-12, atol=1e-14)
    assert torch.equal(res[1][1], res[0][1])  # bf16: the per-parameter compiled update, rounded the same


def test_fused_parameters_live_in_one_flat_buffer_and_gradients_can_accumulate_there():
    pytest.importorskip("torch._inductor")
    m = _model()
    opt = StaceyPP(m.parameters(), **HYPER, fused=True)
    _train(m, opt, 1)  # the step that lays the bucket out makes each p.grad a view of the flat gradient
    (flat,) = opt._flat.values()
    base, end = flat.theta.data_ptr(), flat.theta.data_ptr() + flat.theta.numel() * flat.theta.element_size()
    assert all(base <= p.data_ptr() < end for p in m.parameters())
    assert all(p.grad.data_ptr() == v.data_ptr() for p, v in zip(m.parameters(), flat.grad_views))
    # zero_grad(set_to_none=False) keeps the views: backward accumulates into the flat gradient directly
    for _ in range(2):
        opt.zero_grad(set_to_none=False)
        m(torch.randn(5, 6)).square().mean().backward()
        assert all(p.grad.data_ptr() == v.data_ptr() for p, v in zip(m.parameters(), flat.grad_views))
        opt.step()
    assert opt._flat[next(iter(opt._flat))] is flat  # no rebuild
    # new gradient tensors (zero_grad() sets them to None) are read where they are: p.grad is left alone
    opt.zero_grad()
    m(torch.randn(5, 6)).square().mean().backward()
    grads = [p.grad for p in m.parameters()]
    opt.step()
    assert all(p.grad is g for p, g in zip(m.parameters(), grads))
    assert opt._flat[next(iter(opt._flat))] is flat


def test_fused_state_dict_resume_deepcopy_and_add_param_group():
    """A run resumed from a state dict continues bit-identically; a deepcopy continues as the original;
    a parameter group added later is laid out on its own."""
    pytest.importorskip("torch._inductor")
    m1 = _model()
    o1 = StaceyPP(m1.parameters(), **HYPER, fused=True)
    _train(m1, o1, 3)
    m2 = copy.deepcopy(m1)
    o2 = StaceyPP(m2.parameters(), **HYPER, fused=True)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))
    m3, o3 = copy.deepcopy((m1, o1))
    a, b, c = _train(m1, o1, 3, seed=7), _train(m2, o2, 3, seed=7), _train(m3, o3, 3, seed=7)
    assert all(torch.equal(x, y) and torch.equal(x, z) for x, y, z in zip(a, b, c))
    extra = torch.nn.Parameter(torch.randn(3, dtype=torch.float32))
    o1.add_param_group({"params": [extra], "lr": 0.01})
    extra.grad = torch.ones(3)
    for p in m1.parameters():
        p.grad = torch.ones_like(p)
    o1.step()
    assert o1.state[extra]["step"] == 1 and len(o1._flat) == 2


@pytest.mark.parametrize("engine", ["numba", "inductor"])
def test_fused_lr_changes_and_new_shapes_do_not_recompile(engine, monkeypatch):
    """The fused call takes flat buffers of any size and lr as an argument: an LR schedule and a second
    model with other shapes reuse what the first step compiled: the numba kernel on CPU (lptheory.fast.fused),
    or the inductor graph (the path of other devices, forced here on CPU)."""
    import lptheory.torch as lt
    from lptheory.fast import fused as _fused

    if engine == "numba":
        if not _fused.available():
            pytest.skip("numba not installed")
        count = lambda: sum(len(v) for v in _fused._KERNELS.values())  # noqa: E731
    else:
        pytest.importorskip("torch._inductor")
        from torch._dynamo.utils import counters

        monkeypatch.setattr(lt, "_numba_engine", lambda: False)
        count = lambda: counters["stats"]["unique_graphs"]  # noqa: E731
    m = _model()
    opt = StaceyPP(m.parameters(), **HYPER, fused=True)
    before_first = count()
    _train(m, opt, 1)
    assert count() > before_first or engine == "numba"  # (a numba kernel may already exist from other tests)
    before = count()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        _train(m, opt, 1)
        sched.step()
    wide = torch.nn.Sequential(torch.nn.Linear(6, 33), torch.nn.Tanh(), torch.nn.Linear(33, 1))
    _train(wide, StaceyPP(wide.parameters(), **HYPER, fused=True), 2)
    assert count() == before


def _plan_scenario(planned: bool, monkeypatch):
    """A fused=True run through the events that must invalidate the cached plan of a param group; with
    ``planned=False`` every step takes the full path (the plan is never used)."""
    import lptheory.torch as lt

    if not planned:
        monkeypatch.setattr(lt._Base, "_step_planned", lambda self, group: False)
    m = _model()
    opt = StaceyPP(m.parameters(), **HYPER, fused=True)
    ps = list(m.parameters())
    used = []
    real_full = lt._Base._step_group
    monkeypatch.setattr(lt._Base, "_step_group", lambda self, group: (used.append("full"), real_full(self, group)))
    g = torch.Generator().manual_seed(5)

    def grads(set_to_none=True):
        opt.zero_grad(set_to_none=set_to_none)
        m(torch.randn(16, 6, generator=g)).square().mean().backward()

    def step(event=None):
        used.clear()
        opt.step()
        return used == []  # True: the planned step ran

    grads()
    out = [step()]  # lays out the flat buffers and builds the plan
    grads()
    out.append(step())  # new gradient tensors: copied into the flat gradient
    grads(set_to_none=False)
    out.append(step())  # gradients accumulated into the flat gradient's views
    ps[1].data = ps[1].data.clone()  # the parameter's memory moved: rebuilt
    grads()
    out.append(step())
    grads()
    out.append(step())
    st = opt.state[ps[2]]
    st["m"] = st["m"].clone()  # a state tensor replaced
    grads()
    out.append(step())
    opt.param_groups[0]["lr"] = 0.01  # an lr change: the plan holds
    grads()
    out.append(step())
    opt.param_groups[0]["maximize"] = True
    grads()
    out.append(step())
    opt.param_groups[0]["maximize"] = False
    grads()
    out.append(step())
    sd = copy.deepcopy(opt.state_dict())
    opt.load_state_dict(sd)  # new state tensors and param groups
    grads()
    out.append(step())
    grads()
    out.append(step())
    ps[3].grad = ps[3].grad.to(torch.float64).to(torch.float32)  # a new dense gradient tensor: copied
    out.append(step())
    grads()
    ps[0].grad = None
    out.append(step())  # a parameter without gradient: the full path (its step count lags from now on)
    grads()
    out.append(step())
    state = [{k: v.clone() for k, v in opt.state[p].items() if k != "step"} for p in ps]
    return out, [p.detach().clone() for p in ps], state, [opt.state[p]["step"] for p in ps]


def test_fused_cached_plan_gives_the_full_paths_bits_and_is_invalidated(monkeypatch):
    """fused=True on CPU (numba): after the step that laid a param group out, steps run a cached plan (one
    kernel call, identity checks). Each event that moves memory or changes what the group holds (a missing
    gradient, a moved parameter, a replaced state tensor, maximize, load_state_dict) takes the full path,
    which rebuilds the plan; iterates, states and step counts are bit for bit those of a run without plans."""
    from lptheory.fast import fused as _fused

    if not _fused.available():
        pytest.skip("numba not installed")
    with monkeypatch.context() as mp:
        used, a, sa, ta = _plan_scenario(True, mp)
    with monkeypatch.context() as mp:
        _, b, sb, tb = _plan_scenario(False, mp)
    expected = [False, True, True, False, True, False, True, False, False, False, True, True, False, False]
    assert used == expected
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert all(torch.equal(x[k], y[k]) for x, y in zip(sa, sb) for k in x)
    assert ta == tb == [13, 14, 14, 14]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_buckets_that_cannot_be_flat_take_the_numba_kernels_on_cpu(dtype, monkeypatch):
    """On CPU with numba, a fused bucket that cannot be flat (a parameter without gradient at one step: its
    step count lags from then on, so the group splits into two buckets) runs the per-parameter numba
    kernels of the default path, never torch.compile: the default path's bits."""
    from lptheory.fast import fused as _fused

    if not _fused.available():
        pytest.skip("numba not installed")
    import lptheory.torch as lt

    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)

    def no_compile(core):
        raise AssertionError("torch.compile reached")

    monkeypatch.setattr(lt, "_compiled_rule", no_compile)
    lrs = [0.01, 0.02, 0.005, 0.01, 0.001]
    kw = dict(p=2.7, eps_mode="official", weight_decay=0.1)
    a, oa = _run_path(StaceyPP, kw, "single", dtype, lrs=lrs)
    b, ob = _run_path(StaceyPP, kw, "fused", dtype, lrs=lrs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert [s["step"] for s in ob.state.values()] == [5, 4, 5, 5]
    for pa, pb in zip(oa.state.values(), ob.state.values()):
        assert all(torch.equal(pa[k], pb[k]) for k in ("w", "m"))


def test_fused_inductor_path_matches_single_tensor(monkeypatch):
    """The inductor flat path (other devices than CPU; forced here): 1e-12 against the single-tensor path."""
    pytest.importorskip("torch._inductor")
    import lptheory.torch as lt

    monkeypatch.setattr(lt, "_numba_engine", lambda: False)
    a, _ = _run_path(StaceyPP, dict(p=2.7, eps_mode="official"), "single", torch.float64)
    b, _ = _run_path(StaceyPP, dict(p=2.7, eps_mode="official"), "fused", torch.float64)
    for x, y in zip(a, b):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls,kw", FUSED_CASES)
def test_cpu_default_path_runs_the_numba_engine_with_the_fused_bits(cls, kw, monkeypatch):
    """The CPU default (eager) path: each parameter through the numba engine on the tensor's memory. It gives
    the fused path's bits exactly (the same kernels, per tensor instead of per flat bucket), and the torch
    operations' iterates (the path other devices take) to 1e-12 in float64 and 5e-6 in float32."""
    pytest.importorskip("numba")
    import lptheory.torch as lt

    lrs = [0.01, 0.02, 0.005, 0.01, 0.001]
    for dtype, tol in [(torch.float64, 1e-12), (torch.float32, 5e-6)]:
        monkeypatch.setattr(lt, "_NUMBA_ON_CPU", False)
        ops, _ = _run_path(cls, kw, "single", dtype, lrs=lrs)
        monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)
        calls = []
        real = lt._engine.run
        monkeypatch.setattr(lt._engine, "run", lambda *a, _c=calls, _r=real, **k: (_c.append(1), _r(*a, **k))[1])
        a, _ = _run_path(cls, kw, "single", dtype, lrs=lrs)
        monkeypatch.setattr(lt._engine, "run", real)
        assert calls, "the default CPU path did not reach the numba engine"
        # against fused=True on a run where every parameter has a gradient at every step (so that the fused
        # path is one numba call per flat bucket, never the per-parameter compiled call)
        g = torch.Generator().manual_seed(4)
        runs = []
        for flags in (dict(foreach=False), dict(fused=True)):
            ps = [torch.nn.Parameter(torch.ones(s, dtype=dtype)) for s in [(5, 3), (7,), (2, 2, 2)]]
            opt = cls(ps, lr=0.01, **kw, **flags)
            g.manual_seed(4)
            for lr in lrs:
                for p in ps:
                    p.grad = torch.randn(p.shape, generator=g, dtype=dtype)
                opt.param_groups[0]["lr"] = lr
                opt.step()
            runs.append(([p.detach().clone() for p in ps], [dict(opt.state[p]) for p in ps]))
        (pa, sa), (pb, sb) = runs
        assert all(torch.equal(x, y) for x, y in zip(pa, pb))
        assert all(torch.equal(x[k], y[k]) for x, y in zip(sa, sb) for k in x if k != "step")
        for x, y in zip(ops, a):
            np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=tol, atol=tol)


def test_cpu_default_path_non_contiguous_and_low_precision_parameters(monkeypatch):
    """A non-contiguous parameter (a transposed view) takes the torch operations, a bf16 one is updated in
    float32 and rounded back; both agree with contiguous float64 references."""
    pytest.importorskip("numba")
    import lptheory.torch as lt

    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)
    base = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4)
    w_t = torch.nn.Parameter(base.t())  # non-contiguous
    w_c = torch.nn.Parameter(base.t().contiguous())
    assert not w_t.is_contiguous()
    o1, o2 = StaceyPP([w_t], **HYPER), StaceyPP([w_c], **HYPER)
    for g in _grads(4, (4, 3), seed=5):
        w_t.grad, w_c.grad = g.clone(), g.clone()
        o1.step()
        o2.step()
    np.testing.assert_allclose(w_t.detach().numpy(), w_c.detach().numpy(), rtol=1e-12, atol=1e-14)
    out = []
    for numba_on in (True, False):
        monkeypatch.setattr(lt, "_NUMBA_ON_CPU", numba_on)
        v = torch.nn.Parameter(torch.linspace(-1, 1, 9).to(torch.bfloat16))
        opt = StaceyPP([v], **HYPER)
        for g in _grads(3, (9,), seed=2):
            v.grad = g.to(torch.bfloat16)
            opt.step()
        assert v.dtype == torch.bfloat16 and opt.state[v]["w"].dtype == torch.float32
        out.append(v.detach().float())
    torch.testing.assert_close(out[0], out[1], rtol=1e-2, atol=1e-2)  # bf16: float32 updates, rounded back


@pytest.mark.parametrize("marker", ["old marker", "no marker"])
def test_state_dict_of_the_primal_layout_loads_converted(marker):
    """A StaceyPP state dict saved before the dual state (state layout 1: per-parameter ``z``, the marker
    without ``state_layout`` or no marker at all) loads converted (w = |z|^{p-2} z with the group's p) and
    continues the run within rounding; StaceyP2's state dict is still refused."""
    hyper = {**HYPER, "p": 2.7}
    m1 = _model()
    o1 = StaceyPP(m1.parameters(), **hyper)
    _train(m1, o1, 4)
    sd = copy.deepcopy(o1.state_dict())
    core_opt = o1._core_for(o1.param_groups[0])
    for st in sd["state"].values():  # the layout-1 form of the same state: the primal iterate z
        st["z"] = core_opt.z_of(st)
        del st["w"]
    if marker == "old marker":
        sd["lptheory"] = {"optimizer": "StaceyPP"}
    else:
        del sd["lptheory"]
    m2 = copy.deepcopy(m1)
    o2 = StaceyPP(m2.parameters(), **hyper)
    o2.load_state_dict(sd)
    assert all(set(v) == {"w", "m", "step"} for v in o2.state.values())
    a = _train(m1, o1, 6, seed=3)
    b = _train(m2, o2, 6, seed=3)
    for x, y in zip(a, b):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-5, atol=1e-7)  # float32: z -> w rounds
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(o2.state[q]["w"].numpy(), o1.state[p]["w"].numpy(), rtol=1e-4, atol=1e-9)
    p2 = StaceyP2(m1.parameters(), **HYPER)
    _train(m1, p2, 1)
    sd2 = p2.state_dict()
    with pytest.raises(ValueError, match="saved by StaceyP2"):
        StaceyPP(m1.parameters(), **HYPER).load_state_dict(sd2)


@pytest.mark.parametrize("flags", [dict(), dict(fused=True), dict(foreach=True)], ids=str)
def test_nonfinite_gradients_counted_once_per_step_on_every_path(flags):
    """On the CPU the numba kernels count the gradients' NaN/inf entries while they read them (no extra
    pass); a step with one in any parameter counts once, warns once, on every path."""
    import warnings

    from lptheory.optimizers import NonFiniteGradientWarning, nonfinite_steps

    w = [torch.nn.Parameter(torch.ones(300, dtype=torch.float64)), torch.nn.Parameter(torch.ones(7))]
    opt = StaceyPP(w, **HYPER, **flags)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for bad in (None, 0, 1, None, 0):
            for i, q in enumerate(w):
                q.grad = torch.full_like(q, 0.5)
                if bad == i:
                    q.grad[-1] = float("nan") if i == 0 else float("inf")
            opt.step()
            for q in w:
                q.data.fill_(1.0)
    assert nonfinite_steps(opt) == 3
    assert sum(issubclass(c.category, NonFiniteGradientWarning) for c in caught) == 1


def test_fused_plan_split_over_threads_gives_the_default_paths_bits(monkeypatch):
    """A bucket large enough to be split (3 ranges: LPTHEORY_THREADS=3 and 3 torch threads), its first range
    on the calling thread, new gradient tensors at every step (the large ones read in place, the small one
    copied into the flat gradient): the iterates are those of the default path (each parameter's kernel
    unsplit) bit for bit, and a NaN in the last range's part of the gradient is counted (once per step)."""
    import warnings

    from lptheory.fast import fused as _fused
    from lptheory.optimizers import NonFiniteGradientWarning, nonfinite_steps

    if not _fused.available():
        pytest.skip("numba not installed")
    import lptheory.torch as lt

    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)  # the default CPU path through the numba kernels
    monkeypatch.setenv("LPTHEORY_THREADS", "3")
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        g = torch.Generator().manual_seed(8)
        shapes = [(300, 400), (70001,), (50, 9), (1000,)]  # the last two: one flat range (copied in)
        runs = []
        for flags in (dict(foreach=False), dict(fused=True)):
            ps = [torch.nn.Parameter(torch.randn(s, generator=torch.Generator().manual_seed(1))) for s in shapes]
            opt = StaceyPP(ps, lr=0.01, p=2.7, eps_mode="official", weight_decay=0.1, **flags)
            g.manual_seed(8)
            for _ in range(4):
                for p in ps:
                    p.grad = torch.randn(p.shape, generator=g)
                opt.step()
            runs.append((ps, opt))
        (pa, oa), (pb, ob) = runs
        assert sum(p.numel() for p in pb) >= 1 << 17 and len(ob._plans) == 1
        (flat,) = ob._flat.values()  # the new gradients of the large parameters were read in place
        assert pb[0].grad.data_ptr() != flat.grad_views[0].data_ptr()
        assert all(torch.equal(x, y) for x, y in zip(pa, pb))
        assert all(torch.equal(oa.state[x][k], ob.state[y][k]) for x, y in zip(pa, pb) for k in ("w", "m"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pb[3].grad[-1] = float("nan")  # the last element of the bucket: the last range
            ob.step()
            pb[3].grad[-1] = 0.0
            ob.step()
        assert nonfinite_steps(ob) == 1
        assert sum(issubclass(c.category, NonFiniteGradientWarning) for c in caught) == 1
    finally:
        torch.set_num_threads(before)
