"""Per-row scalars in the expression evaluator (``Env(rows=...)``): the rows of several settings (several
p) evaluated in one call get, bit for bit, what each gets in a one-setting evaluation; the searches of
several p run in lockstep on that."""

import numpy as np
import pytest
import sympy as sp

from proofs_checks import engines as E
from proofs_checks import expressions as X
from proofs_checks import worst_case as W
from proofs_checks.stacey import formulas as F
from proofs_checks.stacey.lemmas import NONDEGENERATE

# p = 2: p* = 2 (x ** 2 is numpy's square); p = 3: 1/(p-1) = 0.5 (sqrt); p = 4: 2/p = 0.5
P = [2.0, 2.5, 3.0, 4.0, 8.0, 50.0]
SPACES = [E.DistributionSpace(1, 3, 1), E.DistributionSpace(2, 2, 2), E.DistributionSpace(2, 2, 1, coupling="joint")]


def _population(space, rng, per=5):
    xs = rng.uniform(-1, 1, (per * len(P), space.dim))
    xs[::4, 0] = 0.0  # exact zeros in the support
    return xs, np.repeat(P, per)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: str(s.describe()))
@pytest.mark.parametrize("order", ["grouped", "interleaved"])
def test_per_row_p_equals_per_p(space, order):
    """The constants of Assumptions 2-4 and the ratio of each Theorem 1 lemma (with and without its
    condition), evaluated on rows of six values of p at once, equal the evaluation at each p alone."""
    rng = np.random.default_rng(3)
    xs, rp = _population(space, rng)
    if order == "interleaved":
        perm = rng.permutation(len(xs))
        xs, rp = xs[perm], rp[perm]
    spec0 = F.LEMMA_SPECS["thm1.B"]
    _, sc, co, env = W._search_env(spec0, space, xs, {"eta": 1.0, "L": 1.0}, rows={"p": rp})
    for p in P:
        m = rp == p
        _, sc1, co1, env1 = W._search_env(spec0, space, xs[m], {"p": p, "eta": 1.0, "L": 1.0})
        np.testing.assert_array_equal(np.asarray(sc["G"]).reshape(-1)[m], np.asarray(sc1["G"]).reshape(-1))
        np.testing.assert_array_equal(co["sigma"][m], co1["sigma"])
        for spec in F.LEMMA_SPECS.values():
            for req in (None, NONDEGENERATE):
                np.testing.assert_array_equal(
                    W._ratio_of(spec, env, 1.0, req)[m], W._ratio_of(spec, env1, 1.0, req), err_msg=spec.id
                )


def test_rows_of_a_block_and_an_unplanned_leaf():
    """Env.take gives each row its value in the whole Env; a leaf the lane plan does not cover (a
    function of p and x other than the exact element-wise ones) is evaluated lane by lane, same bits."""
    rng = np.random.default_rng(5)
    space = E.DistributionSpace(1, 3, 2)
    xs, rp = _population(space, rng)
    dist = space.decode(xs)
    env = X.Env(scalars={"eta": 1.0}, dist=dist, rows={"p": rp})
    odd = X.Expect(X.CoordSum(sp.atan2(X.x, F.p) * sp.Abs(X.x) ** (1 / F.p) + sp.exp(-F.p * X.x**2)))
    whole = X.evaluate(odd, env)
    for p in P:
        m = rp == p
        one = X.Env(scalars={"eta": 1.0, "p": p}, dist=space.decode(xs[m]))
        np.testing.assert_array_equal(whole[m], X.evaluate(odd, one))
    a, b = 4, 21
    np.testing.assert_array_equal(X.evaluate(odd, env.take(a, b)), whole[a:b])


def test_rows_are_checked():
    dist = E.DistributionSpace(1, 2, 1).decode(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="one value per row"):
        X.Env(dist=dist, rows={"p": [2.0, 3.0]})
    with pytest.raises(ValueError, match="both as a scalar and per row"):
        X.Env(scalars={"p": 2.0}, dist=dist, rows={"p": [2.0, 3.0, 4.0]})


