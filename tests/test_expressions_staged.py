"""The lockstep objective's staged evaluation (:class:`proofs_checks.expressions.Stager`): a call whose
layout (rows per job, shape and memory layout of the population) was seen before runs as a straight-line
function making the evaluator's numpy calls; its values are, bit for bit, those of the evaluator's tree
walk."""

import numpy as np
import pytest
import sympy as sp

from proofs_checks import adversarial as A
from proofs_checks import engines as E
from proofs_checks import expressions as X
from proofs_checks import staging as ST
from proofs_checks import worst_case as W
from proofs_checks.stacey import formulas as F
from proofs_checks.stacey.lemmas import NONDEGENERATE

SPACES = [
    E.DistributionSpace(1, 2, 1),
    E.DistributionSpace(2, 3, 2),
    E.DistributionSpace(1, 2, 4),
    E.DistributionSpace(2, 2, 1, coupling="joint"),
    E.DistributionSpace(2, 2, 4, coupling="joint"),
]
# p = 3: 1/(p-1) = 0.5 (numpy's sqrt path); p = 2: p* = 2 (square)
P = (2.0, 2.5, 3.0, 8.0)


def _jobs(kind):
    if kind == "lemmas":  # four specs (blocks), several p per block, conditions
        return [
            E.SearchJob(F.LEMMA_SPECS[lem], 0, 1.0, None if lem == "thm1.C" else NONDEGENERATE, scalars={"p": p})
            for p in P
            for lem in F.LEMMAS
        ]
    if kind == "scaled":  # per-row bound scales (Lemma 2's corrected constant) and a >= claim
        spec_ge = E.ClaimSpec(
            id="test.ge",
            statement="the bound of Lemma 2 against its term, reversed",
            source="test",
            term=F.LEMMA_SPECS["thm1.B2"].bound,
            bound=F.LEMMA_SPECS["thm1.B2"].term,
            relation=">=",
            assumptions=F.LEMMA_SPECS["thm1.B2"].assumptions,
        )
        jobs = []
        for p, kappa in ((3.0, 1.37), (4.0, 1.21)):
            jobs += [
                E.SearchJob(F.LEMMA_SPECS["thm1.B2"], 0, kappa, NONDEGENERATE, {"p": p}),
                E.SearchJob(spec_ge, 0, 1.0, None, {"p": p}),
            ]
        return jobs
    return [E.SearchJob(F.LEMMA_SPECS["thm1.B"], 0, 1.0, NONDEGENERATE, scalars={"p": 3.0})]  # one setting


def _objective(jobs, space):
    groups = E.search_worst_many.__globals__["_defining_key"]
    assert len({groups(jb.spec) for jb in jobs}) == 1
    kinds: dict = {}
    for jb in jobs:
        kinds.setdefault((id(jb.spec), id(jb.require)), len(kinds))
    members = sorted(range(len(jobs)), key=lambda j: (kinds[(id(jobs[j].spec), id(jobs[j].require))], j))
    return W._lockstep_objective(jobs, members, space, {"eta": 1.0, "L": 1.0}), len(members)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: str(s.describe()))
