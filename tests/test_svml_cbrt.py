"""numpy's SVML cube root inside the fused kernels (lptheory.fast.svml_cbrt): numpy.cbrt's bits, the one-pass
kernel at p = 4 equal to the path with numpy.cbrt between loops, and the probe that switches the route off
when the routine disagrees with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from lptheory import optimizers as O
from lptheory.fast import fused as _fused
from lptheory.fast import svml_cbrt

needs_cbrt = pytest.mark.skipif(not svml_cbrt.available(), reason="numpy does not run SVML's cbrt8_ha here")
DTYPES = [np.float64, np.float32]


@needs_cbrt
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [1, 7, 8, 9, 16, 17, 31, 64])
def test_cbrt_block_is_numpy_cbrt(dtype, m, rng):
    """Every block length (the last partial group of lanes padded), values across many binades, both signs,
    subnormals, zeros, infinities and NaN: numpy.cbrt's bits."""
    span = 700 if dtype == np.float64 else 85
    x = (rng.standard_normal(m + 5) * np.exp(rng.uniform(-span, span, m + 5))).astype(dtype)
    x[:3] = [0.0, -np.inf, np.nan][: min(3, x.size)]
    x[3] = np.finfo(dtype).smallest_subnormal
    out = np.empty(m, dtype=dtype)
    svml_cbrt.cbrt_block(x, 2, out, m, np.empty(32, dtype=dtype))
    with np.errstate(all="ignore"):
        ref = np.cbrt(x[2 : 2 + m])
    it = np.int64 if dtype == np.float64 else np.int32
    assert np.array_equal(out.view(it), ref.view(it))


@needs_cbrt
@pytest.mark.parametrize("dtype", [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)])  # as test_fused
@pytest.mark.parametrize("opt", [O.StaceyP2(p=4.0, lr=0.1, alpha=0.05, tau=0.3), O.StaceyPP(p=4.0, lr=0.1)], ids=repr)
def test_one_pass_cube_root_same_bits_as_numpy_cbrt_path(opt, dtype, monkeypatch, rng):
    """At p = 4 the steepest step's |x|^{1/3} is numpy.cbrt: the one-pass kernel (SVML's cube root in blocks,
    the route taken: its source calls cbrt_block) and the older path (numpy.cbrt between loops on chunks)
    give the same bits, over several steps on rows whose length is not a whole number of blocks."""
    theta = (rng.standard_normal((3, 1005)) * np.exp(rng.uniform(-30, 30, (3, 1005)))).astype(dtype)
    grads = [rng.standard_normal(theta.shape).astype(dtype) for _ in range(3)]
    outs = []
    for use in (True, False):
        monkeypatch.setattr(_fused, "USE_SVML", use)
        th, st = theta, opt.init(theta)
        for g in grads:
            th, st = opt.step(th, g, st)
        outs.append((th, st))
    it = np.int64 if dtype == np.float64 else np.int32
    assert np.array_equal(outs[0][0].view(it), outs[1][0].view(it))
    for k in opt.buffers:
        assert np.array_equal(outs[0][1][k].view(it), outs[1][1][k].view(it)), k
    h = opt.scalars(0)
    arrays = opt.named(theta, grads[0], [outs[0][1][k] for k in opt.buffers], [np.empty_like(theta)] * 3)
    k = _fused.kernel(opt, h, arrays, np.dtype(dtype), ())
    assert k.blocked is not None and any(st[0] == "numpy" and st[1] == "cbrt" for st in k.plan)


@needs_cbrt
def test_probe_switches_off_a_disagreeing_cube_root(monkeypatch):
    """A planted routine one ulp off numpy.cbrt at a single value fails the probe (the engine then keeps
    numpy.cbrt), and the one-pass condition follows the probe."""
    real = svml_cbrt._blocks()["float64"]

    def planted(x, xo, out, m, pad):
        real(x, xo, out, m, pad)
        out[m // 2] = np.nextafter(out[m // 2], np.inf)

    monkeypatch.setattr(svml_cbrt, "_OK", {})
    monkeypatch.setattr(svml_cbrt, "_blocks", lambda: {"float64": planted})
    assert not svml_cbrt.available("float64")
    assert not _fused._one_pass([("cbrt", "in_x", "v1_s1", None, None)], "float64")
    monkeypatch.setattr(svml_cbrt, "_OK", {})
    monkeypatch.setattr(svml_cbrt, "_blocks", lambda: {"float64": real})
    assert svml_cbrt.available("float64")
    assert _fused._one_pass([("cbrt", "in_x", "v1_s1", None, None)], "float64")


@pytest.mark.parametrize("opt", [O.StaceyP2(p=4.0, lr=0.1, alpha=0.05, tau=0.2), O.StaceyPP(p=4.0, lr=0.1)], ids=repr)
def test_short_path_plan_without_the_cube_root_route(opt, monkeypatch, rng):
    """With the SVML cube root unavailable (as on a machine without AVX-512) the p = 4 kernels are plans of
    several parts (numpy.cbrt between fused loops): the short path runs the plan (``_run_plan``) and gives the
    bits of the checked path."""
    import dataclasses

    from lptheory.fast.cache import slot as fast_slot

    monkeypatch.setattr(svml_cbrt, "_OK", {"float64": False, "float32": False})
    monkeypatch.setattr(_fused, "_KERNELS", {})
    monkeypatch.setattr(_fused, "_LAST", {})
    theta0 = rng.standard_normal((1, 129))
    grads = [rng.standard_normal(theta0.shape) for _ in range(4)]
    runs = []
    for short in (True, False):
        o = dataclasses.replace(opt)
        if not short:
            fast_slot(o).checked_only = True
        th, st = theta0.copy(), o.init(theta0)
        for g in grads:
            th, st = o.step(th, g, st, donate=True)
        if short:
            assert fast_slot(o).direct[2][0] is None  # a plan
        runs.append((th, st))
    assert np.array_equal(runs[0][0], runs[1][0])
    for k in opt.buffers:
        assert np.array_equal(runs[0][1][k], runs[1][1][k]), k
