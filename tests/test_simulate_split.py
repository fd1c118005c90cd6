"""The simulator's row-split step (``lptheory.simulate._RowSplit``: oracle, the optimizer's own step and the
finiteness check of each thread's rows in one pool submission, the recorded metrics by rows) against the
whole-array reference path of the same tree: the same bits, the same divergence records, the same count
of non-finite gradient steps, and the thread-safety it relies on."""

import threading
import warnings

import numpy as np
import pytest

import lptheory.simulate as S
from lptheory.fast import pool as _pool
from lptheory.optimizers import SGD, AdamW, NonFiniteGradientWarning, StaceyPP, nonfinite_steps
from lptheory.simulate import Series, StateNorm, replicate_generators, simulate
from synthetic.noise import Gaussian, Rademacher
from synthetic.oracle import GradientOracle
from synthetic.problems import QuadraticDiagonal, SeparableNonconvex

D = 8192  # R * D >= 2^17 for R >= 16: large enough for the split


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("LPTHEORY_THREADS", "2")
    used = []
    real = S._RowSplit.step
    monkeypatch.setattr(S._RowSplit, "step", lambda self, *a: used.append(1) or real(self, *a))
    return used


def _both(monkeypatch, used, make_opt, problem, oracle, *args, **kw):
    """(split trace, reference trace, their nonfinite_steps counts, warnings of each)."""
    out = []
    for split in (True, False):
        if not split:
            monkeypatch.setattr(S._RowSplit, "plan", classmethod(lambda cls, *a: None))
        opt = make_opt()
        used.clear()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tr = simulate(opt, problem, oracle, *args, **{"snapshots": True, **kw})
        out.append((tr, nonfinite_steps(opt), sorted({type(x.message).__name__ for x in w})))
        assert bool(used) == split, "the split path must run (and only) where it is meant to"
    monkeypatch.undo()
    return out


