"""The proof of Theorem 1's combined term and of Lemma 1 with the coefficient K(p) = M_a/2 < 1
(proofs_checks/stacey/combined_proof.py; issue 35, item 7): the constant, the theorem on exact finite laws, the
tight point, the negative controls, and what a wrong proof looks like."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs_checks.records import Claim, holds_scope
from proofs_checks.stacey import combined_proof as CP

GRID = (2.0, 2.5, 3.0, 4.0, 8.0, 16.0, 50.0, 200.0, 1000.0)


def _s(v, a):
    return np.sign(v) * np.abs(v) ** a


@pytest.mark.parametrize("p", GRID)
def test_enclosure_is_tight_and_matches_a_dense_grid(p):
    enc = CP.m_enclosure(p)
    t = np.concatenate([np.linspace(0.0, 1.0, 200001), np.logspace(-12, 0, 400001)])  # t* is small at large p
    a = 1.0 / (p - 1.0)
    dense = float(np.max((1 + t**a) / (1 + t)))
    assert enc["lo"] <= enc["hi"] and enc["hi"] - enc["lo"] <= 1e-9
    assert enc["lo"] - 1e-9 <= dense <= enc["hi"] + 1e-12  # a grid maximum never exceeds the true one
    assert 1.0 - 1e-15 <= enc["lo"] and enc["hi"] < 2.0


def test_closed_forms_at_p3_and_p4():
    # a = 1/2: t* = (sqrt2 - 1)^2, M = (1 + sqrt2)/2; a = 1/3: t* = 1/8, M = 4/3
    for p, m in ((3.0, (1 + math.sqrt(2)) / 2), (4.0, 4.0 / 3.0)):
        enc = CP.m_enclosure(p)
        assert enc["lo"] - 1e-12 <= m <= enc["hi"] + 1e-12


@pytest.mark.parametrize("p", (2.5, 3.0, 8.0, 50.0))
def test_proof_holds_with_its_controls(p):
    pr = CP.combined_proof(p)
    assert pr["proved"] and all(ok for _, ok in pr["steps"]) and all(ok for _, ok in pr["controls"])
    assert 0.5 <= pr["K"] < 1.0 < (2 * p - 1) / (p - 1)
    assert {name for name, _ in pr["controls"]} == {"M_a <= 1 (the constant 1/2)", "step 1 with 0.99 M_a"}


def test_K_increases_towards_one():
    ks = [CP.combined_proof(p)["K"] for p in GRID]
    assert all(x < y for x, y in zip(ks, ks[1:])) and ks[0] == pytest.approx(0.5, abs=1e-12) and ks[-1] < 1


@pytest.mark.parametrize("p", (3.0, 8.0))
def test_step1_is_tight_at_the_argmax(p):
    """Step 1's bound k(x) <= M_a G^a (g - x)_+ is attained at g = G = 1, x = -t*: the constant cannot be
    lowered in the pointwise step (the grid control with 0.99 M_a finds it there)."""
    pr = CP.combined_proof(p)
    a, x = 1.0 / (p - 1.0), -pr["t_star"]
    k = 1.0 * (1.0 - _s(x, a))
    assert k == pytest.approx(pr["M"][0] * (1.0 - x), rel=1e-9)


@st.composite
def _law(draw):
    """A finite law of X in [-1, 1] (G = 1): k support points with weights; g = E X."""
    k = draw(st.integers(2, 5))
    xs = np.array(draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=k, max_size=k)))
    w = np.array(draw(st.lists(st.floats(1e-3, 1), min_size=k, max_size=k)))
    return xs, w / w.sum()


@settings(max_examples=300, deadline=None)
@given(law=_law(), p=st.sampled_from((2.5, 3.0, 4.0, 8.0, 50.0)))
def test_theorem_on_finite_laws(law, p):
    """E k(X) and E l(X) <= K(p) G^a sd(X) for every finite law in [-G, G] (G = 1), and <= K E|X - g|
    (the proof's intermediate step), with K = M_a/2 from the enclosure."""
    xs, w = law
    a = 1.0 / (p - 1.0)
    g = float(w @ xs)
    sd = math.sqrt(max(float(w @ (xs - g) ** 2), 0.0))
    mad = float(w @ np.abs(xs - g))
    K = CP.combined_proof(p)["K"]
    k = float(w @ (g * (_s(g, a) - _s(xs, a))))
    lterm = float(w @ (abs(g) * (abs(g) ** a + np.abs(xs) ** a) * (np.sign(xs) != np.sign(g))))
    tol = 1e-12
    assert k <= K * mad + tol and lterm <= K * mad + tol
    assert k <= K * sd + tol and lterm <= K * sd + tol


def _search_record(cid="thm1.B", p=3.0, ratio=0.1, status="holds"):
    return Claim(
        id=cid,
        statement="s",
        source="s",
        status=status,
        method="adversarial-search",
        empirical=ratio,
        bound=1.0,
        params={"p": p, "search": {"evaluations": 1}},
        reason="no violation",
        evidence="searched",
    )


def test_prove_records_raises_searched_holds_to_proved():
    rec = _search_record()
    (out,) = CP.prove_records([rec])
    assert out.evidence == "proved" and holds_scope(out) == "proved"
    assert out.data["proof"]["proved"] and out.data["proof"]["K"] == CP.combined_proof(3.0)["K"]
    assert "proved for every law" in out.scope and out.reason.startswith("proved,")
    # the searched constant is the ratio times the claimed coefficient (2p-1)/(p-1) = 2.5 at p = 3
    assert out.data["proof"]["searched_constant"] == pytest.approx(0.25)


def test_a_search_beyond_K_refutes_the_proof():
    """Planted: a search record that reached more than K(p) (coefficient 2.5 x ratio 0.3 = 0.75 > 0.6036 at p = 3)
    must not be raised to proved; the record says the proof is refuted."""
    (out,) = CP.prove_records([_search_record(ratio=0.3)])
    assert out.evidence == "searched" and holds_scope(out) == "tested"
    assert "proof is refuted" in out.reason and out.data["proof"]["proved"] is False


def test_a_wrong_constant_is_caught(monkeypatch):
    """Planted bug: an enclosure that under-states M_a (0.98 x the true value) must make the grid check of step 1
    fail, so the proof is not established."""
    true = CP.m_enclosure(3.0)
    CP.combined_proof.cache_clear()
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", "0")  # the planted enclosure decides, not a kept decision
    monkeypatch.setattr(CP, "m_enclosure", lambda p: {**true, "lo": 0.98 * true["lo"], "hi": 0.98 * true["hi"]})
    try:
        pr = CP.combined_proof(3.0)
        assert not pr["proved"] and dict(pr["steps"])["step 1 on the (g, x) grid at 50 digits"] is False
    finally:
        CP.combined_proof.cache_clear()


def test_other_records_untouched():
    recs = [
        _search_record(status="inconclusive"),
        _search_record(cid="thm1.B2"),
        dataclasses.replace(_search_record(), method="exact"),
        dataclasses.replace(_search_record(), params={"p": 3.0, "control": "planted-violation"}),
        _search_record(p=1.5),
    ]
    assert CP.prove_records(recs) == recs


def test_bad_p():
    with pytest.raises(ValueError, match="p must be"):
        CP.m_enclosure(1.5)


def test_c_term_proof_and_its_record():
    pr = CP.c_term_proof(3.0)
    assert pr["proved"] and pr["K"] == 1.0 and dict(pr["controls"]) == {"2 p*/p = 2/p": True}
    # the identity it rests on, in floats: ||s(v)||_p^2 = ||v||_{p*}^{2/(p-1)}
    rng = np.random.default_rng(0)
    for p in (2.5, 3.0, 7.0):
        v = rng.standard_normal(6)
        ps = p / (p - 1)
        lhs = np.sum(np.abs(_s(v, 1 / (p - 1))) ** p) ** (2 / p)
        assert lhs == pytest.approx(np.linalg.norm(v, ps) ** (2 / (p - 1)))
    (out,) = CP.prove_records([_search_record(cid="thm1.C", ratio=0.9999999999999981)])
    assert out.evidence == "proved" and out.data["proof"]["searched_constant"] == pytest.approx(1.0)
    assert "Assumption 4" in out.scope
    # a ratio above 1 beyond float rounding refutes it
    (bad,) = CP.prove_records([_search_record(cid="thm1.C", ratio=1.001)])
    assert bad.evidence == "searched" and "refuted" in bad.reason


def test_a_proof_never_reaches_a_smaller_claimed_constant():
    """Planted (the reviewer's reproducer): a thm1.B1 search at bound_scale 0.2 claims E[B1] <= 0.4 G^a tau,
    which is false (a two-point law at p = 3 reaches 0.4539 > 0.4); K(3) = 0.6036 > 0.4, so the proof must not
    raise it. The sharper record's own scale (p-1)/(2p-1) makes its claimed constant exactly 1."""
    r = dataclasses.replace(_search_record(cid="thm1.B1", ratio=0.1), params={"p": 3.0, "bound_scale": 0.2})
    (out,) = CP.prove_records([r])
    assert out.evidence == "searched" and "does not reach this claim" in out.reason
    assert CP.claimed_constant(r) == pytest.approx(0.4)
    sh = dataclasses.replace(
        _search_record(cid="thm1.B.sharper", ratio=0.2874), params={"p": 3.0, "bound_scale": 2.0 / 5.0}
    )
    assert CP.claimed_constant(sh) == pytest.approx(1.0)
    (ok,) = CP.prove_records([sh])
    assert ok.evidence == "proved" and ok.data["proof"]["searched_constant"] == pytest.approx(0.2874)


def test_exponent_is_exact_for_the_float_p():
    # nsimplify would turn 2.0000000001 into 2 (a = 1): the enclosure must be of the float's own exponent
    a = CP._a(2.0000000001)
    assert a != 1 and abs(float(a) - 1 / 1.0000000001) < 1e-15


def _step1_per_point(p, m):
    """The spot check of step 1 as first written: every power computed at every (g, x) (the reference for
    :func:`CP._step1_worst`, which computes each grid value's powers once)."""
    import mpmath

    with mpmath.workdps(50):
        a = mpmath.mpf(1) / (mpmath.mpf(float(p)) - 1)
        tstar = mpmath.mpf(CP.m_enclosure(p)["argmax"]["t"])
        gs = [mpmath.mpf(i) / (CP._GRID - 1) for i in range(1, CP._GRID)]
        xs = [mpmath.mpf(2 * j) / (CP._GRID - 1) - 1 for j in range(CP._GRID)] + [-tstar]

        def s(v):
            return mpmath.sign(v) * abs(v) ** a

        worst, where = -mpmath.inf, None
        for g in gs:
            for x in xs:
                rhs = m * max(g - x, 0)
                k = g * (s(g) - s(x))
                lterm = g * (g**a + abs(x) ** a) if mpmath.sign(x) != 1 else mpmath.mpf(0)
                v = max(k, lterm) - rhs
                if v > worst:
                    worst, where = v, (float(g), float(x))
        return float(worst), where


def _b2_per_point(p, alpha, beta):
    import mpmath

    with mpmath.workdps(50):
        a = mpmath.mpf(1) / (mpmath.mpf(float(p)) - 1)
        worst = -mpmath.inf
        for g in [mpmath.mpf(i) / 48 for i in range(1, 49)]:
            xs = [mpmath.mpf(j) / 96 for j in range(1, 97)]
            xs += [g * mpmath.mpf(10) ** (-(j * 2 * (p - 1))) for j in range(1, 21)]
            xs += [g * (1 + mpmath.mpf(10) ** (-k)) for k in range(3, 30, 2) if g * (1 + mpmath.mpf(10) ** (-k)) <= 1]
            for x in xs:
                worst = max(worst, g * abs(g**a - x**a) - alpha * max(g - x, 0) - beta * a * max(x - g, 0))
        return float(worst)


@pytest.mark.parametrize("p", (2.0, 3.0, 50.0))
def test_step1_grid_gives_the_per_point_digits(p, monkeypatch):
    """Each power computed once per grid value (issue 46) gives bit for bit the per-point computation: the
    worst value and where, with M_a and with the control's 0.99 M_a."""
    monkeypatch.setattr(CP, "_GRID", 17)  # a coarser grid, the same code (the tight point is always in it)
    enc = CP.m_enclosure(p)
    for m in (enc["hi"], 0.99 * enc["lo"]):
        assert CP._step1_worst(p, m) == _step1_per_point(p, m)


def test_lemma2_grid_gives_the_per_point_digits():
    """The same for Lemma 2's grid, with the bound and one of its controls."""
    for alpha, beta in ((1.0, 1.0), (1.0, 0.9)):
        assert CP._b2_grid_worst(3.0, alpha, beta) == _b2_per_point(3.0, alpha, beta)


def test_mpmath_runs_on_gmpy2_with_the_same_digits():
    """gmpy2 (the ``proofs`` extra) is mpmath's backend when installed, and its 50-digit results are those of
    mpmath's pure-Python integers (a fresh interpreter with MPMATH_NOGMPY=1), digit for digit: a few elementary
    values and the operations of the step-1 grid check (powers, signs, products, maxima) on a small grid."""
    import os
    import subprocess
    import sys

    import mpmath

    pytest.importorskip("gmpy2")
    assert mpmath.libmp.BACKEND == "gmpy"
    code = """
import mpmath
mp = mpmath.mpf
with mpmath.workdps(50):
    a = mp(1) / (mp(2.7) - 1)
    out = [mp(2) ** (mp(1) / 3), mpmath.exp(mp(1) / 7), mpmath.log(mp(10) / 3), mp("0.123456789") ** a]
    worst = -mpmath.inf
    for g in [mp(i) / 8 for i in range(1, 9)]:
        for x in [mp(2 * j) / 8 - 1 for j in range(9)]:
            s = lambda v: mpmath.sign(v) * abs(v) ** a
            worst = max(worst, g * (s(g) - s(x)) - mp(0.9) * max(g - x, 0))
    out.append(worst)
    print(mpmath.libmp.BACKEND, *(mpmath.nstr(v, 50) for v in out))
"""
    runs = {}
    for nogmpy in ("", "1"):
        env = {k: v for k, v in os.environ.items() if k != "MPMATH_NOGMPY"}
        if nogmpy:
            env["MPMATH_NOGMPY"] = nogmpy
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        runs[nogmpy] = out.stdout.split()
    assert runs[""][0] == "gmpy" and runs["1"][0] == "python"  # the two backends were used
    assert runs[""][1:] == runs["1"][1:] and len(runs[""]) == 6 and all(len(v) > 45 for v in runs[""][1:])


def test_a_kept_proof_is_decided_at_the_p_it_is_kept_under(tmp_path, monkeypatch):
    """A kept decision (moment.kept_decision) is keyed by float(p): an argument whose float() is 3.0 but which
    computes as 2.5 (a float subclass, as a claim file may pass) must not leave the p = 2.5 proof on disk as the
    decision at p = 3 for a later run to read back (it did: b2_bound_proof(3.0) read back K = 1.25, 'at p = 2.5')."""
    from proofs_checks import moment

    monkeypatch.setattr(moment, "_users_code_loaded", lambda: False)  # claim files other tests loaded
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", str(tmp_path))

    class Odd(float):
        def __float__(self):
            return 3.0

    for f in (CP.m_enclosure, CP.b2_bound_proof):
        f.cache_clear()
        f(Odd(2.5))
        f.cache_clear()  # as in a later process
        later = f(3.0)
        f.cache_clear()
        monkeypatch.setenv("LPTHEORY_SHARP_CACHE", "0")
        assert later == f(3.0), f.__name__
        f.cache_clear()
        monkeypatch.setenv("LPTHEORY_SHARP_CACHE", str(tmp_path))
