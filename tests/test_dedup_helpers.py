"""The helpers that replaced repeated blocks (issue 34): they keep what the copies did."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from lptheory import spectral as S
from lptheory._xp import as_float_array
from lptheory.rules import field_info
from synthetic.problems import make_problem


@pytest.mark.parametrize("name,attr", [("separable", "b"), ("flat-valley", "b"), ("quadratic-diagonal", "c"),
                                       ("quadratic-dense", "c")])  # fmt: skip
def test_closed_form_minimizer_start_and_argmin(name, attr):
    pr = make_problem(name, d=12, seed=3)
    x = getattr(pr, attr)
    assert np.array_equal(pr.argmin(), x)
    assert np.array_equal(pr.start(), x + 2.0)
    assert pr.f(pr.argmin()[None])[0] == pytest.approx(pr.f_star, abs=1e-12)
    assert {"profile", "seed"} <= set(pr.describe()) or {"cond", "seed"} <= set(pr.describe())


@pytest.mark.parametrize("name", ["ridge", "logsumexp"])
def test_no_closed_form_minimizer(name):
    assert make_problem(name, d=8, seed=0).argmin() is None


def test_as_float_array():
    xp, x = as_float_array([1, 2])
    assert xp is np and x.dtype == np.float64
    assert as_float_array(np.arange(3))[1].dtype == np.float64
    with pytest.raises(TypeError, match="g must have a floating dtype"):
        as_float_array(np.array(["a"]), "g")


def test_matrix_optimizers_fields_have_ranges_and_help():
    for cls in (S.Muon, S.Scion, S.SchattenDescent):
        for f in (f for f in dataclasses.fields(cls) if f.name != "shape"):
            info = field_info(f)
            assert info is not None and info["help"], (cls.__name__, f.name)
    assert S.Muon.limits["momentum"] == {"lo": 0.0, "hi": 1.0, "hi_open": True}
    assert S.Scion.limits["alpha"]["lo_open"] and S.SchattenDescent.limits["p"] == {"exponent": True}
    with pytest.raises(ValueError, match="orthogonalize"):
        S.Muon(orthogonalize="qr")
    with pytest.raises(ValueError, match="radius"):
        S.Scion(radius=-1.0)


def test_torch_spectral_signatures_follow_the_definitions():
    lt = pytest.importorskip("lptheory.torch")
    for cls in (lt.Muon, lt.Scion, lt.SchattenDescent, lt.StaceyP2Schatten, lt.StaceyPPSchatten):
        core = cls._core_cls
        params = inspect.signature(cls).parameters
        assert list(params)[:2] == ["params", "lr"] and params["lr"].default == core.lr
        for f in dataclasses.fields(core):
            n = f.name
            if n in ("shape", "lr", "beta2"):
                continue
            key = "betas" if n == "beta1" else n
            want = (f.default, core.beta2) if n == "beta1" else f.default
            assert params[key].default == want, (cls.__name__, n)
        assert list(params)[-6:] == ["maximize", "fallback", "fallback_lr", "fallback_betas", "fallback_eps",
                                     "fallback_weight_decay"]  # fmt: skip
    import torch

    w = torch.nn.Parameter(torch.ones(3, 2, dtype=torch.float64))
    opt = lt.StaceyP2Schatten([w], betas=[0.8, 0.9], fallback_betas=[0.5, 0.6])
    g = opt.param_groups[0]
    assert (g["beta1"], g["beta2"], g["fallback_betas"]) == (0.8, 0.9, (0.5, 0.6)) and "betas" not in g
    with pytest.raises(ValueError, match="betas must be a pair"):
        lt.StaceyPPSchatten([w], betas=(0.9,))
