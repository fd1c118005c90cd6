import math

import numpy as np
import pytest

from lptheory import optimizers as O
from lptheory import schedules as S
from tests import transcriptions as T

RTOL = 1e-11


def _traj(opt, theta, grads, donate=False):
    state = opt.init(theta)
    out = [theta]
    for g in grads:
        theta, state = opt.step(theta, g, state, donate=donate)
        out.append(theta)
    return out, state


def _grads(rng, shape, n=6, scale=1.0):
    return [scale * rng.standard_normal(shape) for _ in range(n)]


@pytest.mark.parametrize("p", [1.5, 2.0, 2.5, 3.0, 4.0, 7.0, math.inf])
def test_lp_descent_matches_alg3(p, rng):
    theta0 = rng.standard_normal((3, 17))
    grads = _grads(rng, theta0.shape)
    opt = O.LpDescent(p=p, lr=0.05)
    traj, _ = _traj(opt, theta0, grads)
    th = theta0
    for g, got in zip(grads, traj[1:]):
        th = T.lp_descent(th, g, p, 0.05)
        np.testing.assert_allclose(got, th, rtol=RTOL)


def test_lp_descent_inf_is_signsgd(rng):
    theta0 = rng.standard_normal((2, 9))
    grads = _grads(rng, theta0.shape)
    grads[0][0, :3] = 0.0
    a, _ = _traj(O.LpDescent(p=math.inf, lr=0.1), theta0, grads)
    b, _ = _traj(O.SignSGD(lr=0.1), theta0, grads)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


STACEY_CASES = [
    dict(p=2.0),
    dict(p=2.5),
    dict(p=2.7),
    dict(p=3.0),
    dict(p=4.0),
    dict(p=6.0),
    dict(p=3.0, weight_decay=0.05),
    dict(p=2.8, tau=0.0),
    dict(p=3.5, tau=1.0, beta1=0.0, beta2=0.0),
]


# Every case runs on the reference numpy engine (the rule itself; no compilation) in the default run, and on the
# fused engine (numba kernels: one compilation per p, eps, mode and class, ~0.3 s each cold) for the cases below:
# p = 2.7 (the SVML power inside one pass), p = 4 (cube roots between fused loops) and tau = 1 with beta = 0; the
# other fused cases run with the slow tests (CI runs both). test_fused.py::test_fused_bits_equal_reference ties
# the fused engine to the reference bits in the default run.
_FUSED_DEFAULT_CASES = (2, 4, 8)


def _use_engine(engine: str, monkeypatch) -> None:
    """``numpy``: the reference engine forced (``LPTHEORY_ENGINE=numpy``); ``fused``: the environment's engine."""
    if engine == "numpy":
        monkeypatch.setenv("LPTHEORY_ENGINE", "numpy")


def _engine_params(values, ids, fused_default) -> list:
    """``(value, engine)`` parameters: each value on the reference engine, and on the fused engine marked slow
    unless ``fused_default(index)``."""
    out = []
    for i, (v, name) in enumerate(zip(values, ids)):
        out.append(pytest.param(v, "numpy", id=f"{name}-numpy"))
        out.append(pytest.param(v, "fused", id=f"{name}-fused", marks=() if fused_default(i) else pytest.mark.slow))
    return out


_PSEUDOCODE = _engine_params(
    STACEY_CASES, [f"case{i}" for i in range(len(STACEY_CASES))], lambda i: i in _FUSED_DEFAULT_CASES
)


