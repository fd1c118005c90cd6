"""Independent high-precision re-check of witnesses.

This module deliberately imports nothing from the toolkit (only the standard library, ``sympy`` and
``mpmath``): a witness is a plain JSON object, and this file can be copied out and run on its own to
confirm a reported violation::

    python -c "import json, sys; from proofs_checks.recheck import recheck; print(recheck(json.load(sys.stdin)))" \
        < witness.json

Every witness has a ``kind``; :data:`RECHECKERS` maps kinds to functions (extend it with
:func:`register`). Each returns ``{"violated", "assumptions_ok", "empirical", "bound", "ratio",
"checks", "dps"}``: ``violated`` is True only when every assumption re-derived from the raw data holds
and the claimed relation fails at ``dps`` digits. Witnesses of kind ``expression`` also get
``proved`` and ``proof``: the violation is *proved* when both sides, the assumptions and the
precondition, evaluated in rigorous ball arithmetic (python-flint's ``arb``, optional: the ``proofs``
extra; ``mpmath.iv`` interval arithmetic otherwise) from the witness's exact data, give enclosures that
separate (:func:`prove_expression`); otherwise ``proof`` says why not (overlapping enclosures, a sign
the enclosures cannot decide, ...).

Kinds shipped here:

``expression``
    A claim ``lhs <relation> rhs`` with both sides as sympy expressions (``sympy.srepr`` strings) in the
    vocabulary of :mod:`proofs_checks.expressions`: coordinate symbols (``x``, ``g``, ``sigma``, and any
    listed in ``coords``), ``CoordSum``, ``Expect`` (over the mean of ``n`` samples of the
    distribution, enumerated here, independently of the toolkit), ``Expect1`` and ``Sup1`` (one sample)
    ``MaxOver(e, t, lo, hi)`` (the maximum over t in [lo, hi] of e: a 4096-point grid refined by
    local maximization) and ``MinEig(M)`` (the smallest eigenvalue of a symmetric matrix).
    Fields: ``relation`` (``<=``, ``>=``, ``==``), ``lhs``, ``rhs``, ``scalars``
    (name -> number), ``coords`` (name -> list over coordinates), optional ``distribution``
    (``{"coupling": "independent"|"joint", "n": n, "values": ..., "weights": ...}``; independent:
    values[i][j] is the j-th support point of coordinate i; joint: values[j] is the j-th support
    point, a vector), ``assumptions`` (list of ``{"name", "lhs", "relation", "rhs", "per_coordinate"}``
    re-derived from the raw data), ``tolerance`` (relative, for ``==``; default 1e-9) and optional
    ``require`` (the claim's precondition on the candidate, a sympy condition in the same vocabulary:
    a witness outside it is refused, ``assumptions_ok`` False).

``sample-mean``
    A Monte Carlo violation: the per-replicate measurements ``values`` (or their count, mean and
    standard deviation), the ``bound``, the relation and ``level``/``tests`` (Bonferroni). The re-check
    recomputes the Student-t interval from the data and confirms that it lies wholly on the wrong side.

``rate-fit``
    A decay exponent fitted on log-log axes: ``x`` (e.g. N = T + 1), ``y`` (e.g. gaps), the claimed
    exponent ``theory`` and the ``margin``; the re-check refits (least squares, jackknife interval,
    two standard errors) and confirms that the whole interval lies below ``theory - margin``, and
    either the instance pins the exponent (``pinned``) or the interval also lies below the exponent
    of the ``reference`` data (another method of the same claimed class) minus the margin.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading

import mpmath
import sympy as sp

__all__ = ["recheck", "register", "RECHECKERS", "prove_expression", "ball_backend", "Undecided"]

_OPS = ("CoordSum", "Expect", "Expect1", "Sup1", "MaxOver", "MinEig")


def _op(e):
    if isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ in _OPS:
        return e.func.__name__
    return None


_PARSED: dict = {}  # source text -> sympy expression (immutable): a witness's expressions are parsed once


def _parse(text):
    if not isinstance(text, str):
        return sp.sympify(text)
    expr = _PARSED.get(text)
    if expr is None:
        if len(_PARSED) > 4096:
            _PARSED.clear()
        expr = _PARSED[text] = sp.sympify(text)
    return expr


def _mp(v):
    if isinstance(v, str):
        return mpmath.mpf(v)
    return mpmath.mpf(float(v)) if not isinstance(v, mpmath.mpf) else v


def _is_zero(w) -> bool:
    """Whether a weight is exactly 0 (mpmath number, arb ball or mpmath.iv interval)."""
    if hasattr(w, "a") and hasattr(w, "b"):  # mpmath.iv
        return bool(w.a == 0 and w.b == 0)
    return float(w) == 0.0 if not hasattr(w, "is_zero") else bool(w.is_zero())


class _Dist:
    """Exact outcomes of one sample and of the mean of n samples, enumerated here."""

    def __init__(self, spec, num=None):
        num = num or _mp
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
        if num is None or num is _mp:
            ws = [_mp(w) for w in raw]
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
            if any(c and _is_zero(weights[j]) for j, c in enumerate(counts)):
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


class _Symbols:
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


_PLANS: dict = {}  # expression -> (operator children with placeholders, symbols, mpmath function): pure, shared


class _Eval(_Symbols):
    def __init__(self, w):
        self.scalars = {k: _mp(v) for k, v in (w.get("scalars") or {}).items()}
        self.coords = {k: [_mp(v) for v in vals] for k, vals in (w.get("coords") or {}).items()}
        self.dist = _Dist(w["distribution"]) if w.get("distribution") else None
        self.d = self.dist.d if self.dist else (len(next(iter(self.coords.values()))) if self.coords else 1)
        self._plans = _PLANS

    def ev(self, e, ctx):
        op = _op(e)
        if op == "CoordSum":
            return mpmath.fsum(self.ev(e.args[0], {**ctx, "i": i}) for i in range(self.d))
        if op in ("Expect", "Expect1", "Sup1"):
            if self.dist is None:
                raise ValueError(f"{op} needs a distribution in the witness")
            n = self.dist.n if op == "Expect" else 1
            arg = e.args[0]
            has_sum = any(_op(a) == "CoordSum" for a in sp.preorder_traversal(arg))
            if has_sum or ("i" not in ctx or ctx["i"] is None) and self.d > 1:
                outcomes = [({**ctx, "xvec": v}, pr) for v, pr in self.dist.joint(n)]
            else:
                i = ctx.get("i") if ctx.get("i") is not None else 0
                outcomes = [({**ctx, "xval": v, "i": i}, pr) for v, pr in self.dist.marginal(i, n)]
            if op == "Sup1":
                return max(self.ev(arg, c) for c, pr in outcomes if pr > 0)
            return mpmath.fsum(pr * self.ev(arg, c) for c, pr in outcomes)
        if op == "MinEig":  # the smallest eigenvalue of a symmetric matrix (entries evaluated here)
            M = e.args[0]
            vals = [[self.ev(M[i, j], ctx) for j in range(M.cols)] for i in range(M.rows)]
            ev_ = mpmath.eigsy(mpmath.matrix(vals), eigvals_only=True)
            return min(ev_[i] for i in range(M.rows))
        if op == "MaxOver":
            body, var, lo, hi = e.args
            lo, hi = self.ev(lo, ctx), self.ev(hi, ctx)
            f = lambda t: self.ev(body, {**ctx, "bound": {**ctx.get("bound", {}), var.name: t}})  # noqa: E731
            grid = 4096
            point = lambda j: lo + (hi - lo) * j / grid  # noqa: E731
            keep = _maxover_screen(self, body, var, lo, hi, grid, ctx, point)
            if keep is not None:  # the grid points that may hold the grid's maximum, in order: the same
                vals = [f(point(k)) for k in keep]  # maximum, the same first index
                if any(mpmath.isnan(v) for v in vals):  # max() of a list with a NaN depends on its place
                    keep = None
                else:
                    best = max(vals)
                    j = keep[vals.index(best)]
            if keep is None:
                vals = [f(point(j)) for j in range(grid + 1)]
                best = max(vals)
                j = vals.index(best)
            a, b = point(max(0, j - 1)), point(min(grid, j + 1))
            for _ in range(80):  # golden-section refinement around the best grid point
                m1, m2 = a + (b - a) * 0.381966, a + (b - a) * 0.618034
                if f(m1) < f(m2):
                    a = m1
                else:
                    b = m2
            return max(best, f((a + b) / 2))
        if not e.args and not isinstance(e, sp.Symbol):
            return _mp(sp.Float(e, 70)) if e.is_number else self.value(str(e), ctx)
        if isinstance(e, sp.Symbol):
            return self.value(e.name, ctx)
        # general node: evaluate operator children, then the node with mpmath (the node's plan, which does
        # not depend on ctx, is built once: its operator children, their placeholders, the mpmath function)
        plan = self._plans.get(e)
        if plan is None:
            if len(self._plans) > 4096:
                self._plans.clear()
            subs, body = operator_placeholders(e, _op)
            syms = lambdify_args(body)
            with dummy_names_in_order(len(syms)):  # the product's order independent of the process's history
                fn = sp.lambdify(syms, body, modules="mpmath")
            plan = self._plans[e] = (list(subs.items()), syms, fn)
        ops, syms, fn = plan
        vals = {dmy: self.ev(node, ctx) for node, dmy in ops}
        args = [vals[s] if s in vals else self.value(s.name, ctx) for s in syms]
        out = fn(*args)
        if isinstance(out, mpmath.mpc):
            if abs(out.imag) > abs(out.real) * mpmath.mpf(10) ** (-mpmath.mp.dps // 2):
                raise ValueError(f"complex value {out} for {e}")
            out = out.real
        return mpmath.mpf(out) if not isinstance(out, bool) else mpmath.mpf(int(out))


_SCREEN_BITS = 128
_SCREEN_STEP = 64


def _maxover_screen(ev, body, var, lo, hi, grid, ctx, point, backend=None):
    """The indices j of the grid points ``point(j)`` (j = 0..grid) whose 60-digit value may be the grid's
    maximum, or None (no screen: operators in ``body``, an infinite end, ...).

    Rigorous enclosures of ``body`` (:func:`ball_backend`: arb, or mpmath.iv without python-flint; 128 bits;
    from the exact values the 60-digit evaluator holds) over single grid points and over ranges of consecutive
    ones (the hull of the range's two end points: the grid points are correctly rounded values of a monotone
    formula) give L, a lower bound on the largest value at a grid point; a point (or a whole range) whose
    enclosure lies below L - delta cannot hold the maximum, as long as the 60-digit evaluation is within
    delta / 2 of the exact value (delta = 1e-25 (1 + |L|), 35 digits of margin). Every other point is returned
    and evaluated at 60 digits as before, so the maximum and its first index are the ones the whole grid gives."""
    if not (mpmath.isfinite(lo) and mpmath.isfinite(hi)):
        return None
    num = ball_backend(backend, _SCREEN_BITS)
    if _ball_plan(body, num.name) is None or any(_op(a) for a in sp.preorder_traversal(body)):
        return None
    fctx = num.flint.ctx if num.name == "arb" else mpmath.iv
    old = fctx.prec
    try:
        fctx.prec = _SCREEN_BITS
        bev = BallEval({}, num)
        bev.scalars = {k: num.exact(v) for k, v in ev.scalars.items()}
        bev.coords = {k: [num.exact(v) for v in vals] for k, vals in ev.coords.items()}
        bev.d = ev.d
        bctx = {"i": ctx.get("i")}
        if "xval" in ctx:
            bctx["xval"] = num.exact(ctx["xval"])
        if "xvec" in ctx:
            bctx["xvec"] = [num.exact(v) for v in ctx["xvec"]]
        bound = {k: num.exact(v) for k, v in ctx.get("bound", {}).items()}
        exact_pt = {}

        def pt(j):
            got = exact_pt.get(j)
            if got is None:
                got = exact_pt[j] = num.exact(point(j))
            return got

        def enclose(t):  # None: no finite enclosure
            try:
                v = bev.ev(body, {**bctx, "bound": {**bound, var.name: t}})
            except (Undecided, ValueError, ZeroDivisionError, TypeError, OverflowError):
                return None
            return v if num.finite(v) else None

        enc = {}
        low = None

        def at(j):
            nonlocal low
            v = enc[j] = enclose(pt(j))
            if v is not None and (low is None or num.gt(num.lower(v), low)):
                low = num.lower(v)

        for j in range(0, grid + 1, _SCREEN_STEP):
            at(j)
        if grid % _SCREEN_STEP:
            at(grid)
        if low is None:
            return None

        def below(v):  # certainly below L - delta
            return v is not None and num.gt(low - (abs(low) + 1) * num.exact("1e-25"), num.upper(v))

        seeds = sorted(enc)
        ranges = [(a + 1, b - 1) for a, b in zip(seeds, seeds[1:]) if b - a > 1]
        while ranges:
            a, b = ranges.pop()
            if a == b:
                at(a)
                continue
            if below(enclose(num.hull(pt(a), pt(b)))):
                continue
            m = (a + b) // 2
            ranges += [(m + 1, b), (a, m)]
        return [j for j in sorted(enc) if not below(enc[j])]
    finally:
        fctx.prec = old


def _holds(lhs, rel, rhs, tol):
    scale = abs(lhs) + abs(rhs) + mpmath.mpf(10) ** (-mpmath.mp.dps + 10)
    if rel == "<=":
        return lhs <= rhs + tol * scale
    if rel == ">=":
        return lhs >= rhs - tol * scale
    if rel == "==":
        return abs(lhs - rhs) <= tol * scale
    raise ValueError(f"relation must be <=, >= or ==, got {rel!r}")


DPS = 60
"""The working precision (decimal digits) of a re-check that evaluates a claim's sides anew from a witness's
raw numbers (``expression`` here; a pack's own kinds, e.g. the spectral pack's matrix identities, use the
same constant). The statistical kinds (``sample-mean``, ``rate-fit``) refit from the data at 30 digits."""


def recheck_expression(w: dict, dps: int = DPS) -> dict:
    with mpmath.workdps(dps):
        ev = _Eval(w)
        tol = _mp(w.get("tolerance", 1e-9))
        checks, ok = [], True
        for a in w.get("assumptions", []):
            lhs_e, rhs_e = _parse(a["lhs"]), _parse(a["rhs"])
            idx = range(ev.d) if a.get("per_coordinate") else [None]
            for i in idx:
                ctx = {"i": i}
                lv, rv = ev.ev(lhs_e, ctx), ev.ev(rhs_e, ctx)
                good = bool(_holds(lv, a["relation"], rv, tol))
                checks.append(
                    {"assumption": a["name"], "coordinate": i, "lhs": float(lv), "rhs": float(rv), "holds": good}
                )
                ok = ok and good
        if w.get("require"):  # the claim's precondition on the candidate, written into the witness
            inside = ev.ev(_parse(w["require"]), {"i": None}) != 0
            checks.append({"precondition": "require", "expression": str(_parse(w["require"])), "holds": bool(inside)})
            ok = ok and bool(inside)
        lhs = ev.ev(_parse(w["lhs"]), {"i": None})
        rhs = ev.ev(_parse(w["rhs"]), {"i": None})
        rel = w["relation"]
        fails = not _holds(lhs, rel, rhs, mpmath.mpf(10) ** (-(dps - 20)) if rel != "==" else tol)
        if rel == "<=":
            ratio = float(lhs / rhs) if rhs > 0 else None
        elif rel == ">=":
            ratio = float(rhs / lhs) if lhs > 0 else None
        else:
            ratio = None
        out = {
            "violated": bool(ok and fails),
            "assumptions_ok": bool(ok),
            "empirical": float(lhs),
            "bound": float(rhs),
            "ratio": ratio,
            "checks": checks,
            "dps": dps,
        }
    if out["violated"]:  # grade the violation: rigorous enclosures that separate, or why not
        pr = prove_expression(w)
        out["proved"], out["proof"] = bool(pr["proved"]), pr["proof"]
        if "enclosures" in pr:
            out["enclosures"] = pr["enclosures"]
    else:
        out["proved"], out["proof"] = False, "not violated at high precision: nothing to prove"
    return out


_T_QUANTILES: dict = {}  # (prob, df, working precision) -> quantile: a pure function of its arguments


def _t_quantile(prob, df):
    """Quantile of Student's t with ``df`` degrees of freedom (bisection on the regularized incomplete beta);
    remembered per (prob, df, precision) in this process (a report re-checks many samples of one size)."""
    key = (prob, df, mpmath.mp.prec)
    got = _T_QUANTILES.get(key)
    if got is None:
        if len(_T_QUANTILES) > 1024:
            _T_QUANTILES.clear()
        got = _T_QUANTILES[key] = _t_quantile_raw(prob, df)
    return got


def _t_quantile_raw(prob, df):
    if df > 1e6:
        return mpmath.sqrt(2) * mpmath.erfinv(2 * prob - 1)

    def cdf(t):
        xx = df / (df + t * t)
        tail = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, xx, regularized=True) / 2
        return 1 - tail if t > 0 else tail

    lo, hi = mpmath.mpf(-1e6), mpmath.mpf(1e6)
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(mid) < prob:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def recheck_sample_mean(w: dict, dps: int = 30) -> dict:
    with mpmath.workdps(dps):
        if "values" in w:
            vals = [_mp(v) for v in w["values"]]
            n = len(vals)
            mean = mpmath.fsum(vals) / n
            sd = mpmath.sqrt(mpmath.fsum((v - mean) ** 2 for v in vals) / (n - 1))
        else:
            n, mean, sd = int(w["n"]), _mp(w["mean"]), _mp(w["std"])
        level = _mp(w.get("level", 0.95))
        tests = int(w.get("tests", 1))
        q = _t_quantile(1 - (1 - level) / (2 * tests), n - 1)
        half = q * sd / mpmath.sqrt(n)
        lo, hi = mean - half, mean + half
        bound = _mp(w["bound"])
        rel = w.get("relation", "<=")
        violated = lo > bound if rel == "<=" else hi < bound
        return {
            "violated": bool(violated),
            "assumptions_ok": True,
            "empirical": float(mean),
            "bound": float(bound),
            "ratio": float(mean / bound) if bound > 0 and rel == "<=" else None,
            "checks": [{"interval": [float(lo), float(hi)], "n": n, "tests": tests}],
            "dps": dps,
        }


def recheck_rate_fit(w: dict, dps: int = 30) -> dict:
    with mpmath.workdps(dps):
        xs = [mpmath.log(_mp(v)) for v in w["x"]]
        ys = [mpmath.log(max(_mp(v), mpmath.mpf(10) ** -300)) for v in w["y"]]

        def slope(xx, yy):
            mx, my = mpmath.fsum(xx) / len(xx), mpmath.fsum(yy) / len(yy)
            num = mpmath.fsum((a - mx) * (b - my) for a, b in zip(xx, yy))
            den = mpmath.fsum((a - mx) ** 2 for a in xx)
            return num / den

        e = -slope(xs, ys)
        n = len(xs)
        loo = [-slope(xs[:i] + xs[i + 1 :], ys[:i] + ys[i + 1 :]) for i in range(n)]
        m = mpmath.fsum(loo) / n
        se = mpmath.sqrt((n - 1) * mpmath.fsum((v - m) ** 2 for v in loo) / n)
        hi = e + 2 * se
        theory, margin = _mp(w["theory"]), _mp(w.get("margin", 0.05))
        below = hi < theory - margin
        ref = w.get("reference")
        if w.get("pinned", True) or ref is None:
            violated = below and bool(w.get("pinned", True))
            ref_e = None
        else:
            rx = [mpmath.log(_mp(v)) for v in ref["x"]]
            ry = [mpmath.log(max(_mp(v), mpmath.mpf(10) ** -300)) for v in ref["y"]]
            ref_e = -slope(rx, ry)
            violated = below and hi < ref_e - margin
        return {
            "violated": bool(violated),
            "assumptions_ok": True,
            "empirical": float(e),
            "bound": float(theory),
            "ratio": float(theory / e) if e > 0 else None,
            "checks": [
                {
                    "exponent": float(e),
                    "interval": [float(e - 2 * se), float(hi)],
                    "margin": float(margin),
                    "pinned": bool(w.get("pinned", True)),
                    "reference_exponent": None if ref_e is None else float(ref_e),
                }
            ],
            "dps": dps,
        }


RECHECKERS = {"expression": recheck_expression, "sample-mean": recheck_sample_mean, "rate-fit": recheck_rate_fit}


def register(kind: str, fn) -> None:
    """Register ``fn(witness, dps) -> dict`` (the keys of :func:`recheck`) for witnesses of ``kind``."""
    if not callable(fn):
        raise TypeError("the re-check must be callable")
    RECHECKERS[kind] = fn


def recheck(witness: dict, dps: int | None = None) -> dict:
    """Re-check ``witness`` with the function registered for its ``kind``."""
    if not isinstance(witness, dict) or "kind" not in witness:
        raise ValueError("a witness is a JSON object with a 'kind' field")
    kind = witness["kind"]
    if kind not in RECHECKERS:
        raise ValueError(f"no re-check registered for witness kind {kind!r} (known: {sorted(RECHECKERS)})")
    fn = RECHECKERS[kind]
    return fn(witness) if dps is None else fn(witness, dps)


# ---------------------------------------------------------------------------------------------------
# rigorous enclosures: ball arithmetic (python-flint's arb) or interval arithmetic (mpmath.iv)


class Undecided(Exception):
    """Ball arithmetic cannot decide a step (a sign or a branch whose enclosure straddles 0, ...)."""


class _ArbNum:
    """The number layer of the rigorous re-check on python-flint's ``arb`` (midpoint-radius balls with
    rigorous error bounds; https://flintlib.org/doc/arb.html)."""

    name = "arb"

    def __init__(self, bits):
        import flint

        self.flint = flint
        self.arb = flint.arb
        self.bits = bits

    def exact(self, v):
        """The exact value of a float / int / decimal string / sympy number, as a ball (exact where the
        value is a binary float or an integer; a tight ball around a decimal string or a rational)."""
        arb = self.arb
        if type(v) is float:  # the common case first (box ends, grid points): the same ball as below
            if v - v != 0.0:
                raise Undecided(f"non-finite input {v}")
            return arb(v)
        if isinstance(v, bool):
            return arb(int(v))
        if isinstance(v, int):
            return arb(v)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise Undecided(f"non-finite input {v}")
            return arb(v)
        if isinstance(v, str):
            return arb(v)
        if isinstance(v, sp.Integer):
            return arb(int(v))
        if isinstance(v, sp.Rational):
            return arb(int(v.p)) / arb(int(v.q))
        if isinstance(v, sp.Float):
            sign, man, exp, _ = v._mpf_
            return (-1 if sign else 1) * arb(int(man)) * arb(2) ** int(exp)
        if isinstance(v, mpmath.mpf):
            sign, man, exp, _ = v._mpf_
            return (-1 if sign else 1) * arb(int(man)) * arb(2) ** int(exp)
        if v is sp.pi:
            return arb.pi()
        if v is sp.E:
            return arb(1).exp()
        if isinstance(v, self.arb):
            return v
        raise Undecided(f"no exact value for {v!r}")

    def lower(self, x):
        return x.lower()

    def upper(self, x):
        return x.upper()

    def finite(self, x):
        return x.is_finite()

    def gt(self, a, b):  # certainly a > b
        return bool(a > b)

    def ge(self, a, b):
        return bool(a >= b)

    def overlaps(self, a, b):
        return bool(a.overlaps(b))

    def union(self, a, b):
        return a.union(b)

    def hull(self, lo, hi):
        return lo.union(hi)

    def fn(self, name, x):
        return getattr(x, name)()

    def bounds(self, x):
        return float(x.lower()), float(x.upper())


