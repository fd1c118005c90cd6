"""The fused CPU engine (lptheory.fast.fused) against the reference numpy engine (lptheory.fast.engine.apply).

The contract is bit equality: the same operations in the same order on the same values, with numpy
itself computing powers, exp and log. Every optimizer, both eps modes, p in {2, 2.5, 2.7, 3, 4, inf},
float64 and float32, odd shapes (1-D, (3, 7), empty, non-contiguous), zero and subnormal gradients,
in place and out of place, one thread and several.
"""

import math
import sys

import numpy as np
import pytest

from lptheory import optimizers as O
from lptheory import schedules as S
from lptheory.fast import engine as _engine
from lptheory.fast import fused as _fused
from lptheory.fast import svml_cbrt
from lptheory.fast.cache import slot as fast_slot
from lptheory.fast.step import BIND_LIMIT

pytestmark = pytest.mark.skipif(not _fused.available(), reason="numba not installed (fused engine off)")

PS = [2.0, 2.5, 2.7, 3.0, 4.0, math.inf]

# float32 compiles a second specialization of every kernel (~15 s of a cold default run): its cases run with the
# slow tests (CI runs both); float64's in the default run
DTYPES = [np.float64, pytest.param(np.float32, marks=pytest.mark.slow)]


def _configs():
    out = []
    for p in PS:
        out.append(O.LpDescent(p=p, lr=0.1))
        for mode in ("paper", "official"):
            out.append(O.StaceyP2(p=p, lr=0.1, alpha=0.05, tau=0.2, eps_mode=mode, weight_decay=0.01))
            if p != math.inf:
                out.append(O.StaceyPP(p=p, lr=0.1, alpha=0.05, tau=0.2, eps_mode=mode))
    out += [
        O.StaceyPP(p=2.7, lr=0.1, eps=0.0),
        O.AdamW(lr=0.1),
        O.AdamW(lr=0.1, bias_correction=False),
        O.Adam(lr=0.1, weight_decay=0.1),
        O.SGD(lr=0.1, nesterov=True, weight_decay=0.1),
        O.SGD(lr=0.1, momentum=0.0),
        O.SignSGD(lr=0.1, momentum=0.5),
        O.SignSGD(lr=0.1),
        O.Lion(lr=0.1, weight_decay=0.1),
    ]
    return out


CONFIGS = _configs()


def _ids(c):
    return repr(c)[:80]


def _inputs(rng, shape, dtype):
    theta = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    flat_g, flat_t = grad.reshape(-1), theta.reshape(-1)
    tiny = np.finfo(dtype).smallest_subnormal
    if flat_g.size >= 12:
        flat_g[:4] = 0.0
        flat_g[4:7] = tiny
        flat_g[7:9] = -tiny * 3
        flat_t[:3] = 0.0
        flat_t[9:11] = tiny
    return theta, grad


def _reference_step(opt, theta, grad, state, step):
    h = opt.scalars(step)
    outs = [np.empty_like(theta) for _ in range(1 + len(opt.buffers))]
    arrays = opt.named(theta, grad, [state[k] for k in opt.buffers], outs)
    _engine.apply(type(opt).rule, np, h, arrays, opt.n_scratch)
    return outs[0], {**dict(zip(opt.buffers, outs[1:])), "step": step + 1}


def _fused_step(opt, theta, grad, state, step, threads):
    h = opt.scalars(step)
    outs = [np.empty_like(theta) for _ in range(1 + len(opt.buffers))]
    arrays = opt.named(theta, grad, [state[k] for k in opt.buffers], outs)
    assert _fused.run(opt, h, arrays, threads), f"{opt!r} was not fused"
    return outs[0], {**dict(zip(opt.buffers, outs[1:])), "step": step + 1}


def _assert_same(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape
    if not np.array_equal(a, b, equal_nan=True):
        i = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))[:3]
        raise AssertionError(f"{what}: fused {a.ravel()[i]} != reference {b.ravel()[i]} at {i}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opt", CONFIGS, ids=_ids)
def test_fused_bits_equal_reference(opt, dtype, rng):
    """Three steps (bias corrections and momenta change per step) on a 1-D array that spans several
    chunks and a partial one; state from the reference run feeds both."""
    theta, grad = _inputs(rng, (3 * _fused.CHUNK + 123,), dtype)
    state = opt.init(theta)
    for step in range(3):
        ref_t, ref_s = _reference_step(opt, theta, grad, state, step)
        got_t, got_s = _fused_step(opt, theta, grad, state, step, threads=1)
        _assert_same(got_t, ref_t, f"theta step {step}")
        for k in opt.buffers:
            _assert_same(got_s[k], ref_s[k], f"{k} step {step}")
        theta, state = ref_t, ref_s
        grad = np.roll(grad, 5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (3, 7), (0,), (0, 4), (5, 1, 3)], ids=str)