@pytest.mark.parametrize("variant,cls", [("p2", O.StaceyP2), ("pp", O.StaceyPP)])
@pytest.mark.parametrize("case,engine", _PSEUDOCODE)
@pytest.mark.parametrize("mode", ["paper", "official"])
@pytest.mark.parametrize("z_init", ["params", "zero"])
def test_stacey_matches_pseudocode(variant, cls, case, engine, mode, z_init, rng, monkeypatch):
    _use_engine(engine, monkeypatch)
    hp = dict(lr=0.03, alpha=0.07, tau=0.2, beta1=0.9, beta2=0.95, eps=1e-3, weight_decay=0.0)
    hp.update(case)
    opt = cls(eps_mode=mode, z_init=z_init, **hp)
    theta0 = rng.standard_normal((4, 23))
    grads = _grads(rng, theta0.shape, n=8)
    traj, state = _traj(opt, theta0, grads)
    th, z, m = theta0, (theta0.copy() if z_init == "params" else np.zeros_like(theta0)), np.zeros_like(theta0)
    for g, got in zip(grads, traj[1:]):
        th, z, m = T.stacey(
            th,
            g,
            z,
            m,
            p=hp["p"],
            eta=hp["lr"],
            alpha=hp["alpha"],
            tau=hp["tau"],
            beta1=hp["beta1"],
            beta2=hp["beta2"],
            eps=hp["eps"],
            lam=hp["weight_decay"],
            variant=variant,
            mode=mode,
        )
        np.testing.assert_allclose(got, th, rtol=RTOL, atol=1e-13)
    np.testing.assert_allclose(opt.z_of(state), z, rtol=RTOL, atol=1e-13)
    np.testing.assert_allclose(state["m"], m, rtol=RTOL, atol=1e-15)
    assert state["step"] == len(grads)


def test_stacey_p2_inf(rng):
    opt = O.StaceyP2(p=math.inf, lr=0.1, alpha=0.1, tau=0.3, eps=1e-2)
    theta0 = rng.standard_normal((2, 5))
    grads = _grads(rng, theta0.shape, n=3)
    traj, _ = _traj(opt, theta0, grads)
    th, z, m = theta0, theta0.copy(), np.zeros_like(theta0)
    for g, got in zip(grads, traj[1:]):
        th, z, m = T.stacey(
            th,
            g,
            z,
            m,
            p=math.inf,
            eta=0.1,
            alpha=0.1,
            tau=0.3,
            beta1=0.9,
            beta2=0.999,
            eps=1e-2,
            lam=0.0,
            variant="p2",
            mode="paper",
        )
        np.testing.assert_allclose(got, th, rtol=RTOL)


@pytest.mark.parametrize(
    "planted",
    [
        dict(mode="official"),  # wrong eps form
        dict(variant="p2"),  # Euclidean instead of l_p^p mirror step
        dict(swap_betas=True),  # beta1 and beta2 exchanged
        dict(z0="zero"),  # other initialization
    ],
)
def test_planted_bugs_are_caught(planted, rng):
    """The comparison used above must detect each plausible transcription error."""
    hp = dict(p=3.0, eta=0.03, alpha=0.07, tau=0.2, beta1=0.9, beta2=0.5, eps=1e-2, lam=0.0)
    opt = O.StaceyPP(lr=0.03, alpha=0.07, tau=0.2, beta1=0.9, beta2=0.5, eps=1e-2, p=3.0)
    theta0 = rng.standard_normal((2, 11))
    grads = _grads(rng, theta0.shape, n=4)
    traj, _ = _traj(opt, theta0, grads)
    th = theta0
    z = np.zeros_like(theta0) if planted.get("z0") == "zero" else theta0.copy()
    m = np.zeros_like(theta0)
    if planted.get("swap_betas"):
        hp["beta1"], hp["beta2"] = hp["beta2"], hp["beta1"]
    for g in grads:
        th, z, m = T.stacey(th, g, z, m, variant=planted.get("variant", "pp"), mode=planted.get("mode", "paper"), **hp)
    assert not np.allclose(traj[-1], th, rtol=RTOL, atol=1e-13)


@pytest.mark.parametrize("decoupled,cls", [(True, O.AdamW), (False, O.Adam)])
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adam_family_matches_paper(decoupled, cls, wd, rng):
    opt = cls(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=wd)
    theta0 = rng.standard_normal((3, 8))
    grads = _grads(rng, theta0.shape, n=7)
    traj, _ = _traj(opt, theta0, grads)
    th, m, v = theta0, np.zeros_like(theta0), np.zeros_like(theta0)
    for t, (g, got) in enumerate(zip(grads, traj[1:]), start=1):
        th, m, v = T.adam(th, g, m, v, t, lr=0.01, beta1=0.8, beta2=0.99, eps=1e-6, wd=wd, decoupled=decoupled)
        np.testing.assert_allclose(got, th, rtol=RTOL)


