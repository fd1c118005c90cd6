"""One optimizer, one place (issue 34): a class definition made with ``lptheory.rules`` registers itself, and
the registry, the ``lptheory run`` flags, the sweep's keys and the ``lptheory.torch`` class come from it."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import lptheory.torch as LT
from lptheory import optimizers as O
from lptheory import spectral as SP
from lptheory.fast.cache import slot
from lptheory.rules import EXPONENT, NONNEG, UNIT, clip, ema, hyper, sign, steepest


@pytest.fixture
def nesterov_cls():
    """A user's optimizer defined inside the test (so the registry holds it only here)."""

    @dataclass(frozen=True)
    class NesterovLpTest(O.ElementwiseOptimizer):
        name: ClassVar[str] = "nesterov-lp-test"
        buffers: ClassVar[tuple] = ("m",)
        p: float = hyper(3.0, EXPONENT, help="l_p exponent")
        lr: float = hyper(1e-3, NONNEG, help="step size")
        momentum: float = hyper(0.9, UNIT, help="momentum")
        dampening_test: float = hyper(0.5, UNIT, help="a new flag")

        @staticmethod
        def rule(xp, h, b):
            m = ema(xp, b.m, h.momentum, b.grad, b.new_m, b.s1)
            look = ema(xp, m, h.momentum, b.grad, b.s2, b.s1)
            s = steepest(xp, look, h.p, b.s1, b.s3)
            xp.multiply(s, h.lr * h.dampening_test, out=s)
            xp.subtract(b.theta, s, out=b.new_theta)

    try:
        yield NesterovLpTest
    finally:
        O.OPTIMIZERS.pop("nesterov-lp-test", None)
        LT.__dict__.pop("NesterovLpTest", None)


def test_a_definition_registers_and_checks_its_fields(nesterov_cls):
    assert O.OPTIMIZERS["nesterov-lp-test"] is nesterov_cls
    assert nesterov_cls.limits == {"p": EXPONENT, "lr": NONNEG, "momentum": UNIT, "dampening_test": UNIT}
    with pytest.raises(ValueError, match="momentum"):
        nesterov_cls(momentum=1.0)
    assert "dampening_test" in O.flag_fields() and O.make("nesterov-lp-test", p=4.0).p == 4.0


def test_a_user_rule_runs_on_every_route_with_the_same_bits(nesterov_cls, rng):
    opt = nesterov_cls(p=2.5, lr=0.1)
    theta0 = rng.standard_normal((2, 33))
    grads = [rng.standard_normal(theta0.shape) for _ in range(4)]
    ref = nesterov_cls(p=2.5, lr=0.1)
    slot(ref).checked_only = True
    th, st, tr, sr = theta0.copy(), opt.init(theta0), theta0.copy(), ref.init(theta0)
    for g in grads:
        th, st = opt.step(th, g, st, donate=True)
        tr, sr = ref.step(tr, g, sr)
    assert np.array_equal(th.view(np.int64), tr.view(np.int64))
    # the hand-written transcription: m = mu m + (1 - mu) g; theta -= lr * d * s_p(mu m + (1 - mu) g)
    m, x = np.zeros_like(theta0), theta0.copy()
    for g in grads:
        m = 0.9 * m + (1 - 0.9) * g
        look = 0.9 * m + (1 - 0.9) * g
        x = x - 0.1 * 0.5 * np.sign(look) * np.abs(look) ** (1 / 1.5)
    np.testing.assert_allclose(th, x, rtol=1e-12, atol=1e-14)


def test_the_torch_class_is_derived_from_the_definition(nesterov_cls):
    torch = pytest.importorskip("torch")
    cls = LT.NesterovLpTest
    assert cls is LT.NesterovLpTest and issubclass(cls, torch.optim.Optimizer)
    sig = inspect.signature(cls)
    assert list(sig.parameters) == [
        "params",
        "lr",
        "p",
        "momentum",
        "dampening_test",
        "maximize",
        "foreach",
        "compiled",
        "fused",
    ]
    assert sig.parameters["lr"].default == 1e-3 and sig.parameters["p"].kind is inspect.Parameter.KEYWORD_ONLY
    w = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    opt = cls([w], lr=0.1, p=2.5)
    w.grad = torch.full_like(w, 2.0)
    opt.step()
    core = nesterov_cls(p=2.5, lr=0.1)
    th, _ = core.step(np.ones(5), np.full(5, 2.0), core.init(np.ones(5)))
    np.testing.assert_allclose(w.detach().numpy(), th, rtol=1e-14)
    with pytest.raises(TypeError):
        cls([w], 0.1, 2.5)  # p is keyword-only, as in torch.optim
    with pytest.raises(ValueError, match="momentum"):
        cls([w], momentum=2.0)