@pytest.mark.parametrize("kind", ["lemmas", "scaled", "single"])
def test_staged_calls_equal_the_tree_walk(space, kind, monkeypatch):
    """Calls of a layout seen before (the polish's and the generations' repeated layouts) run staged; each
    value equals the tree walk's (a fresh objective's first call), bit for bit, on new populations with
    exact zeros, ties and points at the box's corners."""
    staged = []
    real = W._staged_objective

    def counting(*a, **k):
        out = real(*a, **k)
        staged.append(out[0])
        return out

    monkeypatch.setattr(W, "_staged_objective", counting)
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
    jobs = _jobs(kind)
    obj, m = _objective(jobs, space)
    rng = np.random.default_rng(5)
    for owner in (np.repeat(np.arange(m), 4), np.repeat(np.arange(m)[::2], 3), np.arange(m)[m // 2 :]):
        for _ in range(4):
            xs = rng.uniform(-1, 1, (owner.size, space.dim))
            xs[::3, 0] = 0.0
            xs[1::4] = np.clip(np.round(xs[1::4]), -1, 1)
            xs[2::5, 1] = xs[2::5, 0]
            fresh, _ = _objective(jobs, space)
            want = fresh(xs, owner)
            got = obj(xs, owner)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
    assert staged, "no call ran staged"
    assert "objective" in staged[0].source and "xs" in staged[0].source


def test_stager_folds_constants_and_makes_fresh_arrays():
    """The Stager writes one line per call that reads an input, folds calls of constants into constants,
    and makes the arrays it writes into anew on every run."""
    st = X.Stager()
    a = st.input(np.arange(3.0), "a")
    half = st.call(np.divide, 1.0, 2.0)  # no input: a constant
    assert half == 0.5 and not st.lines
    b = st.call(np.multiply, a, half)
    out = st.fresh(np.zeros, 3)
    st.setitem(out, slice(0, 3), st.call(np.add, b, 1.0))
    fn = st.function(out)
    assert len(st.lines) == 4
    r1 = fn(np.array([2.0, 4.0, 6.0]))
    r2 = fn(np.array([0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(r1, [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(r2, [1.0, 1.0, 1.0])
    assert r1 is not r2


def test_an_unstageable_node_falls_back():
    """A node the Stager does not know (a closure without a stage description) is refused with
    Unstageable, and a symbol without a value too: the caller then evaluates as usual."""
    st = X.Stager()
    dist = X.Distribution(np.ones((2, 1, 2)) * 0.5, np.full((2, 1, 2), 0.5), 1)
    senv = X.SEnv(st, X.Env(S=2), X.SDist(st, dist, st.input(dist.values, "v"), st.input(dist.weights, "w")))
    with pytest.raises(X.Unstageable):
        X.stage_quiet(X.CoordSum(sp.Symbol("nowhere") * X.g), senv)
    with pytest.raises(X.Unstageable):
        ST._stage_fn(lambda c: 0.0, X.SCtx(senv))


@pytest.mark.parametrize("ge", [False, True])
def test_ratio_kernel_equals_numpy(ge):
    """The search's ratio per row through the numba kernel equals the numpy expression bit for bit: NaN,
    infinities, zeros of both signs, negative and subnormal sides, a condition with NaN and zeros, one
    bound scale or one per row."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(11)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-310, 1e308, -1.0, 2.0])
    n = 4000
    term, bound, req = (rng.choice(specials, n) * rng.choice([1.0, 0.3], n) for _ in range(3))
    term[::3] = rng.uniform(-2, 2, n)[::3]
    bound[::2] = rng.uniform(0, 2, n)[::2]
    for scale in (1.0, 1.37, rng.uniform(0.5, 2.0, n)):
        for r in (None, req):
            with np.errstate(all="ignore"):  # as in the search
                got = W._ratio_tail(term, bound, r, scale, ge)
                want = W._ratio_tail_numpy(term, bound, r, scale, ge)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_batch_log_probs_kernel_equals_numpy():
    """The log-probabilities of a batch mean (``batch_outcomes``) through the numba kernel equal the numpy
    expression bit for bit: every k < 8 and n <= 6, zero weights (log -inf, a zero count then contributes
    +0.0), NaN, a strided input and a single row; from k = 8 on (numpy adds in another order there) the
    numpy expression itself is used. A kernel that added the k terms in another order fails here."""
    pytest.importorskip("numba")
    from proofs_checks import evaluator as EV

    rng = np.random.default_rng(5)
    for k in range(2, 9):
        for n in range(2, 7):
            counts, logc = EV.compositions(k, n)
            for S, d in ((1, 1), (9, 2), (300, 3)):
                w = rng.dirichlet(np.ones(k), size=(S, d))
                w[rng.random((S, d, k)) < 0.15] = 0.0
                w[0, 0, -1] = np.nan
                with np.errstate(all="ignore"):
                    for lw in (np.log(w), np.log(np.swapaxes(np.swapaxes(w, 1, 2).copy(), 1, 2))):
                        got = EV.log_batch_probs(lw, counts, logc)
                        want = EV.log_batch_probs_numpy(lw, counts, logc)
                        assert got.shape == want.shape
                        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def _leaf_with_a_lambda(g, p):
    return g * (lambda p: p + 1.5)(p - 1) + sum(p * k for k in (1.0, 2.0))


def test_folded_leaf_equals_the_leaf():
    """A lambdified leaf with its sub-expressions of static arguments computed once (staging._folded) gives
    the leaf's bits and type; a sub-expression that raises is left in place (the call raises as the leaf
    does); a static argument that is not a number, or nothing to fold, gives None (the leaf is called)."""
    rng = np.random.default_rng(2)
    gs, ps, xs_ = sp.symbols("g p x")
    expr = sp.Piecewise((1, sp.Eq(sp.sign(gs), sp.sign(xs_))), (0, True)) * sp.Abs(gs) * sp.Abs(
        sp.Abs(gs) ** (1 / (ps - 1)) - sp.Abs(xs_) ** (1 / (ps - 1))
    ) + sp.sqrt(ps) * xs_ / (2 * ps - 1)
    f = sp.lambdify((gs, ps, xs_), expr, "numpy")
    g = rng.normal(size=(6, 1, 2))
    x = rng.normal(size=(6, 3, 2))
    x[0, 0, 0] = 0.0
    for p in (np.float64(2.5), np.array(3.0), 4.0, np.float64(1.0)):
        h = ST._folded(f, {1: p})
        assert h is not None
        with np.errstate(all="ignore"):
            want, got = f(g, p, x), h(g, x)
        assert type(got) is type(want)
        _assert_bits(np.asarray(got), np.asarray(want))
    f2 = sp.lambdify((gs, ps), gs + 1 / (ps - 1), "math")
    h2 = ST._folded(f2, {1: 1.0})  # a Python float's 1 / 0: left in place (its p - 1 folded), raises there
    assert h2 is not None
    with pytest.raises(ZeroDivisionError):
        f2(2.0, 1.0)
    with pytest.raises(ZeroDivisionError):
        h2(2.0)
    assert ST._folded(f2, {1: 3.0})(2.0) == f2(2.0, 3.0)
    h3 = ST._folded(_leaf_with_a_lambda, {1: 2.5})  # a lambda's own p, a generator's body: not folded
    assert h3 is not None and h3(np.arange(3.0)).tobytes() == _leaf_with_a_lambda(np.arange(3.0), 2.5).tobytes()
    assert ST._folded(f, {1: np.array([2.5, 3.0])}) is None  # not a number
    assert ST._folded(sp.lambdify((gs, ps), gs * 2, "numpy"), {1: 3.0}) is None  # nothing to fold


def test_stager_sees_inputs_in_keywords_and_containers():
    """A call depends on the inputs when any argument does: a keyword argument, or a list, tuple or dict
    (at any depth) holding an input-dependent value; such a call is a line of the function (its value
    follows the inputs), not a constant of the staging run. (Before: ``base.clip(min=a)`` was folded to
    ``base``, and containers holding a Dyn were not seen.) A container the Stager cannot write as a
    literal (a set) is refused with Unstageable."""
    st = X.Stager()
    a = st.input(np.array([1.0, 2.0, 3.0]), "a")
    base = np.array([10.0, 20.0, 30.0])
    kw = st.method(base, "clip", min=a)  # only the keyword depends on the input
    lst = st.call(np.add.reduce, [[a, base]], axis=(0, 1))  # a list in a list: a + base
    m = np.arange(9.0).reshape(3, 3)
    tup = st.item(m, (slice(None), st.call(np.argmax, a)))  # a tuple key: m[:, argmax(a)]
    dct = st.call(_twice_x, {"x": [a]})  # a dict of a list
    assert all(type(r) is X.Dyn for r in (kw, lst, tup, dct))
    out = st.fresh(np.zeros, (4, 3))
    for i, r in enumerate((kw, lst, tup, dct)):
        st.setitem(out, (i, slice(None)), r)
    fn = st.function(out)
    x = np.array([100.0, 100.0, 5.0])
    got = fn(x)
    np.testing.assert_array_equal(got[0], np.clip(base, x, None))  # [100, 100, 30], not the folded [10, 20, 30]
    np.testing.assert_array_equal(got[1], x + base)
    np.testing.assert_array_equal(got[2], m[:, 0])  # argmax 0 here, 2 in the staging run
    np.testing.assert_array_equal(got[3], 2 * x)
    with pytest.raises(X.Unstageable):
        st.call(len, {a})
    with pytest.raises(X.Unstageable):
        st.call(len, np.array([a, 1.0], dtype=object))


def _twice_x(d):
    return d["x"][0] * 2.0


class _Planted(Exception):
    pass


def _populations(space, owner, rng, specials=True):
    """Populations for ``owner``: uniform in the box, exact zeros, ties and corners, and (``specials``)
    NaN, +-inf and -0.0 entries."""
    xs = rng.uniform(-1, 1, (owner.size, space.dim))
    xs[::3, 0] = 0.0
    xs[1::4] = np.clip(np.round(xs[1::4]), -1, 1)
    if space.dim > 1:
        xs[2::5, 1] = xs[2::5, 0]
    if specials:
        xs[::7, 0] = np.nan
        xs[3::11, -1] = np.inf
        xs[4::11, -1] = -np.inf
        xs[5::13] = -0.0
    return xs


def _assert_bits(got, want):
    assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("where", ["stage_quiet", "_ratio_tail", "Stager.function"])
def test_a_staging_error_falls_back_to_the_walk(where, monkeypatch):
    """Any error while staging (not only Unstageable) marks the layout unstageable: the call and the next
    ones of the layout take the tree walk (the same bits as a fresh objective), the search is not
    aborted, and the staging is not tried again for that layout."""
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
    tries = []
    if where == "Stager.function":

        def planted(self, *a, **k):
            tries.append(1)
            raise IndexError("planted")

        monkeypatch.setattr(X.Stager, "function", planted)
    else:

        def planted(*a, **k):
            tries.append(1)
            raise (TypeError if where == "stage_quiet" else ValueError)("planted")

        if where == "stage_quiet":
            monkeypatch.setattr(X, "stage_quiet", planted)
        else:  # a staged call (the ratio kernel), failing in the staging run only
            real_stager_call = X.Stager.call

            def call(self, fn, *a, **k):
                if fn is W._ratio_tail or (fn is W._ratio_kernel() and fn is not None):  # (staged: the kernel)
                    planted()
                return real_stager_call(self, fn, *a, **k)

            monkeypatch.setattr(X.Stager, "call", call)
    jobs = _jobs("lemmas")
    space = SPACES[1]
    obj, m = _objective(jobs, space)
    rng = np.random.default_rng(3)
    owner = np.repeat(np.arange(m), 2)
    for _ in range(4):  # the 1st call walks, the 2nd stages (the planted error), the 3rd and 4th walk
        xs = _populations(space, owner, rng)
        want = _objective(jobs, space)[0](xs, owner)
        _assert_bits(obj(xs, owner), want)
    assert len(tries) == 1, "the planted error was not reached once (staging not tried, or tried again)"


def test_a_staging_error_does_not_hide_an_error_of_the_walk(monkeypatch):
    """With staging failing, an error of the evaluation itself still reaches the caller, with its own
    message (the fallback only replaces the staging)."""
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
    monkeypatch.setattr(X, "stage_quiet", lambda *a, **k: (_ for _ in ()).throw(TypeError("planted staging")))
    jobs = _jobs("single")
    obj, m = _objective(jobs, SPACES[0])
    owner = np.zeros(4, dtype=np.intp)
    xs = _populations(SPACES[0], owner, np.random.default_rng(1), specials=False)
    obj(xs, owner)  # walks (first call of the layout)
    real = W._ratio_of

    def broken(*a, **k):
        raise _Planted("the walk's own error")

    monkeypatch.setattr(W, "_ratio_of", broken)
    with pytest.raises(_Planted, match="the walk's own error"):
        obj(xs, owner)  # staging fails (planted), then the walk raises its own error
    monkeypatch.setattr(W, "_ratio_of", real)
    obj(xs, owner)


class _Stop(Exception):
    pass


def _searched_tasks():
    """Every lockstep objective the report's searches build: the (jobs, members, space, scalars) given to
    the search tasks by the lemmas' search (``check lemmas``, full mode), the corrections' search of
    Lemma 2 against kappa(p) and of the combined lemma (``check corrections``, full mode, wider spaces:
    joint coupling, batches of 6 and 8) and Corollary 1's search (``check coverage``). Captured from
    :func:`pools.map_tasks` (the searches stop at their first re-check)."""
    from proofs_checks import recheck as R
    from proofs_checks.stacey import corrections as C
    from proofs_checks.stacey import coverage as V
    from proofs_checks.stacey import lemmas as L

    got = []
    mp = pytest.MonkeyPatch()

    def capture(fn, state, tasks, workers, cost=None):
        jobs, spaces, scalars, _, _ = state
        plain = [A._candidate_filter(jb.spec, W.job_scalars(jb, scalars)) is None for jb in jobs]
        got.extend((jobs, members, spaces[i], scalars, all(plain)) for i, members in tasks)
        return [[(np.zeros(spaces[i].dim), 0.0, 0) for _ in members] for i, members in tasks]

    def stop(*a, **k):
        raise _Stop

    mp.setattr(W, "map_tasks", capture)
    mp.setattr(R, "recheck", stop)
    try:
        for run in (
            lambda: L.search_records(list(L.DEFAULT_P), seed=0, quick=False),
            lambda: C.b2_records([3.0, 8.0], seed=0, quick=False),
            lambda: V.corollary1_records(0, False),
        ):
            with pytest.raises(_Stop):
                run()
    finally:
        mp.undo()
    return got


def test_every_searched_spec_is_covered():
    """The objectives below cover the searched specs of every check that searches (a new searched spec
    or check shows up here: its jobs are captured the same way), and all go through the lockstep
    objective's plain path (no candidate filter)."""
    tasks = _searched_tasks()
    ids = {jobs[j].spec.id for jobs, members, _, _, _ in tasks for j in members}
    assert {"thm1.B1", "thm1.B2", "thm1.B", "thm1.C", "cor1"} <= ids
    assert all(plain for *_, plain in tasks)
    scales = {float(jobs[j].scale) for jobs, members, _, _, _ in tasks for j in members}
    assert len(scales) >= 3  # 1 and two kappa(p): per-row bound scales
    couplings = {(s.coupling, s.n) for _, _, s, _, _ in tasks}
    assert ("joint", 4) in couplings and ("independent", 8) in couplings


@pytest.fixture(scope="module")
def searched_tasks():
    return _searched_tasks()


def test_staged_calls_equal_the_tree_walk_for_every_searched_spec(searched_tasks, monkeypatch):
    """For every objective the report's searches build (:func:`_searched_tasks`: all their specs, per-row
    bound scales, every space, joint coupling and batches up to 8), the staged calls (a layout's 3rd call
    on) equal the tree walk of a fresh objective bit for bit (bytes), on populations holding NaN, +-inf,
    -0.0, exact zeros, ties and corners."""
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
    staged = []
    real = W._staged_objective

    def counting(*a, **k):
        out = real(*a, **k)
        staged.append(1)
        return out

    monkeypatch.setattr(W, "_staged_objective", counting)
    rng = np.random.default_rng(17)
    seen = set()
    for jobs, members, space, scalars, _ in searched_tasks:
        key = (tuple(id(jobs[j].spec) for j in members), str(space.describe()))
        if key in seen:
            continue
        seen.add(key)
        obj = W._lockstep_objective(jobs, members, space, scalars)
        m = len(members)
        for owner in (np.repeat(np.arange(m), 2), np.arange(m)[m // 3 :]):
            for _ in range(3):
                xs = _populations(space, owner, rng)
                want = W._lockstep_objective(jobs, members, space, scalars)(xs, owner)
                _assert_bits(obj(xs, owner), want)
    assert len(staged) >= len(seen), "some objectives never ran staged"


def test_staged_calls_on_two_threads_equal_the_tree_walk(searched_tasks, monkeypatch):
    """A call of >= _SPLIT_ROWS rows (here 512) is split in two halves on two threads
    (LPTHEORY_SEARCH_THREADS=2), each half staged per its own layout, the halves learning the outcomes they
    share while the other runs: every call equals a fresh objective's tree walk on one thread, bit for bit (bytes)."""
    monkeypatch.setattr(W, "_SPLIT_ROWS", 512)  # calls of 600 rows split (the report's own split only > 8000)
    staged = []
    real = W._staged_objective

    def counting(*a, **k):
        out = real(*a, **k)
        staged.append(a[2].shape[0])
        return out

    monkeypatch.setattr(W, "_staged_objective", counting)
    rng = np.random.default_rng(23)
    picked = {}
    for jobs, members, space, scalars, _ in searched_tasks:  # several blocks: learning on split calls
        picked.setdefault((space.coupling, space.n > 1, len(members) > 8), (jobs, members, space, scalars))
    assert len(picked) >= 3
    for jobs, members, space, scalars in picked.values():
        monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "2")
        obj = W._lockstep_objective(jobs, members, space, scalars)
        m = len(members)
        owner = np.repeat(np.arange(m), -(-600 // m))
        assert owner.size >= W._SPLIT_ROWS
        for _ in range(4):
            xs = _populations(space, owner, rng)
            monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "2")
            got = obj(xs, owner)
            monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
            want = W._lockstep_objective(jobs, members, space, scalars)(xs, owner)
            _assert_bits(got, want)
    assert staged and max(staged) < W._SPLIT_ROWS, "the halves did not run staged"
