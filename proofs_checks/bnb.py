"""Interval branch-and-bound: decide a claim over a low-dimensional parameter box rigorously.

A claim ``lhs(z) <relation> rhs(z)`` for every z in a box B of R^m (m small: a two-point law's weight and
support, a 2x2 matrix's eigenvalue ratio, a family parameter) is decided by interval (ball) arithmetic
(python-flint's ``arb``, or ``mpmath.iv`` without it; the number layer of :mod:`proofs_checks.recheck`):

* a box whose enclosures of the two sides separate in the claimed direction is *proved* (enclosures: the natural
  extension, a mean-value form at every node of a polynomial expression (:func:`nested_mean_value`: compositions
  such as p(p(p(x))) stay tight), and the whole expression's mean-value form);
* the center (and, up to 3 variables, the corners) of every box not proved is evaluated exactly (point
  balls): where the enclosures separate in the failing direction, the claim is *violated* and that point
  is the witness;
* otherwise the box is split along its widest side (relative to the box it came from) until a budget of
  boxes or a smallest width; what remains is returned as *unresolved* boxes.

Result (:class:`BnBResult`): ``status`` ``"proved"`` (every box proved), ``"violated"`` (a witness point
whose enclosures separate), or ``"inconclusive"`` (the unresolved boxes, listed with their measure).

A claim that is tight at a known point (equality attained, so no enclosure can separate near it) can be
given a *tight point* certificate in one variable (:class:`TightPoint`): at the point, lhs - rhs is 0
exactly (sympy reduces it to 0) or <= 0 by enclosure; on a box having the point as an end in that variable
(1-D boxes only), the derivative of lhs - rhs has the sign that makes the point the box's maximum of
lhs - rhs (enclosed rigorously). Such boxes are proved by the mean value theorem. A box that holds a tight point
strictly inside is split at it (not at its midpoint), so that the point becomes an end of the boxes around it.
Box ends that are not floats (1/3, "0.1", sqrt(2)/1000) are rounded outward (:func:`outward_box`).

:func:`enclose_max` gives a rigorous enclosure [lo, hi] of the supremum of a function over a box (lo from
exact point values, hi from box enclosures, boxes pruned when they cannot hold the maximum).

Sources: R. E. Moore, R. B. Kearfott & M. J. Cloud, *Introduction to Interval Analysis*, SIAM (2009),
ch. 5 (range enclosure, subdivision) and ch. 8 (global optimization by branch and bound); arb: F. Johansson,
"Arb: efficient arbitrary-precision midpoint-radius interval arithmetic", IEEE Trans. Comput. 66 (2017).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import sympy as sp

from .ball import BALL_INLINE, BallEval, Undecided, ball_backend, generate_ball_code, working_precision

__all__ = ["BnBResult", "TightPoint", "branch_and_bound", "enclose_max", "compose_bound"]


@dataclass
class BnBResult:
    status: str  # "proved" | "violated" | "inconclusive"
    proved_boxes: int
    evaluations: int
    unresolved: list = field(default_factory=list)  # [{var: [lo, hi]}, ...] (at most 20 listed)
    unresolved_count: int = 0
    unresolved_measure: float = 0.0  # fraction of the box's volume left unresolved
    witness: dict | None = None  # the point, with the enclosures of both sides
    backend: str = ""
    reason: str = ""
    claim: dict | None = field(default=None, repr=False, compare=False)  # what was decided (for bnb_record)
    certificate: dict | None = field(default=None, repr=False, compare=False)  # proofs_checks.certificates

    def to_dict(self) -> dict:
        cert = {"certificate": self.certificate} if self.certificate else {}
        return {
            **cert,
            "status": self.status,
            "proved_boxes": self.proved_boxes,
            "evaluations": self.evaluations,
            "unresolved": self.unresolved,
            "unresolved_count": self.unresolved_count,
            "unresolved_measure": self.unresolved_measure,
            "witness": self.witness,
            "backend": self.backend,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class TightPoint:
    """The claim is tight on the face ``var = at`` of the box (a point in 1-D). A box having ``at`` as its
    lower (upper) end in ``var`` is proved when ``weight * d(lhs - rhs)/d var`` is <= 0 (>= 0) on the whole
    box, ``weight`` > 0 there (default 1; e.g. s**(1 - a) to cancel an integrable singularity s**(a - 1)),
    and lhs - rhs <= 0 on the face: by sympy (exactly 0, 1-D) or by enclosure, or, when the face claim is
    proved elsewhere, by ``face`` (its justification, quoted in the result). Mean value theorem."""

    var: str
    at: float
    face: str | None = None
    weight: object = None


def _balls(num, box: dict) -> dict:
    """Balls covering the box's intervals; a variable whose interval is in [0, inf) stays >= 0 (arb's hull
    is rounded outward, which could reach below 0 and stop a power from being enclosed)."""
    out = {}
    for k, (lo, hi) in box.items():
        b = num.hull(num.exact(float(lo)), num.exact(float(hi)))
        if num.name == "arb" and lo >= 0:
            b = b.nonnegative_part()
        out[k] = b
    return out


def _sym(e):
    return e if isinstance(e, sp.Basic) else sp.sympify(e)


class _Objective:
    """lhs and rhs as sympy expressions of the box variables and ``scalars``, enclosed by ball arithmetic:
    each tuple of expressions is evaluated by one generated straight-line function
    (:func:`recheck.generate_ball_code`, the re-check's generator, over the ball operations of
    :class:`recheck.BallEval`) with bnb's conventions: sums and products from their first term, symbols the
    box's variables else the scalars, ``log`` delegated to the evaluator (as bnb's enclosures were made)."""

    def __init__(self, lhs, rhs, scalars, num):
        self.lhs, self.rhs = _sym(lhs), _sym(rhs)
        self.num = num
        self.ev = BallEval({"scalars": dict(scalars or {})}, num)
        self._envs = {}  # recent boxes' evaluation contexts
        self._plans = {}  # tuple of expressions -> (generated function, its constants' balls)

    def balls(self, box: dict) -> dict:
        """The box's balls (:func:`_balls`), the same dict for the same box while it is among the last 64
        boxes seen (the branch and bound encloses one box's center and the box itself several times in a
        row): a box's balls are made once. Read-only."""
        return self._ctx(box)["bound"]

    def _ctx(self, box: dict) -> dict:
        key = tuple(box.items())
        ctx = self._envs.get(key)
        if ctx is None:
            if len(self._envs) >= 64:
                self._envs.clear()
            ctx = self._envs[key] = {"i": None, "bound": _balls(self.num, box)}
        return ctx

    def plan(self, roots: tuple):
        """The generated function of ``roots`` and its constants' balls, made once per tuple (the constants at
        the precision of the first call: bnb runs at one precision)."""
        got = self._plans.get(roots)
        if got is None:
            f = generate_ball_code(roots, self.num.name, fold=False, lookup="bound", inline=_BNB_INLINE)
            got = self._plans[roots] = (f, [self.num.exact(c) for c in f.consts])
        return got

    def sides(self, box: dict, expr=None):
        f, consts = self.plan((expr,) if expr is not None else (self.lhs, self.rhs))
        out = f(self.ev, self._ctx(box), consts)
        return out[0] if expr is not None else out


