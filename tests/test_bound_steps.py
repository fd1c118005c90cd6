"""lptheory.fast.step.bound_steps: several optimizers' donated steps through their bound kernels in one call,
the bits of each optimizer's own step(), and the general route wherever a bound kernel does not apply."""

from __future__ import annotations

import numpy as np
import pytest

from lptheory import optimizers as O
from lptheory.fast.step import bound_steps


def _configs():
    return [
        O.StaceyP2(p=3.0, lr=0.01, alpha=0.02, tau=0.3, beta1=0.0, beta2=0.0, eps=0.0),
        O.StaceyP2(p=3.0, lr=0.03, alpha=0.2, tau=0.05, beta1=0.9, beta2=0.99, eps=0.0),
        O.StaceyPP(p=6.0, lr=0.01, alpha=0.02, tau=0.3, eps=0.0),
        O.StaceyPP(p=4.0, lr=0.02, alpha=0.01, tau=0.05, beta1=0.9, beta2=0.99, eps=0.0),
    ]


@pytest.mark.filterwarnings("ignore::lptheory.optimizers.NonFiniteGradientWarning")  # the references' planted NaN
def test_bound_steps_same_bits_as_step(rng):
    """Blocks of one array stepped by their own optimizers: through bound_steps (after the two steps that bind
    the kernels) every block, buffer and step count equals a separate run of step(); the non-finite gradient
    entries are returned (a planted NaN is counted), not counted on the optimizer."""
    opts, ref_opts = _configs(), _configs()
    k = len(opts)
    theta = rng.standard_normal((2 * k, 300))
    grads = [rng.standard_normal(theta.shape) for _ in range(6)]
    grads[5][1, 7] = np.nan
    views = [theta[2 * i : 2 * i + 2] for i in range(k)]
    gbuf = np.empty_like(theta)
    gviews = [gbuf[2 * i : 2 * i + 2] for i in range(k)]
    states = [o.init(v) for o, v in zip(opts, views)]
    refs = [(theta[2 * i : 2 * i + 2].copy(), o.init(theta[2 * i : 2 * i + 2].copy())) for i, o in enumerate(ref_opts)]
    taken, nfs = 0, []
    for g in grads:
        gbuf[...] = g
        got = bound_steps(opts, views, gviews, states)
        for i, o in enumerate(opts):
            if got[i] is None:
                new, states[i] = o.step(views[i], gviews[i], states[i], donate=True)
                assert new is views[i]
            else:
                states[i] = got[i][0]
                taken += 1
                nfs.append(got[i][1])
        for i, o in enumerate(ref_opts):
            refs[i] = o.step(refs[i][0], g[2 * i : 2 * i + 2].copy(), refs[i][1])
    assert taken >= 3 * k  # the kernels bound after two steps: the later steps went through bound_steps
    assert nfs[-k] == 1 and sum(nfs) == 1
    assert O.nonfinite_steps(opts[0]) == 0
    for i, o in enumerate(opts):
        assert np.array_equal(views[i], refs[i][0], equal_nan=True)
        assert states[i]["step"] == refs[i][1]["step"] == len(grads)
        for b in o.buffers:
            assert np.array_equal(states[i][b], refs[i][1][b], equal_nan=True), (i, b)


def test_bound_steps_falls_back(rng, monkeypatch):
    """None (the general route) for an optimizer whose state holds another buffer than the bound one, for
    arrays the kernel is not bound to, and for every optimizer under LPTHEORY_ENGINE=numpy."""
    opt = O.StaceyP2(p=3.0, lr=0.01, alpha=0.02, tau=0.3)
    theta = rng.standard_normal((2, 64))
    g = rng.standard_normal(theta.shape)
    st = opt.init(theta)
    for _ in range(3):
        theta, st = opt.step(theta, g, st, donate=True)
    assert bound_steps([opt], [theta], [g], [st])[0] is not None
    swapped = {**st, "m": st["m"].copy()}
    assert bound_steps([opt], [theta], [g], [swapped]) == [None]
    assert bound_steps([opt], [theta.copy()], [g], [st]) == [None]
    monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    assert bound_steps([opt], [theta], [g], [st]) == [None]


@pytest.mark.parametrize("k", [1, 4])
def test_config_rows_same_bits_as_separate_runs(k, rng):
    """The acceleration check's _ConfigRows (bound_steps for its configurations): every configuration's block
    equals its own optimizer's separate run."""
    from proofs_checks.stacey.acceleration import _ConfigRows

    opts = _configs()
    theta = rng.standard_normal((k * len(opts), 200))
    refs = [(theta[i * k : (i + 1) * k].copy(), o.init(theta[i * k : (i + 1) * k].copy())) for i, o in enumerate(opts)]
    cr = _ConfigRows(_configs(), k)
    st = cr.init(theta)
    gbuf = np.empty_like(theta)
    for _ in range(5):
        gbuf[...] = rng.standard_normal(theta.shape)
        theta, st = cr.step(theta, gbuf, st, donate=True)
        refs = [o.step(r[0], gbuf[i * k : (i + 1) * k].copy(), r[1]) for i, (o, r) in enumerate(zip(opts, refs))]
    for i in range(len(opts)):
        assert np.array_equal(theta[i * k : (i + 1) * k], refs[i][0])