class _IvNum(_ArbNum):
    """The same layer on ``mpmath.iv`` (interval arithmetic with outward rounding): the fallback when
    python-flint is not installed."""

    name = "mpmath.iv"

    def __init__(self, bits):
        self.iv = mpmath.iv
        self.bits = bits

    def exact(self, v):
        iv = self.iv
        if isinstance(v, bool):
            return iv.mpf(int(v))
        if isinstance(v, (int, float)):
            if isinstance(v, float) and not math.isfinite(v):
                raise Undecided(f"non-finite input {v}")
            return iv.mpf(v)
        if isinstance(v, str):
            return iv.mpf(v)
        if isinstance(v, sp.Integer):
            return iv.mpf(int(v))
        if isinstance(v, sp.Rational):
            return iv.mpf(int(v.p)) / iv.mpf(int(v.q))
        if isinstance(v, (sp.Float, mpmath.mpf)):
            return iv.mpf(mpmath.mpf(v._mpf_))
        if v is sp.pi:
            return iv.pi
        if v is sp.E:
            return iv.e
        if isinstance(v, type(iv.mpf(0))):
            return v
        raise Undecided(f"no exact value for {v!r}")

    def lower(self, x):
        return self.iv.mpf(x.a)

    def upper(self, x):
        return self.iv.mpf(x.b)

    def finite(self, x):
        return bool(mpmath.isfinite(x.a) and mpmath.isfinite(x.b))

    def gt(self, a, b):
        return bool(a.a > b.b)

    def ge(self, a, b):
        return bool(a.a >= b.b)

    def overlaps(self, a, b):
        return not (a.a > b.b or b.a > a.b)

    def union(self, a, b):
        return self.iv.mpf([min(a.a, b.a), max(a.b, b.b)])

    def hull(self, lo, hi):
        return self.union(lo, hi)

    def fn(self, name, x):
        f = {"sqrt": self.iv.sqrt, "exp": self.iv.exp, "log": self.iv.log, "sin": self.iv.sin, "cos": self.iv.cos}[name]
        return f(x)

    def bounds(self, x):
        return float(x.a), float(x.b)