_BNB_INLINE = tuple(t for t in BALL_INLINE if t is not sp.log)  # log: delegated to the evaluator


class _NoNestedForm(Exception):
    """A node the nested mean-value form does not handle (the other enclosures still apply)."""


def _meet(num, a, b):
    """The intersection of two enclosures of the same quantity (exact ends: max of the lower, min of the upper)."""
    lo = num.lower(a) if num.ge(num.lower(a), num.lower(b)) else num.lower(b)
    hi = num.upper(a) if num.ge(num.upper(b), num.upper(a)) else num.upper(b)
    if num.gt(lo, hi):  # disjoint: cannot happen for two enclosures of one value
        raise Undecided("disjoint enclosures")
    return num.hull(lo, hi)


def _nested_plan(expr, names, scalars):
    """The DAG of ``expr`` in topological order for :func:`nested_mean_value`: a list of ``(op, arg)`` with op
    ``var`` (arg: the box variable's name), ``const`` (a sympy number, or a scalar's name), ``add``/``mul``
    (arg: the children's indices) or ``pow`` (arg: (child, n)); :class:`_NoNestedForm` for any other node."""
    steps, index = [], {}

    def visit(e):
        got = index.get(e)
        if got is not None:
            return got
        if isinstance(e, sp.Symbol):
            if e.name in names:
                step = ("var", e.name)
            elif e.name in scalars:
                step = ("scalar", e.name)
            else:
                raise _NoNestedForm(e.name)
        elif e.is_Number:
            step = ("const", e)
        elif isinstance(e, (sp.Add, sp.Mul)):
            step = ("add" if isinstance(e, sp.Add) else "mul", tuple(visit(a) for a in e.args))
        elif isinstance(e, sp.Pow) and e.args[1].is_Integer and int(e.args[1]) >= 1:
            step = ("pow", (visit(e.args[0]), int(e.args[1])))
        else:
            raise _NoNestedForm(type(e).__name__)
        index[e] = len(steps)
        steps.append(step)
        return index[e]

    visit(expr)
    return steps


