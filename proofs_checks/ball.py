"""Rigorous enclosures for the re-check (:func:`proofs_checks.recheck.prove_expression`): ball arithmetic
(python-flint's ``arb``) or interval arithmetic (``mpmath.iv``) behind one number layer (:func:`ball_backend`),
the generated straight-line ball code of an expression (:func:`generate_ball_code`, :func:`ball_plan`) and the
ball evaluator of the witness vocabulary (:class:`BallEval`).

Like :mod:`proofs_checks.recheck`, this module imports nothing from the toolkit (only ``sympy``, ``mpmath``
and, optionally, ``flint``).
"""

from __future__ import annotations

import contextlib
import math

import mpmath
import sympy as sp

from .witness_core import SymbolLookup, WitnessDistribution, op_of

__all__ = [
    "Undecided",
    "ball_backend",
    "working_precision",
    "BALL_INLINE",
    "ball_plan",
    "generate_ball_code",
    "BallEval",
]


# ---------------------------------------------------------------------------------------------------
# rigorous enclosures: ball arithmetic (python-flint's arb) or interval arithmetic (mpmath.iv)


class Undecided(Exception):
    """Ball arithmetic cannot decide a step (a sign or a branch whose enclosure straddles 0, ...)."""


def _outward_floats(lo, hi, exact):
    """Floats ``(flo, fhi)`` with flo <= lo and hi <= fhi (``lo``, ``hi`` exact numbers of a type that ``exact``
    makes from a float and compares): the nearest floats, stepped outward where rounding went inward."""
    flo, fhi = float(lo), float(hi)
    if math.isfinite(flo) and exact(flo) > lo:
        flo = math.nextafter(flo, -math.inf)
    if math.isfinite(fhi) and exact(fhi) < hi:
        fhi = math.nextafter(fhi, math.inf)
    return flo, fhi


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

    def mid_mpf(self, x):
        """The ball's midpoint as an mpmath number, exactly."""
        m, e = x.mid().man_exp()
        return mpmath.mpf((int(m), int(e)))

    def bounds(self, x):
        """The enclosure's ends as floats rounded outward (the float interval contains the ball)."""
        return _outward_floats(x.lower(), x.upper(), self.arb)


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
        if isinstance(v, (sp.Float, mpmath.mpf)):  # exactly (at the mantissa's length), then outward to iv.prec
            with mpmath.workprec(max(53, int(v._mpf_[1]).bit_length() + 2)):
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

    def mid_mpf(self, x):
        """The interval's midpoint (rounded to the working precision) as an mpmath number."""
        with mpmath.workprec(max(mpmath.mp.prec, self.iv.prec)):
            return +mpmath.mpf(x.mid._mpi_[0])

    def bounds(self, x):
        """The interval's ends as floats rounded outward."""
        with mpmath.workprec(max(mpmath.mp.prec, self.iv.prec, 53)):  # the ends exactly
            return _outward_floats(mpmath.mpf(x._mpi_[0]), mpmath.mpf(x._mpi_[1]), mpmath.mpf)


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


@contextlib.contextmanager
def working_precision(num, bits: int):
    """Run the body with the ball layer ``num`` (:func:`ball_backend`) at ``bits`` of working precision:
    python-flint's context precision for arb, ``mpmath.iv.prec`` otherwise; restored afterwards."""
    ctx = num.flint.ctx if num.name == "arb" else None
    old = ctx.prec if ctx is not None else mpmath.iv.prec
    try:
        if ctx is not None:
            ctx.prec = bits
        else:
            mpmath.iv.prec = bits
        yield
    finally:
        if ctx is not None:
            ctx.prec = old
        else:
            mpmath.iv.prec = old


_BALL_PLANS: dict = {}  # (expression, backend name) -> generated function or None: pure, shared


BALL_INLINE = (sp.Add, sp.Mul, sp.Pow, sp.Abs, sp.sign, sp.Max, sp.Min, sp.exp, sp.log, sp.sin, sp.cos)


_MISSING = object()


def _ball_log(n, v):
    if not n.gt(v, n.exact(0)):
        raise Undecided("log of an enclosure that reaches 0")
    return n.fn("log", v)


def ball_plan(e, backend):
    """A generated function ``(evaluator, ctx, constants) -> (ball,)`` for ``e`` when its root is arithmetic,
    a power, |.|, sign, max/min or an elementary function (else None): :func:`generate_ball_code` with the
    conventions of :meth:`BallEval._walk` (sums and products folded from 0 and 1, symbols looked up by
    ``value``), so the same balls. ``constants``: the numbers' balls (``plan.consts``), made per evaluator
    and precision."""
    key = (e, backend)
    plan = _BALL_PLANS.get(key, _MISSING)
    if plan is not _MISSING:
        return plan
    if op_of(e) or not isinstance(e, BALL_INLINE):
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
        if op_of(e):
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