@pytest.mark.parametrize("wd", [0.0, 0.3])
def test_lion_matches_paper(wd, rng):
    opt = O.Lion(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=wd)
    theta0 = rng.standard_normal((3, 8))
    grads = _grads(rng, theta0.shape)
    traj, _ = _traj(opt, theta0, grads)
    th, m = theta0, np.zeros_like(theta0)
    for g, got in zip(grads, traj[1:]):
        th, m = T.lion(th, g, m, lr=0.01, beta1=0.9, beta2=0.99, wd=wd)
        np.testing.assert_allclose(got, th, rtol=RTOL)


@pytest.mark.parametrize("mu,wd,nesterov", [(0.0, 0.0, False), (0.9, 0.0, False), (0.9, 0.01, True)])
def test_sgd_matches(mu, wd, nesterov, rng):
    opt = O.SGD(lr=0.1, momentum=mu, weight_decay=wd, nesterov=nesterov)
    theta0 = rng.standard_normal((3, 8))
    grads = _grads(rng, theta0.shape)
    traj, _ = _traj(opt, theta0, grads)
    th, buf = theta0, np.zeros_like(theta0)
    for g, got in zip(grads, traj[1:]):
        th, buf = T.sgd(th, g, buf, lr=0.1, mu=mu, wd=wd, nesterov=nesterov)
        np.testing.assert_allclose(got, th, rtol=RTOL)


@pytest.mark.parametrize("beta", [0.0, 0.9])
def test_signsgd_matches(beta, rng):
    opt = O.SignSGD(lr=0.1, momentum=beta)
    theta0 = rng.standard_normal((3, 8))
    grads = _grads(rng, theta0.shape)
    traj, _ = _traj(opt, theta0, grads)
    th, m = theta0, np.zeros_like(theta0)
    for g, got in zip(grads, traj[1:]):
        th, m = T.signum(th, g, m, lr=0.1, beta=beta)
        np.testing.assert_allclose(got, th, rtol=RTOL)


ALL = [
    O.LpDescent(p=2.7, lr=0.1),
    O.LpDescent(p=math.inf, lr=0.1),
    O.StaceyP2(p=2.7, lr=0.1, alpha=0.1, tau=0.1),
    O.StaceyPP(p=2.7, lr=0.1, alpha=0.1, tau=0.1),
    O.StaceyPP(p=4.0, lr=0.1, eps_mode="official"),
    O.SGD(lr=0.1),
    O.SignSGD(lr=0.1, momentum=0.5),
    O.Adam(lr=0.1),
    O.AdamW(lr=0.1),
    O.Lion(lr=0.1),
]


@pytest.mark.parametrize("opt", ALL, ids=lambda o: repr(o)[:40])
def test_donate_and_thread_split_give_identical_bits(opt, rng, monkeypatch):
    # large enough to cross many chunks and to be split across threads
    theta0 = rng.standard_normal((3, 150_001))
    grads = _grads(rng, theta0.shape, n=3)
    monkeypatch.setenv("LPTHEORY_THREADS", "1")
    a, sa = _traj(opt, theta0, grads)
    monkeypatch.setenv("LPTHEORY_THREADS", "3")
    b, sb = _traj(opt, theta0.copy(), grads, donate=True)
    np.testing.assert_array_equal(a[-1], b[-1])
    for k in opt.buffers:
        np.testing.assert_array_equal(sa[k], sb[k])


@pytest.mark.parametrize("opt", ALL, ids=lambda o: repr(o)[:40])
def test_inputs_untouched_and_batch_shapes(opt, rng):
    theta = rng.standard_normal((2, 3, 5))
    g = rng.standard_normal((2, 3, 5))
    state = opt.init(theta)
    copies = (theta.copy(), g.copy(), {k: state[k].copy() for k in opt.buffers})
    new, new_state = opt.step(theta, g, state)
    np.testing.assert_array_equal(theta, copies[0])
    np.testing.assert_array_equal(g, copies[1])
    for k in opt.buffers:
        np.testing.assert_array_equal(state[k], copies[2][k])
    assert new.shape == theta.shape
    # each replicate is independent: stepping one slice alone gives the same slice
    one, _ = opt.step(theta[1], g[1], opt.init(theta[1]))
    np.testing.assert_array_equal(one, new[1])
    # non-contiguous input
    tt = np.asfortranarray(theta)
    n2, _ = opt.step(tt, g, opt.init(tt))
    np.testing.assert_array_equal(n2, new)