def nested_mean_value(obj, box: dict, expr):
    """An enclosure of ``expr`` over ``box`` by a mean-value form at *every* node (a first-order Taylor model):
    each node carries its ball at the box's center, a ball per variable enclosing its partial derivative over the
    box (product and power rules on the children's box enclosures) and its box enclosure, the intersection of the
    natural extension (children's enclosures combined) and of value(c) + sum_k D_k (X_k - c_k). For a composition
    p(p(...p(x))) each step is enclosed to second order in the box's width instead of the natural extension's
    first-order overestimate (which a polynomial with terms of both signs multiplies at every step), so far fewer
    boxes are needed. Handles sums, products, integer powers, numbers, the box's symbols and the scalars;
    :class:`_NoNestedForm` otherwise. The DAG is compiled once per expression (:func:`_nested_plan`)."""
    num = obj.num
    keys = list(box)
    key = ("nested", expr, tuple(keys))
    got = obj._plans.get(key)
    if got is None:
        steps = _nested_plan(expr, set(keys), obj.ev.scalars)
        consts = {i: num.exact(a) for i, (op, a) in enumerate(steps) if op == "const"}
        got = obj._plans[key] = (steps, consts)
    steps, consts = got
    balls = obj.balls(box)
    center = [num.exact(box[k][0] + (box[k][1] - box[k][0]) / 2) for k in keys]
    offset = [balls[k] - c for k, c in zip(keys, center)]
    zero, one = num.exact(0), num.exact(1)
    nz = [zero] * len(keys)
    vals = []
    for i, (op, a) in enumerate(steps):
        if op == "var":
            j = keys.index(a)
            vals.append((center[j], [one if m == j else zero for m in range(len(keys))], balls[a]))
            continue
        if op in ("const", "scalar"):
            v = consts[i] if op == "const" else obj.ev.scalars[a]
            vals.append((v, nz, v))
            continue
        if op == "pow":
            bc, bd, be = vals[a[0]]
            n = a[1]
            scale = num.exact(n) * be ** (n - 1) if n > 1 else one
            vc, dv, enc = bc**n, [scale * u for u in bd], be**n
        else:
            vc, dv, enc = vals[a[0]]
            for k in a[1:]:
                pc, pd, pe = vals[k]
                if op == "add":
                    vc, dv, enc = vc + pc, [u + w for u, w in zip(dv, pd)], enc + pe
                else:
                    vc, dv, enc = vc * pc, [u * pe + enc * w for u, w in zip(dv, pd)], enc * pe
        mvf = vc
        for u, off in zip(dv, offset):
            mvf = mvf + u * off
        if num.finite(mvf) and num.finite(enc):
            enc = _meet(num, enc, mvf)
        vals.append((vc, dv, enc))
    return vals[-1][2]


def _holds(num, rel, lhs, rhs) -> bool:
    return num.ge(rhs, lhs) if rel == "<=" else num.ge(lhs, rhs)


def _fails(num, rel, lhs, rhs) -> bool:
    return num.gt(lhs, rhs) if rel == "<=" else num.gt(rhs, lhs)


def _split(box: dict, widths: dict, tight=()):
    """Two halves of ``box`` along its widest side (relative to the initial widths); a box with a tight point
    (:class:`TightPoint`) strictly inside is split at that point instead, so that the point becomes an end of
    both halves, where its certificate applies (a claim with equality at an interior point is never proved by
    boxes that contain the point inside)."""
    for tp in tight:
        if tp.var in box and box[tp.var][0] < tp.at < box[tp.var][1]:
            lo, hi = box[tp.var]
            return [{**box, tp.var: (lo, tp.at)}, {**box, tp.var: (tp.at, hi)}], tp.var
    var = max(box, key=lambda k: (box[k][1] - box[k][0]) / widths[k])
    lo, hi = box[var]
    mid = lo + (hi - lo) / 2
    return [{**box, var: (lo, mid)}, {**box, var: (mid, hi)}], var