@pytest.mark.parametrize(
    "opt",
    [O.StaceyPP(p=2.7, lr=0.1), O.StaceyP2(p=math.inf, lr=0.1), O.AdamW(lr=0.1), O.LpDescent(p=3.0, lr=0.1)],
    ids=_ids,
)
def test_fused_odd_shapes(opt, shape, dtype, rng):
    theta, grad = _inputs(rng, shape, dtype)
    state = opt.init(theta)
    ref_t, ref_s = _reference_step(opt, theta, grad, state, 0)
    got_t, got_s = _fused_step(opt, theta, grad, state, 0, threads=2)
    _assert_same(got_t, ref_t, "theta")
    for k in opt.buffers:
        _assert_same(got_s[k], ref_s[k], k)


@pytest.mark.parametrize("opt", [O.StaceyPP(p=2.7, lr=0.1), O.StaceyP2(p=3.0, lr=0.1), O.AdamW(lr=0.1)], ids=_ids)
def test_fused_threads_and_split_do_not_change_bits(opt, rng):
    """Arrays large enough to be split over worker threads: 1, 2 and 3 threads give the same bits."""
    theta, grad = _inputs(rng, (4, 70001), np.float64)
    state = opt.init(theta)
    runs = [_fused_step(opt, theta, grad, state, 0, threads=n) for n in (1, 2, 3)]
    ref_t, ref_s = _reference_step(opt, theta, grad, state, 0)
    for got_t, got_s in runs:
        _assert_same(got_t, ref_t, "theta")
        for k in opt.buffers:
            _assert_same(got_s[k], ref_s[k], k)


@pytest.mark.parametrize(
    "opt", [O.StaceyPP(p=2.7, lr=0.1), O.StaceyP2(p=4.0, lr=0.1), O.AdamW(lr=0.1), O.Lion(lr=0.1)], ids=_ids
)
def test_step_api_fused_equals_reference_engine(opt, rng, monkeypatch):
    """Through the public ``step``: non-contiguous inputs, ``donate=True`` (outputs alias inputs: the
    in-place kernel variants), and the reference engine forced with ``LPTHEORY_ENGINE=numpy``."""
    base = rng.standard_normal((6, 2 * _fused.CHUNK + 3))
    theta0 = base[::2, ::3]  # non-contiguous view
    grads = [rng.standard_normal((6, base.shape[1]))[::2, ::3] for _ in range(3)]

    def traj(donate):
        th, st = theta0.copy() if donate else theta0, opt.init(theta0)
        for g in grads:
            th, st = opt.step(th, g, st, donate=donate)
        return th, st

    monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    assert _engine.engine() == "numpy"
    ref = traj(False)
    monkeypatch.delenv("LPTHEORY_ENGINE")
    assert _engine.engine() == "fused"
    for donate in (False, True):
        th, st = traj(donate)
        _assert_same(th, ref[0], f"theta donate={donate}")
        for k in opt.buffers:
            _assert_same(st[k], ref[1][k], f"{k} donate={donate}")


def test_schedules_and_lr_changes_reuse_one_kernel(rng):
    """lr is a kernel argument: a schedule over 20 steps traces and compiles once."""
    opt = O.StaceyPP(p=2.7, lr=S.CosineWarmup(0.1, 20, warmup=3), alpha=0.05, tau=0.2)
    theta = rng.standard_normal(1000)
    state = opt.init(theta)
    before = sum(len(v) for v in _fused._KERNELS.values())
    for _ in range(20):
        theta, state = opt.step(theta, rng.standard_normal(1000), state)
    after = sum(len(v) for v in _fused._KERNELS.values())
    assert after - before <= 1


def test_planted_kernel_bug_is_caught(rng, monkeypatch):
    """The comparison above can fail: a tracer that emits ``+`` for ``-`` gives different bits."""
    opt = O.AdamW(lr=0.1, weight_decay=0.3)
    theta, grad = _inputs(rng, (1000,), np.float64)
    state = opt.init(theta)
    ref_t, _ = _reference_step(opt, theta, grad, state, 0)
    monkeypatch.setattr(_fused, "_KERNELS", {})
    monkeypatch.setattr(_fused, "_LAST", {})
    monkeypatch.setattr(_fused.TraceNS, "subtract", _fused.TraceNS.add)
    got_t, _ = _fused_step(opt, theta, grad, state, 0, threads=1)
    assert not np.array_equal(got_t, ref_t)


def test_unsupported_dtype_falls_back(rng):
    opt = O.AdamW(lr=0.1)
    theta = rng.standard_normal(10).astype(np.float16)
    h = opt.scalars(0)
    st = opt.init(theta)
    outs = [np.empty_like(theta) for _ in range(3)]
    assert not _fused.run(opt, h, opt.named(theta, theta.copy(), [st["m"], st["v"]], outs), 1)


def _child_step(q):
    theta = np.ones(1 << 19)
    opt = O.AdamW(lr=0.1)
    th, _ = opt.step(theta, theta.copy(), opt.init(theta))
    q.put(float(th[0]))


