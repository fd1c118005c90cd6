"""Claims written once as sympy expressions, evaluated fast (numpy, over populations) and re-checked at
high precision (mpmath, :mod:`proofs_checks.recheck`) from the same source.

Vocabulary (all sympy, importable from :mod:`proofs_checks.api`):

* coordinate symbols ``x`` (a coordinate of the random vector, e.g. the stochastic gradient g~),
  ``g`` (its mean) and ``sigma`` (its per-sample standard deviation bound); other per-coordinate
  symbols may be declared (``coords=``);
* ``CoordSum(e)``: the sum over coordinates i of ``e`` with every coordinate symbol read at i;
* ``Expect(e)``: the expectation of ``e`` over the random vector's distribution (for a claim about a
  stochastic gradient: the mean of n samples, enumerated exactly);
* ``Expect1(e)``, ``Sup1(e)``: the expectation and the maximum over the distribution of one sample
  (to state assumptions: ``sigma**2 >= Expect1((x - g)**2)``, ``G >= Sup1(...)``);
* ``indicator(cond)``: 1 where ``cond`` holds, else 0 (a ``Piecewise``);
* scalar symbols (``p``, ``eta``, ``G``, ``n``, ...): values from the setting.

The numpy evaluator works on a population of S distributions at once (the search evaluates a whole
generation per call). Layouts: coordinate constants (S, 1, d); the outcomes of a distribution
(S, M, d) with probabilities (S, M, 1) (joint coupling) or (S, M, d) (independent coordinates:
each coordinate's M outcomes, the *marginal* layout). Under independence, ``Expect`` of a sum of
terms ``c * CoordSum(phi)`` (c free of ``x``) is computed per coordinate (linearity), so exact
expectations cost O(d M), not O(M^d); anything else is evaluated on the joint outcomes.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import sympy as sp

__all__ = [
    "x",
    "g",
    "sigma",
    "CoordSum",
    "Expect",
    "Expect1",
    "Sup1",
    "indicator",
    "Distribution",
    "Env",
    "compile_expr",
    "evaluate",
    "evaluate_shaped",
    "operator_of",
    "batch_outcomes",
    "compositions",
]

x, g, sigma = sp.symbols("x g sigma", real=True)
CoordSum = sp.Function("CoordSum")
Expect = sp.Function("Expect")
Expect1 = sp.Function("Expect1")
Sup1 = sp.Function("Sup1")
OPERATORS = ("CoordSum", "Expect", "Expect1", "Sup1")
_OPERATOR_DOCS = {
    CoordSum: """CoordSum(e): the sum over the coordinates i of ``e``, every coordinate symbol (``x``, ``g``,
    ``sigma``, ...) read at coordinate i; e.g. the l_p norm ``CoordSum(abs(x)**p)**(1/p)``.""",
    Expect: """Expect(e): the expectation of ``e`` over the random vector's distribution (for a stochastic
    gradient: the mean of ``n`` samples, enumerated exactly); e.g. ``Expect((x - g)**2)``.""",
    Expect1: """Expect1(e): the expectation of ``e`` over ONE sample of the distribution (to state
    assumptions: ``sigma**2 >= Expect1((x - g)**2)``, ``g == Expect1(x)``).""",
    Sup1: """Sup1(e): the maximum of ``e`` over the support of one sample (to state bounds:
    ``G >= Sup1(abs(x))``).""",
}
for _f, _doc in _OPERATOR_DOCS.items():  # sympy's undefined functions have neither (help() and pydoc need both)
    _f.__doc__, _f.__module__ = _doc, __name__


def indicator(cond):
    """1 where ``cond`` holds, 0 elsewhere."""
    return sp.Piecewise((sp.Integer(1), cond), (sp.Integer(0), True))


def operator_of(e) -> str | None:
    """The name of the toolkit operator ``e`` applies (``"CoordSum"``, ``"Expect"``, ``"Expect1"``,
    ``"Sup1"``), or None when ``e`` is not an application of one."""
    if isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ in OPERATORS:
        return e.func.__name__
    return None


# ---------------------------------------------------------------------------------------------------
# exact finite distributions


@functools.lru_cache(maxsize=256)
def compositions(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """All count vectors c in N^k with sum n, shape (M, k), and their log multinomial coefficients."""
    rows = []

    def rec(prefix, left, slots):
        if slots == 1:
            rows.append(prefix + [left])
            return
        for c in range(left, -1, -1):
            rec(prefix + [c], left - c, slots - 1)

    rec([], n, k)
    counts = np.array(rows, dtype=np.int64)
    logc = math.lgamma(n + 1) - np.sum([[math.lgamma(c + 1) for c in r] for r in rows], axis=1)
    return counts, np.asarray(logc, dtype=np.float64)


@functools.lru_cache(maxsize=64)
def _product_index(M: int, d: int) -> np.ndarray:
    """Every index tuple of range(M)^d, (M^d, d), in lexicographic order (read-only, cached)."""
    idx = np.array(list(itertools.product(range(M), repeat=d)), dtype=np.int64).reshape(-1, d)
    idx.flags.writeable = False
    return idx


def batch_outcomes(values, weights, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of the mean of ``n`` i.i.d. samples, per coordinate (independent coupling).

    ``values``, ``weights``: (..., d, k) single-sample support and probabilities (rows sum to 1).
    Returns (..., d, M) batch-mean values and probabilities, M = C(n + k - 1, k - 1) (an n-sample
    mini-batch estimate, enumerated exactly).
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if n == 1:
        return values, weights
    k = values.shape[-1]
    counts, logc = compositions(k, n)
    vals = values @ counts.T.astype(np.float64) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.log(weights)[..., :, None] * counts.T  # (..., d, k, M)
    lw = np.where(counts.T == 0, 0.0, logw)  # a zero count contributes w^0 = 1, also for w = 0
    probs = np.exp(logc + lw.sum(axis=-2))
    return vals, probs


class Distribution:
    """A population of S finite distributions of a d-dimensional random vector and the mean of n
    samples of it.

    ``values``, ``weights``: (S, d, k) with ``coupling="independent"`` (each coordinate has its own k
    support points, coordinates independent), or (S, k, d) and (S, k) with ``coupling="joint"`` (k
    support points in R^d). ``n``: batch size (the random vector of ``Expect`` is the mean of n samples).
    """

    def __init__(self, values, weights, n: int = 1, coupling: str = "independent"):
        if coupling not in ("independent", "joint"):
            raise ValueError(f"coupling must be 'independent' or 'joint', got {coupling!r}")
        self.values = np.asarray(values, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.n = int(n)
        self.coupling = coupling
        if self.values.ndim == 2:  # one distribution
            self.values = self.values[None]
            self.weights = self.weights[None]
        if coupling == "independent":
            self.S, self.d, self.k = self.values.shape
        else:
            self.S, self.k, self.d = self.values.shape

    # outcomes (cached: the constants, the term and the bound of one evaluation share them) ------------
    def single(self, layout: str):
        """(vals, probs) of one sample in ``layout`` ``"marginal"`` (independent only) or ``"joint"``."""
        return self._cached(("single", layout), 1, layout)

    def batch(self, layout: str):
        """(vals, probs) of the mean of n samples in ``layout``."""
        return self._cached(("batch", layout), self.n, layout)

    def _cached(self, key, n, layout):
        cache = self.__dict__.setdefault("_cache", {})
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = self._outcomes(self.values, self.weights, n, layout)
        return hit

    def _outcomes(self, values, weights, n, layout):
        if self.coupling == "joint":
            if n == 1:
                return values, weights[..., None]
            counts, logc = compositions(self.k, n)
            vals = np.einsum("mk,skd->smd", counts.astype(np.float64), values) / n
            with np.errstate(divide="ignore"):
                lw = np.where(counts[None] == 0, 0.0, np.log(weights)[:, None, :] * counts[None])
            return vals, np.exp(logc[None] + lw.sum(axis=-1))[..., None]
        v, p = batch_outcomes(values, weights, n)  # (S, d, M)
        if layout == "marginal":
            return np.swapaxes(v, 1, 2), np.swapaxes(p, 1, 2)  # (S, M, d)
        M = v.shape[-1]
        if M**self.d > 2_000_000:
            raise ValueError(
                f"the joint distribution has {M}^{self.d} outcomes: too many to enumerate; write the term as a "
                "sum of CoordSum terms (separable) or use Monte Carlo"
            )
        idx = _product_index(M, self.d)  # (M^d, d)
        cols = np.arange(self.d)
        jv = v[:, cols, idx]  # (S, M^d, d)
        jp = np.prod(p[:, cols, idx], axis=-1)[..., None]
        return jv, jp

    def mean(self) -> np.ndarray:
        """(S, d): the mean of one sample (= of the batch mean)."""
        if self.coupling == "joint":
            return np.einsum("sk,skd->sd", self.weights, self.values)
        return np.sum(self.values * self.weights, axis=-1)


class Env:
    """What an expression is evaluated against: scalars (name -> number or (S,) array), coordinate
    constants (name -> (S, d) or (d,)), an optional :class:`Distribution` (for ``Expect``, ``Expect1``,
    ``Sup1``) or optional samples (S, N, d) standing in for it (Monte Carlo), and S."""

    def __init__(self, scalars=None, coords=None, dist: Distribution | None = None, samples=None, S=None):
        self.dist = dist
        self.samples = None if samples is None else np.asarray(samples, dtype=np.float64)
        if S is None:
            S = dist.S if dist is not None else (self.samples.shape[0] if self.samples is not None else 1)
        self.S = S
        self.scalars = {k: self._scalar(v) for k, v in (scalars or {}).items()}
        self.coords = {k: self._coord(v) for k, v in (coords or {}).items()}

    def _scalar(self, v):
        a = np.asarray(v, dtype=np.float64)
        return a.reshape(-1, 1, 1) if a.ndim else a

    def _coord(self, v):
        a = np.asarray(v, dtype=np.float64)
        if a.ndim == 1:
            a = a[None]
        return a[:, None, :]


# ---------------------------------------------------------------------------------------------------
# compilation to numpy


def _split_separable(e):
    """Terms of ``e`` (an Add) as (coefficient free of x, CoordSum argument) pairs, or None when some
    term is not of that form."""
    out = []
    for term in sp.Add.make_args(
        sp.expand(e, deep=False, mul=True, multinomial=False, power_exp=False, power_base=False, log=False)
    ):
        sums = [f for f in sp.Mul.make_args(term) if operator_of(f) == "CoordSum"]
        rest = [f for f in sp.Mul.make_args(term) if operator_of(f) != "CoordSum"]
        coef = sp.Mul(*rest)
        if len(sums) != 1 or coef.has(x) or any(operator_of(a) for a in sp.preorder_traversal(coef)):
            return None
        out.append((coef, sums[0].args[0]))
    return out


class _Compiled:
    """A closure tree: ``fn(ctx) -> array`` with ctx a dict of the current layout's arrays."""

    def __init__(self, expr, coord_names, coupling):
        self.expr = sp.sympify(expr)
        self.coord_names = tuple(coord_names)
        self.coupling = coupling
        self.fn = self._compile(self.expr)

    def _compile(self, e):
        op = operator_of(e)
        if op == "CoordSum":
            inner = self._compile(e.args[0])
            return lambda c: np.sum(_bc(inner(c), c.shape), axis=-1, keepdims=True)
        if op in ("Expect", "Expect1", "Sup1"):
            arg = e.args[0]
            which = "batch" if op == "Expect" else "single"
            sep = _split_separable(arg) if (self.coupling == "independent" and op != "Sup1") else None
            if sep is not None:  # linearity: per-coordinate expectations on the marginal layout
                parts = [(self._compile(cf), self._compile(phi)) for cf, phi in sep]

                def fn_sep(c, parts=parts, which=which):
                    cm = c.with_outcomes(which, "marginal")
                    total = 0.0
                    for cf, phi in parts:
                        e_phi = np.sum(_bc(cm["_p"] * phi(cm), cm.shape), axis=1, keepdims=True)
                        total = total + cf(c) * np.sum(e_phi, axis=-1, keepdims=True)
                    return total

                return fn_sep
            inner = self._compile(arg)
            has_sum = any(operator_of(a) == "CoordSum" for a in sp.preorder_traversal(arg))
            layout = "joint" if (self.coupling == "joint" or has_sum) else "marginal"

            def fn_joint(c, inner=inner, which=which, op=op, layout=layout):
                cj = c.with_outcomes(which, layout)
                v = np.asarray(inner(cj), dtype=np.float64)
                if v.ndim < 3:
                    v = v.reshape((1, 1, 1))
                S, M = cj.shape[:2]
                pr = cj["_p"]
                v = _bc(v, (S, M, max(v.shape[-1], pr.shape[-1] if layout == "marginal" else 1)))
                if op == "Sup1":
                    return np.max(np.where(pr > 0, v, -np.inf), axis=1, keepdims=True)
                return np.sum(pr * v, axis=1, keepdims=True)

            return fn_joint
        # no operator at the top: replace operator subterms by dummies and lambdify the rest
        subs, parts = {}, []
        stack = [e]
        found = []
        while stack:
            node = stack.pop()
            if operator_of(node):
                found.append(node)
                continue
            stack.extend(node.args)
        for node in found:
            if node not in subs:
                d = sp.Dummy("op")
                subs[node] = d
                parts.append((d, self._compile(node)))
        body = e.xreplace(subs)
        syms = sorted(body.free_symbols, key=lambda s: s.name)
        f = sp.lambdify(syms, body, modules=[{"Heaviside": _heaviside}, "numpy"], printer=_printer())
        names = [s for s in syms]
        dmap = dict(parts)

        def fn_leaf(c, f=f, names=names, dmap=dmap):
            args = []
            for s in names:
                if s in dmap:
                    args.append(dmap[s](c))
                else:
                    args.append(c.value(s.name))
            return np.asarray(f(*args), dtype=np.float64)  # errors silenced once, in evaluate()

        return fn_leaf


