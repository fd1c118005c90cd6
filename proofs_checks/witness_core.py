"""What the re-checks share about a witness: its expressions parsed by the safe parser
(:func:`parse`, :mod:`proofs_checks.safe_parse`), the operators of the vocabulary (:data:`OPS`, :func:`op_of`),
the exact enumeration of its distribution (:class:`WitnessDistribution`), the symbol lookup
(:class:`SymbolLookup`) and the deterministic ``lambdify`` naming (:func:`dummy_names_in_order`,
:func:`lambdify_args`, :func:`operator_placeholders`) that the toolkit's evaluator uses too.

Like :mod:`proofs_checks.recheck`, this module imports nothing from the toolkit (only ``sympy`` and ``mpmath``).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import threading

import mpmath
import sympy as sp

from .safe_parse import parse_expression

__all__ = [
    "WitnessRefused",
    "field_number",
    "field_int",
    "field_numbers",
    "field_relation",
    "field_bool",
    "field_mapping",
    "MAX_OUTCOMES",
    "MAX_BATCH",
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
    "operators_only",
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
        return operators_only(parse_expression(text, field), field)
    return remembered(_PARSED, text, lambda: operators_only(parse_expression(text, field), field), 4096)


def operators_only(expr, field: str = "expression"):
    """``expr`` when every applied undefined function in it is an operator of the vocabulary (:data:`OPS`), else
    :class:`WitnessRefused` naming ``field`` and the function. The re-check evaluates the rest of an expression
    through ``sympy.lambdify``, whose generated code calls an undefined function by its name: a witness's
    ``Function('eval')(Function('bytes')(Tuple(...)))`` called Python's ``eval`` on text the witness spelled
    out (code run by a data file), ``Function('exit')(Integer(0))`` ended the re-check with exit status 0."""
    items = expr if isinstance(expr, (list, tuple)) else [expr]
    for item in items:
        if isinstance(item, (list, tuple)):
            operators_only(item, field)
        elif isinstance(item, sp.Basic):
            for f in item.atoms(sp.core.function.AppliedUndef):
                if f.func.__name__ not in OPS:
                    raise WitnessRefused(
                        f"{field}: Function({f.func.__name__!r}) is not an operator of the vocabulary "
                        f"(allowed: {', '.join(OPS)})"
                    )
    return expr


def remembered(memo: dict, key, compute, limit: int):
    """``memo[key]``, computed by ``compute()`` on a miss (for pure functions; the memo is emptied when it
    holds more than ``limit`` entries)."""
    got = memo.get(key)
    if got is None:
        if len(memo) > limit:
            memo.clear()
        got = memo[key] = compute()
    return got


class WitnessRefused(ValueError):
    """A witness field of the wrong type, out of its range, inconsistent with another field, or asking for more
    work than a re-check does (the message names the field and the allowed range). Refused before any
    arithmetic: a refused witness is never "violated"."""


MAX_MAGNITUDE = mpmath.mpf(2) ** 1024
"""The largest magnitude of a number in a witness (float64's range: the toolkit writes float64 values, or
decimal strings of them)."""

MAX_NUMBER_TEXT = 200
"""The longest decimal string accepted as a number (characters)."""


def field_number(v, field: str, *, lo=None, hi=None, lo_open: bool = False, hi_open: bool = False):
    """``v`` (a JSON number, or a decimal string) checked: a finite number of magnitude at most 2**1024 (float64's
    range), in [lo, hi] (open ends with ``lo_open``/``hi_open``); returns it as given. WitnessRefused naming
    ``field`` otherwise (a bool, a list, NaN, inf, a 400-digit integer, ``"1e400"``, a value out of range)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise WitnessRefused(f"{field}: must be a number, got {type(v).__name__} {_short(v)}")
    if isinstance(v, str):
        if len(v) > MAX_NUMBER_TEXT:
            raise WitnessRefused(f"{field}: a number written in {len(v)} characters (at most {MAX_NUMBER_TEXT})")
        try:
            m = mpmath.mpf(v)
        except (ValueError, TypeError):
            raise WitnessRefused(f"{field}: must be a number, got the string {_short(v)}") from None
    elif isinstance(v, int):
        if v.bit_length() > 1024:
            raise WitnessRefused(
                f"{field}: an integer of {len(str(abs(v))) if v.bit_length() < 40000 else 'many'} digits, beyond "
                "float64's range (at most 2**1024 in magnitude)"
            )
        m = mpmath.mpf(v)
    else:
        m = mpmath.mpf(v) if math.isfinite(v) else None
    if m is None or not mpmath.isfinite(m) or abs(m) > MAX_MAGNITUDE:
        raise WitnessRefused(f"{field}: must be a finite number of magnitude at most 2**1024, got {_short(v)}")
    if lo is not None and (m <= lo if lo_open else m < lo) or hi is not None and (m >= hi if hi_open else m > hi):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        rng = f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"
        raise WitnessRefused(f"{field}: must be in {rng}, got {_short(v)}")
    return v


