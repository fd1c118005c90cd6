"""The Stacey pack's Theorem 1 lemmas on the claim API: exact expectations, the search's power, the
independent witness re-check."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs_checks.api import Distribution, Env, evaluate, expression_witness, recheck
from proofs_checks.engines import constants
from proofs_checks.expressions import batch_outcomes
from proofs_checks.stacey import formulas as F
from proofs_checks.stacey import lemmas as LM


def _brute_batch(values, weights, n):
    out = {}
    for combo in itertools.product(range(len(values)), repeat=n):
        v = sum(values[j] for j in combo) / n
        pr = math.prod(weights[j] for j in combo)
        out[round(v, 12)] = out.get(round(v, 12), 0.0) + pr
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_batch_outcomes_match_brute_force(n):
    v = np.array([[0.7, -1.3, 0.2]])
    w = np.array([[0.25, 0.35, 0.4]])
    vals, probs = batch_outcomes(v, w, n)
    got = {}
    for x, pr in zip(vals[0], probs[0]):
        got[round(float(x), 12)] = got.get(round(float(x), 12), 0.0) + float(pr)
    ref = _brute_batch(v[0], w[0], n)
    assert got.keys() == ref.keys()
    for k in ref:
        assert got[k] == pytest.approx(ref[k], rel=1e-12, abs=1e-15)
    mean = float(np.sum(w * v))
    var = float(np.sum(w * (v - mean) ** 2))
    assert np.sum(probs) == pytest.approx(1.0, abs=1e-14)
    assert np.sum(probs * vals) == pytest.approx(mean, abs=1e-14)  # unbiased (Assumption 2)
    assert np.sum(probs * (vals - mean) ** 2) == pytest.approx(var / n, rel=1e-12)  # Corollary 2


def test_zero_weight_support_points_are_harmless():
    vals, probs = batch_outcomes(np.array([[1.0, -1.0, 5.0]]), np.array([[0.5, 0.5, 0.0]]), 3)
    assert np.all(np.isfinite(probs)) and np.sum(probs) == pytest.approx(1.0)
    assert np.all(probs[vals > 1.0 + 1e-12] == 0.0)


def _terms(v, w, n, p):
    """E[term] and bound of each lemma for one distribution, the constants at their tightest values."""
    dist = Distribution(v, w, n)
    out = {}
    for lemma, spec in F.LEMMA_SPECS.items():
        sc, co, _ = constants(spec, dist, {"p": p, "eta": 1.0, "L": 1.0, "n": n})
        env = Env(scalars=sc, coords=co, dist=dist)
        out[lemma] = (float(evaluate(spec.term, env)[0]), float(evaluate(spec.bound, env)[0]))
    return out


_dists = st.integers(1, 3).flatmap(
    lambda d: st.tuples(
        st.lists(st.lists(st.floats(-1, 1, allow_subnormal=False), min_size=2, max_size=3), min_size=d, max_size=d),
        st.lists(st.lists(st.floats(0.01, 1), min_size=3, max_size=3), min_size=d, max_size=d),
        st.sampled_from([1, 2, 3]),
    )
)


def _unpack(data):
    vals, wts, n = data
    k = min(len(r) for r in vals)
    v = np.array([r[:k] for r in vals])
    w = np.array([r[:k] for r in wts])
    return v, w / w.sum(axis=1, keepdims=True), n


@settings(max_examples=60, deadline=None)
@given(_dists, st.sampled_from([2.0, 2.5, 3.0, 4.0, 8.0]))
def test_term_identities_and_true_bounds(data, p):
    """B <= B1 + B2 (so in expectation); at p = 2, E[B] = 0 and E[C] = (||g||^2 + sum sigma^2/n)/2; the
    bounds that are true (Lemma B1, the combined bound on E[B], and C) are never exceeded."""
    v, w, n = _unpack(data)
    t = _terms(v, w, n, p)
    assert t["thm1.B"][0] <= t["thm1.B1"][0] + t["thm1.B2"][0] + 1e-12
    g = np.sum(v * w, axis=1)
    if p == 2.0:
        var = np.sum(w * (v - g[:, None]) ** 2, axis=1)
        assert abs(t["thm1.B"][0]) <= 1e-12
        assert t["thm1.C"][0] == pytest.approx(0.5 * (np.sum(g**2) + np.sum(var) / n), rel=1e-10, abs=1e-14)
    for lemma in ("thm1.B1", "thm1.B", "thm1.C"):
        term, bound = t[lemma]
        assert term <= bound * (1 + 1e-9) + 1e-300


def _two_point_b2(p):
    """The analytic Lemma B2 counterexample: g~ in {eps, 1} (eps -> 0+), mean g maximizing
    (g^{1+a} + g^2 - 2 g^{2+a}) / (a sqrt(g (1 - g))), a = 1/(p-1); the witness is built by hand."""
    from scipy.optimize import minimize_scalar

    a = 1.0 / (p - 1.0)
    h = lambda g: (g ** (1 + a) + g**2 - 2 * g ** (2 + a)) / (a * math.sqrt(g * (1 - g)))  # noqa: E731
    g = minimize_scalar(lambda u: -h(u), bounds=(1e-6, 1 - 1e-9), method="bounded", options={"xatol": 1e-12}).x
    eps = 1e-100
    q = (1.0 - g) / (1.0 - eps)  # weight of eps so that the mean is g
    dist = Distribution(np.array([[eps, 1.0]]), np.array([[q, 1 - q]]), 1)
    w = expression_witness(
        F.LEMMA_SPECS["thm1.B2"],
        scalars={"p": p, "eta": 1.0, "n": 1, "G": 1.0},
        coords={"g": [q * eps + (1 - q)], "sigma": [math.sqrt(g * (1 - g)) * (1 + 1e-12)]},
        dist=dist,
    )
    return h(g), json.loads(json.dumps(w))


@pytest.mark.parametrize("p,violated", [(2.5, False), (2.7, False), (3.0, True), (4.0, True), (8.0, True)])
def test_lemma_B2_analytic_counterexample_rechecks(p, violated):
    """Hand-made witness (independent of the search): Lemma B2 fails for p above about 2.75."""
    closed_form, w = _two_point_b2(p)
    chk = recheck(w)
    assert chk["assumptions_ok"]
    assert chk["violated"] is violated
    assert chk["ratio"] == pytest.approx(closed_form, rel=1e-6)


def test_recheck_rejects_witnesses_that_break_assumptions():
    _, w = _two_point_b2(4.0)
    assert recheck(w)["violated"]
    low_sigma = json.loads(json.dumps(w))
    low_sigma["coords"]["sigma"] = [w["coords"]["sigma"][0] * 0.9]  # Assumption 3 broken
    assert not recheck(low_sigma)["assumptions_ok"] and not recheck(low_sigma)["violated"]
    low_G = json.loads(json.dumps(w))
    low_G["scalars"]["G"] = 0.99  # Assumption 4 broken: a sample has norm 1
    assert not recheck(low_G)["assumptions_ok"]
    bad_g = json.loads(json.dumps(w))
    bad_g["coords"]["g"] = [0.5]  # the stated gradient is not the mean
    assert not recheck(bad_g)["assumptions_ok"]


@pytest.mark.parametrize("lemma", F.LEMMAS)
def test_recheck_agrees_with_float64_terms(lemma):
    rng = np.random.default_rng(3)
    v = rng.uniform(-1, 1, (2, 3))
    w = rng.uniform(0.1, 1, (2, 3))
    w /= w.sum(axis=1, keepdims=True)
    spec = F.LEMMA_SPECS[lemma]
    for n in (1, 3):
        dist = Distribution(v, w, n)
        sc, co, _ = constants(spec, dist, {"p": 3.5, "eta": 1.0, "L": 1.0, "n": n})
        env = Env(scalars=sc, coords=co, dist=dist)
        r = float(evaluate(spec.term, env)[0] / evaluate(spec.bound, env)[0])
        chk = recheck(expression_witness(spec, scalars=sc, coords=co, dist=dist))
        assert chk["assumptions_ok"]
        assert chk["ratio"] == pytest.approx(r, rel=1e-9)


def _known_ratio(lemma, p):
    """The ratio of a hand-picked distribution: a lower bound on the supremum, so scaling the paper's
    bound by (this ratio / k) plants a bound that is false by a factor k."""
    v = np.array([[-0.9, 0.8]]) if lemma in ("thm1.B1", "thm1.B") else np.array([[0.05, 1.0]])
    t, b = _terms(v, np.array([[0.3, 0.7]]), 1, p)[lemma]
    return t / b


@pytest.mark.parametrize("lemma", F.LEMMAS)
@pytest.mark.parametrize("k", [2.0, 10.0])
def test_search_finds_planted_false_bounds(lemma, k):
    scale = min(1.0, _known_ratio(lemma, 4.0)) / k
    recs = LM.search_records([4.0], quick=True, scale=scale, seed=1, lemmas=(lemma,))
    assert recs[0].status == "violated" and recs[0].ratio > 1.0
    assert recheck(recs[0].witness)["violated"]


def test_search_never_violates_a_trivially_true_bound():
    """The paper's bounds scaled up 10x (true for every lemma, Lemma B2 included: its worst ratio is
    about 3.6 at p = 8) are never reported violated."""
    recs = LM.search_records([3.0, 8.0], quick=True, scale=10.0)
    assert all(r.status == "holds" for r in recs), [(r.id, r.params["p"], r.ratio) for r in recs]
    assert all(r.ratio < 1.0 for r in recs)


def test_search_records_verdicts_at_p4():
    recs = {r.id: r for r in LM.search_records([4.0], quick=True)}
    assert recs["thm1.B2"].status == "violated"
    w = recs["thm1.B2"].witness
    assert w["kind"] == "expression" and {"values", "weights"} <= set(w["distribution"])
    assert recheck({k: v for k, v in w.items() if k != "recheck"})["violated"]
    for lemma in ("thm1.B1", "thm1.B", "thm1.C"):
        r = recs[lemma]
        assert r.status == "holds" and "restarts" in r.reason and "evaluations" in r.reason
        assert r.params["search"]["evaluations"] > 1000


def test_identity_records_hold():
    for r in LM.check_identity_A([2.0, 3.0, 7.5]) + LM.check_identity_C([3.0]):
        assert r.status == "holds", r.reason