def branch_and_bound(
    lhs,
    rhs,
    box: dict,
    *,
    relation: str = "<=",
    scalars: dict | None = None,
    tight=(),
    max_boxes: int = 20000,
    min_width: float = 1e-10,
    backend: str | None = None,
    bits: int = 128,
) -> BnBResult:
    """Decide ``lhs <relation> rhs`` for every point of ``box`` ({name: (lo, hi)}, finite floats): see the
    module docstring. ``lhs``, ``rhs``: sympy expressions of the box's variables (and of ``scalars``);
    ``tight``: :class:`TightPoint` certificates; ``max_boxes``: the budget of box evaluations;
    ``min_width``: boxes narrower than this (relative to the initial widths) are left unresolved."""
    if relation not in ("<=", ">="):
        raise ValueError(f"relation must be <= or >=, got {relation!r}")
    if not box:
        raise ValueError("box must name at least one variable")
    given = box
    try:
        box = outward_box(box)
    except (TypeError, ValueError, AttributeError):
        box = None
    for k, (lo, hi) in (box or given).items():
        if box is None or not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"box[{k!r}] must be a finite interval lo <= hi, got {given[k]!r}")
    if not isinstance(max_boxes, int) or max_boxes < 1:
        raise ValueError(f"max_boxes must be an integer >= 1, got {max_boxes!r}")
    num = ball_backend(backend, bits)
    with working_precision(num, bits):
        res = _bnb(lhs, rhs, dict(box), relation, scalars, tuple(tight), max_boxes, min_width, num)
    res.claim = {
        "lhs": _sym(lhs),
        "rhs": _sym(rhs),
        "relation": relation,
        "box": dict(box),
        "scalars": dict(scalars or {}),
    }
    if res.status in ("proved", "violated"):
        from .certificates import issue

        where = {k: [float(lo), float(hi)] for k, (lo, hi) in box.items()}
        sc = {k: str(v) for k, v in (scalars or {}).items()}
        if res.status == "proved":
            decided = f"{res.claim['lhs']} {relation} {res.claim['rhs']} on every point of the box {where}"
        else:
            decided = f"{res.claim['lhs']} {relation} {res.claim['rhs']} fails at {res.witness['point']}"
        res.certificate = issue(
            "branch-and-bound",
            decided[:4000] + (f" (scalars {sc})" if sc else ""),
            outcome="holds" if res.status == "proved" else "violated",
            backend=res.backend,
            boxes=res.proved_boxes,
        )
    return res


def _outward(v, down: bool) -> float:
    """The float nearest to ``v`` on the outside: the largest float <= v (``down``) or the smallest float >= v
    (a float is itself; an int, a decimal string, a Fraction or a sympy rational is rounded outward exactly;
    another real sympy number, e.g. sqrt(2)/1000, from 40 digits and one more step outward)."""
    if type(v) is float:
        return v
    if isinstance(v, sp.Float):  # a binary number: exactly a rational
        v = sp.Rational(v)
    if isinstance(v, sp.Basic) and not v.is_Rational:
        f = float(v.evalf(40))
        return math.nextafter(f, -math.inf if down else math.inf) if math.isfinite(f) else f
    exact = sp.Rational(str(v)) if isinstance(v, str) else sp.Rational(v)
    f = float(exact)
    if down and sp.Rational(f) > exact:
        f = math.nextafter(f, -math.inf)
    if not down and sp.Rational(f) < exact:
        f = math.nextafter(f, math.inf)
    return f


def outward_box(box: dict) -> dict:
    """``box`` with float ends rounded outward (:func:`_outward`): the float box covers the box given, so what is
    proved on it holds on every point of the box given (an end 1/3 or "0.1" is not rounded to its nearest float,
    which may lie inside)."""
    return {k: (_outward(lo, True), _outward(hi, False)) for k, (lo, hi) in box.items()}


def _mean_value_form(obj, num, box, c, expr, derivs):
    """The mean value form of ``expr`` on ``box`` about its center ``c``: expr(c) + sum_k d expr/d z_k (box)
    (box_k - c_k) (``derivs``: variable -> derivative), an enclosure of second order near a smooth point."""
    out = obj.sides(c, expr)
    for k, dk in derivs.items():
        lo, hi = box[k]
        off = num.hull(num.exact(lo) - num.exact(c[k][0]), num.exact(hi) - num.exact(c[k][0]))
        out = out + obj.sides(box, dk) * off
    return out


