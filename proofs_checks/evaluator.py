"""The numpy evaluator of claim expressions (the vocabulary is documented in :mod:`proofs_checks.expressions`):
the vocabulary's operators, finite distributions (:class:`Distribution`), the evaluation environment
(:class:`Env`) and the compiler of an expression to numpy calls over a population (:func:`compile_expr`,
:func:`evaluate`, :func:`evaluate_shaped`, :func:`evaluate_quiet`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math

import numpy as np
import sympy as sp

from .recheck import (  # one implementation (recheck runs standalone)
    dummy_names_in_order,
    lambdify_args,
    operator_placeholders,
)

__all__ = [
    "x",
    "g",
    "sigma",
    "CoordSum",
    "Expect",
    "Expect1",
    "Sup1",
    "OPERATORS",
    "indicator",
    "operator_of",
    "compositions",
    "batch_outcomes",
    "Distribution",
    "lane_values",
    "Env",
    "compile_expr",
    "evaluate",
    "evaluate_quiet",
    "evaluate_shaped",
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
    _f.__doc__, _f.__module__ = _doc, "proofs_checks.expressions"  # the vocabulary's public home


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
def product_index(M: int, d: int) -> np.ndarray:
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
        probs = np.exp(log_batch_probs(np.log(weights), counts, logc))
    return vals, probs


def log_batch_probs(log_w, counts, logc):
    """``logc + lw.sum(axis=-2)`` with ``lw = where(counts.T == 0, 0, log_w[..., :, None] * counts.T)``: the
    log-probabilities of :func:`batch_outcomes` ((..., d, M) from the log-weights (..., d, k), a zero count
    contributing w^0 = 1, also for w = 0). Computed by the numba kernel
    :func:`~proofs_checks._search_kernels.batch_log_probs` (the same products, and the sum over k in the
    order numpy adds an axis that is not the contiguous one: the same bits) when numba is installed, log_w
    is float64, M > 1 and k < 8 (from k = 8 on numpy adds in another order), else by numpy (call inside
    ``errstate(invalid="ignore")``: -inf * 0). Measured (k = 3, n = 2, d = 2): 1152 rows 430 -> 42 us, 24
    rows 15 -> 3 us (a product, a ``where``, a sum and an addition over (S, d, k, M) arrays)."""
    kern = _BATCH.get("kernel", False)
    if kern is False:
        try:
            from ._search_kernels import batch_log_probs as kern
        except ImportError:
            kern = None
        _BATCH["kernel"] = kern
    M, k = counts.shape
    if kern is not None and type(log_w) is np.ndarray and log_w.dtype == np.float64 and M > 1 and 1 < k < 8:
        flat = log_w.reshape(-1, k)
        out = np.empty((flat.shape[0], M))
        return kern(flat, counts, logc, out).reshape(*log_w.shape[:-1], M)
    return log_batch_probs_numpy(log_w, counts, logc)


def log_batch_probs_numpy(log_w, counts, logc):
    """:func:`log_batch_probs` in numpy."""
    logw = log_w[..., :, None] * counts.T  # (..., d, k, M)
    lw = np.where(counts.T == 0, 0.0, logw)
    return logc + lw.sum(axis=-2)


_BATCH: dict = {}


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
        """(vals, probs) of the mean of n samples in ``layout`` (for n = 1 those of one sample: the same
        arrays, computed once)."""
        if self.n == 1:
            return self._cached(("single", layout), 1, layout)
        return self._cached(("batch", layout), self.n, layout)

    def outcomes(self, key) -> None:
        """Compute the outcomes ``key`` (``(which, layout)``, as :meth:`single` / :meth:`batch` cache them)
        now, e.g. on a whole population before :meth:`take` hands row blocks of it to several evaluations
        (each row's outcomes are its own: the same values as computed on the block)."""
        which, layout = key
        (self.single if which == "single" else self.batch)(layout)

    def cached_keys(self) -> tuple:
        """The keys of the outcomes computed so far (:meth:`outcomes`)."""
        return tuple(self.__dict__.get("_cache", ()))

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
        idx = product_index(M, self.d)  # (M^d, d)
        cols = np.arange(self.d)
        jv = v[:, cols, idx]  # (S, M^d, d)
        jp = np.prod(p[:, cols, idx], axis=-1)[..., None]
        return jv, jp

    def take(self, a: int, b: int) -> Distribution:
        """Rows ``a:b`` of the population (views, with the cached outcomes sliced the same way)."""
        out = Distribution.__new__(Distribution)
        out.values, out.weights = self.values[a:b], self.weights[a:b]
        out.n, out.coupling = self.n, self.coupling
        out.k = self.k
        out.d = self.d
        out.S = out.values.shape[0]
        cache = self.__dict__.get("_cache")
        if cache:
            out._cache = {key: (v[a:b], p[a:b]) for key, (v, p) in cache.items()}
        return out

    def mean(self) -> np.ndarray:
        """(S, d): the mean of one sample (= of the batch mean)."""
        if self.coupling == "joint":
            return np.einsum("sk,skd->sd", self.weights, self.values)
        return np.sum(self.values * self.weights, axis=-1)


_LANE_MEMO: dict = {}  # the lanes of the last per-row scalars seen (one entry, holding the arrays)


class _LaneValues(dict):
    """name -> 0-d array, with ``key``: the numbers, in order."""

    __slots__ = ("key",)


def lane_values(keys, col) -> dict:
    """The scalars of one lane (:meth:`Env.lanes`): name -> 0-d array, as Env holds a scalar."""
    out = _LaneValues((name, np.asarray(float(v))) for name, v in zip(keys, col.tolist()))
    out.key = tuple(float(v) for v in col.tolist())
    return out


class Env:
    """What an expression is evaluated against: scalars (name -> number or (S,) array), coordinate
    constants (name -> (S, d) or (d,)), an optional :class:`Distribution` (for ``Expect``, ``Expect1``,
    ``Sup1``) or optional samples (S, N, d) standing in for it (Monte Carlo), and S.

    ``rows``: per-row scalars (name -> (S,) array), for populations whose rows belong to problems with
    different settings (the searches of several p in one call). Each row gets exactly the value it gets
    in an Env whose scalar is that row's number: the sub-expressions that read a per-row scalar are
    evaluated once per run of rows sharing its values (a *lane*), with the lane's number as a scalar,
    so scalar arithmetic and numpy's scalar fast paths (``x ** 0.5`` is ``sqrt``) are those of a
    one-setting evaluation, bit for bit. Rows grouped by setting make few lanes. ``lanes``: those runs,
    when the caller knows them (a list of ``(slice, {name: 0-d array})`` covering the rows in order, the
    values those of ``rows``)."""

    def __init__(
        self, scalars=None, coords=None, dist: Distribution | None = None, samples=None, S=None, rows=None, lanes=None
    ):
        self.dist = dist
        self.samples = None if samples is None else np.asarray(samples, dtype=np.float64)
        if S is None:
            S = dist.S if dist is not None else (self.samples.shape[0] if self.samples is not None else 1)
        self.S = S
        self.scalars = {k: self._scalar(v) for k, v in (scalars or {}).items()}
        self.coords = {k: self._coord(v) for k, v in (coords or {}).items()}
        self.rows = {}
        for k, v in (rows or {}).items():
            a = np.asarray(v, dtype=np.float64)
            a = a if a.ndim == 1 else a.reshape(-1)
            if a.shape != (S,):
                raise ValueError(f"Env rows[{k!r}] must have one value per row ({S}), got shape {np.shape(v)}")
            if k in self.scalars:
                raise ValueError(f"Env: {k!r} is given both as a scalar and per row (rows=)")
            self.rows[k] = a
        self._lanes = None
        self._lidx = None
        self._lkey = None
        if lanes is not None:  # the caller's runs of rows sharing their per-row scalars (as lanes() finds them)
            self._lanes = list(lanes)

    def lanes(self):
        """The runs of rows sharing their per-row scalars: a list of ``(rows, values)``, ``rows`` a slice
        (or an index array when the rows of one setting are not contiguous), ``values`` name -> 0-d
        array (what a scalar of that number is in an Env)."""
        if self._lanes is None:
            memo = _LANE_MEMO.get("last")
            ids = tuple((k, id(v)) for k, v in self.rows.items())
            if memo is not None and memo[0] == ids:  # the same row arrays as the last Env (constants, then sides)
                self._lanes, self._lidx = memo[2], memo[3]
                return self._lanes
            self._lidx = None
            keys = list(self.rows)
            R = np.stack([self.rows[k] for k in keys]) if keys else np.zeros((0, self.S))
            S = self.S
            if S == 0 or not keys:  # no rows (the scalars' values do not matter) or no per-row scalars
                self._lanes = [(slice(0, S), lane_values(keys, np.full(len(keys), np.nan)))]
                return self._lanes
            cut = np.flatnonzero(np.any(R[:, 1:] != R[:, :-1], axis=0)) + 1
            starts = [0, *cut.tolist()]
            stops = [*cut.tolist(), S]
            uniq = {}
            for a in starts:
                uniq.setdefault(tuple(R[:, a].tolist()), []).append(a)
            if len(starts) <= 2 * len(uniq):
                self._lanes = [(slice(a, b), lane_values(keys, R[:, a])) for a, b in zip(starts, stops)]
            else:  # interleaved settings: one lane per distinct setting, its rows by index
                tup = [tuple(col) for col in R.T.tolist()]
                groups: dict = {}
                for r, t in enumerate(tup):
                    groups.setdefault(t, []).append(r)
                self._lanes = [
                    (np.asarray(idx, dtype=np.intp), lane_values(keys, R[:, idx[0]])) for idx in groups.values()
                ]
            if keys and self.S:
                _LANE_MEMO["last"] = (ids, [self.rows[k] for k in keys], self._lanes, self.lane_index())
        return self._lanes

    def lane_key(self) -> tuple:
        """The settings of :meth:`lanes`, in order (keys memos of per-lane values)."""
        key = getattr(self, "_lkey", None)
        if key is None:
            key = self._lkey = tuple(
                vals.key if type(vals) is _LaneValues else tuple(float(v) for v in vals.values())
                for _, vals in self.lanes()
            )
        return key

    def lane_sig(self):
        """The runs of :meth:`lanes` as ``(S, (start, stop, setting), ...)`` when every run is a slice, else
        None: two Envs with the same signature have the same lanes (memo key of lane tables)."""
        sig = getattr(self, "_lsig", False)
        if sig is False:
            lanes = self.lanes()
            if all(type(sel) is slice for sel, _ in lanes):
                sig = (self.S, *[(sel.start, sel.stop, k) for (sel, _), k in zip(lanes, self.lane_key())])
            else:
                sig = None
            self._lsig = sig
        return sig

    def lane_index(self) -> np.ndarray:
        """(S,): the lane of each row (:meth:`lanes`)."""
        lanes = self.lanes()
        if getattr(self, "_lidx", None) is None:
            idx = np.empty(self.S, dtype=np.intp)
            for i, (sel, _) in enumerate(lanes):
                idx[sel] = i
            self._lidx = idx
        return self._lidx

    def take(self, a: int, b: int) -> Env:
        """The Env of rows ``a:b`` (a view: the distribution's cached outcomes are sliced, not rebuilt).
        Every row evaluates as it does in the whole Env."""
        S = self.S
        out = Env.__new__(Env)
        out.dist = None if self.dist is None else self.dist.take(a, b)
        out.samples = None if self.samples is None else self.samples[a:b]
        out.S = len(range(S)[a:b])

        out.scalars = {k: (v[a:b] if (np.ndim(v) and v.shape[0] == S) else v) for k, v in self.scalars.items()}
        out.coords = {k: (v[a:b] if (np.ndim(v) and v.shape[0] == S) else v) for k, v in self.coords.items()}
        out.rows = {k: v[a:b] for k, v in self.rows.items()}
        out._lanes = None
        out._lidx = None
        out._lkey = None
        if self._lanes is not None and all(isinstance(sel, slice) for sel, _ in self._lanes):
            lanes = []  # the runs of the whole population cut to a:b
            for sel, vals in self._lanes:
                lo, hi = max(sel.start, a), min(sel.stop, b)
                if lo < hi:
                    lanes.append((slice(lo - a, hi - a), vals))
            out._lanes = lanes
        return out

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

            def fn_sum(c, inner=inner):
                return add_reduce(_bc(inner(c), c.shape), -1)  # = np.sum, fewer layers

            fn_sum.stage = ("sum", inner)
            return fn_sum
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
                        e_phi = add_reduce(_bc(cm["_p"] * phi(cm), cm.shape), 1)
                        total = total + cf(c) * add_reduce(e_phi, -1)
                    return total

                fn_sep.stage = ("sep", parts, which)
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
                    return np.maximum.reduce(np.where(pr > 0, v, -np.inf), axis=1, keepdims=True)
                return add_reduce(pr * v, 1)

            fn_joint.stage = ("joint", inner, which, op, layout)
            return fn_joint
        # no operator at the top: replace operator subterms by dummies and lambdify the rest
        subs, body = operator_placeholders(e, operator_of)
        parts = [(d, self._compile(node)) for node, d in subs.items()]
        syms = lambdify_args(body)  # placeholders in creation order
        with dummy_names_in_order(len(syms)):
            f = sp.lambdify(syms, body, modules=[{"Heaviside": _heaviside}, "numpy"], printer=_printer())
        names = [s for s in syms]
        dmap = dict(parts)
        plain = frozenset(s.name for s in names if s not in dmap)  # the symbols read from the Env

        variants: dict = {}  # lane evaluation plans of this leaf, per kind of each argument

        def fn_leaf(c, f=f, names=names, dmap=dmap, plain=plain, variants=variants):
            rows = c.env.rows
            if rows and not plain.isdisjoint(rows):
                return _lane_leaf(c, f, names, dmap, variants)
            args = []
            for s in names:
                if s in dmap:
                    args.append(dmap[s](c))
                else:
                    args.append(c.value(s.name))
            return np.asarray(f(*args), dtype=np.float64)  # errors silenced once, in evaluate()

        fn_leaf.stage = ("leaf", f, names, dmap, plain, variants)
        return fn_leaf


_EXACT_CALLS = frozenset(
    {
        "where",
        "sign",
        "abs",
        "absolute",
        "fabs",
        "negative",
        "equal",
        "not_equal",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "maximum",
        "minimum",
        "copysign",
        "select",
        "_heaviside",
        "heaviside",
    }
)  # element-wise functions whose value at a row does not depend on whether an argument is a scalar


_EXACT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)  # IEEE-exact: the same bits with a scalar or an array


