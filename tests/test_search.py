"""The search engine: the lockstep Nelder-Mead is scipy's, bit for bit; batched and parallel searches give
each job the result it gets alone."""

import numpy as np
import pytest
from scipy.optimize import minimize

from proofs_checks.engines import DistributionSpace, SearchBudget, SearchJob, search_worst, search_worst_many
from proofs_checks.search import maximize, maximize_many, nelder_mead


def _rosen(x):
    x = np.atleast_2d(x)
    return np.sum(100.0 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1 - x[:, :-1]) ** 2, axis=1)


def _kink(x):
    x = np.atleast_2d(x)
    return np.sum(np.abs(x - 0.3), axis=1) + 0.1 * np.sum(x**2, axis=1)


def _each_is_scipys_alone(results, obj, bounds, seeds, *, maxiter, popsize):
    """Each lockstep result (problem j, ``obj(X, own)`` maximized) equals scipy's ``differential_evolution`` on
    problem j alone from ``default_rng(seeds[j])``: the same x, value and evaluations."""
    from scipy.optimize import differential_evolution

    kw = dict(maxiter=maxiter, popsize=popsize, vectorized=True, updating="deferred", polish=False, tol=1e-12)
    for j, (r, seed) in enumerate(zip(results, seeds)):
        ref = differential_evolution(
            lambda xT, j=j: -obj(np.asarray(xT).T, np.full(np.shape(xT)[1], j)),
            bounds,
            seed=np.random.default_rng(seed),
            **kw,
        )
        np.testing.assert_array_equal(r.x, ref.x)
        assert r.fun == ref.fun and r.nfev == ref.nfev


@pytest.mark.parametrize("speculate", [False, True])
@pytest.mark.parametrize("fun", [_rosen, _kink])
@pytest.mark.parametrize("maxfev", [7, 60, 400, None])
def test_nelder_mead_is_scipys(fun, maxfev, speculate):
    """Same iterates as scipy.optimize.minimize(method='Nelder-Mead'): x, f and the evaluation count,
    bit for bit, for each start; budgets that stop inside an iteration included; with the next
    iteration's candidates evaluated ahead (speculate) too, in fewer calls."""
    starts = np.array([[-1.2, 1.0, 0.5], [0.0, 0.0, 0.0], [2.0, -1.0, 3.0]])
    calls = []

    def counted(X):
        calls.append(len(X))
        return fun(X)

    ours = nelder_mead(counted, starts, maxfev=maxfev, xatol=1e-10, fatol=1e-12, speculate=speculate)
    if speculate and maxfev is None:
        plain = []
        nelder_mead(lambda X: plain.append(len(X)) or fun(X), starts, maxfev=maxfev, xatol=1e-10, fatol=1e-12)
        assert len(calls) < 0.7 * len(plain)
    for x0, (x, f, n) in zip(starts, ours):
        opts = {"xatol": 1e-10, "fatol": 1e-12}
        if maxfev is not None:
            opts["maxfev"] = maxfev
        ref = minimize(lambda v: float(fun(v)[0]), x0, method="Nelder-Mead", options=opts)
        np.testing.assert_array_equal(x, ref.x)
        assert f == ref.fun and n == ref.nfev


def _minus_inf_beyond(X):
    X = np.atleast_2d(X)
    return np.where(X[:, 0] > 0.5, -np.inf, np.sum(X**2, axis=1))


def _nan_beyond(X):
    X = np.atleast_2d(X)
    return np.where(X[:, 0] > 0.5, np.nan, np.sum(X**2, axis=1))