def _tight_ok(obj, tp: TightPoint, box, relation, cache) -> bool:
    if tp.var not in box:
        return False
    lo, hi = box[tp.var]
    if tp.at not in (lo, hi):
        return False
    n = obj.num
    diff = obj.lhs - obj.rhs if relation == "<=" else obj.rhs - obj.lhs  # must be <= 0
    if "deriv" not in cache:
        sym = next(s for s in diff.free_symbols if s.name == tp.var)
        dv = sp.diff(diff, sym)
        if tp.weight is not None:
            dv = sp.powsimp(sp.expand(_sym(tp.weight) * dv), force=True)
        cache["deriv"] = dv
        cache["exact"] = False
        if len(box) == 1 and tp.face is None:  # the point itself: exactly 0 by sympy?
            v = sp.Symbol(tp.var, real=True)
            d0 = diff.xreplace({sym: v}).subs(v, sp.nsimplify(tp.at))
            d0 = d0.subs(
                {
                    sp.Symbol(k): sp.nsimplify(float(n.bounds(val)[0]))
                    for k, val in obj.ev.scalars.items()
                    if n.bounds(val)[0] == n.bounds(val)[1]
                }
            )
            cache["exact"] = sp.simplify(d0) == 0
    if tp.face is None and not cache["exact"]:
        try:
            on_face = obj.sides({**box, tp.var: (tp.at, tp.at)}, diff)
        except Undecided:
            return False
        if not n.ge(n.exact(0), on_face):
            return False
    zero = n.exact(0)

    def right_sign(dv):  # at the lower end: lhs - rhs must not increase away from the face, and vice versa
        return n.finite(dv) and (bool(n.ge(zero, dv)) if tp.at == lo else bool(n.ge(dv, zero)))

    try:
        if right_sign(obj.sides(box, cache["deriv"])):
            return True
    except Undecided:
        pass
    # second order, for a derivative d that vanishes at the face: d(z) = d(at) + d'(xi) (z - at); with d' <= 0
    # on the box, d(z) <= d(at) to the right of the point and d(z) >= d(at) to its left, so the sign of d(at)
    # carries over to the whole box (tested by signs, not by a product whose rounding would reach past 0)
    if len(box) != 1:
        return False
    try:
        if "deriv2" not in cache:
            sym = next(s for s in cache["deriv"].free_symbols if s.name == tp.var)
            cache["deriv2"] = sp.diff(cache["deriv"], sym)
        d_at = obj.sides({tp.var: (tp.at, tp.at)}, cache["deriv"])
        d2 = obj.sides(box, cache["deriv2"])
        return bool(right_sign(d_at) and n.finite(d2) and n.ge(zero, d2))
    except (Undecided, StopIteration):
        return False


def _bnb(lhs, rhs, box0, relation, scalars, tight, max_boxes, min_width, num) -> BnBResult:
    obj = _Objective(lhs, rhs, scalars, num)
    widths = {k: (hi - lo) or 1.0 for k, (lo, hi) in box0.items()}
    vol0 = math.prod(widths.values())
    stack = [(-1.0, 0, box0)]  # largest boxes first: the budget is spread over the whole box
    tie = 0
    proved, evals, unresolved = 0, 0, []
    caches = [{} for _ in tight]
    diff = obj.lhs - obj.rhs if relation == "<=" else obj.rhs - obj.lhs  # the claim: diff <= 0
    syms = {s.name: s for s in diff.free_symbols}
    nested = True
    try:
        nested_mean_value(obj, box0, diff)
    except _NoNestedForm:
        nested = False
    except (Undecided, ValueError, TypeError, ZeroDivisionError):
        pass
    try:
        grads = {k: sp.diff(diff, syms[k]) for k in box0 if k in syms}
    except Exception:  # noqa: BLE001 (sympy cannot differentiate some nodes): natural extension only
        grads = {}

    def centered(box):
        """diff(c) + sum_i d diff/d z_i (box) (box_i - c_i): the mean value form (second order)."""
        c = {k: (lo + (hi - lo) / 2,) * 2 for k, (lo, hi) in box.items()}
        return _mean_value_form(obj, num, box, c, diff, grads)

    while stack:
        box = heapq.heappop(stack)[2]
        evals += 1
        try:
            lv, rv = obj.sides(box)
            if num.finite(lv) and num.finite(rv) and _holds(num, relation, lv, rv):
                proved += 1
                continue
        except Undecided:
            pass
        if nested:
            try:
                dn = nested_mean_value(obj, box, diff)
                if num.finite(dn) and num.ge(num.exact(0), dn):
                    proved += 1
                    continue
            except _NoNestedForm:
                nested = False  # the expression has other nodes: not tried again
            except (Undecided, ValueError, TypeError, ZeroDivisionError):
                pass
        if grads:  # the whole expression's mean value form
            try:
                dc = centered(box)
                if num.finite(dc) and num.ge(num.exact(0), dc):
                    proved += 1
                    continue
            except (Undecided, ValueError, TypeError, ZeroDivisionError):
                pass
        if any(_tight_ok(obj, tp, box, relation, c) for tp, c in zip(tight, caches)):
            proved += 1
            continue
        center = {k: (lo + (hi - lo) / 2,) * 2 for k, (lo, hi) in box.items()}
        points = [center]
        if len(box) <= 3:  # the corners too: a violation on the box's boundary is found where it is largest
            keys = list(box)
            for code in range(2 ** len(keys)):
                points.append({k: (box[k][(code >> i) & 1],) * 2 for i, k in enumerate(keys)})
        for pt in points:
            try:
                lc, rc = obj.sides(pt)
            except Undecided:
                continue
            if _fails(num, relation, lc, rc):
                at = {k: v[0] for k, v in pt.items()}
                return BnBResult(
                    "violated",
                    proved,
                    evals,
                    witness={"point": at, "lhs": list(num.bounds(lc)), "rhs": list(num.bounds(rc))},
                    backend=num.name,
                    reason=f"the enclosures separate at {at}: lhs in {list(num.bounds(lc))}, rhs in "
                    f"{list(num.bounds(rc))}",
                )
        small = all((hi - lo) / widths[k] < min_width for k, (lo, hi) in box.items())
        if small or evals + len(stack) >= max_boxes:
            unresolved.append(box)
            continue
        for child in _split(box, widths, tight)[0]:
            tie += 1
            vol = math.prod((hi - lo) / widths[k] for k, (lo, hi) in child.items())
            heapq.heappush(stack, (-vol, tie, child))
    measure = sum(math.prod((hi - lo) for lo, hi in b.values()) for b in unresolved) / vol0
    listed = [{k: [lo, hi] for k, (lo, hi) in b.items()} for b in unresolved[:20]]
    if not unresolved:
        return BnBResult(
            "proved", proved, evals, backend=num.name, reason=f"{proved} boxes proved ({num.name}, {evals} evaluations)"
        )
    return BnBResult(
        "inconclusive",
        proved,
        evals,
        listed,
        len(unresolved),
        measure,
        backend=num.name,
        reason=f"{len(unresolved)} boxes unresolved (fraction {measure:.3g} of the box) after {evals} evaluations; "
        f"{proved} boxes proved",
    )