def ball_backend(prefer: str | None = None, bits: int = 256):
    """The rigorous number layer: python-flint's arb when installed (``prefer="arb"``), else mpmath.iv."""
    if prefer in (None, "arb"):
        try:
            import flint  # noqa: F401

            return _ArbNum(bits)
        except ImportError:
            if prefer == "arb":
                raise
    return _IvNum(bits)


_BALL_PLANS: dict = {}  # (expression, backend name) -> generated function or None: pure, shared
BALL_INLINE = (sp.Add, sp.Mul, sp.Pow, sp.Abs, sp.sign, sp.Max, sp.Min, sp.exp, sp.log, sp.sin, sp.cos)
_MISSING = object()


def _ball_log(n, v):
    if not n.gt(v, n.exact(0)):
        raise Undecided("log of an enclosure that reaches 0")
    return n.fn("log", v)


def _ball_plan(e, backend):
    """A generated function ``(evaluator, ctx, constants) -> (ball,)`` for ``e`` when its root is arithmetic,
    a power, |.|, sign, max/min or an elementary function (else None): :func:`generate_ball_code` with the
    conventions of :meth:`BallEval._walk` (sums and products folded from 0 and 1, symbols looked up by
    ``value``), so the same balls. ``constants``: the numbers' balls (``plan.consts``), made per evaluator
    and precision."""
    key = (e, backend)
    plan = _BALL_PLANS.get(key, _MISSING)
    if plan is not _MISSING:
        return plan
    if _op(e) or not isinstance(e, BALL_INLINE):
        plan = None
    else:
        plan = generate_ball_code((e,), backend)
    if len(_BALL_PLANS) > 4096:
        _BALL_PLANS.clear()
    _BALL_PLANS[key] = plan
    return plan