def test_forked_child_gets_its_own_worker_threads():
    """The parallel checks fork: a child must not submit to the parent's thread pool (whose threads it
    does not have) or it waits forever."""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    theta = np.ones(1 << 19)
    opt = O.AdamW(lr=0.1)
    opt.step(theta, theta.copy(), opt.init(theta))  # the parent's pool exists now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child_step, args=(q,))
    proc.start()
    proc.join(60)
    alive = proc.is_alive()
    if alive:
        proc.kill()
    assert not alive, "the forked child hung on the parent's thread pool"
    assert q.get(timeout=5) < 1.0


def test_rademacher_draws_in_the_kernel_are_numpys_int8_samples(monkeypatch):
    """The simulator's Rademacher noise drawn inside one numba pass (each replicate's PCG64 words through
    its C next_uint64) gives the bits of numpy's own sampler, ``(2 * rng.integers(0, 2, d, int8) - 1.0) *
    sigma``, added to the gradient, and leaves each stream where ``integers`` leaves it; the general path
    is taken for d not a multiple of 8, a stream with a buffered 32-bit half, or another bit generator."""
    pytest.importorskip("numba")
    from lptheory.simulate import replicate_generators
    from synthetic import _fast
    from synthetic.noise import Rademacher

    real = _fast.rademacher_add_streams
    calls: list = []
    monkeypatch.setattr(_fast, "rademacher_add_streams", lambda *a: calls.append(real(*a)) or calls[-1])
    for R, d in [(5, 64), (64, 4096), (3, 13), (2, 8)]:
        calls.clear()
        sigma = np.linspace(0.1, 2.0, d)
        base = np.random.default_rng(1).standard_normal((R, d))
        got = base.copy()
        rngs = replicate_generators(7, R)
        rngs[0].integers(0, 2**32, dtype=np.uint32)  # a buffered 32-bit half: this call must take numpy's path
        rngs_ref = replicate_generators(7, R)
        rngs_ref[0].integers(0, 2**32, dtype=np.uint32)
        Rademacher(sigma).add_means_into(rngs, 1, got)
        Rademacher(sigma).add_means_into(rngs, 1, got)  # a second step, whichever path it takes
        want = base.copy()
        for _ in range(2):
            for r in range(R):
                want[r] = want[r] + (rngs_ref[r].integers(0, 2, size=d, dtype=np.int8) * 2.0 - 1.0) * sigma
        assert np.array_equal(got, want), (R, d)
        for a, b in zip(rngs, rngs_ref):  # the same position in each stream (a stale 32-bit half is unused)
            sa, sb = a.bit_generator.state, b.bit_generator.state
            assert sa["state"] == sb["state"] and sa["has_uint32"] == sb["has_uint32"]
            assert not sa["has_uint32"] or sa["uinteger"] == sb["uinteger"]
        if d % 8 == 0:
            assert calls[0] is False  # the buffered half
        else:
            assert calls == [False, False]
    # all streams clean and d % 8 == 0: the kernel path runs
    rngs = replicate_generators(3, 4)
    assert real(rngs, np.ones(16), np.zeros((4, 16))) is True
    # another bit generator: general path
    other = [np.random.Generator(np.random.Philox(i)) for i in range(4)]
    assert real(other, np.ones(16), np.zeros((4, 16))) is False


def test_engine_info_reports_the_engine_in_use(monkeypatch):
    """``lptheory.engine_info()``: the fused engine, verified by a kernel run against the reference bits,
    and the reference engine (with the reason) under ``LPTHEORY_ENGINE=numpy`` or without numba."""
    import lptheory

    info = lptheory.engine_info()
    assert info["engine"] == "fused" and info["verified"] and info["numba"] and info["threads"] >= 1
    assert set(info["svml_power"]) == {"float64", "float32"}
    monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    info = lptheory.engine_info()
    assert info["engine"] == "numpy" and not info["verified"] and "LPTHEORY_ENGINE" in info["reason"]
    monkeypatch.delenv("LPTHEORY_ENGINE")
    monkeypatch.setitem(sys.modules, "numba", None)  # numba not importable
    info = lptheory.engine_info()
    assert info["engine"] == "numpy" and info["numba"] is None and "not installed" in info["reason"]


# ---------------------------------------------------------------------------------------------------
# powers through numpy's SVML routine (lptheory.fast.svml): numpy.power's bits, within 1 ulp of the exact power

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lptheory.fast import svml as _svml  # noqa: E402

needs_svml = pytest.mark.skipif(not _svml.available(), reason="numpy does not run SVML's pow8_ha on this machine")


