"""The re-check's fast paths give the same numbers as the plain ones (:mod:`proofs_checks.recheck`): the ball
evaluator's generated straight-line functions against its node-by-node walk, and the 60-digit MaxOver's
screened grid against the whole grid. Same values bit for bit, planted near-ties included."""

from __future__ import annotations

import mpmath
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs_checks.recheck as R

t, p, a, b = (sp.Symbol(n, real=True) for n in ("t", "p", "a", "b"))
MaxOver = sp.Function("MaxOver")

EXPRS = [
    (sp.Abs(sp.sin(t)) ** p + sp.Abs(sp.cos(t)) ** p) ** (-2 / p) * sp.Abs(a * sp.cos(t) ** 2 + b * sp.sin(t) ** 2),
    sp.sqrt(a * t + 1) - sp.log(t + 2) * sp.exp(-t) + sp.Max(a, t) - sp.Min(b, t**2),
    sp.sign(t - a) * sp.Abs(t) ** sp.Rational(3, 2) + sp.pi * t - sp.E,
    sp.Piecewise((t**2, t < a), (sp.cos(t), True)) + sp.sqrt(t**2 - a),  # walked node; a sqrt that may be undecided
    (t - a) ** p,  # a power of a base that may be negative: Undecided in both
]


def _both(e, backend, bound):
    num = R.ball_backend(backend, 128)
    ev = R.BallEval({"scalars": {"a": 0.3, "b": -1.25, "p": 2.5}}, num)
    ctx = {"i": None, "bound": {"t": bound(num)}}
    out = []
    for fn in (ev.ev, ev._walk):
        try:
            v = fn(e, ctx)
            out.append(num.bounds(v) + ((v.mid(), v.rad()) if backend == "arb" else (v.a, v.b)))
        except R.Undecided as exc:
            out.append(("undecided", str(exc)))
    return out


@pytest.mark.parametrize("backend", ["arb", "mpmath.iv"])
@pytest.mark.parametrize("k", range(len(EXPRS)))
@settings(max_examples=10, deadline=None)
@given(lo=st.floats(-3, 3), w=st.floats(0, 2))
def test_generated_ball_plan_gives_the_walks_balls(backend, k, lo, w):
    plan = R.ball_plan(EXPRS[k], backend)
    assert plan is not None
    gen, walk = _both(EXPRS[k], backend, lambda num: num.hull(num.exact(lo), num.exact(lo + w)))
    assert gen == walk


def test_generated_ball_plan_encloses_each_shared_subexpression_once():
    src = R.ball_plan(EXPRS[0], "arb").source
    assert src.count(".sin()") == 1 and src.count(".cos()") == 1  # three occurrences each in the tree


def _maxover(body, lo, hi, scalars, screen, backend=None):
    old = R._maxover_screen
    calls = []

    def spy(*args):
        k = old(*args, backend=backend) if screen else None
        calls.append(k)
        return k

    R._maxover_screen = spy
    try:
        with mpmath.workdps(60):
            ev = R._Eval({"scalars": scalars})
            return ev.ev(MaxOver(body, t, lo, hi), {"i": None}), calls
    finally:
        R._maxover_screen = old


IV = "mpmath.iv"


@pytest.mark.parametrize(
    "body, lo, hi, backend",
    [
        (EXPRS[0], 0, sp.pi, "arb"),
        (EXPRS[0], 0, sp.pi, IV),
        (sp.sin(t) * sp.sin(t), 0, sp.pi, "arb"),  # symmetric: two grid points tie up to rounding
        (sp.sin(t) * sp.sin(t), 0, sp.pi, IV),
        (sp.Abs(a * sp.cos(t)), -1, 1, "arb"),  # maximum at both ends
        (sp.Abs(a * sp.cos(t)), -1, 1, IV),
        (-((t - sp.Rational(1, 3)) ** 2) * 10**-30 + a, 0, 1, "arb"),  # a plateau within 1e-30: all near kept
        (sp.Abs(t - a) + 0 * t, 0, 0, "arb"),  # a single point (every grid point the same: all kept)
        (sp.sqrt(t - a), 0, 1, "arb"),  # complex below a: those points are kept, the same first error
        (sp.sqrt(t - a), 0, 1, IV),
    ],
)
def test_screened_maxover_equals_the_whole_grid(body, lo, hi, backend):
    sc = {"a": 0.3, "b": -1.25, "p": 3.0}
    try:
        full, calls = _maxover(body, lo, hi, sc, False)
    except ValueError as exc:  # the whole grid raises (a complex value): the screened grid raises the same
        with pytest.raises(ValueError) as got:
            _maxover(body, lo, hi, sc, True, backend)
        assert str(got.value) == str(exc)  # the same first failing point
        return
    fast, calls = _maxover(body, lo, hi, sc, True, backend)
    assert fast == full and mpmath.almosteq(fast, full, 0, 0)
    assert calls and calls[0] is not None  # the screen ran


@pytest.mark.parametrize("backend", ["arb", "mpmath.iv"])
def test_screen_keeps_few_points_and_is_skipped_for_operators(backend):
    sc = {"a": 0.3, "b": -1.25, "p": 3.0}
    _, calls = _maxover(EXPRS[0], 0, sp.pi, sc, True, backend)
    assert 1 <= len(calls[0]) <= 4
    with mpmath.workdps(60):
        ev = R._Eval({"scalars": sc, "coords": {"g": [1.0, 2.0]}})
        g = sp.Symbol("g", real=True)
        body = sp.Function("CoordSum")(g * t)
        assert R._maxover_screen(ev, body, t, mpmath.mpf(0), mpmath.mpf(1), 4096, {"i": None}, lambda j: j) is None