def generate_ball_code(roots: tuple, backend: str, *, fold: bool = True, lookup: str = "value", inline=BALL_INLINE):
    """One straight-line Python function ``plan(ev, ctx, C) -> (ball of each root, ...)`` over the ball
    operations of :class:`BallEval` ``ev`` (the re-check's evaluator and :mod:`proofs_checks.bnb`'s box
    objective both use it). Post-order, children left to right; each distinct subexpression is enclosed once
    per call (ball arithmetic is deterministic at a fixed precision: the same ball at every occurrence).
    Inline: symbols, numbers (``C[k]``: the ball of ``plan.consts[k]``, a sympy number, made by the caller at
    its precision), +, *, integer powers, the 1/2-power (sqrt where the base is certainly > 0, else
    ``ev._pow``), other powers (``ev._pow``), |.|, sign, max/min and the node types in ``inline`` among
    exp/log/sin/cos; every other node (operators, Piecewise, conditions, ...) is delegated to ``ev.ev(node,
    ctx)`` (whose own plan or walk gives its ball, raising Undecided where it must).

    Two conventions, so that each caller gets the balls of its reference evaluation:

    * ``fold``: a sum (product) starts from an exact 0 (1), as :meth:`BallEval._sum` and the walk's products
      do (``1 * b`` may widen a ball's radius by a rounding of the radius); False: from its first term, as
      bnb's enclosures always have;
    * ``lookup``: ``"value"``, a symbol is ``ev.value(name, ctx)`` (the witness's lookup: x, a bound variable,
      a coordinate, a scalar); ``"bound"``, a box variable ``ctx["bound"][name]``, else the scalar
      ``ev.scalars[name]`` (bnb: no x, no coordinates)."""
    lines, regs, consts, const_at, nodes = [], {}, [], {}, []
    arb = backend == "arb"

    def const(c):
        if c not in const_at:
            const_at[c] = len(consts)
            consts.append(c)
        return f"C[{const_at[c]}]"

    def emit(e):  # -> the register holding e's ball (post-order: children first, left to right)
        if e in regs:
            return regs[e]
        if _op(e):
            code = f"walk(N[{len(nodes)}], ctx)"
            nodes.append(e)
        elif isinstance(e, sp.Symbol):
            name = repr(e.name)
            code = f"value({name}, ctx)" if lookup == "value" else f"B[{name}] if {name} in B else S[{name}]"
        elif e.is_Number or e is sp.pi or e is sp.E:
            regs[e] = const(e)
            return regs[e]
        elif isinstance(e, (sp.Add, sp.Mul)):
            kids = [emit(a) for a in e.args]
            unit = sp.Integer(0 if isinstance(e, sp.Add) else 1)
            code = (" + " if isinstance(e, sp.Add) else " * ").join(([const(unit)] if fold else []) + kids)
        elif isinstance(e, sp.Pow):
            b, ex = e.args
            kb = emit(b)
            if ex.is_Integer:
                code = f"{kb} ** {int(ex)}"
            elif ex == sp.Rational(1, 2):  # = BallEval._walk's branch: sqrt only where certainly > 0
                root = f"{kb}.sqrt()" if arb else f"n.fn('sqrt', {kb})"
                code = f"{root} if gt({kb}, ZERO) else pw({kb}, {const(ex)})"
            else:
                code = f"pw({kb}, {emit(ex)})"
        elif isinstance(e, sp.Abs):
            code = f"abs({emit(e.args[0])})" + (".nonnegative_part()" if arb else "")
        elif isinstance(e, sp.sign):
            code = f"ev._sign({emit(e.args[0])})"
        elif isinstance(e, sp.Max):
            code = f"ev._max([{', '.join(emit(a) for a in e.args)}])"
        elif isinstance(e, sp.Min):
            code = f"-ev._max([{', '.join('-' + emit(a) for a in e.args)}])"
        elif isinstance(e, sp.log) and sp.log in inline:
            code = f"log(n, {emit(e.args[0])})"
        elif isinstance(e, (sp.exp, sp.sin, sp.cos)) and type(e) in inline:
            k = emit(e.args[0])
            code = f"{k}.{type(e).__name__}()" if arb else f"n.fn({type(e).__name__!r}, {k})"
        else:  # Piecewise, conditions, anything else: delegated (which raises Undecided where it must)
            code = f"walk(N[{len(nodes)}], ctx)"
            nodes.append(e)
        r = regs[e] = f"r{len(lines)}"
        lines.append(f"    {r} = {code}")
        return r

    outs = [emit(e) for e in roots]
    src = "def plan(ev, ctx, C):\n    n = ev.num\n    gt = n.gt\n    pw = ev._pow\n    ZERO = ev._zero\n"
    src += "    value = ev.value\n" if lookup == "value" else "    B = ctx['bound']\n    S = ev.scalars\n"
    src += "    walk = ev.ev\n" + "\n".join(lines) + f"\n    return ({', '.join(outs)},)\n"
    ns = {"N": nodes, "log": _ball_log}
    exec(compile(src, "<ball plan>", "exec"), ns)  # noqa: S102 (code generated above from the node types)
    plan = ns["plan"]
    plan.consts = consts
    plan.source = src
    return plan