def enclose_max(
    f,
    box: dict,
    *,
    range_form=None,
    scalars: dict | None = None,
    rtol: float = 1e-12,
    max_boxes: int = 50000,
    backend: str | None = None,
    bits: int = 128,
    target: float | None = None,
) -> dict:
    """A rigorous enclosure of sup_{z in box} f(z): ``{"lo", "hi", "argmax", "evaluations", "converged"}``.

    ``f``: a sympy expression of the box variables (and ``scalars``). Each box's upper bound is the best of
    the natural interval extension of ``f``, its centered (mean-value) form f(c) + f'(B)(B - c) (second
    order near a smooth maximum), and ``range_form(balls, num) -> ball`` when given (any enclosure valid on
    the box, e.g. a rewriting that removes a singularity at the box's edge). ``lo`` is the largest exact
    point value found (attained), ``hi`` the largest upper bound over the boxes left (best first, boxes
    pruned when they cannot exceed ``lo``); both rounded outward to floats. ``target``: stop as soon as every box's
    upper bound is <= ``target`` (``hi`` <= target then, ``converged`` True: the question "sup f <= target?" is
    settled, without enclosing the supremum itself to ``rtol``)."""
    num = ball_backend(backend, bits)
    with working_precision(num, bits):
        out = _enclose_max(_sym(f), dict(box), range_form, scalars, rtol, max_boxes, num, target)
    if math.isfinite(out["hi"]) and math.isfinite(out["lo"]):
        from .certificates import issue

        where = {k: [float(lo), float(hi)] for k, (lo, hi) in box.items()}
        out["certificate"] = issue(
            "enclosure",
            f"sup of {str(_sym(f))[:2000]} over the box {where} lies in [{out['lo']!r}, {out['hi']!r}]"
            + (" (with the caller's range form)" if range_form is not None else ""),
            outcome="enclosed",
            backend=num.name,
        )
    return out