def test_searches_of_several_p_in_lockstep_equal_each_alone():
    """search_worst_many with jobs of several p (their own scalars) in one lockstep group: each job gets
    the worst case it finds alone at its p."""
    spaces = [E.DistributionSpace(1, 2, 1), E.DistributionSpace(1, 2, 2)]
    budget = E.SearchBudget(maxiter=4, popsize=4)
    jobs = [
        E.SearchJob(F.LEMMA_SPECS[lem], [7, i, int(p)], 1.0 + 0.5 * i, NONDEGENERATE, scalars={"p": p})
        for p in (3.0, 4.0)
        for i, lem in enumerate(("thm1.B2", "thm1.B"))
    ]
    together = E.search_worst_many(jobs, spaces, {"eta": 1.0, "L": 1.0}, budget=budget)
    for jb, got in zip(jobs, together):
        alone = E.search_worst(
            jb.spec,
            spaces,
            {"p": jb.scalars["p"], "eta": 1.0, "L": 1.0},
            seed=jb.seed,
            budget=budget,
            scale=jb.scale,
            require=jb.require,
        )
        assert got["ratio"] == alone["ratio"] and got["nfev"] == alone["nfev"]
        np.testing.assert_array_equal(got["x"], alone["x"])


def test_a_large_call_split_over_two_threads_gives_the_same_values(monkeypatch):
    """An objective call of many rows (several jobs, several p) is evaluated in two halves on two
    threads: the values are those of the call in one piece (one thread)."""
    jobs = [
        E.SearchJob(F.LEMMA_SPECS[lem], [1, i], 1.0, NONDEGENERATE, scalars={"p": p})
        for p in (3.0, 4.0, 8.0)
        for i, lem in enumerate(("thm1.B1", "thm1.B2"))
    ]
    members = sorted(range(len(jobs)), key=lambda j: (j % 2, j // 2))
    space = E.DistributionSpace(2, 2, 1)
    monkeypatch.setattr(W, "_SPLIT_ROWS", 512)  # 720 rows split (the report's own split only > 8000)
    obj = W._lockstep_objective(jobs, members, space, {"eta": 1.0, "L": 1.0})
    rng = np.random.default_rng(9)
    owner = np.repeat(np.arange(len(jobs)), 120)
    xs = rng.uniform(-1, 1, (owner.size, space.dim))
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "2")
    split = obj(xs, owner)
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "1")
    np.testing.assert_array_equal(split, obj(xs, owner))
    perm = rng.permutation(owner.size)  # rows in any order: each keeps its value
    np.testing.assert_array_equal(obj(xs[perm], owner[perm]), split[perm])


def test_lane_power_special_exponents_only_on_their_rows():
    """_LaneTable.pow with lane exponents that numpy takes fast paths for (0.5, 2, -1) among others: the rows
    of those lanes get sqrt / square / reciprocal computed on their rows alone; every row has the bits of a
    one-setting ``base_row ** e`` (e a scalar), and the result equals the np.where form (values and layout)."""
    from proofs_checks.evaluator import _FAST_POWERS, _LaneTable

    rng = np.random.default_rng(4)
    exps = [np.float64(e) for e in (0.5, 2.5, 2.0, 2.0, -1.0, 1.0 / 3.0, 0.5)]
    sizes = [3, 2, 4, 1, 5, 2, 3]
    cuts = np.cumsum([0, *sizes])
    S = int(cuts[-1])
    lanes = [(slice(int(a), int(b)), {"p": e}) for a, b, e in zip(cuts[:-1], cuts[1:], exps)]
    lidx = np.repeat(np.arange(len(exps)), sizes)
    specials = [[(v, fn) for v, fn in _FAST_POWERS if any(e == v for e in exps)]]
    table = _LaneTable(lanes, lidx, [exps], [np.array(exps)], specials, S)
    for base in (rng.uniform(0.1, 3.0, (S, 2, 3)), rng.uniform(0.1, 3.0, (S, 3, 2)).transpose(0, 2, 1)):
        got = table.pow(base, 0)
        e_rows = np.array(exps)[lidx].reshape(-1, 1, 1)
        ref = np.power(base, e_rows)
        for v, fn in specials[0]:
            ref = np.where(e_rows == v, fn(base), ref)
        np.testing.assert_array_equal(got, ref)
        assert got.strides == ref.strides
        for r in range(S):
            np.testing.assert_array_equal(got[r], base[r] ** exps[lidx[r]])
