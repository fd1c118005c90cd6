"""Theorem 1 checks: exact expectations, the adversarial search's power, the independent witness
re-check, trajectory checks, claim records and the ``lptheory check`` CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lptheory.cli import main
from proofs_checks import lemmas as LM
from proofs_checks import theorem1 as T1
from proofs_checks.records import Claim, validate_record
from proofs_checks.witness import recheck

# ---------------------------------------------------------------------------------------------------
# exact distributions and expectations


def _brute_batch(values, weights, n):
    """Reference: enumerate all n-tuples of draws (k^n of them)."""
    out = {}
    for combo in itertools.product(range(len(values)), repeat=n):
        v = sum(values[j] for j in combo) / n
        pr = math.prod(weights[j] for j in combo)
        out[round(v, 12)] = out.get(round(v, 12), 0.0) + pr
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_batch_distribution_matches_brute_force(n):
    v = np.array([[0.7, -1.3, 0.2]])
    w = np.array([[0.25, 0.35, 0.4]])
    vals, probs = LM.batch_distribution(v, w, n)
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
    vals, probs = LM.batch_distribution(np.array([[1.0, -1.0, 5.0]]), np.array([[0.5, 0.5, 0.0]]), 3)
    assert np.all(np.isfinite(probs)) and np.sum(probs) == pytest.approx(1.0)
    assert np.all(probs[vals > 1.0 + 1e-12] == 0.0)


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
    w = w / w.sum(axis=1, keepdims=True)
    return v, w, n


@settings(max_examples=60, deadline=None)
@given(_dists, st.sampled_from([2.0, 2.5, 3.0, 4.0, 8.0]))
def test_term_identities_and_true_bounds(data, p):
    """B <= B1 + B2 pathwise (so in expectation); at p = 2, E[B] = 0 and E[C] = (||g||^2 + sum sigma^2/n)/2;
    the bounds that are true (Lemma B1, the combined bound on E[B], and C) are never exceeded."""
    v, w, n = _unpack(data)
    g = np.sum(v * w, axis=1)
    vals, probs = LM.batch_distribution(v, w, n)
    t = LM.expected_terms(g, vals, probs, p)
    assert t["B"] <= t["B1"] + t["B2"] + 1e-12
    if p == 2.0:
        var = np.sum(w * (v - g[:, None]) ** 2, axis=1)
        assert abs(t["B"]) <= 1e-12
        assert t["C"] == pytest.approx(0.5 * (np.sum(g**2) + np.sum(var) / n), rel=1e-10, abs=1e-14)
    for lemma in ("thm1.B1", "thm1.B", "thm1.C"):
        assert LM.ratios(lemma, v[None], w[None], n, p)[0] <= 1.0 + 1e-9


def _two_point_b2(p):
    """The analytic Lemma B2 counterexample: g~ in {eps, 1} (eps -> 0+), mean g maximizing
    (g^{1+a} + g^2 - 2 g^{2+a}) / (a sqrt(g (1 - g))), a = 1/(p-1)."""
    from scipy.optimize import minimize_scalar

    a = 1.0 / (p - 1.0)
    h = lambda g: (g ** (1 + a) + g**2 - 2 * g ** (2 + a)) / (a * math.sqrt(g * (1 - g)))  # noqa: E731
    res = minimize_scalar(lambda g: -h(g), bounds=(1e-6, 1 - 1e-9), method="bounded", options={"xatol": 1e-12})
    g = res.x
    eps = 1e-100
    q = (1.0 - g) / (1.0 - eps)  # weight of eps so that the mean is g
    return h(g), {
        "lemma": "thm1.B2",
        "p": p,
        "n": 1,
        "eta": 1.0,
        "G": 1.0,
        "sigma": [math.sqrt(g * (1 - g)) * (1 + 1e-12)],
        "coordinates": [{"g": q * eps + (1 - q), "values": [eps, 1.0], "weights": [q, 1 - q]}],
    }


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
    low_sigma["sigma"] = [w["sigma"][0] * 0.9]  # Assumption 3 broken: the true std is larger
    assert not recheck(low_sigma)["assumptions_ok"] and not recheck(low_sigma)["violated"]
    low_G = json.loads(json.dumps(w))
    low_G["G"] = 0.99  # Assumption 4 broken: a sample has norm 1
    assert not recheck(low_G)["assumptions_ok"]
    bad_g = json.loads(json.dumps(w))
    bad_g["coordinates"][0]["g"] = 0.5  # the stored gradient is not the mean
    assert not recheck(bad_g)["assumptions_ok"]


@pytest.mark.parametrize("lemma", LM.LEMMAS)
def test_recheck_agrees_with_float64_terms(lemma):
    rng = np.random.default_rng(3)
    v = rng.uniform(-1, 1, (2, 3))
    w = rng.uniform(0.1, 1, (2, 3))
    w /= w.sum(axis=1, keepdims=True)
    for n in (1, 3):
        r = LM.ratios(lemma, v[None], w[None], n, 3.5)[0]
        chk = recheck(LM.make_witness(lemma, 3.5, n, v, w))
        assert chk["assumptions_ok"]
        assert chk["ratio"] == pytest.approx(r, rel=1e-9)


# ---------------------------------------------------------------------------------------------------
# the search's power: planted false bounds must be found, a trivially true one never


def _known_ratio(lemma, p):
    """The ratio of a fixed, hand-picked distribution: a lower bound on the supremum, so scaling the
    paper's bound by (this ratio / k) plants a bound that is false by a factor k."""
    v = np.array([[[-0.9, 0.8]]]) if lemma in ("thm1.B1", "thm1.B") else np.array([[[0.05, 1.0]]])
    w = np.array([[[0.3, 0.7]]])
    return float(LM.ratios(lemma, v, w, 1, p)[0])