def field_int(v, field: str, lo: int, hi: int) -> int:
    """``v`` checked: an integer (a JSON integer, or a float with an integral value) in [lo, hi]; WitnessRefused
    naming ``field`` otherwise. ``hi`` bounds the work a count asks for."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not v.is_integer():
        raise WitnessRefused(f"{field}: must be an integer in [{lo}, {hi}], got {type(v).__name__} {_short(v)}")
    if not lo <= v <= hi:
        raise WitnessRefused(f"{field}: must be an integer in [{lo}, {hi}], got {_short(v)}")
    return int(v)


def field_numbers(v, field: str, *, min_len: int = 0, max_len: int = 1_000_000, **bounds) -> list:
    """``v`` checked: a list of :func:`field_number` values (each in the range ``bounds``), of length in
    [min_len, max_len]; WitnessRefused naming ``field`` (and the element) otherwise."""
    if not isinstance(v, list):
        raise WitnessRefused(f"{field}: must be a list of numbers, got {type(v).__name__} {_short(v)}")
    if not min_len <= len(v) <= max_len:
        raise WitnessRefused(f"{field}: must hold {min_len} to {max_len} numbers, got {len(v)}")
    for i, u in enumerate(v):
        field_number(u, f"{field}[{i}]", **bounds)
    return v


def field_relation(v, field: str, allowed=("<=", ">=", "==")) -> str:
    """``v`` checked: one of the relations ``allowed``."""
    if not isinstance(v, str) or v not in allowed:
        raise WitnessRefused(f"{field}: must be one of {', '.join(allowed)}, got {_short(v)}")
    return v


def field_bool(v, field: str) -> bool:
    """``v`` checked: true or false."""
    if not isinstance(v, bool):
        raise WitnessRefused(f"{field}: must be true or false, got {_short(v)}")
    return v


def field_mapping(v, field: str, *, max_len: int = 10_000) -> dict:
    """``v`` checked: a JSON object with string keys (at most ``max_len`` of them)."""
    if not isinstance(v, dict):
        raise WitnessRefused(f"{field}: must be an object (name -> value), got {type(v).__name__} {_short(v)}")
    if len(v) > max_len:
        raise WitnessRefused(f"{field}: at most {max_len} entries, got {len(v)}")
    for k in v:
        if not isinstance(k, str):
            raise WitnessRefused(f"{field}: keys must be names (strings), got {_short(k)}")
    return v


def _short(v) -> str:
    try:
        text = repr(v)
    except (ValueError, RecursionError):  # an int too long for str(), a deep structure
        text = f"<{type(v).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


MAX_BATCH = 10_000
"""The largest batch size ``n`` of a witness's distribution."""

MAX_OUTCOMES = 50_000
"""The most outcomes a re-check enumerates for one expectation (the mean of ``n`` draws of ``k`` support points
has C(n + k - 1, k - 1) of them per coordinate; independent coordinates multiply)."""


