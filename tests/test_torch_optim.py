"""lptheory.torch: torch.optim wrappers over the shared update rules."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lptheory import optimizers as core  # noqa: E402
from lptheory.torch import LpDescent, StaceyP2, StaceyPP  # noqa: E402

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
    np.testing.assert_allclose(opt.state[w]["z"].numpy(), st["z"], rtol=1e-12, atol=1e-14)
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
    assert all({"z", "m", "step"} <= set(v) for v in sd.values())


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
    assert w16.dtype == torch.bfloat16 and o16.state[w16]["z"].dtype == torch.float32
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