@pytest.mark.parametrize("fun", [_minus_inf_beyond, _nan_beyond])
def test_nelder_mead_nonfinite_values_as_scipy(fun, monkeypatch):
    """Infinite and NaN objective values: the compiled termination test keeps a NaN difference (numpy's max
    propagates it, so the problem goes on), giving the numpy loop's and scipy's iterates and evaluation
    counts; a test that skipped NaN stopped these runs early (179 evaluations against 300)."""
    import proofs_checks.search as S

    starts = np.array([[0.6, 0.6, 0.6], [0.7, 0.1, 0.2], [1.0, 1.0, 1.0]])
    with np.errstate(invalid="ignore"):
        fast = nelder_mead(fun, starts, maxfev=300, xatol=1e-12, fatol=1e-14)
        monkeypatch.setitem(S._SELECT, "nm", None)
        slow = nelder_mead(fun, starts, maxfev=300, xatol=1e-12, fatol=1e-14)
        opts = {"maxfev": 300, "xatol": 1e-12, "fatol": 1e-14}
        refs = [minimize(lambda v: float(fun(v)[0]), x0, method="Nelder-Mead", options=opts) for x0 in starts]
    for (xa, fa, na), (xb, fb, nb), ref in zip(fast, slow, refs):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(xa, ref.x)
        assert na == nb == ref.nfev
        np.testing.assert_array_equal([fa, fb], [ref.fun, ref.fun])