def test_the_builtin_torch_classes_keep_their_signatures():
    want = {
        "StaceyP2": "(params, lr=0.001, *, p=3.0, alpha=0.001, tau=0.001, betas=(0.9, 0.999), eps=1e-08, "
        "weight_decay=0.0, eps_mode='paper', z_init='params', maximize=False, foreach=None, compiled=False, "
        "fused=False)",
        "LpDescent": "(params, lr=0.001, *, p=3.0, maximize=False, foreach=None, compiled=False, fused=False)",
        "Lion": "(params, lr=0.0001, *, betas=(0.9, 0.99), weight_decay=0.0, maximize=False, foreach=None, "
        "compiled=False, fused=False)",
    }
    for name, text in want.items():
        assert str(inspect.signature(getattr(LT, name))) == text
    assert str(inspect.signature(LT.StaceyPP)) == want["StaceyP2"]
    assert LT.StaceyPP._core_fields == ("lr", "p", "alpha", "tau", "eps", "weight_decay", "eps_mode", "z_init")


def test_the_cli_and_the_sweep_take_the_definition(nesterov_cls):
    from lptheory.app.cli import _hyper_flags, build_parser

    assert "dampening_test" in _hyper_flags()
    args = build_parser().parse_args(["run", "--optimizer", "nesterov-lp-test", "--dampening-test", "0.25"])
    assert args.optimizer == ["nesterov-lp-test"] and args.dampening_test == 0.25
    assert "dampening_test" in O.hyper_names(O.OPTIMIZERS["nesterov-lp-test"])


def test_a_taken_name_is_an_error():
    with pytest.raises(ValueError, match="'adamw' .* taken by AdamW"):

        @dataclass(frozen=True)
        class Other(O.ElementwiseOptimizer):
            name: ClassVar[str] = "adamw"

            @staticmethod
            def rule(xp, h, b):
                pass

    assert O.OPTIMIZERS["adamw"] is O.AdamW


def test_the_matrix_variants_take_the_lp_definitions():
    for mat, vec in ((SP.StaceyP2Schatten, O.StaceyP2), (SP.StaceyPPSchatten, O.StaceyPP)):
        names = [f.name for f in dataclasses.fields(mat)]
        assert names == [f.name for f in dataclasses.fields(vec)] + ["shape"]
        assert mat.limits == vec.limits and mat.choices == vec.choices
        for f in dataclasses.fields(vec):
            assert getattr(mat(), f.name) == getattr(vec(), f.name)
    with pytest.raises(ValueError, match="eps_mode"):
        SP.StaceyPPSchatten(eps_mode="other")
    with pytest.raises(ValueError, match="p"):
        SP.StaceyPPSchatten(p=float("inf"))


def test_sign_and_clip(rng):
    x = np.array([-3.0, -0.5, -0.0, 0.0, 0.5, 3.0, np.nan, np.inf, -np.inf])
    out, tmp = np.empty_like(x), np.empty_like(x)
    got = clip(np, x, 1.0, out, tmp)
    want = np.clip(x, -1.0, 1.0)
    assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.array_equal(sign(np, x, out), np.sign(x), equal_nan=True)
    y = rng.standard_normal(50) * 3
    want = np.clip(y, -0.7, 0.7)
    assert np.abs(y).max() > 0.7 and np.array_equal(clip(np, y, 0.7, y, np.empty(50)), want)  # in place


def test_hyper_rejects_a_default_outside_its_choices():
    with pytest.raises(ValueError, match="default must be one of"):
        hyper("x", choices=("a", "b"))
    with pytest.raises(TypeError, match="limits must be a dict"):
        hyper(1.0, (0.0, 1.0))