# The reference engine at every p in the default run; the fused engine (one compilation per p, eps, mode and class)
# at p = 2.5 and 50 there, at the other p with the slow tests (CI runs both)
_NEVER_NAN_P = [2.0, 2.5, 3.0, 4.0, 50.0]
_NEVER_NAN = _engine_params(_NEVER_NAN_P, _NEVER_NAN_P, lambda i: _NEVER_NAN_P[i] in (2.5, 50.0))


@pytest.mark.parametrize("p,engine", _NEVER_NAN)
@pytest.mark.parametrize("eps", [0.0, 1e-300, 1e-8])
@pytest.mark.parametrize("mode", ["paper", "official"])
@pytest.mark.parametrize("cls", [O.StaceyP2, O.StaceyPP])
def test_zero_and_subnormal_gradients_never_nan(p, engine, eps, mode, cls, monkeypatch):
    _use_engine(engine, monkeypatch)
    theta = np.array([[0.0, 1.0, -2.0, 5e-324, 0.0, 1e-310]])
    g = np.array([[0.0, 0.0, 5e-324, -5e-324, 1e-310, 0.0]])
    for z_init in ["params", "zero"]:
        opt = cls(p=p, eps=eps, eps_mode=mode, z_init=z_init, lr=0.1, alpha=0.1, tau=0.5)
        th, st = theta, opt.init(theta)
        for _ in range(3):
            th, st = opt.step(th, g, st)
            assert np.all(np.isfinite(th)) and np.all(np.isfinite(opt.z_of(st)))


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0, math.inf])
def test_lp_descent_zero_gradient(p):
    th, _ = O.LpDescent(p=p, lr=1.0).step(np.ones((1, 3)), np.array([[0.0, 5e-324, -0.0]]), {"step": 0})
    assert np.all(np.isfinite(th))


BAD = [
    (O.LpDescent, dict(p=1.0), "p must"),
    (O.LpDescent, dict(p=float("nan")), "p must"),
    (O.LpDescent, dict(p=0.5), "p must"),
    (O.StaceyP2, dict(p=1.9), "p must"),
    (O.StaceyPP, dict(p=math.inf), "p must be finite"),
    (O.StaceyPP, dict(lr=-1.0), "lr must"),
    (O.StaceyP2, dict(tau=1.5), "tau must"),
    (O.StaceyP2, dict(tau=-0.1), "tau must"),
    (O.StaceyP2, dict(beta1=1.0), "beta1 must"),
    (O.StaceyPP, dict(beta2=-0.1), "beta2 must"),
    (O.StaceyPP, dict(eps=-1e-8), "eps must"),
    (O.StaceyPP, dict(weight_decay=-1.0), "weight_decay must"),
    (O.StaceyPP, dict(eps_mode="torch"), "eps_mode must"),
    (O.StaceyPP, dict(z_init="ones"), "z_init must"),
    (O.AdamW, dict(beta2=1.0), "beta2 must"),
    (O.SGD, dict(momentum=-0.5), "momentum must"),
    (O.Lion, dict(lr=float("nan")), "lr must"),
]


@pytest.mark.parametrize("cls,kw,msg", BAD)
def test_bad_hyperparameters_raise(cls, kw, msg):
    with pytest.raises(ValueError, match=msg):
        cls(**kw)


def test_bad_step_inputs():
    opt = O.StaceyPP()
    th = np.zeros((2, 3))
    st = opt.init(th)
    with pytest.raises(ValueError, match="grad must have theta's shape"):
        opt.step(th, np.zeros((2, 4)), st)
    with pytest.raises(TypeError, match="dtype"):
        opt.step(th, np.zeros((2, 3), np.float32), st)
    with pytest.raises(TypeError, match="floating"):
        opt.init(np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="state"):
        opt.step(th, th, {"step": 0})
    with pytest.raises(TypeError):
        opt.step([0.0, 1.0], th, st)
    with pytest.raises(ValueError, match="lr"):
        O.LpDescent(lr=lambda t: -1.0).step(th, th, {"step": 0})
    with pytest.raises(TypeError):
        O.LpDescent(p="3")
    with pytest.raises(ValueError, match="optimizer must be one of"):
        O.make("no-such-optimizer")  # ("adagrad" registers itself where the AdaGrad example is loaded)


