"""The evaluator's values do not depend on the process's history: lambdify renames a leaf's arguments
``Dummy_<counter>`` and prints a product's factors in the order of those names as strings, so a counter
crossing a power of ten inside one leaf (``Dummy_99``, ``Dummy_102``) used to reorder a product and change
its last bit (one record of ``check symbolic`` differed between fresh processes)."""

import numpy as np
import sympy as sp

from proofs_checks import expressions as X
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
    compiled = X._Compiled(EXPR, ("x", "g", "sigma"), "independent")  # not the cached compile_expr
    with np.errstate(all="ignore"):
        return np.asarray(compiled.fn(X._Ctx(_env())), dtype=np.float64)


def test_values_do_not_depend_on_the_dummy_counter(monkeypatch):
    ref = _value_with_counter(10_000, monkeypatch)
    for start in (90, 93, 95, 97, 990, 995, 9_995, 123):
        got = _value_with_counter(start, monkeypatch)
        assert got.tobytes() == ref.tobytes(), start


def test_the_counter_is_only_moved_forward(monkeypatch):
    monkeypatch.setattr(sp.Dummy, "_count", 97)
    with X._dummy_names_in_order(10):
        assert sp.Dummy._count == 100
    monkeypatch.setattr(sp.Dummy, "_count", 120)
    with X._dummy_names_in_order(10):
        assert sp.Dummy._count == 120


def test_planted_crossing_reorders_the_product(monkeypatch):
    """Without the guard, a crossing inside the leaf changes bits: the test above can fail."""
    monkeypatch.setattr(X, "_dummy_names_in_order", lambda k: __import__("contextlib").nullcontext())
    ref = _value_with_counter(10_000, monkeypatch)
    starts = (90, 93, 95, 97, 990, 995)
    differs = [s for s in starts if _value_with_counter(s, monkeypatch).tobytes() != ref.tobytes()]
    assert differs