@needs_svml
@settings(max_examples=300, deadline=None)
@given(
    binade=st.integers(-1074, 1023),
    frac=st.floats(0.0, 1.0, exclude_max=True),
    e=st.one_of(st.floats(min_value=-4.0, max_value=8.0), st.sampled_from([0.7 / 1.7, 1 / 1.7, 1.7, 1.5, 2 / 3])),
    m=st.integers(1, 19),
)
def test_svml_power_is_numpy_power_within_1_ulp(binade, frac, e, m):
    """Every binade, subnormals included (x = (1 + frac) 2^binade, or frac 2^-1074.. below the normal
    range): the fused engine's power equals numpy.power bit for bit, at any block length (the last
    partial group of 8 padded), and is within 1 ulp of the exact power (mpmath, 200 bits) wherever the
    result is finite and non-zero."""
    import mpmath

    x0 = math.ldexp(1.0 + frac, binade) if binade >= -1022 else math.ldexp(frac, -1022)
    if not math.isfinite(x0):
        x0 = math.ldexp(1.0 + frac, 1022)
    x = np.full(m, x0)
    x[::2] = np.nextafter(x0, np.inf)
    out = np.empty(m)
    _svml.pow_block(x, 0, float(e), out, m, np.empty(16))
    with np.errstate(all="ignore"):
        ref = np.power(x, float(e))
    assert np.array_equal(out.view(np.int64), ref.view(np.int64)) or not _svml.agrees(float(e)), (x0, e)
    for xi, got in zip(x[:2], out[:2]):
        with mpmath.workprec(200):
            exact = mpmath.mpf(float(xi)) ** mpmath.mpf(float(e))
            if (
                got == 0.0
                or not math.isfinite(got)
                or not (mpmath.mpf(5e-324) <= exact < mpmath.mpf(1.7976931348623157e308))
            ):
                continue
            ulp = mpmath.mpf(float(np.spacing(float(exact))))
            assert abs(mpmath.mpf(float(got)) - exact) <= ulp, (xi, e, got)