class BallEval(_Symbols):
    """The expression vocabulary of :class:`_Eval` evaluated to rigorous enclosures."""

    def __init__(self, w, num, overrides=None):
        self.num = num
        self.scalars = {k: num.exact(v) for k, v in (w.get("scalars") or {}).items()}
        self.coords = {k: [num.exact(v) for v in vals] for k, vals in (w.get("coords") or {}).items()}
        for k, v in (overrides or {}).items():
            (self.coords if isinstance(v, list) else self.scalars)[k] = v
        self.dist = _Dist(w["distribution"], num.exact) if w.get("distribution") else None
        self.d = self.dist.d if self.dist else (len(next(iter(self.coords.values()))) if self.coords else 1)
        self.maxover_boxes = int(w.get("maxover_boxes", 4096))
        self._consts = {}  # (plan, precision) -> the plan's constants as balls
        self._zero = num.exact(0)  # exact at any precision

    def _sum(self, xs):
        xs = list(xs)
        tot = self.num.exact(0)
        for v in xs:
            tot = tot + v
        return tot

    def _max(self, xs):
        xs = list(xs)
        best = xs[0]
        for v in xs[1:]:
            best = self._max2(best, v)
        n = self.num
        if n.name == "arb" and any(n.ge(v, self._zero) for v in xs):
            best = best.nonnegative_part()  # a maximum with a term >= 0 is >= 0 (the hull's rounding aside)
        return best

    def _max2(self, a, b):
        n = self.num
        if n.ge(a, b):
            return a
        if n.ge(b, a):
            return b
        lo = a if n.ge(n.lower(a), n.lower(b)) else b
        hi = a if n.ge(n.upper(a), n.upper(b)) else b
        return n.hull(n.lower(lo), n.upper(hi))

    def _min2(self, a, b):
        return -self._max2(-a, -b)

    def _pow(self, b, e):
        n = self.num
        if isinstance(e, int):
            return b**e
        if n.gt(b, self._zero):
            return b**e
        try:  # an exact integer exponent: the power of any real base
            ef = float(n.lower(e))
            if ef == float(n.upper(e)) and ef.is_integer() and abs(ef) < 2**31:
                return b ** int(ef)
        except (OverflowError, ValueError):
            pass
        if n.ge(b, n.exact(0)) and n.gt(e, n.exact(0)):  # base touching 0, positive exponent: monotone
            top = n.upper(b)
            hi_v = top**e if n.gt(top, n.exact(0)) else n.exact(0)
            return n.hull(n.exact(0), n.upper(hi_v))
        raise Undecided("a power of a base that may be negative (or 0 with a negative exponent)")

    def _sign(self, v):
        n = self.num
        zero = n.exact(0)
        if n.gt(v, zero):
            return n.exact(1)
        if n.gt(zero, v):
            return n.exact(-1)
        if n.ge(v, zero) and n.ge(zero, v):
            return zero
        return n.hull(n.exact(-1), n.exact(1))

    def _truth(self, e, ctx):
        """True/False for a relational or boolean, rigorously; Undecided when the enclosures overlap."""
        if e is sp.true or e is True:
            return True
        if e is sp.false or e is False:
            return False
        if isinstance(e, sp.And):
            return all(self._truth(a, ctx) for a in e.args)
        if isinstance(e, sp.Or):
            return any(self._truth(a, ctx) for a in e.args)
        if isinstance(e, sp.Not):
            return not self._truth(e.args[0], ctx)
        if isinstance(e, sp.core.relational.Relational):
            a, b = self.ev(e.lhs, ctx), self.ev(e.rhs, ctx)
            n = self.num
            op = e.rel_op
            if op in (">", ">="):
                a, b, op = b, a, "<" if op == ">" else "<="
            if op == "<":
                if n.gt(b, a):
                    return True
                if n.ge(a, b):
                    return False
            elif op == "<=":
                if n.ge(b, a):
                    return True
                if n.gt(a, b):
                    return False
            elif op == "==":
                if not n.overlaps(a, b):
                    return False
                if n.ge(a, b) and n.ge(b, a):
                    return True
            elif op == "!=":
                if not n.overlaps(a, b):
                    return True
            raise Undecided(f"the condition {e} cannot be decided from the enclosures")
        raise Undecided(f"unsupported condition {e!r}")

    def ev(self, e, ctx):
        """The enclosure of ``e``: arithmetic, powers, |.|, sign, max/min and elementary functions run as one
        generated straight-line function per expression (:func:`_ball_plan`: each distinct subexpression
        enclosed once per call, the same operations in the same order as :meth:`_walk`, so the same balls);
        the other nodes (operators, Piecewise, conditions) are walked."""
        plan = _ball_plan(e, self.num.name)
        if plan is None:
            return self._walk(e, ctx)
        key = (plan, self._prec())
        consts = self._consts.get(key)
        if consts is None:
            consts = self._consts[key] = [self.num.exact(c) for c in plan.consts]
        return plan(self, ctx, consts)[0]

    def _prec(self):
        return self.num.flint.ctx.prec if self.num.name == "arb" else mpmath.iv.prec

    def _walk(self, e, ctx):
        n = self.num
        op = _op(e)
        if op == "CoordSum":
            return self._sum(self.ev(e.args[0], {**ctx, "i": i}) for i in range(self.d))
        if op in ("Expect", "Expect1", "Sup1"):
            if self.dist is None:
                raise ValueError(f"{op} needs a distribution in the witness")
            nn = self.dist.n if op == "Expect" else 1
            arg = e.args[0]
            has_sum = any(_op(a) == "CoordSum" for a in sp.preorder_traversal(arg))
            if has_sum or ("i" not in ctx or ctx["i"] is None) and self.d > 1:
                outcomes = [({**ctx, "xvec": v}, pr) for v, pr in self.dist.joint(nn)]
            else:
                i = ctx.get("i") if ctx.get("i") is not None else 0
                outcomes = [({**ctx, "xval": v, "i": i}, pr) for v, pr in self.dist.marginal(i, nn)]
            if op == "Sup1":
                return self._max(self.ev(arg, c) for c, _ in outcomes)
            return self._sum(pr * self.ev(arg, c) for c, pr in outcomes)
        if op == "MinEig":
            M = e.args[0]
            if M.rows != M.cols:
                raise ValueError("MinEig needs a square matrix")
            vals = [[self.ev(M[i, j], ctx) for j in range(M.cols)] for i in range(M.rows)]
            if M.rows == 1:
                return vals[0][0]
            if M.rows == 2:  # (a + d)/2 - sqrt(((a - d)/2)^2 + b^2), b the symmetric off-diagonal entry
                a, b, d = vals[0][0], (vals[0][1] + vals[1][0]) / 2, vals[1][1]
                disc = ((a - d) / 2) ** 2 + b**2
                return (a + d) / 2 - self._pow(disc, n.exact(sp.Rational(1, 2)))
            raise Undecided("MinEig of a matrix larger than 2x2 has no rigorous enclosure here")
        if op == "MaxOver":
            return self._maxover(e, ctx)
        if isinstance(e, sp.Symbol):
            return self.value(e.name, ctx)
        if e.is_Number or e is sp.pi or e is sp.E:  # (singletons: identity, without sympify per node)
            return n.exact(e)
        if isinstance(e, sp.Add):
            return self._sum(self.ev(a, ctx) for a in e.args)
        if isinstance(e, sp.Mul):
            out = n.exact(1)
            for a in e.args:
                out = out * self.ev(a, ctx)
            return out
        if isinstance(e, sp.Pow):
            b, ex = e.args
            if ex.is_Integer:
                return self.ev(b, ctx) ** int(ex)
            if ex == sp.Rational(1, 2):
                bb = self.ev(b, ctx)
                if n.ge(bb, n.exact(0)):
                    return self._pow(bb, n.exact(ex)) if not n.gt(bb, n.exact(0)) else n.fn("sqrt", bb)
            return self._pow(self.ev(b, ctx), self.ev(ex, ctx))
        if isinstance(e, sp.Abs):
            v = abs(self.ev(e.args[0], ctx))
            return v.nonnegative_part() if n.name == "arb" else v  # a ball touching 0 stays >= 0
        if isinstance(e, sp.sign):
            return self._sign(self.ev(e.args[0], ctx))
        if isinstance(e, sp.Max):
            return self._max(self.ev(a, ctx) for a in e.args)
        if isinstance(e, sp.Min):
            return -self._max(-self.ev(a, ctx) for a in e.args)
        if isinstance(e, (sp.exp, sp.log, sp.sin, sp.cos)):
            v = self.ev(e.args[0], ctx)
            if isinstance(e, sp.log) and not n.gt(v, n.exact(0)):
                raise Undecided("log of an enclosure that reaches 0")
            return n.fn(type(e).__name__, v)
        if isinstance(e, sp.Piecewise):  # branches whose condition the enclosures cannot decide: their hull
            possible = []
            for val, cond in e.args:
                try:
                    truth = self._truth(cond, ctx)
                except Undecided:
                    possible.append(self.ev(val, ctx))
                    continue
                if truth:
                    possible.append(self.ev(val, ctx))
                    break
            if not possible:
                raise Undecided(f"no branch of {e} holds")
            out = possible[0]
            for v in possible[1:]:
                out = self.num.union(out, v)
            return out
        if isinstance(e, (sp.core.relational.Relational, sp.And, sp.Or, sp.Not)) or e in (sp.true, sp.false):
            return n.exact(1 if self._truth(e, ctx) else 0)
        raise Undecided(f"no rigorous evaluation of {type(e).__name__}")

    def _maxover(self, e, ctx):
        """An enclosure of max_{t in [lo, hi]} body: from below, the best of a grid of exact points; from
        above, interval evaluation on sub-intervals, bisected where they could still hold the maximum."""
        n = self.num
        body, var, lo_e, hi_e = e.args
        lo, hi = self.ev(lo_e, ctx), self.ev(hi_e, ctx)
        a_in, b_in = n.upper(lo), n.lower(hi)  # surely inside
        a_out, b_out = n.lower(lo), n.upper(hi)  # surely covering

        def at(t):
            return self.ev(body, {**ctx, "bound": {**ctx.get("bound", {}), var.name: t}})

        grid = 64
        best = None
        if n.ge(b_in, a_in):
            for j in range(grid + 1):
                t = a_in + (b_in - a_in) * j / grid
                t = n.exact(float(n.lower(t))) if n.name == "arb" else t
                if n.ge(t, a_in) and n.ge(b_in, t):
                    v = n.lower(at(t))
                    best = v if best is None or n.gt(v, best) else best
        if best is None:
            raise Undecided("MaxOver: empty range")
        boxes = [(a_out + (b_out - a_out) * j / grid, a_out + (b_out - a_out) * (j + 1) / grid) for j in range(grid)]
        boxes = [(n.lower(u), n.upper(v)) for u, v in boxes]
        top = None
        evals = 0
        while boxes:
            u, v = boxes.pop()
            val = n.upper(at(n.hull(u, v)))
            evals += 1
            if not n.finite(val):
                raise Undecided("MaxOver: an enclosure is not finite")
            if not n.gt(val, best) or evals > self.maxover_boxes:
                top = val if top is None or n.gt(val, top) else top
                continue
            if n.gt(val, best + (abs(best) + 1) * n.exact(2.0**-40)):
                m = n.lower((u + v) / 2)
                boxes += [(u, m), (m, v)]
            else:
                top = val if top is None or n.gt(val, top) else top
        return n.hull(best, top)