@functools.lru_cache(maxsize=1)
def _printer():
    """lambdify's numpy printer with ``Piecewise`` as nested ``where`` (``select`` gives the same values
    but costs ~20 us per call on the small arrays of a search)."""
    from sympy.printing.numpy import NumPyPrinter

    class _Printer(NumPyPrinter):
        def _print_Piecewise(self, expr):
            where = self._module_format(self._module + ".where")
            out = self._module_format(self._module + ".nan")
            for e, c in reversed(expr.args):
                if c == sp.true:
                    out = self._print(e)
                else:
                    out = f"{where}({self._print(c)}, {self._print(e)}, {out})"
            return out

    return _Printer


def _heaviside(v, h0=0.5):
    return np.heaviside(v, h0)


def _bc(a, shape):
    """``a`` broadcast to ``shape`` (a read-only view; ``a`` itself when it has that shape already)."""
    a = np.asarray(a)
    return a if a.shape == shape else np.broadcast_to(a, shape)


class _Ctx(dict):
    """The arrays of one layout: scalars (S,1,1), coordinate constants and outcomes (S,M,d), ``_p``."""

    def __init__(self, env: Env, outcomes=None, probs=None):
        super().__init__()
        self.env = env
        S = env.S
        d = None
        if outcomes is not None:
            d = outcomes.shape[-1]
        elif env.coords:
            d = next(iter(env.coords.values())).shape[-1]
        elif env.dist is not None:
            d = env.dist.d
        else:
            d = 1
        M = 1 if outcomes is None else outcomes.shape[1]
        self.shape = (S, M, d)
        if outcomes is not None:
            self["x"] = outcomes
            self["_p"] = probs

    def value(self, name):
        if name in self:
            return self[name]
        env = self.env
        if name in env.scalars:
            return env.scalars[name]
        if name in env.coords:
            return env.coords[name]
        if name == "x":
            raise ValueError("the symbol x (the random vector's coordinate) appears outside Expect/Expect1/Sup1")
        raise ValueError(f"no value for the symbol {name!r} (give it as a parameter or a coordinate constant)")

    def with_outcomes(self, which, layout):
        env = self.env
        if env.samples is not None:
            if which != "batch":
                raise ValueError("Expect1/Sup1 need an exact distribution, not samples")
            v = env.samples
            return _Ctx(env, v, np.full(v.shape[:2] + (1,), 1.0 / v.shape[1]))
        if env.dist is None:
            raise ValueError("Expect/Expect1/Sup1 need a distribution (Env(dist=...)) or samples")
        cache = env.__dict__.setdefault("_outcome_ctx", {})  # one per (which, layout) per Env
        got = cache.get((which, layout))
        if got is None:
            v, p = env.dist.batch(layout) if which == "batch" else env.dist.single(layout)
            got = cache[(which, layout)] = _Ctx(env, v, p)
        return got