def test_nelder_mead_numpy_loop_quiet_on_infinite_values(monkeypatch):
    """The numpy loop's termination test on -inf values (-inf - -inf is NaN) raises no RuntimeWarning and
    gives the results it gave with the warning (scipy's iterates)."""
    import warnings

    import proofs_checks.search as S

    monkeypatch.setitem(S._SELECT, "nm", None)
    starts = np.array([[0.6, 0.6, 0.6], [0.7, 0.1, 0.2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = nelder_mead(_minus_inf_beyond, starts, maxfev=300, xatol=1e-12, fatol=1e-14)
    opts = {"maxfev": 300, "xatol": 1e-12, "fatol": 1e-14}
    with np.errstate(invalid="ignore"):
        refs = [
            minimize(lambda v: float(_minus_inf_beyond(v)[0]), x0, method="Nelder-Mead", options=opts) for x0 in starts
        ]
    for (x, f, n), ref in zip(res, refs):
        np.testing.assert_array_equal(x, ref.x)
        assert n == ref.nfev and f == ref.fun


@pytest.mark.parametrize("fun", [_rosen, _kink, lambda X: np.floor(4 * np.atleast_2d(X)[:, 0])])
def test_nelder_mead_compiled_bookkeeping_equals_numpy(fun, monkeypatch):
    """The numba bookkeeping of an iteration (termination test, candidates, acceptance, reordering) gives
    the numpy loop's iterates bit for bit, ties of a flat function included."""
    import proofs_checks.search as S

    if S._nm_kernels() is None:
        pytest.skip("numba not installed")
    starts = np.random.default_rng(3).uniform(-2, 2, (5, 4))
    fast = nelder_mead(fun, starts, maxfev=300, xatol=1e-12, fatol=1e-14)
    monkeypatch.setitem(S._SELECT, "nm", None)
    slow = nelder_mead(fun, starts, maxfev=300, xatol=1e-12, fatol=1e-14)
    for (xa, fa, na), (xb, fb, nb) in zip(fast, slow):
        np.testing.assert_array_equal(xa, xb)
        assert fa == fb and na == nb


def test_nelder_mead_owners_batches_problems():
    """With owners=True one call carries every problem's candidates, tagged by problem."""
    shifts = np.array([0.0, 1.0, -2.0])
    calls = []

    def fun(X, own):
        calls.append(len(X))
        return _kink(X - shifts[own][:, None])

    together = nelder_mead(fun, np.zeros((3, 2)), maxfev=200, owners=True)
    for b, s in enumerate(shifts):
        alone = nelder_mead(lambda X, s=s: _kink(X - s), np.zeros((1, 2)), maxfev=200)[0]
        np.testing.assert_array_equal(together[b][0], alone[0])
        assert together[b][1:] == alone[1:]
    assert max(calls) > 4  # candidates of several problems shared a call


def test_maximize_many_equals_maximize():
    bounds = [(-1.0, 1.0)] * 3

    def obj(X, own):
        return -_kink(X) + 0.01 * own

    together = maximize_many(obj, bounds, seeds=[1, 2], maxiter=15, popsize=6)
    for j, seed in enumerate([1, 2]):
        x, v, n = maximize(lambda X, j=j: obj(X, np.full(len(X), j)), bounds, seed=seed, maxiter=15, popsize=6)
        np.testing.assert_array_equal(together[j][0], x)
        assert together[j][1:] == (v, n)


def test_search_worst_many_equals_alone_and_parallel_equals_serial():
    """Jobs sharing their constants (the Theorem 1 lemmas) batched, then spread over 2 processes: each job
    gets the worst case it finds alone."""
    from proofs_checks.stacey import formulas as F
    from proofs_checks.stacey.lemmas import NONDEGENERATE

    spaces = [DistributionSpace(1, 2, 1), DistributionSpace(1, 2, 2)]
    budget = SearchBudget(maxiter=6, popsize=5)
    scalars = {"p": 4.0, "eta": 1.0, "L": 1.0}
    jobs = [SearchJob(F.LEMMA_SPECS[lem], [3, i], 1.0, NONDEGENERATE) for i, lem in enumerate(F.LEMMAS[:3])]
    serial = search_worst_many(jobs, spaces, scalars, budget=budget)
    forked = search_worst_many(jobs, spaces, scalars, budget=budget, workers=2)
    for jb, a, b in zip(jobs, serial, forked):
        alone = search_worst(jb.spec, spaces, scalars, seed=jb.seed, budget=budget, require=jb.require)
        for got in (a, b):
            assert got["ratio"] == alone["ratio"] and got["nfev"] == alone["nfev"]
            np.testing.assert_array_equal(got["x"], alone["x"])
            assert got["space"] == alone["space"]


@pytest.mark.parametrize("dim,popsize", [(3, 5), (10, 12)])
def test_differential_evolution_sample_selection_is_scipys(dim, popsize):
    """The generation's sample selection in one numba pass (same PCG64 stream) gives scipy's result bit
    for bit, and leaves the generator where scipy leaves it."""
    from scipy.optimize import differential_evolution

    from proofs_checks.search import _differential_evolution

    def f(xT):
        return _kink(np.asarray(xT).T) + np.sin(5 * np.asarray(xT)).sum(axis=0)

    kw = dict(maxiter=25, popsize=popsize, vectorized=True, updating="deferred", polish=False, tol=1e-12)
    ga, gb = np.random.default_rng(7), np.random.default_rng(7)
    ref = differential_evolution(f, [(-1, 1)] * dim, seed=ga, **kw)
    ours = _differential_evolution(f, [(-1, 1)] * dim, seed=gb, **kw)
    np.testing.assert_array_equal(ours.x, ref.x)
    assert ours.fun == ref.fun and ours.nfev == ref.nfev and ours.nit == ref.nit
    assert ga.integers(0, 2**62) == gb.integers(0, 2**62)


@pytest.mark.parametrize("flat", [False, True])
def test_lockstep_differential_evolution_is_each_solver_alone(flat):
    """The solvers stepped together (one objective call per generation for all, no threads) end where
    scipy's solve() ends each alone: same x, value, evaluations and generations, also when some converge
    early (a flat objective: scipy stops after the first generation) and others do not."""
    from proofs_checks.search import _de_lockstep

    bounds = [(-1.0, 1.0)] * 4

    def obj(X, own):
        v = -_kink(X) + 0.1 * own
        return np.where(own % 2 == 0, 1.0, v) if flat else v

    seeds = [11, 12, 13]
    together = _de_lockstep(obj, bounds, [np.random.default_rng(s) for s in seeds], maxiter=20, popsize=5)
    for j, s in enumerate(seeds):
        (alone,) = _de_lockstep(
            lambda X, o, j=j: obj(X, np.full(len(X), j)), bounds, [np.random.default_rng(s)], maxiter=20, popsize=5
        )
        np.testing.assert_array_equal(together[j].x, alone.x)
        assert (together[j].fun, together[j].nfev, together[j].nit) == (alone.fun, alone.nfev, alone.nit)
    if flat:
        assert together[0].nit == 1 and together[1].nit > 1


def test_lockstep_self_check_falls_back_on_a_planted_mismatch(monkeypatch):
    """A generation step that drifts from scipy's by one ulp (planted) fails the first-use check: the
    lockstep stepping is turned off and the solvers run scipy's own solve() (the threaded path), so the
    results are still each solver's alone. A scipy version not in the verified list turns it off too."""
    import proofs_checks.search as S

    planted = []
    real = S._generation_batched

    def drifting(solvers, live, *args):
        real(solvers, live, *args)
        planted.append(1)
        for j in live:  # one ulp off in one coordinate of one member
            pop = solvers[j].population
            pop[1, 0] = np.nextafter(pop[1, 0], np.inf)

    monkeypatch.delitem(S._SELECT, "lockstep_ok", raising=False)
    monkeypatch.setattr(S, "_generation_batched", drifting)
    bounds = [(-1.0, 1.0)] * 3

    def obj(X, own):
        return -_kink(X) + 0.1 * own

    seeds = [5, 6]
    pytest.importorskip("numba")  # without numba the generations are not batched (nothing planted)
    if S._solver_class() is None or not S._scipy_version_verified():
        pytest.skip("the lockstep stepping does not apply to this scipy")
    assert S._lockstep_verified() is False and planted  # the check ran the planted step and caught it
    rngs = [np.random.default_rng(s) for s in seeds]
    kw = dict(maxiter=5, popsize=5, vectorized=True, updating="deferred", polish=False, tol=1e-12)
    assert S._de_driven(obj, bounds, rngs, kw) is None
    n_planted = len(planted)
    together = S._de_lockstep(obj, bounds, rngs, maxiter=5, popsize=5)
    assert len(planted) == n_planted  # the drifting step is not used any more
    for j, s in enumerate(seeds):
        (alone,) = S._de_lockstep(
            lambda X, o, j=j: obj(X, np.full(len(X), j)), bounds, [np.random.default_rng(s)], maxiter=5, popsize=5
        )
        np.testing.assert_array_equal(together[j].x, alone.x)
        assert (together[j].fun, together[j].nfev, together[j].nit) == (alone.fun, alone.nfev, alone.nit)

    monkeypatch.setattr(S, "_generation_batched", real)
    monkeypatch.delitem(S._SELECT, "lockstep_ok")
    assert S._lockstep_verified() is True  # the real step passes the check
    assert S._scipy_version_verified("1.17.1") and not S._scipy_version_verified("1.99.0")
    assert not S._scipy_version_verified("1.16.2") and not S._scipy_version_verified("dev")
    import scipy

    monkeypatch.setattr(scipy, "__version__", "1.99.0")
    monkeypatch.delitem(S._SELECT, "lockstep_ok")
    assert S._lockstep_verified() is False


def test_solver_self_check_falls_back_on_a_planted_mismatch(monkeypatch):
    """A DE/best/1/bin trial step one ulp off scipy's (planted, every trial) fails the first-use check of the faster
    solver class: _differential_evolution then runs scipy's own function and gives its result."""
    from scipy.optimize import differential_evolution

    import proofs_checks.search as S

    pytest.importorskip("numba")
    if S._solver_class() is None or S._best1bin is None or not S._scipy_version_verified():
        pytest.skip("the faster solver class does not apply to this scipy")
    real = S._best1bin
    planted = []

    def drifting(self, candidates, samples):
        planted.append(1)
        trial = real(self, candidates, samples)
        return np.nextafter(trial, np.inf)  # every trial one ulp up

    monkeypatch.delitem(S._SELECT, "solver_ok", raising=False)
    monkeypatch.setattr(S, "_best1bin", drifting)
    assert S._solver_verified() is False and planted

    def f(xT):
        return _kink(np.asarray(xT).T)

    kw = dict(maxiter=6, popsize=5, vectorized=True, updating="deferred", polish=False, tol=1e-12)
    n_planted = len(planted)
    ours = S._differential_evolution(f, [(-1, 1)] * 3, seed=np.random.default_rng(4), **kw)
    ref = differential_evolution(f, [(-1, 1)] * 3, seed=np.random.default_rng(4), **kw)
    assert len(planted) == n_planted and S._same_de_result(ours, ref)
    monkeypatch.setattr(S, "_best1bin", real)
    monkeypatch.delitem(S._SELECT, "solver_ok")
    assert S._solver_verified() is True


@pytest.mark.parametrize("coupling", ["independent", "joint"])
def test_decode_weights_kernel_equals_numpy(coupling, monkeypatch):
    """The compiled weights of DistributionSpace.decode have the numpy expression's bits (zeros, signed
    zeros, all-zero groups, tiny and huge magnitudes); a planted change (sum in another order) is caught."""
    pytest.importorskip("numba")
    import proofs_checks.distributions as E

    def numpy_weights(xs, start, groups, k):
        om = np.abs(xs[:, start : start + groups * k]).reshape(-1, groups, k)
        tot = om.sum(axis=-1, keepdims=True)
        return np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)

    rng = np.random.default_rng(3)
    for d, k in [(1, 2), (2, 3), (3, 5), (1, 7), (2, 8)]:
        space = DistributionSpace(d=d, k=k, n=2, coupling=coupling)
        xs = rng.uniform(-1, 1, (300, space.dim)) * rng.choice([1e-300, 1e-9, 1.0, 1e9], (300, space.dim))
        xs[rng.random(xs.shape) < 0.2] = 0.0
        xs[rng.random(xs.shape) < 0.1] = -0.0
        xs[:3, d * k :] = 0.0
        got = space.decode(xs)
        monkeypatch.setitem(E._WEIGHTS, "kernel", None)
        want = space.decode(xs)
        monkeypatch.undo()
        assert np.array_equal(got.weights.view(np.int64), want.weights.view(np.int64))
        assert np.array_equal(got.values.view(np.int64), want.values.view(np.int64))
        assert got.weights.flags.c_contiguous == want.weights.flags.c_contiguous
        groups = 1 if coupling == "joint" else d
        assert np.array_equal(E._weights(xs, d * k, groups, k), numpy_weights(xs, d * k, groups, k))
    # planted: the sums of 3 terms in reverse order differ in some bits, so the comparisons above can fail
    om = rng.uniform(0, 1, (1000, 3))
    assert not np.array_equal(om[:, ::-1].sum(axis=-1), om.sum(axis=-1))


def test_polish_clip_is_numpys_clip():
    """The polish's clip (the ufunc ``np.clip`` ends in) gives np.clip's values bit for bit: signed zeros
    at a bound of 0, NaN, points outside and inside the box."""
    from proofs_checks import search as S

    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, (600, 7))
    X[::3, 2] = -0.0
    X[1::3, 3] = 0.0
    X[::5, 1] = np.nan
    lo = np.array([-1.0, -1.0, 0.0, 0.0, -1.0, 0.0, 0.0])
    hi = np.ones(7)
    np.testing.assert_array_equal(S._clip(X, lo, hi).view(np.int64), np.clip(X, lo, hi).view(np.int64))


def test_the_scipy_pin_covers_the_verified_versions():
    """scipy's private DE internals are used only on verified versions, and pyproject pins scipy below the next
    minor version after the newest verified one (issue 34: no private internals without a pinned version; the
    public ``differential_evolution`` fallback is tested above)."""
    import os
    import re

    import proofs_checks.search as S

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as fh:
        spec = re.search(r'"scipy([^"]*)"', fh.read()).group(1)
    lo = tuple(int(v) for v in re.search(r">=\s*(\d+)\.(\d+)", spec).groups())
    hi = tuple(int(v) for v in re.search(r"<\s*(\d+)\.(\d+)", spec).groups())
    newest = max(S._DE_VERIFIED_SCIPY)
    assert all(lo <= v < hi for v in S._DE_VERIFIED_SCIPY)
    assert hi == (newest[0], newest[1] + 1)


def test_pcg64_stepped_in_the_kernel_draws_numpys_words():
    """The sample selection with PCG64 stepped inside the numba kernel (select_many_pcg64) shuffles, samples
    and leaves the generator exactly as the kernel that calls numpy's own next_uint32 (select_many): with a
    kept 32-bit half and without, over several generations; on this platform the first-use check passes,
    so the differential evolution tests above run the inline path."""
    pytest.importorskip("numba")
    import proofs_checks.search as S
    from proofs_checks._search_kernels import select_many, select_many_pcg64

    assert S._pcg_inline_ok()
    for seed, n, pre in ((1, 6, 1), (2, 25, 0), (3, 288, 5)):
        ga, gb = np.random.default_rng(seed), np.random.default_rng(seed)
        ga.integers(0, 9, size=pre, dtype=np.int32)
        gb.integers(0, 9, size=pre, dtype=np.int32)
        ia, ib = np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
        c = np.arange(n, dtype=np.int64)
        oa, ob = np.zeros((n, 5), dtype=np.int64), np.zeros((n, 5), dtype=np.int64)
        for _ in range(4):
            sa, sb = ga.bit_generator.ctypes.state_address, gb.bit_generator.ctypes.state_address
            select_many(S._next_uint32_address(ga.bit_generator), sa, ia, c, 5, oa)
            select_many_pcg64(S._pcg_address(gb.bit_generator), sb, ib, c, 5, ob)
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_array_equal(oa, ob)
            assert ga.bit_generator.state == gb.bit_generator.state
        assert ga.random() == gb.random()


def test_pcg64_inline_check_falls_back_on_a_planted_drift(monkeypatch):
    """A kernel whose PCG64 drifts (planted: one extra word per call) fails the first-use check, and the
    differential evolution then draws through numpy's next_uint32: still scipy's result bit for bit."""
    pytest.importorskip("numba")
    from scipy.optimize import differential_evolution

    import proofs_checks._search_kernels as K
    import proofs_checks.search as S

    real = K.select_many_pcg64

    def drifting(pcg, st, idx, cands, k, out):
        real(pcg, st, idx, cands, k, out)
        real(pcg, st, idx.copy(), cands[:1], k, out[:1].copy())  # draws one more shuffle's words

    monkeypatch.setattr(K, "select_many_pcg64", drifting)
    monkeypatch.delitem(S._SELECT, "pcg_inline", raising=False)
    assert S._pcg_inline_ok() is False
    kw = dict(maxiter=6, popsize=5, vectorized=True, updating="deferred", polish=False, tol=1e-12)

    def f(xT):
        return _kink(np.asarray(xT).T)

    ga, gb = np.random.default_rng(5), np.random.default_rng(5)
    ref = differential_evolution(f, [(-1, 1)] * 3, seed=ga, **kw)
    ours = S._differential_evolution(f, [(-1, 1)] * 3, seed=gb, **kw)
    np.testing.assert_array_equal(ours.x, ref.x)
    assert ours.nfev == ref.nfev and ga.bit_generator.state == gb.bit_generator.state
    monkeypatch.delitem(S._SELECT, "pcg_inline")


def test_compiled_trial_vectors_are_the_numpy_ones(monkeypatch):
    """The lockstep generation with its DE/best/1/bin trials built by the numba kernel (best1bin_trials) ends
    bit for bit where the numpy expression takes it (populations, energies, counts), bounds repair included
    (a box the mutants leave), and where scipy's solve() takes each solver alone."""
    pytest.importorskip("numba")

    import proofs_checks.search as S

    assert S._trials_kernel() is not None
    bounds = [(-1.0, 1.0)] * 5

    def obj(X, own):
        return -_kink(X - 0.9) + 0.1 * own  # optimum near the box's edge: many trials out of bounds

    def run():
        return S._de_lockstep(obj, bounds, [np.random.default_rng(s) for s in (21, 22, 23)], maxiter=15, popsize=6)

    assert S._generation_inline_ok()
    inline = run()  # every draw and the trials in one kernel per generation (generation_pcg64)
    monkeypatch.setitem(S._SELECT, "generation_inline", False)
    compiled = run()  # numpy's draws, the trials by best1bin_trials
    monkeypatch.setitem(S._SELECT, "trials", None)
    plain = run()  # numpy's draws and the numpy expression
    for a, b in zip(inline, compiled):
        np.testing.assert_array_equal(a.population, b.population)
        assert (a.fun, a.nfev, a.nit) == (b.fun, b.nfev, b.nit)
    for a, b in zip(compiled, plain):
        np.testing.assert_array_equal(a.population, b.population)
        np.testing.assert_array_equal(a.population_energies, b.population_energies)
        assert (a.fun, a.nfev, a.nit) == (b.fun, b.nfev, b.nit)
    _each_is_scipys_alone(compiled, obj, bounds, (21, 22, 23), maxiter=15, popsize=6)


def test_generation_kernel_draws_what_numpy_and_scipy_draw():
    """generation_pcg64 (the dithered factor, the samples, the forced coordinates by Lemire's rejection, the
    crossover uniforms, the trials and the bounds repair, every PCG64 word drawn in the kernel) gives the
    trials, shuffled indices, factors and generator states of the numpy and scipy calls, bit for bit: on this
    platform the first-use check passes, and a longer comparison (4 solvers, 12 coordinates, kept 32-bit
    halves, solvers leaving the lockstep and coming back) agrees too."""
    pytest.importorskip("numba")
    import proofs_checks.search as S

    assert S._generation_inline_ok()
    longer = (77, 12, 8, (0.5, 1.0), 0, 4, ([0, 1, 2, 3], [1, 3], [0, 2, 3], [3]))
    assert S._generation_inline_probe(cases=[longer])


def _generation_rows(J, NP, dim, shared=False):
    """Arguments of generation_pcg64 for J solvers (their own generators, or one shared by all: ``shared``),
    the generators and the arrays it writes."""
    from proofs_checks.search import _pcg_address

    gens = [np.random.default_rng([41, 0 if shared else j]) for j in range(J)]
    for j, g in enumerate(gens):
        g.integers(0, 9, size=j % 2, dtype=np.int32)  # a kept 32-bit half on odd rows
    g0 = gens[0] if shared else None
    bgs = [(g0 or g).bit_generator for g in gens]
    pcgs = np.array([_pcg_address(bg) for bg in bgs], np.uint64)
    sts = np.array([bg.ctypes.state_address for bg in bgs], np.uint64)
    idx = np.tile(np.arange(NP, dtype=np.int64), (J, 1))
    dither = np.array([(0.5, 0.5, float(j % 2)) for j in range(J)])
    P = np.random.default_rng(3).uniform(-0.2, 1.2, (J, NP, dim))  # trials outside [0, 1]: repairs
    out = (np.empty((J, NP, 5), np.int64), np.full(J, 0.7), np.empty_like(P), np.empty(J, np.int64))
    return gens, [pcgs, sts, idx, dither, P, np.full(J, 0.9)], out


def test_generation_kernel_pairs_draw_what_single_rows_draw():
    """generation_pcg64 takes consecutive rows with different generators two at a time (their shuffles
    interleaved): every row's samples, factor, trials, repairs, shuffled index and generator state equal those of
    the rows drawn one per call; rows sharing one generator are drawn one after the other (the shared stream in
    row order, as one call per row draws it)."""
    pytest.importorskip("numba")
    import proofs_checks._search_kernels as K

    for shared in (False, True):
        for J, NP, dim in ((5, 9, 1), (4, 30, 7), (3, 17, 12)):
            runs = []
            for per_row in (False, True):
                gens, args, (samples, scale, trial, oob) = _generation_rows(J, NP, dim, shared)
                pcgs, sts, idx, dither, P, cr = args
                for _ in range(3):
                    if per_row:
                        for t in range(J):
                            res = (samples[t : t + 1], scale[t : t + 1], trial[t : t + 1], oob[t : t + 1])
                            K.generation_pcg64(
                                pcgs, sts, idx, np.array([t]), dither, P[t : t + 1], cr[t : t + 1], 5, *res
                            )
                    else:
                        K.generation_pcg64(pcgs, sts, idx, np.arange(J), dither, P, cr, 5, samples, scale, trial, oob)
                    P = np.ascontiguousarray(trial * 1.4 - 0.2)
                states = [g.bit_generator.state for g in gens]
                runs.append((samples.copy(), scale.copy(), trial.copy(), oob.copy(), idx.copy(), states))
            (a, b) = runs
            for x, y in zip(a[:5], b[:5]):
                np.testing.assert_array_equal(x, y)
            assert a[5] == b[5]


def test_compiled_scaling_is_scipys_and_its_check_catches_a_planted_error(monkeypatch):
    """scale_rows gives scipy's _scale_parameters bit for bit (uneven boxes, values outside [0, 1]); _scaler
    uses it only where its check on the solver's population passes: a kernel off by one ulp (planted) and a
    solver with integer parameters keep scipy's method, and the lockstep still ends where scipy ends alone."""
    pytest.importorskip("numba")
    from scipy.optimize._differentialevolution import DifferentialEvolutionSolver

    import proofs_checks._search_kernels as K
    import proofs_checks.search as S

    bounds = [(-3.7, 1e-3), (0.0, 1.0), (-1e5, 2.5), (7.0, 7.25)]
    sv = DifferentialEvolutionSolver(lambda x: 0.0, bounds, rng=np.random.default_rng(5), popsize=5)
    got = S._scaler(sv)
    assert got is not None
    kern, a1, a2 = got
    pts = np.random.default_rng(6).uniform(-0.5, 1.5, (300, len(bounds)))
    np.testing.assert_array_equal(kern(pts, a1, a2, np.empty_like(pts)), sv._scale_parameters(pts))
    whole = DifferentialEvolutionSolver(
        lambda x: 0.0, bounds, rng=np.random.default_rng(5), popsize=5, integrality=[False, True, False, False]
    )
    assert S._scaler(whole) is None
    real = K.scale_rows

    def off_by_an_ulp(trial, a1, a2, out):
        return np.nextafter(real(trial, a1, a2, out), np.inf)

    monkeypatch.setattr(K, "scale_rows", off_by_an_ulp)
    assert S._scaler(sv) is None
    box = [(-1.0, 2.0)] * 4

    def obj(X, own):
        return -_kink(X - 0.9) + 0.1 * own

    res = S._de_lockstep(obj, box, [np.random.default_rng(s) for s in (51, 52)], maxiter=6, popsize=5)
    _each_is_scipys_alone(res, obj, box, (51, 52), maxiter=6, popsize=5)
    monkeypatch.setattr(K, "scale_rows", real)
    res = S._de_lockstep(obj, box, [np.random.default_rng(s) for s in (51, 52)], maxiter=6, popsize=5)
    _each_is_scipys_alone(res, obj, box, (51, 52), maxiter=6, popsize=5)


def test_compiled_selection_is_the_numpy_selection():
    """accept_generation (in place) moves the values _accept_numpy's where and swaps give, bit for bit: ties kept
    as trials, NaN energies never accepted and found first by argmin, -0.0 against +0.0, infinities, a best
    member already in row 0."""
    pytest.importorskip("numba")
    import proofs_checks.search as S

    kern = S._accept_kernel()
    assert kern is not None
    rng = np.random.default_rng(61)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])
    for J, NP, dim in ((1, 5, 1), (6, 9, 3), (16, 40, 12)):
        for _ in range(20):
            P = rng.uniform(0, 1, (J, NP, dim))
            trial = rng.uniform(0, 1, (J, NP, dim))
            PE = rng.choice(specials, (J, NP)) if rng.random() < 0.5 else rng.integers(-3, 3, (J, NP)) * 1.0
            E = np.where(rng.random((J, NP)) < 0.3, PE, rng.choice(specials, (J, NP)))
            want_P, want_PE = S._accept_numpy(P.copy(), PE.copy(), trial, E)
            got_P, got_PE = P.copy(), PE.copy()
            kern(got_P, got_PE, trial, E)
            assert got_P.tobytes() == want_P.tobytes() and got_PE.tobytes() == want_PE.tobytes()