def test_schedules():
    c = S.CosineWarmup(lr=1.0, total=110, warmup=10, final_lr=0.1)
    assert c(0) == pytest.approx(0.1) and c(9) == pytest.approx(1.0)
    assert c(10) == pytest.approx(1.0) and c(60) == pytest.approx(0.55) and c(500) == 0.1
    assert all(c(t) >= c(t + 1) for t in range(10, 120))
    eta = S.theorem1_lr(L=4.0, G=8.0, T=100, p=3.0)
    assert eta == pytest.approx(1 / (2.0 * 8.0**0.5 * 10.0))
    assert S.theorem1_lr(1.0, 5.0, 4, math.inf) == 0.5
    opt = O.LpDescent(p=3.0, lr=S.CosineWarmup(lr=0.5, total=3))
    th, st = np.ones((1, 2)), {"step": 0}
    th1, st = opt.step(th, np.ones((1, 2)), st)
    np.testing.assert_allclose(th1, 1 - 0.5)
    with pytest.raises(ValueError, match="warmup"):
        S.CosineWarmup(lr=1.0, total=5, warmup=5)


def test_make_builds_every_optimizer():
    for name, cls in O.OPTIMIZERS.items():
        assert isinstance(O.make(name), cls) and cls.name == name


# ------------------------------------------------------------------------------------------------
# StaceyPP's dual state (state layout 2): the same iterates as the primal state, old states convert
# ------------------------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LD = np.longdouble
_EXTENDED = np.finfo(_LD).eps < np.finfo(np.float64).eps


def _normwise(a, b):
    return float(np.max(np.abs(np.asarray(a, _LD) - np.asarray(b, _LD))) / np.max(np.abs(np.asarray(b, _LD))))


_DUAL_CASES = dict(
    p=st.one_of(st.sampled_from([2.0, 2.5, 2.7, 3.0, 4.0]), st.floats(2.0, 8.0)),
    eps=st.sampled_from([0.0, 1e-8, 1e-3]),
    mode=st.sampled_from(["paper", "official"]),
    scale=st.sampled_from([1.0, 1e-6]),
    seed=st.integers(0, 2**16),
)


@pytest.mark.parametrize(
    "p, eps, mode, scale, seed",
    [
        (2.0, 0.0, "paper", 1e-6, 1),
        (2.7, 1e-8, "official", 1.0, 2),
        (3.0, 1e-3, "paper", 1e-6, 3),
        (6.3, 0.0, "official", 1e-6, 4),
    ],
)
def test_dual_state_iterates_equal_the_primal_iterates(p, eps, mode, scale, seed):
    """The default run's four fixed cases of the property below (the slow run draws 25 more)."""
    _dual_state_iterates_equal_the_primal_iterates(p, eps, mode, scale, seed)


@pytest.mark.slow  # 25 x 60 steps against an extended-precision transcription: about 16 s
@settings(max_examples=25, deadline=None)
@given(**_DUAL_CASES)
def test_dual_state_iterates_equal_the_primal_iterates_drawn(p, eps, mode, scale, seed):
    _dual_state_iterates_equal_the_primal_iterates(p, eps, mode, scale, seed)