def _lane_plan(f, kinds):
    """The lane plan of a lambdified leaf ``f`` whose arguments are of ``kinds`` (``"L"`` per-row scalar,
    ``"S"`` scalar, ``"A"`` array), from its generated source: every largest sub-expression of scalars only
    that reads a per-row scalar becomes a table lookup (computed once per lane with the lane's numbers,
    as a one-setting evaluation computes it), every power with such an exponent a per-lane power (numpy
    takes another route for a scalar exponent 0.5, 2 or -1); the rest, element-wise and IEEE-exact with
    arrays or scalars alike, runs once on all rows. Returns ``(fn, subs)`` (``fn(*args, lanes)``;
    ``subs``: the sub-expressions' functions of the arguments; then the indices of those read per row,
    and a memo of their lane values), or None when the source has anything else (the leaf is then
    evaluated lane by lane)."""
    try:
        tree = ast.parse(inspect.getsource(f))
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or len(fdef.body) != 1 or not isinstance(fdef.body[0], ast.Return):
        return None
    argn = [a.arg for a in fdef.args.args]
    if len(argn) != len(kinds) or fdef.args.vararg or fdef.args.kwonlyargs:
        return None
    kind_of = dict(zip(argn, kinds))
    subs: list = []
    as_rows: list = []  # the sub-expressions read as per-row arrays (the others are exponents)
    bad = []

    def lookup(node):
        as_rows.append(len(subs))
        subs.append(node)
        return ast.Subscript(
            value=ast.Attribute(value=ast.Name("_lanes_", ast.Load()), attr="rows", ctx=ast.Load()),
            slice=ast.Constant(len(subs) - 1),
            ctx=ast.Load(),
        )

    def join(ks):
        if "A" in ks:
            return "A"
        if "L" in ks:
            return "L"
        return "S"

    def visit(node):
        """(kind, node) with the lane sub-expressions below an array-valued node replaced."""
        if isinstance(node, ast.Constant):
            return "S", node
        if isinstance(node, ast.Name):
            return kind_of.get(node.id, "S"), node  # a module or builtin name: a constant
        if isinstance(node, ast.Attribute):
            return "S", node  # numpy.sqrt and the like (a function, not a value)
        if isinstance(node, ast.UnaryOp):
            k, v = visit(node.operand)
            node.operand = v
            return k, node
        if isinstance(node, ast.BinOp):
            (kl, l), (kr, r) = visit(node.left), visit(node.right)
            k = join((kl, kr))
            if k != "A":
                node.left, node.right = l, r
                return k, node
            if isinstance(node.op, ast.Pow) and kr == "L":
                ln = lookup(r) if kl == "L" else l
                call = ast.Call(
                    func=ast.Attribute(value=ast.Name("_lanes_", ast.Load()), attr="pow", ctx=ast.Load()),
                    args=[ln, ast.Constant(len(subs))],
                    keywords=[],
                )
                subs.append(r)
                return "A", call
            if not isinstance(node.op, _EXACT_OPS + (ast.Pow,)) or (isinstance(node.op, ast.Pow) and kl == "L"):
                if kl == "L" or kr == "L":
                    bad.append(node)
            node.left = lookup(l) if kl == "L" else l
            node.right = lookup(r) if kr == "L" else r
            return "A", node
        if isinstance(node, ast.Call):
            if node.keywords:
                bad.append(node)
            fk, _ = visit(node.func)
            res = [visit(a) for a in node.args]
            k = join([kk for kk, _ in res])
            if k != "A":
                node.args = [v for _, v in res]
                return k, node
            fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if any(kk == "L" for kk, _ in res) and fname not in _EXACT_CALLS:
                bad.append(node)
            node.args = [lookup(v) if kk == "L" else v for kk, v in res]
            return "A", node
        bad.append(node)
        return "A", node

    k, body = visit(fdef.body[0].value)
    if bad:
        return None
    if k == "L":
        body = lookup(body)
    fdef.body[0].value = body
    fdef.args.args.append(ast.arg("_lanes_"))
    fdef.name = "_lane_leaf"
    mods = [ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))]
    for node in subs:
        sub = ast.FunctionDef(
            name="_lane_sub",
            args=ast.arguments(
                posonlyargs=[], args=[ast.arg(a) for a in argn], kwonlyargs=[], kw_defaults=[], defaults=[]
            ),
            body=[ast.Return(node)],
            decorator_list=[],
        )
        mods.append(ast.fix_missing_locations(ast.Module(body=[sub], type_ignores=[])))
    fns = []
    for mod in mods:
        ns: dict = {}
        exec(compile(mod, "<lane plan>", "exec"), f.__globals__, ns)
        fns.append(next(iter(ns.values())))
    return fns[0], fns[1:], frozenset(as_rows), {}