def _ball_assumptions(w, num):
    """The constants as rigorous enclosures: a constant an assumption defines (``==``) takes the
    enclosure of its defining value; a bounded one (``>=``/``<=``) keeps its stated value when that is
    certainly admissible, and takes the defining value itself (admissible with equality) when the
    enclosures cannot tell. Returns ``(overrides, notes)``; raises Undecided for a stated constant
    certainly outside its assumption."""
    ev = BallEval(w, num)
    overrides, notes = {}, []
    for a in w.get("assumptions", []):
        name = sp.sympify(_parse(a["lhs"])).name if isinstance(_parse(a["lhs"]), sp.Symbol) else None
        rhs_e = _parse(a["rhs"])
        idx = list(range(ev.d)) if a.get("per_coordinate") else [None]
        vals = []
        for i in idx:
            val = ev.ev(rhs_e, {"i": i})
            stated = ev.value(name, {"i": i}) if name is not None else None
            rel = a["relation"]
            if rel == "==" or stated is None:
                vals.append(val)
                continue
            ok = num.ge(stated, val) if rel == ">=" else num.ge(val, stated)
            bad = num.gt(val, stated) if rel == ">=" else num.gt(stated, val)
            if bad:
                raise Undecided(f"the stated {name} breaks {a['name']!r}")
            vals.append(stated if ok else val)
        if name is None:
            continue
        v = vals if a.get("per_coordinate") else vals[0]
        overrides[name] = v
        if a.get("per_coordinate"):
            ev.coords[name] = v
        else:
            ev.scalars[name] = v
        notes.append(a["name"])
    return overrides, notes