def _enclose_max(f, box, range_form, scalars, rtol, max_boxes, num, target=None):
    obj = _Objective(f, sp.Integer(0), scalars, num)
    names = {s.name: s for s in f.free_symbols}
    derivs = {k: sp.diff(f, names[k]) for k in box if k in names}
    widths = {k: (hi - lo) or 1.0 for k, (lo, hi) in box.items()}

    def upper_of(b):
        best = None
        forms = [lambda: obj.sides(b, f)]
        c = {k: (lo + (hi - lo) / 2,) * 2 for k, (lo, hi) in b.items()}

        def centered():
            return _mean_value_form(obj, num, b, c, f, derivs)

        forms.append(centered)
        if range_form is not None:
            forms.append(lambda: range_form(obj.balls(b), num))
        for form in forms:
            try:
                v = form()
            except (Undecided, ZeroDivisionError, ValueError):
                continue
            if num.finite(v):
                u = num.upper(v)
                best = u if best is None or num.gt(best, u) else best
        return best

    best_lo, best_hi, arg = None, None, None
    heap = []  # (key, tie, box, upper): boxes with no finite bound first, then the largest upper bound
    tie = evals = 0

    def visit(b):
        nonlocal best_lo, best_hi, arg, tie, evals
        evals += 1
        c = {k: (lo + (hi - lo) / 2,) * 2 for k, (lo, hi) in b.items()}
        try:
            v = obj.sides(c, f)
            if num.finite(v) and (best_lo is None or num.gt(num.lower(v), best_lo)):
                best_lo, best_hi, arg = num.lower(v), num.upper(v), {k: t[0] for k, t in c.items()}
        except (Undecided, ZeroDivisionError, ValueError):
            pass
        u = upper_of(b)
        tie += 1
        heapq.heappush(heap, (-math.inf if u is None else -float(u), tie, b, u))

    visit(box)
    converged = False
    while heap and evals < max_boxes:
        _, _, b, u = heap[0]
        if target is not None and u is not None and num.ge(num.exact(float(target)), u):  # all below it
            converged = True
            break
        if best_lo is not None and u is not None:
            if float(u) - float(best_lo) <= rtol * max(abs(float(best_lo)), 1e-300):
                converged = True
                break
        heapq.heappop(heap)
        if u is not None and best_lo is not None and not num.gt(u, best_lo):
            continue  # cannot exceed a value attained
        for child in _split(b, widths)[0]:
            visit(child)
    if not heap:
        converged = True
    hi = None if best_hi is None else float(best_hi)
    for _k, _t, _b, u in heap:
        if u is None:
            hi = math.inf
            break
        hi = float(u) if hi is None else max(hi, float(u))
    hi = math.nextafter(hi, math.inf) if hi is not None and math.isfinite(hi) else hi  # outward rounding
    lo = math.nextafter(float(best_lo), -math.inf) if best_lo is not None else -math.inf
    return {
        "lo": lo,
        "hi": hi if hi is not None else math.inf,
        "argmax": arg,
        "evaluations": evals,
        "converged": converged,
    }