def _dual_state_iterates_equal_the_primal_iterates(p, eps, mode, scale, seed):
    """StaceyPP keeps w = |z|^{p-2} z instead of z (Alg. 2 line 6 in dual coordinates): over 60 steps its
    iterates (theta and z recovered by z_of) equal those of Algorithm 2 as printed, with the primal state
    (tests/transcriptions.py), run in extended precision, within 1e-12 normwise or within 64 times the
    float64 transcription's own distance to that reference, whichever is larger; and those of the float64
    transcription within 1e-11. Gradients of mixed magnitudes (every 7th step scaled by 1e-6, and some
    coordinates tiny) reach the series' fallback to the power.

    Why the relative form: the iteration is ill-conditioned where v = w_t - alpha c nearly cancels (the map
    v -> |v|^{1/(p-1)} has an unbounded derivative at 0), so both float64 implementations drift from the
    extended reference by more than their per-step rounding. Over 120 draws (p in [2, 8]) the dual state's
    distance reached 1.3e-12, and hypothesis found 2.1e-12 (p = 5.458, seed 36554, where the float64
    transcription's is 2.9e-13); its ratio to the transcription's stayed <= 27 (median 1.7)."""
    rng = np.random.default_rng(seed)
    hp = dict(lr=0.05, alpha=0.02, tau=0.3, beta1=0.9, beta2=0.99, eps=eps, weight_decay=0.01)
    opt = O.StaceyPP(p=p, eps_mode=mode, **hp)
    theta = rng.standard_normal((3, 40))
    state = opt.init(theta)
    ref = [theta.astype(_LD), theta.astype(_LD), np.zeros(theta.shape, _LD)]
    ref64 = [theta.copy(), theta.copy(), np.zeros_like(theta)]
    kw = dict(p=p, eta=0.05, alpha=0.02, tau=0.3, beta1=0.9, beta2=0.99, eps=eps, lam=0.01, variant="pp", mode=mode)
    worst = worst64 = worst_transcription = 0.0
    for i in range(60):
        g = rng.standard_normal(theta.shape) * (scale if i % 7 == 0 else 1.0)
        g[0, :3] *= 1e-9
        theta, state = opt.step(theta, g, state)
        with np.errstate(all="ignore"):
            ref = list(T.stacey(ref[0], g.astype(_LD), ref[1], ref[2], **kw))
            ref64 = list(T.stacey(ref64[0], g, ref64[1], ref64[2], **kw))
        z = opt.z_of(state)
        worst = max(worst, _normwise(theta, ref[0]), _normwise(z, ref[1]))
        worst64 = max(worst64, _normwise(theta, ref64[0]), _normwise(z, ref64[1]))
        worst_transcription = max(worst_transcription, _normwise(ref64[0], ref[0]), _normwise(ref64[1], ref[1]))
    assert worst64 <= 1e-11, worst64
    if _EXTENDED:
        assert worst <= max(1e-12, 64 * worst_transcription), (worst, worst_transcription)


@pytest.mark.parametrize("p", [2.0, 2.7, 3.0, 4.5])
@pytest.mark.parametrize("mode", ["paper", "official"])
def test_dual_state_init_and_z_of(p, mode):
    """init holds w_0 = |z_0|^{p-2} z_0 (z_0 = theta_0, or 0 with z_init="zero"), and z_of inverts it."""
    theta = np.linspace(-3.0, 2.0, 11)
    for z_init, z0 in (("params", theta), ("zero", np.zeros_like(theta))):
        opt = O.StaceyPP(p=p, eps_mode=mode, z_init=z_init)
        st_ = opt.init(theta)
        assert set(st_) == {"step", "w", "m"}
        np.testing.assert_allclose(st_["w"], np.abs(z0) ** (p - 2) * z0, rtol=1e-15)
        np.testing.assert_allclose(opt.z_of(st_), z0, rtol=1e-14, atol=0.0)


@pytest.mark.parametrize("p", [2.7, 3.0])
def test_state_of_the_primal_layout_loads_and_continues(p, rng):
    """A state of layout 1 (``{"step", "z", "m"}``, StaceyPP before the dual state) is converted at the next
    step (w = |z|^{p-2} z): the run continues as from the equivalent state of layout 2, bit for bit, and
    as the primal-state algorithm would within rounding. StaceyP2 states are not touched."""
    opt = O.StaceyPP(p=p, lr=0.05, alpha=0.1, tau=0.3)
    theta = rng.standard_normal((2, 30))
    z = rng.standard_normal(theta.shape)
    m = 0.1 * rng.standard_normal(theta.shape)
    old = {"step": 4, "z": z, "m": m}
    new = {"step": 4, "w": np.abs(z) ** (p - 2) * z, "m": m}
    a, b, ref = (theta, old), (theta, new), (theta, z, m)
    for _ in range(10):
        g = rng.standard_normal(theta.shape)
        a = opt.step(*a[:1], g, a[1])
        b = opt.step(*b[:1], g, b[1])
        ref = T.stacey(*ref[:1], g, ref[1], ref[2], p=p, eta=0.05, alpha=0.1, tau=0.3, beta1=0.9, beta2=0.999,
                       eps=1e-8, lam=0.0, variant="pp", mode="paper")  # fmt: skip
    np.testing.assert_array_equal(a[0], b[0])
    assert set(a[1]) == {"step", "w", "m"} and a[1]["step"] == 14
    assert _normwise(a[0], ref[0]) < 1e-13 and _normwise(opt.z_of(a[1]), ref[1]) < 1e-13
    assert old == {"step": 4, "z": z, "m": m}  # the caller's dict is not modified
    with pytest.raises(ValueError, match="missing 'w'"):
        opt.step(theta, theta, {"step": 0, "m": m})
    with pytest.raises(ValueError, match="missing 'z'"):
        O.StaceyP2().step(theta, theta, {"step": 0, "w": z, "m": m})