def prove_expression(w: dict, *, backend: str | None = None, bits: int = 256) -> dict:
    """Try to prove an ``expression`` witness's violation rigorously: both sides (and the witness's
    assumptions and ``require`` precondition) evaluated in ball arithmetic from its exact data (binary
    floats are exact; decimal strings get a tight ball). Returns ``{"proved", "proof", "enclosures",
    "backend"}``: ``proved`` only when every assumption and the precondition hold certainly and the
    enclosures of the two sides separate in the violating direction; ``proof`` says why (or why not)."""
    try:
        num = ball_backend(backend, bits)
    except ImportError as exc:  # pragma: no cover
        return {"proved": False, "proof": f"no ball arithmetic available ({exc})", "backend": None}
    ctx = num.flint.ctx if num.name == "arb" else None
    old = ctx.prec if ctx is not None else mpmath.iv.prec
    try:
        if ctx is not None:
            ctx.prec = bits
        else:
            mpmath.iv.prec = bits
        try:
            overrides, _ = _ball_assumptions(w, num)
            ev = BallEval(w, num, overrides)
            if w.get("require"):
                if not ev._truth(_parse(w["require"]), {"i": None}):
                    return {
                        "proved": False,
                        "proof": "the witness is outside the claim's require= precondition",
                        "backend": num.name,
                    }
            lhs = ev.ev(_parse(w["lhs"]), {"i": None})
            rhs = ev.ev(_parse(w["rhs"]), {"i": None})
        except Undecided as exc:
            return {"proved": False, "proof": f"ball arithmetic cannot decide: {exc}", "backend": num.name}
        except (ValueError, ZeroDivisionError, TypeError, OverflowError) as exc:
            return {"proved": False, "proof": f"no rigorous evaluation: {exc}", "backend": num.name}
        enc = {"lhs": list(num.bounds(lhs)), "rhs": list(num.bounds(rhs))}
        if not (num.finite(lhs) and num.finite(rhs)):
            return {"proved": False, "proof": "an enclosure is not finite", "enclosures": enc, "backend": num.name}
        rel = w["relation"]
        if rel == "<=":
            sep = num.gt(lhs, rhs)
        elif rel == ">=":
            sep = num.gt(rhs, lhs)
        else:
            sep = not num.overlaps(lhs, rhs)
        lo_l, hi_l = enc["lhs"]
        lo_r, hi_r = enc["rhs"]
        txt = f"lhs in [{lo_l:.17g}, {hi_l:.17g}], rhs in [{lo_r:.17g}, {hi_r:.17g}] ({num.name}, {bits} bits)"
        if sep:
            return {"proved": True, "proof": f"the enclosures separate: {txt}", "enclosures": enc, "backend": num.name}
        return {"proved": False, "proof": f"the enclosures overlap: {txt}", "enclosures": enc, "backend": num.name}
    finally:
        if ctx is not None:
            ctx.prec = old
        else:
            mpmath.iv.prec = old
