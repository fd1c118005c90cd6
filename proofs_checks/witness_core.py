"""What the re-checks share about a witness: its expressions parsed by the safe parser
(:func:`parse`, :mod:`proofs_checks.safe_parse`), the operators of the vocabulary (:data:`OPS`, :func:`op_of`),
the exact enumeration of its distribution (:class:`WitnessDistribution`), the symbol lookup
(:class:`SymbolLookup`) and the deterministic ``lambdify`` naming (:func:`dummy_names_in_order`,
:func:`lambdify_args`, :func:`operator_placeholders`) that the toolkit's evaluator uses too.

Like :mod:`proofs_checks.recheck`, this module imports nothing from the toolkit (only ``sympy`` and ``mpmath``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading

import mpmath
import sympy as sp

from .safe_parse import parse_expression

__all__ = [
    "remembered",
    "OPS",
    "op_of",
    "parse",
    "mp_number",
    "is_zero",
    "WitnessDistribution",
    "SymbolLookup",
    "dummy_names_in_order",
    "operator_placeholders",
    "lambdify_args",
]


OPS = ("CoordSum", "Expect", "Expect1", "Sup1", "MaxOver", "MinEig", "SingVal", "PolarFactor", "Rank")


def op_of(e):
    if isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ in OPS:
        return e.func.__name__
    return None


_PARSED: dict = {}  # source text -> sympy expression (immutable): a witness's expressions are parsed once


def parse(text, field: str = "expression"):
    """The sympy expression of a witness field (``srepr`` text, or a number) read by the safe parser
    (:func:`proofs_checks.safe_parse.parse_expression`: never ``eval``/``sympify`` on text); a sympy object (a
    witness built in this process) is returned as it is. A text outside the toolkit's grammar raises
    ``ValueError`` naming ``field``."""
    if isinstance(text, sp.Basic):
        return text
    if not isinstance(text, str):
        return parse_expression(text, field)
    return remembered(_PARSED, text, lambda: parse_expression(text, field), 4096)


def remembered(memo: dict, key, compute, limit: int):
    """``memo[key]``, computed by ``compute()`` on a miss (for pure functions; the memo is emptied when it
    holds more than ``limit`` entries)."""
    got = memo.get(key)
    if got is None:
        if len(memo) > limit:
            memo.clear()
        got = memo[key] = compute()
    return got


def mp_number(v):
    if isinstance(v, str):
        return mpmath.mpf(v)
    return mpmath.mpf(float(v)) if not isinstance(v, mpmath.mpf) else v


def is_zero(w) -> bool:
    """Whether a weight is exactly 0 (mpmath number, arb ball or mpmath.iv interval)."""
    if hasattr(w, "a") and hasattr(w, "b"):  # mpmath.iv
        return bool(w.a == 0 and w.b == 0)
    return float(w) == 0.0 if not hasattr(w, "is_zero") else bool(w.is_zero())


class WitnessDistribution:
    """Exact outcomes of one sample and of the mean of n samples, enumerated here."""

    def __init__(self, spec, num=None):
        num = num or mp_number
        self.num = num
        self.coupling = spec.get("coupling", "independent")
        self.n = int(spec.get("n", 1))
        if self.coupling == "independent":
            self.values = [[num(v) for v in row] for row in spec["values"]]
            self.weights = [self._norm(row, num) for row in spec["weights"]]
            self.d = len(self.values)
        else:
            self.values = [[num(v) for v in pt] for pt in spec["values"]]
            self.weights = self._norm(spec["weights"], num)
            self.d = len(self.values[0])

    @staticmethod
    def _norm(raw, num=None):
        if any(float(w) < 0 for w in raw) or sum(float(w) for w in raw) <= 0:
            raise ValueError("weights must be >= 0 with a positive sum")
        if num is None or num is mp_number:
            ws = [mp_number(w) for w in raw]
            tot = mpmath.fsum(ws)
        else:
            ws = [num(w) for w in raw]
            tot = ws[0]
            for w in ws[1:]:
                tot = tot + w
        return [w / tot for w in ws]

    def _batch(self, points, weights, n, add, scale):
        """Outcomes of the mean of n draws: list of (value, probability) by the multinomial law."""
        out = []
        k = len(points)
        for combo in itertools.combinations_with_replacement(range(k), n):
            counts = [combo.count(j) for j in range(k)]
            prob = self.num(math.factorial(n))
            for c, w in zip(counts, weights):
                prob = prob / math.factorial(c) * (w**c if c else 1)
            if any(c and is_zero(weights[j]) for j, c in enumerate(counts)):
                continue  # an outcome of probability 0 (a zero weight, exactly)
            val = None
            for j, c in enumerate(counts):
                if c:
                    val = scale(points[j], c) if val is None else add(val, scale(points[j], c))
            out.append((scale(val, self.num(1) / n), prob))
        return out

    def marginal(self, i, n):
        """Outcomes (value, prob) of coordinate i for the mean of n samples."""
        if self.coupling == "independent":
            return self._batch(self.values[i], self.weights[i], n, lambda a, b: a + b, lambda a, c: a * c)
        pts = [p[i] for p in self.values]
        return self._batch(pts, self.weights, n, lambda a, b: a + b, lambda a, c: a * c)

    def joint(self, n):
        """Outcomes (vector, prob) of the whole vector for the mean of n samples."""
        if self.coupling == "joint":
            return self._batch(
                self.values,
                self.weights,
                n,
                lambda a, b: [u + v for u, v in zip(a, b)],
                lambda a, c: [u * c for u in a],
            )
        per = [self.marginal(i, n) for i in range(self.d)]
        out = []
        for combo in itertools.product(*per):
            pr = combo[0][1]
            for _, q in combo[1:]:
                pr = pr * q
            out.append(([v for v, _ in combo], pr))
        return out


class SymbolLookup:
    """The symbol lookup shared by the 60-digit evaluator and the ball evaluator: ``x`` from the
    expectation's context, a bound variable, a per-coordinate value (inside CoordSum), a scalar."""

    def value(self, name, ctx):
        i = ctx.get("i")
        if name == "x":
            if "xvec" in ctx:
                return ctx["xvec"][0 if i is None else i]
            if "xval" in ctx:
                return ctx["xval"]
            raise ValueError("x appears outside Expect/Expect1/Sup1")
        if name in ctx.get("bound", {}):
            return ctx["bound"][name]
        if name in self.coords:
            if i is None:
                if self.d != 1:
                    raise ValueError(f"per-coordinate symbol {name} outside CoordSum")
                i = 0
            return self.coords[name][i]
        if name in self.scalars:
            return self.scalars[name]
        raise ValueError(f"no value for the symbol {name!r}")