def test_one_reciprocal_for_two_quotients_only_where_safe(rng):
    """At p <= 3 (paper mode) the two quotients of lines 4 and 6 share one reciprocal; with an eps whose
    square underflows (2^-70) or at p > 3 they are two divisions. Both agree with the transcription, and
    huge and tiny inputs give finite iterates (no overflow of d_c d_v, no underflow)."""
    theta = np.array([1e60, -1e60, 1e-300, 3.0, 0.0, 1e-20])
    g = np.array([1e300, -1e300, 1e-310, -2.0, 0.0, 1e20])
    for p, eps in ((3.0, 1e-8), (3.0, 2.0**-70), (2.5, 1e-8), (3.5, 1e-8)):
        opt = O.StaceyPP(p=p, eps=eps, lr=0.1, alpha=0.1, tau=0.5)
        th, st_ = opt.step(theta, g, opt.init(theta))
        assert np.all(np.isfinite(th)) and np.all(np.isfinite(st_["w"]))
        with np.errstate(all="ignore"):
            ref = T.stacey(theta, g, theta, np.zeros_like(theta), p=p, eta=0.1, alpha=0.1, tau=0.5, beta1=0.9,
                           beta2=0.999, eps=eps, lam=0.0, variant="pp", mode="paper")  # fmt: skip
        np.testing.assert_allclose(th, ref[0], rtol=1e-13)


def test_deferred_nonfinite_tallies_instead_of_counting():
    """Inside ``deferred_nonfinite(opt)`` a step of ``opt`` with a NaN/inf gradient adds to the block's tally
    (small and large arrays, in place or not), is neither counted on ``opt`` nor warned about, the update
    itself unchanged; another optimizer's steps and the steps after the block are counted as usual."""
    import warnings

    for d in (7, 1 << 17):
        opt, other = O.StaceyPP(p=3.0, lr=1e-2), O.AdamW(lr=1e-2)
        theta = np.linspace(-1.0, 1.0, 2 * d).reshape(2, d)
        g = np.cos(theta)
        g[1, 3] = np.nan
        with pytest.warns(O.NonFiniteGradientWarning):
            ref_th, ref_st = O.StaceyPP(p=3.0, lr=1e-2).step(theta, g, opt.init(theta))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning inside the block
            with O.deferred_nonfinite(opt) as tally:
                th, st = opt.step(theta, g, opt.init(theta))
                opt.step(theta.copy(), np.cos(theta), opt.init(theta), donate=True)  # finite: not tallied
                opt.step(theta.copy(), g.copy(), opt.init(theta), donate=True)
        assert tally == [2] and O.nonfinite_steps(opt) == 0
        np.testing.assert_array_equal(th, ref_th)  # NaN where the reference has NaN, same bits elsewhere
        assert all(np.array_equal(st[k], ref_st[k], equal_nan=True) for k in opt.buffers)
        with O.deferred_nonfinite(opt), pytest.warns(O.NonFiniteGradientWarning):
            other.step(theta, g, other.init(theta))  # not the deferred optimizer: counted and warned
        assert O.nonfinite_steps(other) == 1
        with pytest.warns(O.NonFiniteGradientWarning):
            opt.step(theta, g, opt.init(theta))  # after the block: counted, warned at the first
        assert O.nonfinite_steps(opt) == 1
