"""The lockstep objective's staged evaluation (:class:`proofs_checks.expressions.Stager`): a call whose
layout (rows per job, shape and memory layout of the population) was seen before runs as a straight-line
function making the evaluator's numpy calls; its values are, bit for bit, those of the evaluator's tree
walk."""

import numpy as np
import pytest
import sympy as sp

from proofs_checks import engines as E
from proofs_checks import expressions as X
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
    return E._lockstep_objective(jobs, members, space, {"eta": 1.0, "L": 1.0}), len(members)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: str(s.describe()))
@pytest.mark.parametrize("kind", ["lemmas", "scaled", "single"])
def test_staged_calls_equal_the_tree_walk(space, kind, monkeypatch):
    """Calls of a layout seen before (the polish's and the generations' repeated layouts) run staged; each
    value equals the tree walk's (a fresh objective's first call), bit for bit, on new populations with
    exact zeros, ties and points at the box's corners."""
    staged = []
    real = E._staged_objective

    def counting(*a, **k):
        out = real(*a, **k)
        staged.append(out[0])
        return out

    monkeypatch.setattr(E, "_staged_objective", counting)
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
        X._stage_fn(lambda c: 0.0, X.SCtx(senv))


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
                got = E._ratio_tail(term, bound, r, scale, ge)
                want = E._ratio_tail_numpy(term, bound, r, scale, ge)
            np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