class BallEval(SymbolLookup):
    """The expression vocabulary of :class:`_Eval` evaluated to rigorous enclosures."""

    def __init__(self, w, num, overrides=None):
        self.num = num
        self.scalars = {k: num.exact(v) for k, v in (w.get("scalars") or {}).items()}
        self.coords = {k: [num.exact(v) for v in vals] for k, vals in (w.get("coords") or {}).items()}
        for k, v in (overrides or {}).items():
            (self.coords if isinstance(v, list) else self.scalars)[k] = v
        self.dist = WitnessDistribution(w["distribution"], num.exact) if w.get("distribution") else None
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
        generated straight-line function per expression (:func:`ball_plan`: each distinct subexpression
        enclosed once per call, the same operations in the same order as :meth:`_walk`, so the same balls);
        the other nodes (operators, Piecewise, conditions) are walked."""
        plan = ball_plan(e, self.num.name)
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
        op = op_of(e)
        if op == "CoordSum":
            return self._sum(self.ev(e.args[0], {**ctx, "i": i}) for i in range(self.d))
        if op in ("Expect", "Expect1", "Sup1"):
            if self.dist is None:
                raise ValueError(f"{op} needs a distribution in the witness")
            nn = self.dist.n if op == "Expect" else 1
            arg = e.args[0]
            has_sum = any(op_of(a) == "CoordSum" for a in sp.preorder_traversal(arg))
            if has_sum or ("i" not in ctx or ctx["i"] is None) and self.d > 1:
                outcomes = [({**ctx, "xvec": v}, pr) for v, pr in self.dist.joint(nn)]
            else:
                i = ctx.get("i") if ctx.get("i") is not None else 0
                outcomes = [({**ctx, "xval": v, "i": i}, pr) for v, pr in self.dist.marginal(i, nn)]
            if op == "Sup1":
                return self._max(self.ev(arg, c) for c, _ in outcomes)
            return self._sum(pr * self.ev(arg, c) for c, pr in outcomes)
        if op in ("SingVal", "PolarFactor", "Rank"):  # no rigorous enclosure here: re-checked at 60 digits
            raise Undecided(f"{op}: singular values are not enclosed in ball arithmetic")
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
            return self._min_eig(vals)
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

    def _min_eig(self, vals):
        """A rigorous enclosure of the smallest eigenvalue of the symmetric part of the n x n ball matrix ``vals``
        (for every symmetric matrix A whose entries lie in the balls): from above, the Rayleigh quotient
        v^T A v / v^T v of an approximate eigenvector v (exact numbers) enclosed in balls (lambda_min <= it for
        every such A); from below, s = (approximate lambda_min) - delta such that A - s I is certainly positive
        definite: its LDL^T factorization (Sylvester: positive definite iff every pivot > 0) run in ball
        arithmetic gives pivots whose enclosures are all > 0 (each pivot's ball holds that of every member A),
        so lambda_min > s. delta starts at 2^-(bits/2) (1 + ||A||) and grows when the balls are too wide to
        certify; Undecided when no delta up to 2^-8 (1 + ||A||) does."""
        n = self.num
        m = len(vals)
        half = n.exact(sp.Rational(1, 2))
        B = [[vals[i][j] if i == j else (vals[i][j] + vals[j][i]) * half for j in range(m)] for i in range(m)]
        if not all(n.finite(b) for row in B for b in row):
            raise Undecided("MinEig: an entry is not finite")
        dps = max(20, int(self.num.bits / 3.33) - 10)
        with mpmath.workdps(dps):
            mid = mpmath.matrix([[n.mid_mpf(b) for b in row] for row in B])
            lams, vecs = mpmath.eigsy(mid)
            k = min(range(m), key=lambda i: lams[i])
            lam0 = lams[k]
            v = [n.exact(mpmath.mpf(vecs[i, k])) for i in range(m)]
            size = 1 + mpmath.sqrt(mpmath.fsum(abs(mid[i, j]) ** 2 for i in range(m) for j in range(m)))
            shifts = [lam0 - mpmath.ldexp(size, r) for r in range(-int(self.num.bits // 2), -7, 16)]
        num_ = self._sum(v[i] * B[i][j] * v[j] for i in range(m) for j in range(m))
        den = self._sum(v[i] ** 2 for i in range(m))
        if not n.gt(den, self._zero):
            raise Undecided("MinEig: no eigenvector")
        top = n.upper(num_ / den)
        for shift in shifts:
            s = n.exact(shift)
            if self._positive_definite(B, s):
                return n.hull(s, top)
        raise Undecided("MinEig: the ball arithmetic cannot certify a lower bound (interval LDL^T breaks down)")

    def _positive_definite(self, B, s):
        """Whether every symmetric matrix in the ball matrix ``B - s I`` is certainly positive definite: every
        pivot of its LDL^T factorization enclosed > 0 (Sylvester's criterion, pivots = ratios of leading minors)."""
        n = self.num
        m = len(B)
        L = [[None] * m for _ in range(m)]
        D = []
        for k in range(m):
            d = B[k][k] - s - self._sum(L[k][j] ** 2 * D[j] for j in range(k))
            if not n.gt(d, self._zero):
                return False
            D.append(d)
            for i in range(k + 1, m):
                L[i][k] = (B[i][k] - self._sum(L[i][j] * L[k][j] * D[j] for j in range(k))) / d
        return True

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
