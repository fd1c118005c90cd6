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


def _reference(e, ev, env):
    """The test's reference: bnb's enclosure of ``e`` node by node (a transcription of the closure compiler
    the generated code replaced): sums and products from their first term, the box's variables else the
    scalars, sqrt where the base is certainly > 0, anything else (log, Piecewise, ...) delegated to ``ev.ev``."""
    n = ev.num
    rec = lambda a: _reference(a, ev, env)  # noqa: E731
    if isinstance(e, sp.Symbol):
        return env[e.name] if e.name in env else ev.scalars[e.name]
    if e.is_Number or e in (sp.pi, sp.E):
        return n.exact(e)
    if isinstance(e, (sp.Add, sp.Mul)):
        out = rec(e.args[0])
        for a in e.args[1:]:
            out = out + rec(a) if isinstance(e, sp.Add) else out * rec(a)
        return out
    if isinstance(e, sp.Pow):
        b = rec(e.args[0])
        if e.args[1].is_Integer:
            return b ** int(e.args[1])
        if e.args[1] == sp.Rational(1, 2) and n.gt(b, n.exact(0)):
            return n.fn("sqrt", b)
        return ev._pow(b, rec(e.args[1]))
    if isinstance(e, sp.Abs):
        return abs(rec(e.args[0])).nonnegative_part() if n.name == "arb" else abs(rec(e.args[0]))
    if isinstance(e, sp.Max):
        return ev._max([rec(a) for a in e.args])
    if isinstance(e, sp.Min):
        return -ev._max([-rec(a) for a in e.args])
    if isinstance(e, sp.sign):
        return ev._sign(rec(e.args[0]))
    if isinstance(e, (sp.exp, sp.sin, sp.cos)):
        return n.fn(type(e).__name__, rec(e.args[0]))
    return ev.ev(e, {"i": None, "bound": env})


@pytest.mark.parametrize("backend", ["arb", "iv"])
def test_shared_subexpressions_enclosed_once_give_the_same_balls(backend):
    """A subexpression met twice (in one side, or in lhs and rhs) is enclosed once per box: the balls of the
    generated straight-line code (the re-check's generator with bnb's conventions) are those of the node by
    node reference, bit for bit, on every box (a log and a Piecewise delegated, a scalar looked up)."""
    from proofs_checks import bnb as B
    from proofs_checks.recheck import Undecided, ball_backend

    q, s = sp.symbols("q s", positive=True)
    c = sp.Symbol("c", real=True)
    ag = q + (1 - q) * s
    lhs = q * ag * (1 - ag ** sp.Rational(1, 2)) + (1 - q) * ag * (ag ** sp.Rational(1, 2) - s ** sp.Rational(1, 3))
    lhs = lhs + c * sp.log(1 + q * s) + sp.Piecewise((s, q < sp.Rational(1, 2)), (q, True))
    rhs = 3 * (1 - s) * sp.sqrt(q * (1 - q)) + sp.exp(-c * s) - sp.Max(q, s) + sp.Min(q, sp.sign(s - c)) * sp.Abs(q - s)
    num = ball_backend(backend, 128)
    obj = B._Objective(lhs, rhs, {"c": 0.1}, num)
    src = obj.plan((lhs, rhs))[0].source
    # sqrt(ag) (twice in lhs) once; sqrt(q), sqrt(1 - q) (sympy splits sqrt(q (1 - q)) for q > 0)
    assert src.count(".sqrt()" if backend == "arb" else "n.fn('sqrt'") == 3
    assert src.count("walk(") == 2 and "C[" in src and " * C[" not in src  # log, Piecewise; no fold from 1
    import random

    rnd, checked = random.Random(1), 0
    for _ in range(50):
        a, b = sorted(rnd.random() for _ in range(2))
        u, v = sorted(rnd.random() for _ in range(2))
        for box in ({"q": (a, b), "s": (u, v)}, {"q": (a, a), "s": (v, v)}):
            try:
                want = tuple(_reference(e, obj.ev, B._balls(num, box)) for e in (lhs, rhs))
            except Undecided:
                with pytest.raises(Undecided):
                    obj.sides(box)
                continue
            got = obj.sides(box)
            for g, w in zip(got, want, strict=True):
                assert num.bounds(g) == num.bounds(w) and str(g) == str(w)
                assert backend != "arb" or (g.mid(), g.rad()) == (w.mid(), w.rad())
            checked += 1
    assert checked >= 50


def test_enclose_max_stops_at_a_target_and_never_below_the_supremum():
    """``target=``: sup t (1 - t) = 1/4 on [0, 1]; a target above it is settled (hi <= target, converged) in fewer
    boxes than the full enclosure; a target below it cannot be met (hi >= 1/4, the enclosure goes on to rtol)."""
    t = sp.Symbol("t", real=True)
    full = enclose_max(t * (1 - t), {"t": (0.0, 1.0)}, rtol=1e-12)
    above = enclose_max(t * (1 - t), {"t": (0.0, 1.0)}, rtol=1e-12, target=0.26)
    assert above["converged"] and 0.25 <= above["hi"] <= 0.26 and above["evaluations"] < full["evaluations"]
    below = enclose_max(t * (1 - t), {"t": (0.0, 1.0)}, rtol=1e-9, target=0.2499)
    assert below["hi"] >= 0.25 and below["lo"] <= 0.25
