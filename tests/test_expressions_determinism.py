"""The evaluator's values do not depend on the process's history: lambdify renames a leaf's arguments
``Dummy_<counter>`` and prints a product's factors in the order of those names as strings, so a counter
crossing a power of ten inside one leaf (``Dummy_99``, ``Dummy_102``) used to reorder a product and change
its last bit (one record of ``check symbolic`` differed between fresh processes). The guard lives in
:mod:`proofs_checks.recheck` (which runs standalone) and serves its 60-digit evaluator too."""

import contextlib

import mpmath
import numpy as np
import sympy as sp

from proofs_checks import evaluator as EV
from proofs_checks import expressions as X
from proofs_checks import recheck as R
from proofs_checks.expressions import g, sigma, x
from proofs_checks.stacey.formulas import n

P = sp.Symbol("p")
# sym.lemma-B2.case2.step5's bound: an operator leaf (Expect1) beside |g| |sigma|
EXPR = sp.sqrt(X.Expect1(x**2) ** (-1 + 1 / (P - 1))) * sp.Abs(g) * sp.Abs(sigma) / sp.sqrt(n)


def _env(S=400, seed=0):
    rng = np.random.default_rng(seed)
    vals = rng.uniform(-1, 1, (S, 1, 3))
    w = rng.dirichlet(np.ones(3), S)[:, None, :]
    return X.Env(
        scalars={"p": rng.uniform(2.05, 10, S), "n": 1.0},
        coords={"g": rng.standard_normal((S, 1)), "sigma": rng.uniform(0.01, 2, (S, 1))},
        dist=X.Distribution(vals, w, 1),
    )


def _value_with_counter(start, monkeypatch):
    monkeypatch.setattr(sp.Dummy, "_count", start)
    compiled = EV._Compiled(EXPR, ("x", "g", "sigma"), "independent")  # not the cached compile_expr
    with np.errstate(all="ignore"):
        return np.asarray(compiled.fn(EV._Ctx(_env())), dtype=np.float64)


def test_values_do_not_depend_on_the_dummy_counter(monkeypatch):
    ref = _value_with_counter(10_000, monkeypatch)
    for start in (90, 93, 95, 97, 990, 995, 9_995, 123):
        got = _value_with_counter(start, monkeypatch)
        assert got.tobytes() == ref.tobytes(), start


def test_the_counter_is_only_moved_forward(monkeypatch):
    assert EV.dummy_names_in_order is R.dummy_names_in_order  # one implementation
    monkeypatch.setattr(sp.Dummy, "_count", 97)
    with R.dummy_names_in_order(10):
        assert sp.Dummy._count == 100
    monkeypatch.setattr(sp.Dummy, "_count", 120)
    with R.dummy_names_in_order(10):
        assert sp.Dummy._count == 120


def test_planted_crossing_reorders_the_product(monkeypatch):
    """Without the guard, a crossing inside the leaf changes bits: the test above can fail."""
    monkeypatch.setattr(EV, "dummy_names_in_order", lambda k: contextlib.nullcontext())
    ref = _value_with_counter(10_000, monkeypatch)
    starts = (90, 93, 95, 97, 990, 995)
    differs = [s for s in starts if _value_with_counter(s, monkeypatch).tobytes() != ref.tobytes()]
    assert differs


# the 60-digit evaluator of the standalone re-check (recheck._Eval): the same lambdify naming
E1 = sp.Function("Expect1")
A, B = sp.symbols("a b", real=True)


def _value60(expr, w, start, monkeypatch):
    monkeypatch.setattr(sp.Dummy, "_count", start)
    monkeypatch.setattr(R, "_PLANS", {})  # compile afresh
    with mpmath.workdps(60):
        return R._Eval(w).ev(expr, {"i": None})._mpf_


# a * b * Expect1(x): arguments a, b, then the placeholder; a crossing puts the placeholder first
ONE_OP = (A * B * E1(x), {"scalars": {"a": "0.1", "b": "0.7"}, "distribution": {"values": [["0.3"]], "weights": [[1]]}})
STARTS = (10, 90, 95, 97, 98, 990, 995, 9_995, 10_000)


def test_recheck_60_digit_value_does_not_depend_on_the_dummy_counter(monkeypatch):
    vals = {s: _value60(*ONE_OP, s, monkeypatch) for s in STARTS}
    assert len(set(vals.values())) == 1, vals


def test_recheck_planted_crossing_changes_the_60_digit_value(monkeypatch):
    """Without the guard, a crossing reorders the product: its 60-digit value changes in the last bits."""
    monkeypatch.setattr(R, "dummy_names_in_order", lambda k: contextlib.nullcontext())
    vals = {s: _value60(*ONE_OP, s, monkeypatch) for s in STARTS}
    assert len(set(vals.values())) > 1, vals
    with mpmath.workdps(60):
        ref = mpmath.mpf(vals[10_000])
        assert all(abs(mpmath.mpf(v) - ref) < mpmath.mpf(10) ** -55 * ref for v in vals.values())  # last digits only


# placeholders sharing the name "op": lambdify's argument order among them (hence a product's order) must be
# their creation order, not the order of the free_symbols set (the Dummies' hashes)
FOUR_OPS = A * E1(x) * E1(x**2) * E1(x**3) * E1(x**4)
W = {"scalars": {"a": "0.8"}, "distribution": {"values": [["0.97", "0.8", "0.438"]], "weights": [[1, 2, 3]]}}


def _arg_orders(monkeypatch):
    orders = set()
    for start in range(1000, 1040):
        _value60(FOUR_OPS, W, start, monkeypatch)
        ops, syms, _ = R._PLANS[FOUR_OPS]
        made = [d for _, d in ops]  # in order of creation
        orders.add(tuple(made.index(s) if s in made else s.name for s in syms))
    return orders


def test_recheck_placeholders_are_passed_in_creation_order(monkeypatch):
    assert _arg_orders(monkeypatch) == {("a", 0, 1, 2, 3)}


def test_recheck_planted_name_only_order_follows_the_set(monkeypatch):
    """Sorted by name alone, the placeholders follow the set's (hash) order, which moves with the counter."""
    monkeypatch.setattr(R, "lambdify_args", lambda body: sorted(body.free_symbols, key=lambda s: s.name))
    assert len(_arg_orders(monkeypatch)) > 1