_NAMES_LOCK = threading.RLock()


@contextlib.contextmanager
def dummy_names_in_order(n: int):
    """Dummy names that sort as they are created, for the ``n`` arguments a ``lambdify`` is about to
    rename (used by this module's 60-digit evaluator and by :mod:`proofs_checks.expressions`: one
    implementation, here so that this file still runs on its own). lambdify replaces every argument by a
    new ``Dummy()`` (named ``Dummy_<counter>``, the counter global to the process) whenever one argument is
    a Dummy, and its printer orders the factors of a product by those names, as strings: when the counter
    crosses a power of ten inside one call (``Dummy_99`` < ``Dummy_102`` is false as strings) the product is
    printed in another order and rounds differently, so a value depended on how many Dummies the process
    had made before. Moving the counter forward past the power of ten first keeps the names' order that of
    their creation, in every process (never backward: no name is reused). The counter is process-global:
    the move and the body (the ``lambdify``) run under a lock, so two threads compiling at once cannot
    straddle a power of ten between them (Dummies made elsewhere without this guard are not covered)."""
    with _NAMES_LOCK:
        count = sp.Dummy._count
        last = count + n + 8
        if len(str(last)) > len(str(count)):
            sp.Dummy._count = 10 ** (len(str(last)) - 1)
        yield


def operator_placeholders(expr, is_operator):
    """``(subs, body)``: the outermost subterms of ``expr`` for which ``is_operator`` holds (met by a depth-first
    walk, last argument first), each replaced in ``body`` by a placeholder ``Dummy("op")`` made in that order
    (``subs``: subterm -> placeholder, in creation order; a repeated subterm gets one placeholder). The
    evaluators lambdify ``body`` and supply the placeholders' values themselves."""
    found, stack = [], [expr]
    while stack:
        node = stack.pop()
        if is_operator(node):
            found.append(node)
            continue
        stack.extend(node.args)
    subs = {}
    for node in found:
        if node not in subs:
            subs[node] = sp.Dummy("op")
    return subs, expr.xreplace(subs)


def lambdify_args(expr) -> list:
    """The free symbols of ``expr`` in the order given to ``lambdify``: by name, and the placeholders that
    share a name (the operator subterms' ``Dummy("op")``) in their order of creation (``dummy_index``).
    By name alone, equal names kept the order of the ``free_symbols`` set, which follows the Dummies'
    hashes (their index and the process's string hashing): lambdify prints a product in its arguments'
    order, so a product of two operator subterms could round differently from one compile to the next."""
    return sorted(expr.free_symbols, key=lambda s: (s.name, s.dummy_index if isinstance(s, sp.Dummy) else -1))