def _same(a, b):
    for name in ("f", "gap", "grad_pstar", "grad_2", "snapshots", "diverged", "diverged_at", "steps"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None and y is None:  # no snapshots
            continue
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    assert a.metrics.keys() == b.metrics.keys()
    for name in a.metrics:
        assert a.metrics[name].tobytes() == b.metrics[name].tobytes(), name
    for name in a.extras:
        for key in a.extras[name]:
            assert np.asarray(a.extras[name][key]).tobytes() == np.asarray(b.extras[name][key]).tobytes()


@pytest.mark.parametrize(
    "case",
    [
        ("stacey-pp rademacher", lambda: StaceyPP(p=3.0, lr=1e-2), "separable", Rademacher, 1, 16),
        ("adamw gaussian", lambda: AdamW(lr=1e-2), "separable", Gaussian, 1, 19),
        ("stacey-pp binomial (per-thread buffers)", lambda: StaceyPP(p=2.7, lr=1e-2), "separable", Rademacher, 3, 17),
        ("sgd quadratic (copied gradients)", lambda: SGD(lr=1e-2), "quadratic", Gaussian, 1, 16),
    ],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("snapshots", [True, False])
def test_split_step_has_the_reference_bits(monkeypatch, two_threads, case, snapshots):
    """Without snapshots (nor observers) the recorded steps' metrics are computed by the parts of the step
    (no round trip of their own: one metrics call, for the last record); with them, before the step."""
    _, make_opt, kind, noise, batch, R = case
    pr = SeparableNonconvex(d=D) if kind == "separable" else QuadraticDiagonal(d=D)
    orc = GradientOracle(pr, noise(np.full(D, 0.2)), batch=batch)
    assert orc.rows_independent
    calls = []
    real = S._RowSplit.metrics
    monkeypatch.setattr(S._RowSplit, "metrics", lambda self, *a: calls.append(1) or real(self, *a))
    (a, na, wa), (b, nb, wb) = _both(
        monkeypatch, two_threads, make_opt, pr, orc, 9, R, seed=4, record_every=4, snapshots=snapshots
    )
    _same(a, b)
    assert na == nb == 0
    assert len(calls) == (4 if snapshots else 1)  # records at t = 0, 4, 8 and T = 9


def test_split_step_with_observers_offset_and_start(monkeypatch, two_threads):
    pr = SeparableNonconvex(d=D)
    orc = GradientOracle(pr, Rademacher(np.full(D, 0.1)))
    obs = lambda: [Series("f_prev", lambda v: v.problem.f(v.theta, v.t)), StateNorm("m", 2.0)]  # noqa: E731
    res = []
    for split in (True, False):
        if not split:
            monkeypatch.setattr(S._RowSplit, "plan", classmethod(lambda cls, *a: None))
        res.append(
            simulate(
                StaceyPP(p=3.0, lr=1e-2),
                pr,
                orc,
                7,
                16,
                seed=2,
                replicate_offset=5,
                theta0=np.ones(D),
                observers=obs(),
                snapshots=True,
                record_every=3,
            )
        )
    _same(*res)


@pytest.mark.parametrize("snapshots", [True, False])  # metrics before the step, or computed by its parts
def test_split_step_divergence_and_nonfinite_gradients(monkeypatch, two_threads, snapshots):
    """Replicates that blow up (inf parameters, then NaN gradients in some rows, then all): the same
    diverged_at, metrics, parameters and count of non-finite gradient steps (one per step, whichever
    threads saw the NaN), and the same error in "raise" mode."""
    pr = QuadraticDiagonal(d=D)  # unbounded gradients: inf parameters give inf, then NaN, gradients
    orc = GradientOracle(pr, Rademacher(np.full(D, 0.1)))

    def make():
        return SGD(lr=lambda t: 10.0 ** min(t, 300), momentum=0.0)

    theta0 = pr.x0(16) * np.logspace(0, 240, 16)[:, None]  # larger starts overflow first
    (a, na, wa), (b, nb, wb) = _both(
        monkeypatch,
        two_threads,
        make,
        pr,
        orc,
        60,
        16,
        seed=1,
        on_nonfinite="record",
        theta0=theta0,
        snapshots=snapshots,
    )
    _same(a, b)
    assert len(set(a.diverged_at.tolist())) > 3 and na == nb > 0 and wa == wb
    assert "NonFiniteGradientWarning" in wa
    msgs = []
    for split in (True, False):
        if not split:
            monkeypatch.setattr(S._RowSplit, "plan", classmethod(lambda cls, *a: None))
        with pytest.raises(FloatingPointError) as err, warnings.catch_warnings():
            warnings.simplefilter("ignore", NonFiniteGradientWarning)
            simulate(make(), pr, orc, 60, 16, seed=1, theta0=theta0)
        msgs.append(str(err.value).split("(optimizer")[0])
    assert msgs[0] == msgs[1] and "step" in msgs[0]


class _CoupledNoise(Rademacher):
    """A planted bug: claims independent rows but draws every row from the first row's stream."""

    def add_means_into(self, rngs, n, out):
        for r in range(out.shape[0]):
            out[r] += self.sample_mean(rngs[0], n)


def test_a_coupled_oracle_is_caught(monkeypatch, two_threads):
    pr = SeparableNonconvex(d=D)
    orc = GradientOracle(pr, _CoupledNoise(np.full(D, 0.5)))
    (a, _, _), (b, _, _) = _both(monkeypatch, two_threads, lambda: SGD(lr=0.1), pr, orc, 3, 16, seed=0)
    assert a.snapshots.tobytes() != b.snapshots.tobytes()  # what the bit comparisons above would flag
    _CoupledNoise.rows_independent = False  # declared honestly: no split, so the reference bits
    try:
        assert not orc.rows_independent
        assert S._RowSplit.plan(SGD(), orc, pr.x0(16), {"step": 0}, replicate_generators(0, 16)) is None
    finally:
        del _CoupledNoise.rows_independent


def test_the_callers_numpy_error_state_reaches_the_parts(two_threads):
    class Oracle:
        accepts_out = True
        rows_independent = True

        def __call__(self, theta, t, rngs, out=None):
            np.log(np.zeros(2))  # "divide by zero" unless the caller's errstate silences it
            out[:] = theta
            return out

    pr = SeparableNonconvex(d=D)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            simulate(SGD(lr=1e-3), pr, Oracle(), 3, 16, seed=0)
        assert two_threads
        with pytest.raises(RuntimeWarning, match="divide"), np.errstate(divide="warn"):
            simulate(SGD(lr=1e-3), pr, Oracle(), 3, 16, seed=0)


def test_threads_is_one_inside_a_part():
    seen = {}
    assert _pool.threads(fused=True) == _pool._CPUS or _pool.threads(fused=True) >= 1
    with _pool.inline():
        seen["inline"] = _pool.threads(fused=True)
    seen["after"] = _pool.threads(fused=True)
    pool = _pool.get_pool(2)
    seen["worker"] = pool.submit(lambda: (_pool.threads(fused=True), threading.current_thread().name)).result()
    assert seen["inline"] == 1 and seen["worker"][0] == 1 and seen["worker"][1].startswith("lptheory")
    assert seen["after"] == _pool.threads(fused=True)


def test_rademacher_kernel_refuses_a_buffered_half_in_any_row():
    """The stream kernel reads each state's ``has_uint32`` itself: a buffered half in a later row means
    nothing is drawn (the caller takes numpy's path)."""
    pytest.importorskip("numba")
    from synthetic import _fast

    rngs = replicate_generators(3, 5)
    rngs[3].integers(0, 2**32, dtype=np.uint32)
    before = [g.bit_generator.state for g in rngs]
    out = np.zeros((5, 16))
    assert _fast.rademacher_add_streams(rngs, np.ones(16), out) is False
    assert not out.any() and [g.bit_generator.state for g in rngs] == before
    rngs[3].bit_generator.state = {**before[3], "has_uint32": 0}
    assert _fast.rademacher_add_streams(rngs, np.ones(16), out) is True and out.all()


def test_dual_and_l2_has_lp_norms_bits():
    """The recorded gradient norms of the split path, one kernel for both, against lp_norm itself (its
    numpy path below 2^15 entries, its row kernel above): every row length up to 139 and large ones,
    zero rows, NaN, +-inf, subnormals, scales from 1e-300 to 1e300."""
    pytest.importorskip("numba")
    from lptheory.fast.simkernels import dual_and_l2
    from lptheory.geometry import lp_norm

    rng = np.random.default_rng(0)
    for d in [*range(1, 140), 255, 256, 257, 4097, 10000]:
        for q in (1.5, 2.0, 3.0):
            g = rng.standard_normal((7, d)) * np.exp(rng.uniform(-690, 690, (7, 1)))
            g[1] = 0.0
            if d > 2:
                g[2, 1], g[3, 0], g[4, d // 2] = np.nan, np.inf, -np.inf
                g[5] = 5e-324 * rng.integers(-4, 5, d)
            with np.errstate(all="ignore"):
                want = (lp_norm(g, q) ** q, lp_norm(g, 2.0))
                got = dual_and_l2(g, q)
            assert want[0].tobytes() == got[0].tobytes() and want[1].tobytes() == got[1].tobytes(), (d, q)
    assert dual_and_l2(np.ones((2, 3)), 4.0) is None  # other exponents: lp_norm


def test_gradient_and_noise_in_one_pass_have_the_two_passes_bits():
    """``SeparableNonconvex.grad_noise_into`` (the oracle's first try): the bits of ``grad_into`` then
    ``Rademacher.add_means_into``, each stream left where numpy's sampler leaves it; nothing drawn or
    written where it does not apply (a buffered 32-bit half, batch > 1, another noise type or subclass,
    d not a multiple of 8)."""
    pytest.importorskip("numba")
    for R, d in [(3, 64), (5, 8), (2, 4096)]:
        pr = SeparableNonconvex(d=d, seed=R)
        noise = Rademacher(np.linspace(0.1, 2.0, d))
        x = pr.x0(R) + np.random.default_rng(R).standard_normal((R, d))
        got, want = np.empty((R, d)), np.empty((R, d))
        rngs, ref = replicate_generators(4, R), replicate_generators(4, R)
        for _ in range(2):
            assert pr.grad_noise_into(x, 0, noise, rngs, 1, got)
            pr.grad_into(x, 0, want)
            for r in range(R):
                want[r] = want[r] + (ref[r].integers(0, 2, size=d, dtype=np.int8) * 2.0 - 1.0) * noise.sigma
            assert got.tobytes() == want.tobytes()
            for a, b in zip(rngs, ref):  # the same stream positions (a stale, unflagged 32-bit half is unused)
                sa, sb = a.bit_generator.state, b.bit_generator.state
                assert sa["state"] == sb["state"] and sa["has_uint32"] == sb["has_uint32"] == 0
    pr, out = SeparableNonconvex(d=16), np.zeros((2, 16))
    x = pr.x0(2)
    rngs = replicate_generators(0, 2)
    assert not pr.grad_noise_into(x, 0, Rademacher(np.ones(16)), rngs, 3, out)
    assert not pr.grad_noise_into(x, 0, Gaussian(np.ones(16)), rngs, 1, out)
    assert not pr.grad_noise_into(x, 0, _CoupledNoise(np.ones(16)), rngs, 1, out)
    p12 = SeparableNonconvex(d=12)
    assert not p12.grad_noise_into(p12.x0(2), 0, Rademacher(np.ones(12)), rngs, 1, np.zeros((2, 12)))
    rngs[1].integers(0, 2**32, dtype=np.uint32)
    assert not pr.grad_noise_into(x, 0, Rademacher(np.ones(16)), rngs, 1, out)
    assert not out.any()
