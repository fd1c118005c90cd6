"""Independent high-precision re-check of witnesses.

This module deliberately imports nothing from the toolkit (only the standard library, ``sympy`` and
``mpmath``): a witness is a plain JSON object, and this file can be copied out and run on its own to
confirm a reported violation::

    python -c "import json, sys; from proofs_checks.recheck import recheck; print(recheck(json.load(sys.stdin)))" \
        < witness.json

Every witness has a ``kind``; :data:`RECHECKERS` maps kinds to functions (extend it with
:func:`register`). Each returns ``{"violated", "assumptions_ok", "empirical", "bound", "ratio",
"checks", "dps"}``: ``violated`` is True only when every assumption re-derived from the raw data holds
and the claimed relation fails at ``dps`` digits.

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
    re-derived from the raw data) and ``tolerance`` (relative, for ``==``; default 1e-9).

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

import itertools
import math

import mpmath
import sympy as sp

__all__ = ["recheck", "register", "RECHECKERS"]

_OPS = ("CoordSum", "Expect", "Expect1", "Sup1", "MaxOver", "MinEig")


def _op(e):
    if isinstance(e, sp.core.function.AppliedUndef) and e.func.__name__ in _OPS:
        return e.func.__name__
    return None


def _parse(text):
    expr = sp.sympify(text) if isinstance(text, str) else sp.sympify(text)
    return expr


def _mp(v):
    if isinstance(v, str):
        return mpmath.mpf(v)
    return mpmath.mpf(float(v)) if not isinstance(v, mpmath.mpf) else v


class _Dist:
    """Exact outcomes of one sample and of the mean of n samples, enumerated here."""

    def __init__(self, spec):
        self.coupling = spec.get("coupling", "independent")
        self.n = int(spec.get("n", 1))
        if self.coupling == "independent":
            self.values = [[_mp(v) for v in row] for row in spec["values"]]
            self.weights = [self._norm([_mp(w) for w in row]) for row in spec["weights"]]
            self.d = len(self.values)
        else:
            self.values = [[_mp(v) for v in pt] for pt in spec["values"]]
            self.weights = self._norm([_mp(w) for w in spec["weights"]])
            self.d = len(self.values[0])

    @staticmethod
    def _norm(ws):
        if any(w < 0 for w in ws) or sum(ws) <= 0:
            raise ValueError("weights must be >= 0 with a positive sum")
        tot = mpmath.fsum(ws)
        return [w / tot for w in ws]

    @staticmethod
    def _batch(points, weights, n, add, scale):
        """Outcomes of the mean of n draws: list of (value, probability) by the multinomial law."""
        out = []
        k = len(points)
        for combo in itertools.combinations_with_replacement(range(k), n):
            counts = [combo.count(j) for j in range(k)]
            prob = mpmath.mpf(math.factorial(n))
            for c, w in zip(counts, weights):
                prob = prob / math.factorial(c) * (w**c if c else 1)
            if prob > 0:
                val = None
                for j, c in enumerate(counts):
                    if c:
                        val = scale(points[j], c) if val is None else add(val, scale(points[j], c))
                out.append((scale(val, mpmath.mpf(1) / n), prob))
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
            out.append(([v for v, _ in combo], mpmath.fprod(pr for _, pr in combo)))
        return out


class _Eval:
    def __init__(self, w):
        self.scalars = {k: _mp(v) for k, v in (w.get("scalars") or {}).items()}
        self.coords = {k: [_mp(v) for v in vals] for k, vals in (w.get("coords") or {}).items()}
        self.dist = _Dist(w["distribution"]) if w.get("distribution") else None
        self.d = self.dist.d if self.dist else (len(next(iter(self.coords.values()))) if self.coords else 1)
        self._fns = {}

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
            pts = [lo + (hi - lo) * j / grid for j in range(grid + 1)]
            vals = [f(t) for t in pts]
            best = max(vals)
            j = vals.index(best)
            a, b = pts[max(0, j - 1)], pts[min(grid, j + 1)]
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
        # general node: evaluate operator children, then the node with mpmath
        subs = {}
        found = []
        stack = [e]
        while stack:
            node = stack.pop()
            if _op(node):
                found.append(node)
                continue
            stack.extend(node.args)
        vals = {}
        for node in found:
            if node not in subs:
                dmy = sp.Dummy("op")
                subs[node] = dmy
                vals[dmy] = self.ev(node, ctx)
        body = e.xreplace(subs)
        syms = sorted(body.free_symbols, key=lambda s: s.name)
        key = (body, tuple(syms))
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = sp.lambdify(syms, body, modules="mpmath")
        args = [vals[s] if s in vals else self.value(s.name, ctx) for s in syms]
        out = fn(*args)
        if isinstance(out, mpmath.mpc):
            if abs(out.imag) > abs(out.real) * mpmath.mpf(10) ** (-mpmath.mp.dps // 2):
                raise ValueError(f"complex value {out} for {body}")
            out = out.real
        return mpmath.mpf(out) if not isinstance(out, bool) else mpmath.mpf(int(out))


def _holds(lhs, rel, rhs, tol):
    scale = abs(lhs) + abs(rhs) + mpmath.mpf(10) ** (-mpmath.mp.dps + 10)
    if rel == "<=":
        return lhs <= rhs + tol * scale
    if rel == ">=":
        return lhs >= rhs - tol * scale
    if rel == "==":
        return abs(lhs - rhs) <= tol * scale
    raise ValueError(f"relation must be <=, >= or ==, got {rel!r}")


def recheck_expression(w: dict, dps: int = 60) -> dict:
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
        return {
            "violated": bool(ok and fails),
            "assumptions_ok": bool(ok),
            "empirical": float(lhs),
            "bound": float(rhs),
            "ratio": ratio,
            "checks": checks,
            "dps": dps,
        }


def _t_quantile(prob, df):
    """Quantile of Student's t with ``df`` degrees of freedom (bisection on the regularized incomplete beta)."""
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