def compose_bound(
    f,
    box: dict,
    depth: int,
    *,
    target=None,
    scalars: dict | None = None,
    pieces: int = 64,
    backend: str | None = None,
    bits: int = 128,
) -> BnBResult:
    """Rigorous interval images of an iteration: I_0 = the box's interval and I_k ⊇ f(I_{k-1}), so that
    f^k(x) = f(f(...f(x))) lies in I_k for every x of the box and k = 1, ..., ``depth`` (induction: each step
    encloses the image of a set that contains f^(k-1)(box)). Each I_k is the hull of the enclosures of f over
    ``pieces`` equal pieces of I_{k-1} (the natural extension met with the nested mean-value form,
    :func:`nested_mean_value`), ends rounded outward: the proof of a claim on f^depth needs no expansion of the
    composition (a degree 2^depth polynomial for a quadratic f), which :func:`branch_and_bound` cannot take at
    depth >= 6. The chaining of these proved images is the toolkit's, so the result keeps evidence ``proved``.

    ``f``: a sympy expression of the box's one variable (and of ``scalars``); ``box``: ``{name: (lo, hi)}``;
    ``depth`` >= 1; ``target``: ``(lo, hi)``, the claim ``lo <= f^depth(x) <= hi`` for every x of the box.

    Returns a :class:`BnBResult` for :func:`proofs_checks.witnesses.bnb_record`: ``proved`` when
    I_depth lies in ``target`` (a certificate, kind ``composition``, names the images); ``violated`` when f^depth
    at a point of the box (its center or ends, in ball arithmetic) is certainly outside ``target`` (the point is
    the witness); ``inconclusive`` otherwise (an image wider than the target is no counterexample), and always
    without a target. ``result.witness["images"]`` (and ``to_dict()["images"]``) lists the I_k.

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> r = compose_bound(sp.Rational(5, 2) * x * (1 - x), {"x": (0.1, 0.9)}, 8, target=(0.55, 0.65))
    >>> r.status
    'proved'
    """
    if not isinstance(box, dict) or len(box) != 1:
        raise ValueError(f"box must name exactly one variable {{name: (lo, hi)}}, got {box!r}")
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if not isinstance(pieces, int) or pieces < 1:
        raise ValueError(f"pieces must be an integer >= 1, got {pieces!r}")
    ((name, (lo0, hi0)),) = outward_box(box).items()
    if not (math.isfinite(lo0) and math.isfinite(hi0) and lo0 <= hi0):
        raise ValueError(f"box[{name!r}] must be a finite interval lo <= hi, got {box[name]!r}")
    t_lo, t_hi = -math.inf, math.inf
    if target is not None:
        t_lo, t_hi = (float(v) for v in target)
        if not (t_lo <= t_hi):
            raise ValueError(f"target must be (lo, hi) with lo <= hi, got {target!r}")
    fx = _sym(f)
    var = next((s for s in fx.free_symbols if s.name == name), sp.Symbol(name))
    extra = {s.name for s in fx.free_symbols} - {name} - set(scalars or {})
    if extra:
        raise ValueError(f"f has symbols {sorted(extra)} that are neither the box's variable nor scalars")
    num = ball_backend(backend, bits)
    images = [[lo0, hi0]]
    evals = 0
    with working_precision(num, bits):
        obj = _Objective(fx, sp.Integer(0), scalars, num)
        for _k in range(depth):
            lo, hi = images[-1]
            w = (hi - lo) / pieces
            cuts = [lo + i * w for i in range(pieces)] + [hi]
            out_lo = out_hi = None
            for a, b in zip(cuts[:-1], cuts[1:]):
                piece = {name: (a, b)}
                evals += 1
                enc = obj.sides(piece, fx)
                try:
                    enc = _meet(num, enc, nested_mean_value(obj, piece, fx))
                except (_NoNestedForm, Undecided, ValueError, TypeError, ZeroDivisionError):
                    pass
                if not num.finite(enc):
                    raise Undecided(f"f is not enclosed on [{a!r}, {b!r}] (step {_k + 1})")
                e_lo, e_hi = num.bounds(enc)
                out_lo = e_lo if out_lo is None else min(out_lo, e_lo)
                out_hi = e_hi if out_hi is None else max(out_hi, e_hi)
            images.append([out_lo, out_hi])
        comp = var
        for _k in range(depth):
            comp = fx.xreplace({var: comp})
        status, witness, reason = "inconclusive", {"images": images}, ""
        i_lo, i_hi = images[-1]
        txt = f"f^{depth}([{lo0!r}, {hi0!r}]) is enclosed in [{i_lo!r}, {i_hi!r}] ({depth} steps, {pieces} pieces each)"
        if target is None:
            reason = txt + "; no target given"
        elif t_lo <= i_lo and i_hi <= t_hi:
            status, reason = "proved", f"{txt}, inside the target [{t_lo!r}, {t_hi!r}]"
        else:
            reason = f"{txt}, not inside the target [{t_lo!r}, {t_hi!r}]"
            for at in (lo0 + (hi0 - lo0) / 2, lo0, hi0):
                try:
                    v = obj.sides({name: (at, at)}, comp)
                except Undecided:
                    continue
                if num.gt(v, num.exact(t_hi)) or num.gt(num.exact(t_lo), v):
                    up = num.gt(v, num.exact(t_hi))
                    status = "violated"
                    val = list(num.bounds(v))
                    witness = {  # in the orientation of the claim's relation: lhs <= rhs fails
                        "point": {name: at},
                        "lhs": val if up else [t_lo, t_lo],
                        "rhs": [t_hi, t_hi] if up else val,
                        "images": images,
                    }
                    reason = f"f^{depth}({at!r}) is in {list(num.bounds(v))}, outside the target [{t_lo!r}, {t_hi!r}]"
                    break
    res = BnBResult(status, evals if status == "proved" else 0, evals, witness=witness, backend=num.name, reason=reason)
    up = status != "violated" or witness["rhs"] == [t_hi, t_hi]
    res.claim = {  # the side the result speaks of (the upper one unless the lower one is violated)
        "lhs": comp if up else sp.Float(t_lo),
        "rhs": (sp.Float(t_hi) if math.isfinite(t_hi) else sp.oo) if up else comp,
        "relation": "<=",
        "box": {name: (lo0, hi0)},
        "scalars": dict(scalars or {}),
    }
    if status in ("proved", "violated"):
        from .certificates import issue

        res.certificate = issue(
            "composition",
            (
                f"{t_lo!r} <= f^{depth}({name}) <= {t_hi!r} for every {name} in [{lo0!r}, {hi0!r}], f({name}) = {fx}"
                if status == "proved"
                else f"f^{depth}({name}) leaves [{t_lo!r}, {t_hi!r}] at {witness['point']}, f({name}) = {fx}"
            )[:4000],
            outcome="holds" if status == "proved" else "violated",
            backend=num.name,
            images=images,
        )
    return res