@pytest.mark.parametrize("lemma", LM.LEMMAS)
@pytest.mark.parametrize("k", [2.0, 10.0])
def test_search_finds_planted_false_bounds(lemma, k):
    p = 4.0
    scale = min(1.0, _known_ratio(lemma, p)) / k
    assert scale > 0
    best = LM.search(lemma, p, mode="quick", scale=scale, seed=1)
    assert best["ratio"] > 1.0
    w = LM.make_witness(lemma, p, best["n"], best["values"], best["weights"], scale)
    chk = recheck(w)
    assert chk["violated"] and chk["assumptions_ok"]


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
    assert recheck({k: v for k, v in w.items() if k != "recheck"})["violated"]
    assert {"g", "values", "weights"} <= set(w["coordinates"][0])
    for lemma in ("thm1.B1", "thm1.B", "thm1.C"):
        r = recs[lemma]
        assert r.status == "holds" and "restarts" in r.reason and "evaluations" in r.reason
        assert r.params["search"]["evaluations"] > 1000


def test_identity_records_hold():
    for r in LM.check_identity_A([2.0, 3.0, 7.5]) + LM.check_identity_C([3.0]):
        assert r.status == "holds", r.reason


# ---------------------------------------------------------------------------------------------------
# Theorem 1 along trajectories