@functools.lru_cache(maxsize=512)
def compile_expr(expr, coupling: str = "independent") -> _Compiled:
    """The numpy evaluator of ``expr`` (cached per expression and coupling)."""
    return _Compiled(expr, ("x", "g", "sigma"), coupling)


def evaluate(expr, env: Env) -> np.ndarray:
    """``expr`` evaluated against ``env``: an (S,) array (scalar expressions broadcast)."""
    coupling = env.dist.coupling if env.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    with np.errstate(all="ignore"):  # non-finite values are the callers' to judge
        out = np.asarray(c.fn(_Ctx(env)), dtype=np.float64)
    if out.ndim == 3:
        if out.shape[1] != 1 or out.shape[2] != 1:
            raise ValueError("the expression is per-coordinate at the top level: wrap it in CoordSum")
        out = out[:, 0, 0]
    return np.array(_bc(out, (env.S,)), dtype=np.float64)


def evaluate_shaped(expr, env: Env, *, per_coordinate: bool) -> np.ndarray:
    """``expr`` evaluated against ``env`` as an (S, d) array per coordinate (d of ``env.dist``), or else an
    (S,) array; how :func:`proofs_checks.engines.constants` derives the constants an assumption defines."""
    coupling = env.dist.coupling if env.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    with np.errstate(all="ignore"):
        out = np.asarray(c.fn(_Ctx(env)), dtype=np.float64)
    if per_coordinate:
        return np.array(_bc(out.reshape(out.shape[0], -1), (env.S, env.dist.d)))
    return np.array(_bc(out.reshape(-1), (env.S,)))