def _homogeneous(cls, p):
    return [
        cls(p=p, lr=0.01, alpha=0.02, tau=0.3, beta1=0.0, beta2=0.0, eps=0.0),
        cls(p=p, lr=0.03, alpha=0.2, tau=0.05, beta1=0.9, beta2=0.99, eps=0.0),
        cls(p=p, lr=0.02, alpha=0.01, tau=0.05, beta1=0.9, beta2=0.99, eps=0.0),
    ]


@pytest.mark.parametrize(("cls", "p"), [(O.StaceyP2, 2.0), (O.StaceyP2, 3.0), (O.StaceyPP, 6.0), (O.StaceyPP, 4.0)])
def test_rows_step_same_bits_as_separate_runs(cls, p, rng):
    """_ConfigRows of one configuration class (its buffers stacked: rows_step steps every configuration in one
    compiled call, through the kernel's rows driver, single loop or one-pass SVML kernel): every block equals
    its optimizer's separate run, and the one-call route was taken after the kernels were bound."""
    import lptheory.fast.step as S
    from proofs_checks.stacey import acceleration as A

    taken = []
    real = S.rows_step

    def spy(*a):
        got = real(*a)
        taken.append(got is not None)
        return got

    k, d = 2, 150
    opts = _homogeneous(cls, p)
    theta = rng.standard_normal((k * len(opts), d))
    refs = [(theta[i * k : (i + 1) * k].copy(), o.init(theta[i * k : (i + 1) * k].copy())) for i, o in enumerate(opts)]
    cr = A._ConfigRows(_homogeneous(cls, p), k)
    st = cr.init(theta)
    gbuf = np.empty_like(theta)
    orig = A.rows_step
    A.rows_step = spy
    try:
        for _ in range(6):
            gbuf[...] = rng.standard_normal(theta.shape)
            theta, st = cr.step(theta, gbuf, st, donate=True)
            refs = [o.step(r[0], gbuf[i * k : (i + 1) * k].copy(), r[1]) for i, (o, r) in enumerate(zip(opts, refs))]
    finally:
        A.rows_step = orig
    assert taken[-3:] == [True] * 3 and not taken[0]
    for i in range(len(opts)):
        assert np.array_equal(theta[i * k : (i + 1) * k], refs[i][0])
        for b in opts[i].buffers:
            assert np.array_equal(st["parts"][i][b], refs[i][1][b]), (i, b)
        assert st["parts"][i]["step"] == refs[i][1]["step"] == 6


def test_rows_step_falls_back(rng, monkeypatch):
    """None (the per-optimizer routes) for stacks whose rows are not the bound arrays (two configurations'
    rows swapped: the pointer check, also with the memo of the stacks before), a buffer that is not the bound
    one, configurations at different steps, and LPTHEORY_ENGINE=numpy."""
    from lptheory.fast.step import rows_step
    from proofs_checks.stacey import acceleration as A

    cr = A._ConfigRows(_homogeneous(O.StaceyP2, 3.0), 1)
    theta = rng.standard_normal((3, 64))
    st = cr.init(theta)
    g = rng.standard_normal(theta.shape)
    for _ in range(3):
        theta, st = cr.step(theta, g, st, donate=True)
    stacks = cr._views[3]
    parts = st["parts"]
    memo: dict = {}
    assert rows_step(cr.optimizers, stacks, parts, memo) is not None
    swapped = [s[[1, 0, 2]] for s in stacks]  # copies, rows out of order
    assert rows_step(cr.optimizers, swapped, parts, {}) is None
    assert rows_step(cr.optimizers, [s[:2] for s in stacks], parts, {}) is None  # fewer rows than optimizers
    before = [s.copy() for s in stacks]
    assert rows_step(cr.optimizers, swapped, parts, memo) is None  # other stacks, the same memo: checked again
    assert all(np.array_equal(a, b) for a, b in zip(stacks, before))  # the old rows were not stepped
    other = [{**parts[0], "m": parts[0]["m"].copy()}, *parts[1:]]
    assert rows_step(cr.optimizers, stacks, other, {}) is None
    ahead = [{**parts[0], "step": parts[0]["step"] + 1}, *parts[1:]]
    assert rows_step(cr.optimizers, stacks, ahead, {}) is None
    monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    assert rows_step(cr.optimizers, stacks, parts, {}) is None