def test_theorem_rhs_simplifies_to_the_rate_bound():
    """With eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}) and n_t = T, the three terms sum to the paper's
    N^{-1/4}[L^{1/2} G^{1/(p-1)} (f0 - f* + 1/2) + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1]."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        p, L, G, s1, gap = rng.uniform(2.1, 9), *rng.uniform(0.1, 10, 4)
        T = int(rng.integers(1, 5000))
        eta = T1.theorem_eta(L, G, T, p)
        rhs = T1.theorem_rhs(f_gap=gap, eta=eta, T=T, L=L, G=G, p=p, sigma_l1=s1, batches=[T] * 3)["total"]
        a = 1 / (p - 1)
        paper = (T * T) ** -0.25 * (math.sqrt(L) * G**a * (gap + 0.5) + (2 * p - 1) / (p - 1) * G**a * s1)
        assert rhs == pytest.approx(paper, rel=1e-12)


@pytest.fixture(scope="module")
def theorem1_quick():
    return T1.run_theorem1([3.0], quick=True, seed=0)


def test_theorem1_quick_records(theorem1_quick):
    ids = {r.id for r in theorem1_quick}
    assert ids == {"thm1.bound", "thm1.step", "thm1.rate"}
    for r in theorem1_quick:
        validate_record(r.to_dict())
        if r.params.get("noise") in ("gaussian", "student-t") and r.id == "thm1.bound":
            assert r.status == "not-applicable" and "Assumption 4" in r.reason
        if r.params.get("noise") in ("rademacher", "uniform", "two-point") and r.id == "thm1.bound":
            assert r.status == "holds" and r.ci[1] <= r.bound
        if r.params.get("variant") == "pathwise":
            assert r.status == "holds" and r.method == "exact"
    rate = next(r for r in theorem1_quick if r.id == "thm1.rate")
    assert rate.status in ("holds", "inconclusive")
    assert all(m <= b for m, b in zip(rate.data["lhs"], rate.data["bound"]))


def test_theorem1_seed_reproducible(theorem1_quick):
    again = T1.run_theorem1([3.0], quick=True, seed=0)
    assert [r.empirical for r in again] == [r.empirical for r in theorem1_quick]


def test_planted_invalid_smoothness_constant_is_caught():
    """With L scaled down 100x (not a valid l_p smoothness constant), the pathwise one-step inequality
    f(theta_{t+1}) <= f(theta_t) - A + B + C must fail along the run."""
    recs = T1.bound_records(3.0, seed=0, quick=True, L_scale=0.01)
    path = [r for r in recs if r.params.get("variant") == "pathwise" and r.params["noise"] == "rademacher"]
    assert path and path[0].status == "violated"
    w = path[0].witness
    assert w["f_next"] > w["f_t"] - w["A"] + w["B"] + w["C"]


def test_theorem1_rejects_bad_p():
    with pytest.raises(ValueError, match="p must be in"):
        T1.run_theorem1([2.0], quick=True)
    with pytest.raises(ValueError, match="p must be in"):
        LM.run_lemmas([1.5], quick=True)


# ---------------------------------------------------------------------------------------------------
# records and CLI


def test_claim_record_contract():
    with pytest.raises(ValueError, match="witness"):
        Claim(id="x", statement="s", source="s", status="violated", method="exact")
    with pytest.raises(ValueError, match="reason"):
        Claim(id="x", statement="s", source="s", status="inconclusive", method="exact")
    with pytest.raises(ValueError, match="status"):
        Claim(id="x", statement="s", source="s", status="true", method="exact")
    c = Claim(id="x", statement="s", source="s", status="holds", method="exact", empirical=1.0, bound=2.0)
    assert c.ratio == 0.5
    validate_record(c.to_dict())


def test_cli_check_json_and_out(tmp_path, capsys):
    rc = main(["check", "theorem1", "--p", "3", "--quick", "--json", "--quiet", "--out", str(tmp_path)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"claims", "meta"} and doc["meta"]["seed"] == 0 and "numpy" in doc["meta"]["versions"]
    for rec in doc["claims"]:
        validate_record(rec)
    for name in ("theorem1.json", "theorem1_rate.png", "theorem1_rate.svg", "theorem1_bound.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_cli_check_lemmas_table(tmp_path, capsys):
    rc = main(["check", "lemmas", "--p", "4", "--quick", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "thm1.B2" in out and "VIOLATED" in out and "verdicts:" in out
    assert (tmp_path / "lemma_search.svg").exists() and (tmp_path / "lemma_terms.png").exists()


def test_cli_check_bad_input_exit_2(capsys):
    assert main(["check", "lemmas", "--p", "1.5", "--quick", "--quiet"]) == 2
    assert "p must be in" in capsys.readouterr().err