def mp_number(v):
    if isinstance(v, str):
        return mpmath.mpf(v)
    if type(v) is int:  # exactly where it fits the working precision (float(v) overflows above 1.8e308)
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
        check_distribution(spec)
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
        _outcomes_at_most(math.comb(n + k - 1, k - 1))
        for combo in itertools.combinations_with_replacement(range(k), n):
            # the points drawn and how often, in increasing order (the combination is sorted): only those, not all
            # k points (a witness's 2000-point law took 16 s for its 2000 outcomes, 50,000 points hours; a point
            # drawn 0 times multiplied the probability by 1 / 0! * 1, exactly, so the values are the same)
            counts = list(collections.Counter(combo).items())
            prob = self.num(math.factorial(n))
            for j, c in counts:
                prob = prob / math.factorial(c) * weights[j] ** c
            if any(is_zero(weights[j]) for j, _ in counts):
                continue  # an outcome of probability 0 (a zero weight, exactly)
            val = None
            for j, c in counts:
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
        total = 1
        for row in self.values:
            total *= math.comb(n + len(row) - 1, len(row) - 1)
            _outcomes_at_most(total)
        per = [self.marginal(i, n) for i in range(self.d)]
        out = []
        for combo in itertools.product(*per):
            pr = combo[0][1]
            for _, q in combo[1:]:
                pr = pr * q
            out.append(([v for v, _ in combo], pr))
        return out


def _outcomes_at_most(count: int) -> None:
    if count > MAX_OUTCOMES:
        raise WitnessRefused(
            f"distribution.n: the mean of n draws has {count:.3g} outcomes here, more than a re-check enumerates "
            f"({MAX_OUTCOMES}); a smaller n or fewer support points"
        )


def check_distribution(spec) -> None:
    """Every field of a witness's ``distribution`` checked before anything is computed (WitnessRefused naming
    the field): ``coupling`` independent or joint; ``n`` an integer in [1, MAX_BATCH]; independent: ``values`` a
    list of d >= 1 rows of support points and ``weights`` the same shape; joint: ``values`` a list of k >= 1
    points of one dimension d >= 1 and ``weights`` k numbers; weights >= 0 with a positive sum (per row)."""
    where = "distribution"
    field_mapping(spec, where)
    coupling = spec.get("coupling", "independent")
    if coupling not in ("independent", "joint"):
        raise WitnessRefused(f"{where}.coupling: must be independent or joint, got {_short(coupling)}")
    field_int(spec.get("n", 1), f"{where}.n", 1, MAX_BATCH)
    for key in ("values", "weights"):
        if key not in spec:
            raise WitnessRefused(f"{where}.{key}: missing")
        if not isinstance(spec[key], list) or not spec[key]:
            raise WitnessRefused(f"{where}.{key}: must be a non-empty list, got {_short(spec[key])}")
    values, weights = spec["values"], spec["weights"]
    if coupling == "independent":
        if len(weights) != len(values):
            raise WitnessRefused(
                f"{where}.weights: {len(weights)} rows for the {len(values)} rows (coordinates) of {where}.values"
            )
        for i, (row, wrow) in enumerate(zip(values, weights)):
            field_numbers(row, f"{where}.values[{i}]", min_len=1, max_len=MAX_OUTCOMES)
            field_numbers(wrow, f"{where}.weights[{i}]", min_len=1, max_len=MAX_OUTCOMES, lo=0)
            if len(wrow) != len(row):
                raise WitnessRefused(
                    f"{where}.weights[{i}]: {len(wrow)} weights for the {len(row)} values of {where}.values[{i}]"
                )
            if not any(mpmath.mpf(u) > 0 for u in wrow):
                raise WitnessRefused(f"{where}.weights[{i}]: weights must be >= 0 with a positive sum")
    else:
        d = None
        for j, pt in enumerate(values):
            field_numbers(pt, f"{where}.values[{j}]", min_len=1, max_len=MAX_OUTCOMES)
            if d is None:
                d = len(pt)
            elif len(pt) != d:
                raise WitnessRefused(f"{where}.values[{j}]: a point of dimension {len(pt)}, the first has {d}")
        field_numbers(weights, f"{where}.weights", min_len=len(values), max_len=len(values), lo=0)
        if not any(mpmath.mpf(u) > 0 for u in weights):
            raise WitnessRefused(f"{where}.weights: weights must be >= 0 with a positive sum")


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