def test_generation_kernel_check_falls_back_on_a_planted_drift(monkeypatch):
    """A generation kernel that draws one word too many (planted) fails the first-use check; the lockstep then
    draws through numpy and scipy and still ends where scipy's solve() ends each solver alone."""
    pytest.importorskip("numba")

    import proofs_checks._search_kernels as K
    import proofs_checks.search as S

    real = K.generation_pcg64

    def drifting(pcgs, sts, idx, which, *rest):
        real(pcgs, sts, idx, which, *rest)
        for w in which[:1]:  # one more 32-bit word of the first solver's generator
            real(pcgs, sts, idx.copy(), np.array([w]), *[np.copy(a) if isinstance(a, np.ndarray) else a for a in rest])

    monkeypatch.setattr(K, "generation_pcg64", drifting)
    monkeypatch.delitem(S._SELECT, "generation_inline", raising=False)
    assert S._generation_inline_ok() is False
    bounds = [(-1.0, 1.0)] * 4

    def obj(X, own):
        return -_kink(X - 0.9) + 0.1 * own

    got = S._de_lockstep(obj, bounds, [np.random.default_rng(s) for s in (31, 32)], maxiter=8, popsize=5)
    _each_is_scipys_alone(got, obj, bounds, (31, 32), maxiter=8, popsize=5)
    monkeypatch.delitem(S._SELECT, "generation_inline")