_FAST_POWERS = ((0.5, np.sqrt), (2.0, np.square), (-1.0, np.reciprocal))  # numpy's array ** scalar fast paths


class _LaneTable:
    """A leaf's per-row values of its lane sub-expressions (``rows[k]``, (S, 1, 1)) and its powers with
    a lane exponent (``pow(base, k)``), for one evaluation."""

    __slots__ = ("lanes", "per_lane", "S", "rows", "specials", "runs")

    def __init__(self, lanes, lidx, per_lane, tabs, specials, S):
        self.lanes, self.per_lane, self.S, self.specials = lanes, per_lane, S, specials
        self.rows = [None if t is None else t[lidx].reshape(-1, 1, 1) for t in tabs]
        self.runs: dict = {}  # k -> per special exponent, the runs of rows (slices) with that exponent

    def _runs(self, k):
        """Per special exponent v of sub-expression k (``specials[k]``), the maximal runs of consecutive rows
        whose exponent is v, as slices (computed once per table: the rows' exponents are fixed)."""
        got = self.runs.get(k)
        if got is None:
            e = self.rows[k].reshape(-1)
            got = []
            for v, fast in self.specials[k]:
                hit = np.concatenate([[False], e == v, [False]])
                edges = np.flatnonzero(hit[1:] != hit[:-1])  # starts and stops, alternating
                got.append((fast, [slice(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]))
            self.runs[k] = got
        return got

    def pow(self, base, k):
        """``base ** e`` with e the lane's value of sub-expression k, as a one-setting evaluation computes
        it with e a scalar: ``numpy.power`` with the exponent per row (the same element-wise power, laid
        out as ``base``), except where numpy takes its scalar fast path (``x ** 0.5`` is ``sqrt(x)``,
        ``x ** 2`` ``square``, ``x ** -1`` ``reciprocal``: other bits), whose rows get that function."""
        vals, S = self.per_lane[k], self.S
        specials = self.specials[k]
        rowwise = isinstance(base, np.ndarray) and base.ndim >= 1 and base.shape[0] == S and S != 1
        if rowwise and specials is not None and base.dtype == np.float64:
            e_rows = self.rows[k]
            res = np.power(base, e_rows)
            if base.ndim == 3 and base.flags.c_contiguous and res.flags.c_contiguous and res.shape == base.shape:
                # the rows with a special exponent overwritten by its function on those rows alone: the values
                # and the layout (C order, as np.where gives for C-ordered operands) of the np.where below, without
                # computing the fast function on every row (its operations are element-wise: sqrt, x*x, 1/x)
                for fast, runs in self._runs(k):
                    for sl in runs:
                        res[sl] = fast(base[sl])
                return res
            for v, fast in specials:
                res = np.where(e_rows == v, fast(base), res)
            return res
        if rowwise:  # lane by lane, into an array laid out as base
            res = None
            for (sel, _), e in zip(self.lanes, vals):
                pc = base[sel] ** e
                if res is None:
                    res = np.empty_like(base, dtype=np.result_type(pc))
                res[sel] = pc
            return res
        pieces = [np.asarray(base**e) for e in vals]  # a base shared by every row
        tail = np.broadcast_shapes(*[pc.shape[1:] if pc.ndim else () for pc in pieces])
        res = _empty_as(max(pieces, key=np.ndim), (S, *tail), np.result_type(*pieces))
        for (sel, _), pc in zip(self.lanes, pieces):
            res[sel] = pc.reshape(pc.shape[1:]) if pc.ndim == 1 + len(tail) and pc.shape[0] == 1 else pc
        return res


def _empty_as(proto, shape, dtype):
    """An empty array of ``shape`` laid out in memory as ``proto`` is (its axes in the same stride order):
    what numpy gives an element-wise result of ``proto``. The order matters downstream: a sum over an
    axis adds in another order when that axis is the contiguous one."""
    proto = np.asarray(proto)
    if proto.ndim != len(shape) or proto.ndim < 2:
        return np.empty(shape, dtype=dtype)
    order = sorted(range(proto.ndim), key=lambda ax: -abs(proto.strides[ax]) if proto.shape[ax] > 1 else 0)
    if order == list(range(proto.ndim)):
        return np.empty(shape, dtype=dtype)
    return np.empty([shape[ax] for ax in order], dtype=dtype).transpose(np.argsort(order))


def _lane_leaf(c, f, names, dmap, variants):
    """A leaf that reads per-row scalars (``Env(rows=...)``): through its lane plan (:func:`_lane_plan`)
    when it has one, else lane by lane (:func:`_per_lane`). Either way each row gets the bits of a
    one-setting evaluation."""
    env = c.env
    full, kinds = [], []
    for s in names:
        if s in dmap:
            v = dmap[s](c)
            full.append(v)
            kinds.append("S" if np.ndim(v) == 0 else "A")
        elif s.name in env.rows:
            full.append(None)
            kinds.append("L")
        else:
            v = c.value(s.name)
            full.append(v)
            kinds.append("S" if np.ndim(v) == 0 else "A")
    how, a, b = lane_route(env, f, names, full, kinds, variants, c.shape[0])
    if how == "one":
        return np.asarray(f(*[a[s.name] if v is None else v for s, v in zip(names, full)]), dtype=np.float64)
    if how == "per":
        return _per_lane(c, f, names, dmap, full)
    return np.asarray(a(*full, b), dtype=np.float64)


def lane_route(env, f, names, full, kinds, variants, S):
    """How :func:`_lane_leaf` evaluates a leaf, from what does not depend on the rows' data (the lanes, the
    kinds of the arguments, the scalar arguments' numbers in ``full``): ``("one", values, None)`` (a single
    lane: ``f`` with the lane's ``values`` for the per-row scalars), ``("per", None, None)`` (lane by lane,
    :func:`_per_lane`) or ``("plan", fn, table)`` (``fn(*full, table)``, the lane plan with its table)."""
    lanes = env.lanes()
    if len(lanes) == 1:
        return "one", lanes[0][1], None
    key = tuple(kinds)
    plan = variants.get(key, False)
    if plan is False:
        plan = variants[key] = _lane_plan(f, key)
    if plan is None:
        return "per", None, None
    fn, subs, _, memo = plan
    mkey = (env.lane_key(), tuple(float(v) for v, kk in zip(full, kinds) if kk == "S"))
    hit = memo.get(mkey)
    if hit is None:  # the lane values of the sub-expressions: computed once per setting of the lanes
        per_lane = [[] for _ in subs]
        for _, vals in lanes:
            args = [vals[s.name] if v is None else (v if kk == "S" else None) for s, v, kk in zip(names, full, kinds)]
            for k, g_k in enumerate(subs):
                per_lane[k].append(g_k(*args))
        tabs, specials = [], []
        for vals in per_lane:
            v0 = np.asarray(vals[0])
            tabs.append(np.array([np.asarray(v, dtype=v0.dtype) for v in vals], dtype=v0.dtype))
            floats = all(type(e) is np.float64 or (isinstance(e, np.ndarray) and e.dtype == np.float64) for e in vals)
            specials.append([(v, fn) for v, fn in _FAST_POWERS if any(e == v for e in vals)] if floats else None)
        if len(memo) > 256:
            memo.clear()
        hit = memo[mkey] = (per_lane, tabs, specials)
    sig = env.lane_sig()
    tables = hit[3] if len(hit) > 3 else None
    table = tables.get(sig) if (tables is not None and sig is not None) else None
    if table is None:
        table = _LaneTable(lanes, env.lane_index(), hit[0], hit[1], hit[2], S)
        if sig is not None:  # the same runs of rows next time (a search's calls): the same table
            if tables is None:
                tables = {}
                memo[mkey] = hit = (*hit[:3], tables)
            if len(tables) > 64:
                tables.clear()
            tables[sig] = table
    return "plan", fn, table


def _per_lane(c, f, names, dmap, full=None):
    """A leaf that reads per-row scalars (``Env(rows=...)``), evaluated lane by lane: each lane's rows of
    the array arguments with the lane's numbers as scalars (the evaluation of a one-setting Env, row
    for row), the pieces put back in row order."""
    env = c.env
    S = c.shape[0]
    if full is None:
        full = []
        for s in names:
            if s in dmap:
                full.append(dmap[s](c))
            elif s.name in env.rows:
                full.append(None)
            else:
                full.append(c.value(s.name))
    lanes = env.lanes()
    if len(lanes) == 1:
        vals = lanes[0][1]
        return np.asarray(f(*[vals[s.name] if v is None else v for s, v in zip(names, full)]), dtype=np.float64)
    pieces = []
    for sel, vals in lanes:
        n = len(range(S)[sel]) if isinstance(sel, slice) else sel.size
        args = []
        for s, v in zip(names, full):
            if v is None:
                args.append(vals[s.name])
            elif np.ndim(v) and v.shape[0] == S and S != 1:
                args.append(v[sel])
            else:
                args.append(v)
        out = np.asarray(f(*args), dtype=np.float64)
        if out.ndim < 3:
            out = out.reshape((1,) * (3 - out.ndim) + out.shape)
        pieces.append((sel, n, out))
    tail = np.broadcast_shapes(*[o.shape[1:] for _, _, o in pieces])
    rowwise = [v for v in full if v is not None and np.ndim(v) == 1 + len(tail) and np.shape(v)[0] == S]
    res = _empty_as(rowwise[0] if rowwise else pieces[0][2], (S, *tail), np.float64)  # the inputs' memory order
    for sel, n, o in pieces:
        res[sel] = np.broadcast_to(o, (n, *tail))
    return res


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


def add_reduce(a, axis: int):
    """``numpy.add.reduce(a, axis=axis, keepdims=True)`` of a 3-D float64 array (``axis`` 1 or -1), with
    numpy's bits: for fewer than 8 terms numpy adds them in order from 0.0 (``((0.0 + a_0) + a_1) + ...``,
    whatever the memory layout; measured on random data with signed zeros, tests/test_expressions_reduce.py),
    which a few element-wise additions of slices reproduce 2-10x faster on arrays of a few thousand entries
    (numpy's reduction over a short axis of a 3-D array is slow: 240 us against 50 us for (2304, 3, 2) along
    axis 1). Small arrays (no faster), longer axes (numpy sums pairwise along a contiguous one) and other
    arrays go to numpy."""
    n = a.shape[axis] if a.ndim == 3 else 8
    if a.size < 1024 or n >= 8 or a.dtype != np.float64 or a.strides[0] < max(a.strides[1], a.strides[2]):
        return np.add.reduce(a, axis=axis, keepdims=True)
    if axis == 1:
        r = np.add(a[:, 0:1], 0.0)
        for i in range(1, n):
            r += a[:, i : i + 1]
    else:
        r = np.add(a[:, :, 0:1], 0.0)
        for i in range(1, n):
            r += a[:, :, i : i + 1]
    return r


def _bc(a, shape):
    """``a`` broadcast to ``shape`` (a read-only view; ``a`` itself when it has that shape already)."""
    a = np.asarray(a)
    return a if a.shape == shape else np.broadcast_to(a, shape)


def env_value(env, name):
    """The value of symbol ``name`` in ``env`` (an :class:`Env`, or the staged one): a scalar, a per-row
    scalar as (S, 1, 1), or a coordinate constant; None when ``env`` has none (both contexts' lookup)."""
    if name in env.scalars:
        return env.scalars[name]
    if name in env.rows:
        return env.rows[name].reshape(-1, 1, 1)
    return env.coords.get(name)


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
        v = env_value(self.env, name)
        if v is not None:
            return v
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
        if which == "batch" and env.dist.n == 1:  # the batch of one sample is the sample (Distribution.batch)
            which = "single"
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
    with np.errstate(all="ignore"):  # non-finite values are the callers' to judge
        return evaluate_quiet(expr, env)


def evaluate_quiet(expr, env: Env) -> np.ndarray:
    """:func:`evaluate` for callers that silence numpy's floating-point errors themselves (inside one
    ``numpy.errstate(all="ignore")`` for many evaluations): the same values."""
    coupling = env.dist.coupling if env.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    out = np.asarray(c.fn(_Ctx(env)), dtype=np.float64)
    if out.ndim == 3:
        if out.shape[1] != 1 or out.shape[2] != 1:
            raise ValueError("the expression is per-coordinate at the top level: wrap it in CoordSum")
        out = out[:, 0, 0]
    return np.array(_bc(out, (env.S,)), dtype=np.float64)


def evaluate_shaped(expr, env: Env, *, per_coordinate: bool, quiet: bool = False) -> np.ndarray:
    """``expr`` evaluated against ``env`` as an (S, d) array per coordinate (d of ``env.dist``), or else an
    (S,) array; how :func:`proofs_checks.engines.constants` derives the constants an assumption defines.
    ``quiet``: the caller silences numpy's floating-point errors itself (:func:`evaluate_quiet`)."""
    if not quiet:
        with np.errstate(all="ignore"):
            return evaluate_shaped(expr, env, per_coordinate=per_coordinate, quiet=True)
    coupling = env.dist.coupling if env.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    out = np.asarray(c.fn(_Ctx(env)), dtype=np.float64)
    if per_coordinate:
        return np.array(_bc(out.reshape(out.shape[0], -1), (env.S, env.dist.d)))
    return np.array(_bc(out.reshape(-1), (env.S,)))