@needs_svml
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.5, 2.7, 5.0])
def test_svml_one_pass_and_numpy_power_path_same_bits(p, dtype, monkeypatch, rng):
    """The one-pass kernel (SVML powers in blocks) and the older path (numpy.power between loops on
    chunks) give the same bits; numpy takes another route at some exponents (0.5 here), which
    agrees() detects, and the engine then keeps numpy.power."""
    opt = O.StaceyPP(p=p, lr=1e-2, weight_decay=0.1)
    theta = (rng.standard_normal((3, 1000 + 5)) * np.exp(rng.uniform(-30, 30, (3, 1005)))).astype(dtype)
    grads = [rng.standard_normal(theta.shape).astype(dtype) for _ in range(3)]
    outs = []
    for use in (True, False):
        monkeypatch.setattr(_fused, "USE_SVML", use)
        th, stt = theta, opt.init(theta)
        for g in grads:
            th, stt = opt.step(th, g, stt)
        outs.append((th, stt))
    _assert_same(outs[0][0], outs[1][0], "theta")
    for k in opt.buffers:
        _assert_same(outs[0][1][k], outs[1][1][k], k)
    assert _svml.agrees(0.7 / 1.7, np.dtype(dtype).name)
    assert _svml.agrees(0.5) == _svml._probe(0.5) and _svml.available("float32") == _svml._probe(2.7, "float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.7, 5.5])
def test_lazy_power_of_the_dual_state_same_bits(p, dtype, rng):
    """StaceyPP's dual state needs the power |z|^{p-2} only where y = eps / (|v|^a + eps) exceeds the series'
    threshold (|v| tiny against eps): the one-pass kernel skips it on blocks where no element needs it. With
    such elements scattered over a few blocks (and none in others) the bits equal the reference engine's,
    and the selected elements are the powers (a planted series-only result would differ there)."""
    from lptheory import _kernels

    opt = O.StaceyPP(p=p, lr=0.1, alpha=0.05, tau=0.2, eps=1e-3)
    bl = _fused.block(dtype)
    n = 8 * bl + 37
    theta = rng.standard_normal(n).astype(dtype)
    grad = rng.standard_normal(n).astype(dtype)
    state = opt.init(theta)
    w = state["w"]
    idx = np.r_[3, 5, bl + 7, 5 * bl + 1, n - 2]
    w[idx] = 0.0
    grad[idx] = 1e-30
    _, thr = _kernels.binomial_series(p - 1.0)
    for step in range(2):
        ref_t, ref_s = _reference_step(opt, theta, grad, state, step)
        got_t, got_s = _fused_step(opt, theta, grad, state, step, threads=1)
        _assert_same(got_t, ref_t, f"theta step {step}")
        _assert_same(got_s["w"], ref_s["w"], f"w step {step}")
        if step == 0 and dtype == np.float64:  # at idx the fallback was taken: w = |z_1|^{p-2} z_1 (Alg. 2 line 6)
            from tests import transcriptions as T

            z0 = opt.z_of(state).astype(np.float64)
            kw = dict(p=p, eta=0.1, alpha=0.05, tau=0.2, beta1=0.9, beta2=0.999, eps=1e-3, lam=0.0)
            _, z1, _ = T.stacey(theta.astype(np.float64), grad.astype(np.float64), z0, np.zeros(n), **kw,
                                variant="pp", mode="paper")  # fmt: skip
            want = (np.abs(z1) ** (p - 2) * z1)[idx]
            assert np.all(want != 0.0) and thr < 0.0625
            np.testing.assert_allclose(ref_s["w"][idx], want, rtol=1e-4)
        theta, state = ref_t, ref_s


_SHORT = [c for c in CONFIGS if getattr(c, "p", 2.7) in (2.7, 3.0, 4.0)] + [
    O.StaceyP2(p=4.0, lr=0.1, alpha=0.05, tau=0.3, eps=0.0, weight_decay=0.0, beta1=0.0, beta2=0.0),
    O.StaceyPP(p=4.0, lr=0.1, alpha=0.05, tau=0.3, eps=0.0, weight_decay=0.0, beta1=0.9, beta2=0.99),
]


def _some_slow(configs, keep) -> list:
    """``configs`` as parameters (ids by :func:`_ids`), those whose index is not in ``keep`` marked slow."""
    return [pytest.param(c, id=_ids(c), marks=() if i in keep else pytest.mark.slow) for i, c in enumerate(configs)]


# Each configuration compiles its kernels (in place, out of place, read-only theta: ~0.3 s each cold). In the default
# run the routes are checked on one configuration per optimizer class, p = 4 (plans of several parts, both eps
# modes) and eps = 0; the other configurations run with the slow tests (CI runs both). Their kernels' bits against
# the reference engine stay in the default run: test_fused_bits_equal_reference (every configuration of CONFIGS).
_SHORT_DEFAULT = {0, 2, 11, 12, 14, 15, 16, 18, 19, 21, 23, 24, 25}


@pytest.mark.parametrize("opt", _some_slow(_SHORT, _SHORT_DEFAULT))
def test_small_array_short_path_same_bits(opt, rng):
    """ElementwiseOptimizer.step's short path (arrays of the last validated shape and dtype: checks reduced
    to identity and shape comparisons, the fused kernel called directly, donated buffers written in place)
    gives the bits of the checked path; a new shape, a wrong shape or dtype still goes through the checks.
    At p = 4 the Stacey kernels are plans of several parts (cube roots between fused loops) where numpy's SVML
    cube root is not available: the short path runs them too (``_run_plan``), with the bits of the engine's
    chunked ``_run_range``."""
    theta0 = rng.standard_normal((1, 129))
    grads = [rng.standard_normal(theta0.shape) for _ in range(6)]
    runs = []
    for short in (True, False):
        for donate in (True, False):
            o = dataclasses_replace(opt)
            if not short:  # every step through the checks
                fast_slot(o).checked_only = True
            th, st = theta0.copy(), o.init(theta0)
            for g in grads:
                th, st = o.step(th, g, st, donate=donate)
            assert (fast_slot(o).direct is not None) == short
            if short and isinstance(o, (O.StaceyP2, O.StaceyPP)) and o.p == 4.0:
                spec = fast_slot(o).direct[2]
                # a plan, or the one-pass kernel with numpy's SVML cube root (tests/test_svml_cbrt.py runs the
                # plan with that route switched off)
                assert spec is not None and (spec[3] == () if svml_cbrt.available() else spec[0] is None)
            runs.append((th, st))
    for th, st in runs[1:]:
        _assert_same(th, runs[0][0], "theta")
        for k in opt.buffers:
            _assert_same(st[k], runs[0][1][k], k)
    o = dataclasses_replace(opt)
    th, st = o.step(theta0, grads[0], o.init(theta0))
    th, st = o.step(th, grads[1], st)
    with pytest.raises(ValueError, match="grad must have theta's shape"):
        o.step(th, grads[2][:, :5], st)
    with pytest.raises(TypeError, match="dtype"):
        o.step(th, grads[2].astype(np.float32), st)
    th3 = np.ones((3, 4))
    th3, st3 = o.step(th3, th3, o.init(th3))  # a new shape: checked, then the short path for it
    assert th3.shape == (3, 4) and fast_slot(o).sig[0] == (3, 4)


def dataclasses_replace(opt):
    import dataclasses

    return dataclasses.replace(opt)


@pytest.mark.parametrize("engine", ["fused", "numpy"])
@pytest.mark.parametrize("n", [129, 3 * (1 << 17) + 5])
def test_nonfinite_gradients_are_counted_in_the_step(engine, n, monkeypatch):
    """The non-finite check of a step is counted by the fused kernels while they read the gradient (no
    extra pass), on the worker threads for large arrays (a NaN in the last part is seen); the reference
    engine counts it with its summing pass. A finite gradient whose sum overflows is not counted."""
    import warnings

    monkeypatch.setenv("LPTHEORY_THREADS", "2")
    if engine == "numpy":
        monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    for opt in (O.StaceyPP(p=2.7, lr=1e-3), O.AdamW(lr=1e-3)):
        theta = np.ones(n)
        good = np.full(n, 0.5)
        big = np.full(n, 1e308)
        bad = good.copy()
        bad[-1] = np.nan
        st = opt.init(theta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for g in (good, big, bad, good, bad):
                theta, st = opt.step(theta, g, st, donate=True)
        assert O.nonfinite_steps(opt) == 2


def test_scheduled_p_runs_fused_with_the_reference_bits(rng, monkeypatch):
    """A schedule for p (any numeric hyper-parameter may be one): the fused engine's kernel key replaces it
    by 0.0 without validating (0.0 is outside p's range; the value is passed at every step), and the
    steps give the reference engine's bits."""
    opt = O.StaceyPP(p=lambda t: 2.5 + 0.1 * t, lr=0.05, alpha=0.05, tau=0.2)
    theta0 = rng.standard_normal((2, 300))
    grads = [rng.standard_normal(theta0.shape) for _ in range(4)]
    outs = []
    for engine in ("fused", "numpy"):
        if engine == "numpy":
            monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
        th, st = theta0, opt.init(theta0)
        for g in grads:
            th, st = opt.step(th, g, st)
        outs.append((th, st))
    _assert_same(outs[0][0], outs[1][0], "theta")
    _assert_same(outs[0][1]["w"], outs[1][1]["w"], "w")


WATCHED = [
    O.StaceyPP(p=3.0, lr=0.1, alpha=0.05, tau=0.2),
    O.StaceyPP(p=2.7, lr=0.1, eps=0.0),
    O.StaceyP2(p=2.5, lr=0.1, alpha=0.05, tau=0.2, eps_mode="official"),
    O.LpDescent(p=4.0, lr=0.1),
    O.AdamW(lr=0.1),
    O.SGD(lr=0.1, nesterov=True, weight_decay=0.1),
]


def _run_counting(opt, h, theta, grad, state, threads):
    outs = [np.empty_like(theta) for _ in range(1 + len(opt.buffers))]
    arrays = opt.named(theta, grad, [state[k] for k in opt.buffers], outs)
    with np.errstate(all="ignore"):
        nf = _fused.run(opt, h, arrays, threads, count_nonfinite=True)
    return nf, outs


@pytest.mark.parametrize("svml", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opt", WATCHED, ids=_ids)
def test_watch_new_theta_counts_nonfinite_outputs_same_bits(opt, dtype, svml, rng, monkeypatch):
    """Inside ``watch_new_theta`` the kernels count the non-finite entries of the new parameters they store
    (one fused loop, the one-pass SVML kernel, loops between numpy powers; one thread and several): the
    count is that of the output, the outputs and the count of non-finite gradient entries are those of the
    plain kernels; without the block nothing is counted; a rule the fused engine does not run leaves None."""
    monkeypatch.setattr(_fused, "USE_SVML", svml)
    big = np.finfo(dtype).max
    for shape, threads in (((3, 41), 1), ((2, (1 << 17) + 37), 2)):
        theta, grad = _inputs(rng, shape, dtype)
        ft, fg = theta.reshape(-1), grad.reshape(-1)
        ft[-5:] = [np.inf, -np.inf, np.nan, big, -big]  # overflow next to the largest values for most rules
        fg[-5:] = [1.0, 2.0, 3.0, -big, big]
        fg[20] = np.nan
        ft[shape[1] + 3] = big
        fg[shape[1] + 3] = -big
        state = {k: np.zeros_like(theta) for k in opt.buffers}
        h = opt.scalars(1)

        nf, outs = _run_counting(opt, h, theta, grad, state, threads)
        with _fused.watch_new_theta() as watched:
            nf_w, outs_w = _run_counting(opt, h, theta, grad, state, threads)
        bad = int(np.count_nonzero(~np.isfinite(outs_w[0])))
        assert nf_w == nf == int(np.count_nonzero(~np.isfinite(grad))) and bad >= 3
        assert watched == [bad]
        for a, b in zip(outs, outs_w):
            _assert_same(b, a, "watched kernel")
    with _fused.watch_new_theta() as watched:  # float16: not fused, the caller checks itself
        t16 = np.ones(4, np.float16)
        assert not _fused.run(
            opt,
            h,
            opt.named(t16, t16, [t16 for _ in opt.buffers], [t16.copy()] * (1 + len(opt.buffers))),
            1,
            count_nonfinite=True,
        )
    assert watched == [None]


@pytest.mark.parametrize("cls", [O.StaceyP2, O.StaceyPP])
def test_stacey_kernel_scalars_one_kernel_same_bits(cls, rng, monkeypatch):
    """Stacey's alpha, tau, beta1, beta2 are runtime scalars of the fused kernels (``kernel_scalars``):
    configurations that differ only there share one compiled kernel, and each one's steps have the bits of
    the reference engine (``LPTHEORY_ENGINE=numpy``), momentum off (beta = 0) and on."""
    grid = [
        dict(alpha=0.05, tau=0.2, beta1=0.9, beta2=0.999),
        dict(alpha=0.7, tau=0.05, beta1=0.0, beta2=0.0),
        dict(alpha=1e-3, tau=1.0, beta1=0.5, beta2=0.25),
    ]
    theta0 = rng.standard_normal(300)
    grads = [rng.standard_normal(300) for _ in range(4)]
    kernels = set()
    for hp in grid:
        opt = cls(p=4.0, lr=0.1, eps=0.0, **hp)
        arrays = opt.named(theta0, grads[0], [theta0] * 2, [np.empty(300)] * 3)
        kernels.add(id(_fused._kernel(opt, opt.scalars(0), arrays, np.float64)))
        runs = []
        for engine in ("numpy", None):
            if engine:
                monkeypatch.setenv("LPTHEORY_ENGINE", engine)
            else:
                monkeypatch.delenv("LPTHEORY_ENGINE")
            th, st = theta0.copy(), opt.init(theta0)
            for g in grads:
                th, st = opt.step(th, g, st)
            runs.append((th, st))
        _assert_same(runs[1][0], runs[0][0], f"theta {hp}")
        for k in opt.buffers:
            _assert_same(runs[1][1][k], runs[0][1][k], f"{k} {hp}")
    assert len(kernels) == 1


_BOUND = [
    *_SHORT,
    O.StaceyPP(p=6.0, lr=0.1, alpha=0.05, tau=0.3, eps=0.0, weight_decay=0.0, beta1=0.9, beta2=0.99),
    O.StaceyP2(p=6.0, lr=0.1, alpha=0.05, tau=0.3, eps=0.0, weight_decay=0.0, beta1=0.0, beta2=0.0),
    O.StaceyPP(p=3.0, lr=S.CosineWarmup(0.1, 20, warmup=3), alpha=0.05, tau=0.2),  # scalars per step
]


def _bits(a):
    return a.view(np.int64 if a.dtype == np.float64 else np.int32)


# the bound route on one configuration per optimizer class, p = 6 and a schedule by default (see _SHORT_DEFAULT)
_BOUND_DEFAULT = {0, 2, 11, 16, 18, 19, 21, 23, len(_SHORT), len(_SHORT) + 1, len(_SHORT) + 2}


@pytest.mark.parametrize("opt", _some_slow(_BOUND, _BOUND_DEFAULT))
def test_bound_kernel_same_bits(opt, rng, monkeypatch):
    """A simulator's loop (the same theta, gradient and state arrays at every step, donated): from the
    third step the kernel is bound to those arrays (lptheory.fast.step.bind, _fused.run_bound),
    with the bits of the checked path at every step (int views compared), the non-finite gradient counted
    once; a state buffer replaced, a read-only theta or the reference engine switched on mid-run take the
    unbound paths with the same bits."""
    theta0 = rng.standard_normal((2, 65))
    grads = [rng.standard_normal(theta0.shape) for _ in range(9)]
    grads[5][1, 7] = np.nan  # a non-finite gradient at a bound step
    calls = []
    real = _fused.run_bound
    monkeypatch.setattr(_fused, "run_bound", lambda *a: calls.append(1) or real(*a))

    ref = dataclasses_replace(opt)
    fast_slot(ref).checked_only = True  # every step through the checks
    th_r, st_r = theta0.copy(), ref.init(theta0)
    o = dataclasses_replace(opt)
    th, gbuf = theta0.copy(), np.empty_like(theta0)
    st = o.init(th)
    with pytest.warns(O.NonFiniteGradientWarning):
        for i, g in enumerate(grads):
            if i == 6:
                st = {**st, "step": st["step"]}  # a new dict with the same buffers: still bound
            np.copyto(gbuf, g)
            th_r, st_r = ref.step(th_r, g, st_r)
            th, st = o.step(th, gbuf, st, donate=True)
            assert np.array_equal(_bits(th), _bits(th_r)), i
            for k in opt.buffers:
                assert np.array_equal(_bits(st[k]), _bits(st_r[k])), (i, k)
    # step 0 checked, step 1 short (arrays seen), step 2 short and bound, then bound
    assert fast_slot(o).bound is not None and len(calls) == len(grads) - 3
    assert O.nonfinite_steps(o) == O.nonfinite_steps(ref) == 1

    def more():
        nonlocal th, st, th_r, st_r
        n0 = len(calls)
        g = rng.standard_normal(theta0.shape)
        np.copyto(gbuf, g)
        th_r, st_r = ref.step(th_r, g, st_r)
        th, st = o.step(th, gbuf, st, donate=True)
        assert np.array_equal(_bits(th), _bits(th_r))
        for k in opt.buffers:
            assert np.array_equal(_bits(st[k]), _bits(st_r[k])), k
        return len(calls) - n0

    assert more() == 1
    if opt.buffers:
        k0 = opt.buffers[0]
        st = {**st, k0: st[k0].copy()}  # a buffer that is not the bound one
        assert more() == 0  # the short path, bound again to the new buffer (theta, grad already seen)
        assert more() == 1
    monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")
    assert more() == 1  # asked, answered None: the reference engine ran
    monkeypatch.delenv("LPTHEORY_ENGINE")
    assert more() == 1
    frozen = th
    frozen.flags.writeable = False  # not written in place: a new theta, the same bits
    assert more() == 0
    assert th is not frozen


def test_bound_kernel_rebinds_at_most(rng):
    """Steps alternating between two sets of arrays (e.g. threads sharing one optimizer) rebind the kernel at
    most BIND_LIMIT times, then take the unbound short path, with the same bits."""
    opt = O.StaceyPP(p=3.0, lr=0.1, alpha=0.05, tau=0.3)
    o, ref = dataclasses_replace(opt), dataclasses_replace(opt)
    sets = []
    for _ in range(2):
        th = rng.standard_normal((1, 33))
        sets.append([th, np.empty_like(th), o.init(th), th.copy(), ref.init(th)])
    for i in range(4 * BIND_LIMIT):
        s = sets[(i // 2) % 2]  # two steps on each set in turn: every switch binds again
        g = rng.standard_normal(s[0].shape)
        np.copyto(s[1], g)
        s[0], s[2] = o.step(s[0], s[1], s[2], donate=True)
        s[3], s[4] = ref.step(s[3], g, s[4])
        assert np.array_equal(_bits(s[0]), _bits(s[3]))
    assert fast_slot(o).binds > BIND_LIMIT and fast_slot(o).bound is None


def test_svml_probe_values_with_denormals_flushed():
    """The SVML probe's values span every binade from the smallest subnormal's exponent, computed from the
    type's integers: with flush-to-zero on (``torch.set_flush_denormal(True)``, which makes log2 of a
    subnormal -inf) they are built all the same, as many and of the same binades (their subnormals flushed)."""
    torch = pytest.importorskip("torch")
    from lptheory.fast import svml as _svml

    ref = {dt: _svml._values(dt) for dt in ("float64", "float32")}
    if not torch.set_flush_denormal(True):
        pytest.skip("flush-to-zero not supported on this CPU")
    try:
        got = {dt: _svml._values(dt) for dt in ("float64", "float32")}
    finally:
        torch.set_flush_denormal(False)
    for dt in ref:
        tiny = np.finfo(dt).tiny
        assert got[dt].dtype == ref[dt].dtype and got[dt].size == ref[dt].size
        normal = ~(np.abs(ref[dt]) < tiny)  # normal numbers, infinities, NaN: unchanged
        assert np.array_equal(ref[dt][normal], got[dt][normal], equal_nan=True)
        assert not np.any(got[dt][~normal])  # the subnormals, flushed to (signed) zero


def test_the_kernel_cache_keeps_the_most_recently_used_modules(tmp_path, monkeypatch):
    """LPTHEORY_KERNEL_CACHE_MAX=3: writing a 4th and 5th module removes the least recently used ones (a load
    renews a module's time) with their bytecode and numba files; a removed module is written again when it
    is asked for, and its function still runs."""
    import os
    import time

    from lptheory.fast import fused as _fused

    if not _fused.available():
        pytest.skip("numba not installed")
    monkeypatch.setenv("LPTHEORY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LPTHEORY_KERNEL_CACHE_MAX", "3")
    src = "import numba\n\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + {}\n"
    stem = {}

    clock = [time.time() - 1000.0]

    def load(i):
        mod = _fused._module(src.format(i))
        assert mod.f(1.0) == 1.0 + i  # compiled: numba's index and code written to __pycache__
        stem[i] = mod.__name__
        clock[0] += 10.0  # distinct modification times, whatever the file system's resolution
        os.utime(tmp_path / f"{mod.__name__}.py", (clock[0], clock[0]))
        return mod

    for i in range(3):
        load(i)
    load(0)  # used again: now the most recent
    load(3)
    load(4)
    kept = sorted(f[:-3] for f in os.listdir(tmp_path) if f.endswith(".py"))
    assert kept == sorted([stem[0], stem[3], stem[4]]), kept
    cached = os.listdir(tmp_path / "__pycache__")
    assert cached and {f.split(".", 1)[0] for f in cached} <= set(kept), cached
    assert any(f.endswith(".nbi") for f in cached)
    dead = tmp_path / "lptheory_fused_0123456789abcdef0123.py.4242.tmp"  # a killed writer's, two hours old
    dead.write_text("")
    os.utime(dead, (time.time() - 7200.0, time.time() - 7200.0))
    fresh = tmp_path / "lptheory_fused_0123456789abcdef0124.py.4243.tmp"  # a live writer's: kept
    fresh.write_text("")
    orphan = tmp_path / "__pycache__" / "lptheory_fused_0123456789abcdef0123.f-4.py311.nbi"
    orphan.write_bytes(b"")  # numba's file of a module another process removed while it held it
    load(1)  # removed earlier: written again, runs
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".py")]) == 3
    assert not orphan.exists() and not dead.exists() and fresh.exists()
    monkeypatch.setenv("LPTHEORY_KERNEL_CACHE_MAX", "0")
    with pytest.raises(ValueError, match="LPTHEORY_KERNEL_CACHE_MAX must be a positive integer"):
        _fused.cache_max()
    with pytest.raises(ValueError, match="LPTHEORY_KERNEL_CACHE_MAX"):
        _fused._module(src.format(1))  # a module already on disk: the setting is checked all the same


def test_no_float64_only_block_constant():
    """The one-pass kernel's block depends on the dtype (``block(cast)``: 64 float64, 128 float32); the old
    module constant ``BLOCK`` (the float64 value) was unused and misleading for float32, and is gone."""
    assert not hasattr(_fused, "BLOCK")
    assert _fused.block("float64") == 64 and _fused.block("float32") == 128
