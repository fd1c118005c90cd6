"""Interval branch-and-bound (issue 23): proved / violated witness / inconclusive with unresolved boxes, and its
uses in the Stacey pack (Lemma 2's kappa(p) and two-point laws; Assumption 1 on 2x2 diagonal quadratics)."""

from __future__ import annotations

import pytest
import sympy as sp

from proofs_checks.bnb import TightPoint, branch_and_bound, enclose_max
from proofs_checks.recheck import recheck
from proofs_checks.stacey import bnb_claims as BC

z = sp.Symbol("z", real=True)


@pytest.mark.parametrize("backend", ["arb", "iv"])
def test_proved_violated_and_inconclusive(backend):
    ok = branch_and_bound(z * (1 - z), sp.Rational(1, 3), {"z": (0.0, 1.0)}, backend=backend)
    assert ok.status == "proved"
    bad = branch_and_bound(z * (1 - z), sp.Rational(1, 5), {"z": (0.0, 1.0)}, backend=backend)
    assert bad.status == "violated" and bad.witness["point"]["z"] * (1 - bad.witness["point"]["z"]) > 0.2
    tie = branch_and_bound(
        sp.sin(z) ** 2 + sp.cos(z) ** 2, sp.Integer(1), {"z": (0.0, 1.0)}, max_boxes=200, backend=backend
    )
    assert tie.status == "inconclusive" and tie.unresolved and tie.unresolved_measure > 0  # a tie everywhere


def test_tight_point_certificate():
    """z^2 <= 1 on [-1, 1] is tight at both ends: no enclosure separates there; the derivative's sign does."""
    assert branch_and_bound(z**2, sp.Integer(1), {"z": (0.0, 1.0)}, max_boxes=500).status == "inconclusive"
    res = branch_and_bound(z**2, sp.Integer(1), {"z": (0.0, 1.0)}, tight=[TightPoint("z", 1.0)], max_boxes=500)
    assert res.status == "proved"
    wrong = branch_and_bound(z**2, sp.Rational(99, 100), {"z": (0.0, 1.0)}, tight=[TightPoint("z", 1.0)])
    assert wrong.status == "violated"  # the certificate never proves a false claim


def test_enclose_max_brackets_the_supremum():
    e = enclose_max(z * (1 - z), {"z": (0.0, 1.0)}, rtol=1e-12)
    assert e["converged"] and e["lo"] <= 0.25 <= e["hi"] and e["hi"] - e["lo"] < 1e-11


@pytest.mark.parametrize("p", [3.0, 8.0])
def test_kappa_enclosure_and_assumption1_on_diagonal_2x2(p):
    enc = BC.kappa_enclosure(p)
    assert enc["converged"] and enc["hi"] - enc["lo"] < 1e-9 * enc["hi"]
    q = enc["argmax"]["q"]
    a = 1 / (p - 1)
    val = (p - 1) * (q**2 * (1 - q**a) + (1 - q) * q ** (1 + a)) / (q * (1 - q)) ** 0.5
    assert enc["lo"] <= val * (1 + 1e-15) and val <= enc["hi"]
    opp, same = BC._asm1(p, 2000)
    assert opp.status == "proved" and same.status == "proved"


def test_two_point_laws_proved_at_kappa_and_a_planted_smaller_constant_is_caught():
    p = 4.0
    enc = BC.kappa_enclosure(p)
    (rb, *_), (ra, *_) = BC._two_point(p, enc["hi"], 20000, kappa_hi=enc["hi"])
    assert rb.status == "proved" and ra.status == "proved"
    (rb, lhs, rhs), _ = BC._two_point(p, 0.99 * enc["lo"], 20000, kappa_hi=enc["hi"])
    assert rb.status == "violated"
    w = BC._point_witness(lhs, rhs, rb.witness["point"], {"K": 0.99 * enc["lo"]}, "planted")
    chk = recheck(w)
    assert chk["violated"] and chk["proved"]


@pytest.mark.parametrize("backend", ["arb", "iv"])
def test_shared_subexpressions_enclosed_once_give_the_same_balls(backend):
    """A subexpression met twice (in one side, or in lhs and rhs) is enclosed once per box: the balls of the
    generated straight-line code (and of the memoized closures) are those of the plain compilation (no
    memo), bit for bit, on every box; a memoized closure runs once per env."""
    from proofs_checks import bnb as B
    from proofs_checks.recheck import Undecided, ball_backend

    q, s = sp.symbols("q s", positive=True)
    ag = q + (1 - q) * s
    lhs = q * ag * (1 - ag ** sp.Rational(1, 2)) + (1 - q) * ag * (ag ** sp.Rational(1, 2) - s ** sp.Rational(1, 3))
    rhs = 3 * (1 - s) * sp.sqrt(q * (1 - q))
    assert B._repeated(lhs, rhs) == {1 - q, ag, sp.sqrt(ag)}  # 1 - q also in rhs's sqrt(1 - q)
    num = ball_backend(backend, 128)
    obj = B._Objective(lhs, rhs, {}, num)
    plain = B._Objective(lhs, rhs, {}, num)
    plain.fn = lambda e: B._compile(e, plain.ev)  # no sharing, no memo
    plain.balls = lambda box: B._balls(num, box)
    plain.sides = lambda box: (plain.fn(lhs)(plain.balls(box)), plain.fn(rhs)(plain.balls(box)))
    src = obj.plan((lhs, rhs)).source
    # sqrt(ag) (twice in lhs) once; sqrt(q), sqrt(1 - q) (sympy splits sqrt(q (1 - q)) for q > 0)
    assert src.count(".sqrt()" if backend == "arb" else "fn('sqrt'") == 3
    import random

    rnd, checked = random.Random(1), 0
    for _ in range(50):
        a, b = sorted(rnd.random() for _ in range(2))
        c, d = sorted(rnd.random() for _ in range(2))
        for box in ({"q": (a, b), "s": (c, d)}, {"q": (a, a), "s": (d, d)}):
            try:
                want = plain.sides(box)
            except Undecided:
                with pytest.raises(Undecided):
                    obj.sides(box)
                continue
            memo = (obj.fn(lhs)(obj.balls(box)), obj.fn(rhs)(obj.balls(box)))
            for got in (obj.sides(box), memo):
                for g, w in zip(got, want, strict=True):
                    assert num.bounds(g) == num.bounds(w) and str(g) == str(w)
            checked += 1
    assert checked >= 50
    calls = []
    f = B._memo(lambda env: calls.append(1) or len(calls))
    env = {}
    assert f(env) == f(env) == 1 and f({}) == 2  # once per env
