"""torch tensors run the same rules and give numpy's numbers (float64, 1e-12)."""

import math

import numpy as np
import pytest

from lptheory import geometry as G
from lptheory import optimizers as O

torch = pytest.importorskip("torch")

OPTS = [
    O.LpDescent(p=2.7, lr=0.1),
    O.LpDescent(p=math.inf, lr=0.1),
    O.LpDescent(p=1.5, lr=0.1),
    O.StaceyP2(p=2.7, lr=0.1, alpha=0.1, tau=0.1),
    O.StaceyP2(p=3.0, lr=0.1, eps_mode="official"),
    O.StaceyPP(p=2.7, lr=0.1, alpha=0.1, tau=0.1),
    O.StaceyPP(p=3.0, lr=0.1, alpha=0.1, tau=0.3),
    O.StaceyPP(p=4.0, lr=0.1, eps_mode="official", z_init="zero"),
    O.StaceyPP(p=2.5, eps=0.0),
    O.SGD(lr=0.1, weight_decay=0.1, nesterov=True),
    O.SignSGD(lr=0.1, momentum=0.5),
    O.Adam(lr=0.1, weight_decay=0.1),
    O.AdamW(lr=0.1),
    O.Lion(lr=0.1, weight_decay=0.1),
]


@pytest.mark.parametrize("opt", OPTS, ids=lambda o: repr(o)[:50])
def test_torch_matches_numpy(opt, rng):
    theta = rng.standard_normal((3, 40))
    grads = [rng.standard_normal((3, 40)) for _ in range(5)]
    grads[0][:, :5] = 0.0
    tn, sn = theta, opt.init(theta)
    tt = torch.from_numpy(theta.copy())
    st = opt.init(tt)
    for g in grads:
        tn, sn = opt.step(tn, g, sn)
        tt, st = opt.step(tt, torch.from_numpy(g), st)
        assert isinstance(tt, torch.Tensor)
    np.testing.assert_allclose(tt.numpy(), tn, rtol=1e-12, atol=1e-14)
    for k in opt.buffers:
        np.testing.assert_allclose(st[k].numpy(), sn[k], rtol=1e-12, atol=1e-14)


def test_torch_donate_in_place(rng):
    opt = O.StaceyPP(p=3.0, lr=0.1, alpha=0.1, tau=0.1)
    t0 = torch.from_numpy(rng.standard_normal((2, 7)))
    g = torch.from_numpy(rng.standard_normal((2, 7)))
    a, sa = opt.step(t0, g, opt.init(t0))
    buf = t0.clone()
    b, sb = opt.step(buf, g, opt.init(buf), donate=True)
    assert b.data_ptr() == buf.data_ptr()
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_torch_float32_and_zero_grads():
    opt = O.StaceyPP(p=3.0, eps=1e-50)  # eps underflows in float32: the exact map is used, no 0/0
    th = torch.zeros((2, 4), dtype=torch.float32)
    g = torch.zeros((2, 4), dtype=torch.float32)
    out, st = opt.step(th, g, opt.init(th))
    assert out.dtype == torch.float32 and bool(torch.isfinite(out).all())


@pytest.mark.parametrize("p", [1.5, 2.0, 2.7, 3.0, 4.0, math.inf])
def test_geometry_on_torch(p, rng):
    x = rng.standard_normal((2, 9))
    xt = torch.from_numpy(x)
    np.testing.assert_allclose(G.steepest_map(xt, p).numpy(), G.steepest_map(x, p), rtol=1e-12)
    np.testing.assert_allclose(G.steepest_step(xt, p, 0.3).numpy(), G.steepest_step(x, p, 0.3), rtol=1e-12)
    np.testing.assert_allclose(G.lp_norm(xt, p).numpy(), G.lp_norm(x, p), rtol=1e-12)
    if p >= 2:
        for mode in ["paper", "official"]:
            np.testing.assert_allclose(
                G.regularized_steepest_map(xt, p, 1e-3, mode).numpy(),
                G.regularized_steepest_map(x, p, 1e-3, mode),
                rtol=1e-12,
            )
    if not math.isinf(p):
        np.testing.assert_allclose(G.mirror_map(xt, p).numpy(), G.mirror_map(x, p), rtol=1e-12)


def test_mixing_backends_is_a_type_error():
    with pytest.raises(TypeError, match="mixed"):
        O.SGD().step(np.zeros(3), torch.zeros(3, dtype=torch.float64), {"step": 0, "buf": np.zeros(3)})


def test_against_torch_optim_adamw_and_sgd(rng):
    """The project's baselines against torch.optim's implementations, step by step."""
    theta = rng.standard_normal((4, 6))
    grads = [rng.standard_normal((4, 6)) for _ in range(6)]
    cases = [
        (
            O.AdamW(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1),
            lambda p: torch.optim.AdamW([p], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1),
        ),
        (O.Adam(lr=0.01, weight_decay=0.1), lambda p: torch.optim.Adam([p], lr=0.01, weight_decay=0.1)),
        (
            O.SGD(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
            lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
        ),
    ]
    for ours, make_ref in cases:
        param = torch.nn.Parameter(torch.from_numpy(theta.copy()))
        ref = make_ref(param)
        th, st = theta, ours.init(theta)
        for g in grads:
            param.grad = torch.from_numpy(g.copy())
            ref.step()
            th, st = ours.step(th, g, st)
        np.testing.assert_allclose(th, param.detach().numpy(), rtol=1e-12, atol=1e-14)
