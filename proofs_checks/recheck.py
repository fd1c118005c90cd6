"""Independent high-precision re-check of witnesses.

This module deliberately imports nothing from the toolkit (only the standard library, ``sympy`` and
``mpmath``; ``flint`` optionally), nor do the modules it is built from (:mod:`.witness_core`,
:mod:`.safe_parse`, :mod:`.ball`, :mod:`.t_quantiles`): a witness is a plain JSON object, and these files
(in a folder ``proofs_checks/`` with an empty ``__init__.py``) can be copied out and run on their own to
confirm a reported violation::

    python -c "import json, sys; from proofs_checks.recheck import recheck; print(recheck(json.load(sys.stdin)))" \
        < witness.json

or ``python -m proofs_checks.recheck witness.json`` (:func:`main`: exit 2 naming the field on a witness that
is refused). Expressions are read by the safe parser (:mod:`.safe_parse`), never run: a witness field outside
the toolkit's expression grammar is refused with a ``ValueError`` naming the field.

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
    local maximization) and ``MinEig(M)`` (the smallest eigenvalue of a symmetric matrix); ``SingVal(M, k)`` (the
    k-th largest singular value of M, k = 1, 2, ...), ``PolarFactor(M, i, j)`` (entry (i, j), from 0, of the
    orthogonal polar factor U V^T of M = U S V^T, M of full column rank) and ``Rank(M, tol)`` (how many singular
    values of M exceed tol): computed here from M's entries by an SVD at the working precision (60 digits), so a
    witness's singular values, polar factor and rank are those of the matrix it carries (in ball arithmetic they
    are not enclosed: such a witness is re-checked at 60 digits, not proved).
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

``divergence``
    An iteration that leaves every bound: ``update`` (state name -> expression of the state and the
    ``scalars``), ``start``, ``steps``, ``measure`` (an expression of the state) and ``threshold``; the re-check
    iterates at 60 digits and confirms that every iterate is finite and the measure at the last exceeds the
    threshold (a convergence or boundedness claim violated; the reported finite ``last`` values are compared).

A kind registered elsewhere (:func:`register`, e.g. by a claim file) re-checks in a process that did not import
that file when the witness names the module (``"module"``, which the re-check's result carries) and the caller
allows it (``recheck(w, allow_modules=[...])``, ``--allow-module``): a data file never runs code by itself.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from .ball import (  # noqa: F401
    BALL_INLINE,
    BallEval,
    Undecided,
    ball_backend,
    ball_plan,
    generate_ball_code,
    working_precision,
)
from .safe_parse import RefusedExpression
from .t_quantiles import t_quantile
from .witness_core import (  # noqa: F401
    MAX_BATCH,
    MAX_OUTCOMES,
    SymbolLookup,
    WitnessDistribution,
    WitnessRefused,
    check_distribution,
    dummy_names_in_order,
    field_bool,
    field_int,
    field_mapping,
    field_number,
    field_numbers,
    field_relation,
    lambdify_args,
    mp_number,
    op_of,
    operator_placeholders,
    parse,
)

__all__ = [
    "recheck",
    "register",
    "RECHECKERS",
    "prove_expression",
    "ball_backend",
    "Undecided",
    "DPS",
    "WitnessRefused",
    "MAX_STEPS",
    "MAX_POINTS",
]
# also importable from here (they lived here before the split): BallEval, BALL_INLINE, generate_ball_code,
# dummy_names_in_order, lambdify_args, operator_placeholders (the names the evaluator and bnb use)


_PLANS: dict = {}  # expression -> (operator children with placeholders, symbols, mpmath function): pure, shared


MAX_EVALUATIONS = 500_000
"""The most node evaluations one re-check of a witness makes (the evaluator's work; the quick report's witnesses
need at most a few hundred; a MaxOver about 10^5). Beyond it a witness is refused naming the field: a
nested MaxOver took minutes before."""


class _Eval(SymbolLookup):
    work = 0  # node evaluations so far (per evaluator: a re-check makes a few)
    field = "the witness"  # what is being evaluated, for the refusal's message

    def __init__(self, w):
        self.scalars = {k: mp_number(v) for k, v in (w.get("scalars") or {}).items()}
        self.coords = {k: [mp_number(v) for v in vals] for k, vals in (w.get("coords") or {}).items()}
        self.dist = WitnessDistribution(w["distribution"]) if w.get("distribution") else None
        self.d = self.dist.d if self.dist else (len(next(iter(self.coords.values()))) if self.coords else 1)
        self._plans = _PLANS

    def ev(self, e, ctx):
        self.work += 1
        if self.work > MAX_EVALUATIONS:
            raise WitnessRefused(
                f"{self.field}: needs more than {MAX_EVALUATIONS:,} evaluations at 60 digits (nested MaxOver, Expect "
                "or CoordSum over a large grid, batch or dimension): more work than a re-check does"
            )
        op = op_of(e)
        if op == "CoordSum":
            return mpmath.fsum(self.ev(e.args[0], {**ctx, "i": i}) for i in range(self.d))
        if op in ("Expect", "Expect1", "Sup1"):
            if self.dist is None:
                raise ValueError(f"{op} needs a distribution in the witness")
            n = self.dist.n if op == "Expect" else 1
            arg = e.args[0]
            has_sum = any(op_of(a) == "CoordSum" for a in sp.preorder_traversal(arg))
            if has_sum or ("i" not in ctx or ctx["i"] is None) and self.d > 1:
                outcomes = [({**ctx, "xvec": v}, pr) for v, pr in self.dist.joint(n)]
            else:
                i = ctx.get("i") if ctx.get("i") is not None else 0
                outcomes = [({**ctx, "xval": v, "i": i}, pr) for v, pr in self.dist.marginal(i, n)]
            if op == "Sup1":
                return max(self.ev(arg, c) for c, pr in outcomes if pr > 0)
            return mpmath.fsum(pr * self.ev(arg, c) for c, pr in outcomes)
        if op in ("SingVal", "PolarFactor", "Rank"):  # an SVD of the matrix's entries, evaluated here
            return _svd_op(op, e, lambda u: self.ev(u, ctx))
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
            if not e.is_number:
                return self.value(str(e), ctx)
            if e in (sp.zoo, sp.nan) or e.is_infinite:  # 1/0, an undefined value, oo: not finite (never evidence)
                return mpmath.nan if e in (sp.zoo, sp.nan) else (mpmath.inf if e.is_extended_positive else -mpmath.inf)
            f = sp.Float(e, 70)
            v = mp_number(f)
            if not mpmath.isfinite(v) or (v == 0 and f != 0):  # beyond float64's range: the Float itself
                v = mpmath.mpf(f._mpf_)
            return v
        if isinstance(e, sp.Symbol):
            return self.value(e.name, ctx)
        # general node: evaluate operator children, then the node with mpmath (the node's plan, which does
        # not depend on ctx, is built once: its operator children, their placeholders, the mpmath function)
        plan = self._plans.get(e)
        if plan is None:
            if len(self._plans) > 4096:
                self._plans.clear()
            subs, body = operator_placeholders(e, op_of)
            syms = lambdify_args(body)
            with dummy_names_in_order(len(syms)):  # the product's order independent of the process's history
                fn = sp.lambdify(syms, body, modules="mpmath")
            _no_shadowing(syms, body, self.field, fn)
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


def _no_shadowing(syms, body, field, fn=None):
    """Refuse (WitnessRefused naming ``field`` and the symbol) an expression whose symbol has the name of a constant
    or function its own generated code calls: ``lambdify`` makes each symbol an argument of that name, which
    shadows the global, so ``pi - Symbol('pi')`` with the scalar pi = 0 evaluated to 0 - 0 and a witness
    ``pi - pi_symbol >= 1`` re-checked as violated. The names the code calls are those of the same expression
    printed with every symbol renamed (``dummify``); a symbol that merely shares a name with an mpmath function the
    expression does not call (the paper's ``eta``) is fine.

    ``fn``: the function ``lambdify(syms, body, modules="mpmath")`` already made of the same arguments, if any.
    Where one of ``syms`` is a Dummy (an operator's placeholder), lambdify renames every argument on its own
    (its ``dummify`` is forced on by a Dummy argument), so ``fn``'s code is the renamed code and its global names
    are the ones asked for: a second, dummified lambdify (an xreplace of the whole expression) would make
    the same names (:func:`tests.test_witness_functions` pins the two to each other)."""
    names = {s.name for s in syms if not isinstance(s, sp.Dummy)}
    if not names:
        return
    if fn is not None and any(isinstance(s, sp.Dummy) for s in syms):
        calls = set(fn.__code__.co_names)
    else:
        with dummy_names_in_order(len(syms)):
            calls = set(sp.lambdify(syms, body, modules="mpmath", dummify=True).__code__.co_names)
    clash = sorted(names & calls)
    if clash:
        raise WitnessRefused(
            f"{field}: the symbol {clash[0]!r} has the name of a constant or function the same expression uses "
            "(it would stand for both); rename the symbol"
        )


def _svd_op(op: str, e, value):
    """``SingVal(M, k)``, ``PolarFactor(M, i, j)`` or ``Rank(M, tol)`` at the working precision (mpmath's SVD of
    M's entries, ``value(entry)``); ValueError on a malformed call (an index outside M, a rank-deficient M for
    the polar factor)."""
    M = e.args[0]
    if not isinstance(M, sp.MatrixBase):
        raise ValueError(f"{op} needs a matrix as its first argument, got {type(M).__name__}")
    A = mpmath.matrix([[value(M[i, j]) for j in range(M.cols)] for i in range(M.rows)])
    if op == "PolarFactor":
        if len(e.args) != 3 or not all(a.is_Integer for a in e.args[1:]):
            raise ValueError("PolarFactor(M, i, j) needs integer i, j")
        i, j = (int(a) for a in e.args[1:])
        if not (0 <= i < M.rows and 0 <= j < M.cols) or M.rows < M.cols:
            raise ValueError(f"PolarFactor: entry ({i}, {j}) outside a {M.rows}x{M.cols} matrix (rows >= cols)")
        U, S, V = mpmath.svd_r(A, full_matrices=False)
        if min(S[k] for k in range(len(S))) <= mpmath.mpf(10) ** (-(mpmath.mp.dps // 2)) * max(
            S[k] for k in range(len(S))
        ):
            raise ValueError("PolarFactor: M is (numerically) rank deficient: its polar factor is not unique")
        return (U * V)[i, j]
    S = sorted((mpmath.svd_r(A, compute_uv=False)[k] for k in range(min(M.rows, M.cols))), reverse=True)
    if op == "SingVal":
        if len(e.args) != 2 or not e.args[1].is_Integer or not 1 <= int(e.args[1]) <= len(S):
            raise ValueError(f"SingVal(M, k) needs an integer k in [1, {len(S)}], got {e.args[1:]}")
        return S[int(e.args[1]) - 1]
    if len(e.args) != 2:
        raise ValueError("Rank(M, tol) needs a tolerance")
    tol = value(e.args[1])
    return mpmath.mpf(sum(1 for s in S if s > tol))


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
    if ball_plan(body, num.name) is None or any(op_of(a) for a in sp.preorder_traversal(body)):
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


def _holds(lhs, rel, rhs, tol, slack=0):
    """Whether ``lhs <rel> rhs`` holds within ``tol`` relative to the quantities compared (``|lhs| + |rhs|``:
    no absolute floor, so a verdict is the same at every scale, 1e-300 as 1e300) plus ``slack`` (an
    absolute allowance for the rounding error of the two values, :func:`_rounding_slack`)."""
    scale = abs(lhs) + abs(rhs)
    if rel == "<=":
        return lhs <= rhs + tol * scale + slack
    if rel == ">=":
        return lhs >= rhs - tol * scale - slack
    if rel == "==":
        return abs(lhs - rhs) <= tol * scale + slack
    raise ValueError(f"relation must be <=, >= or ==, got {rel!r}")


_EXTRA_DIGITS = 40


def _rounding_slack(w, dps, exprs, ctx, got):
    """An allowance for the rounding error of values ``got`` of ``exprs`` computed at ``dps`` digits: 100 times
    their distance from the same values at ``dps + 40`` digits (the rounding error of the ``dps``-digit values,
    measured, so that it scales with the quantities: a cancellation to a value far below its terms is not
    mistaken for a relation that fails, and a value that is small because the data are small is not mistaken
    for rounding). Used only where the relative test alone would call the relation broken."""
    with mpmath.workdps(dps + _EXTRA_DIGITS):
        ev = _Eval(w)
        again = [ev.ev(e, ctx) for e in exprs]
    return 100 * mpmath.fsum(abs(a - b) for a, b in zip(got, again))


DPS = 60


"""The working precision (decimal digits) of a re-check that evaluates a claim's sides anew from a witness's
raw numbers (``expression`` here; a pack's own kinds, e.g. the spectral pack's matrix identities, use the
same constant). The statistical kinds (``sample-mean``, ``rate-fit``) refit from the data at 30 digits."""


MAX_STEPS = 100_000
"""The most iterations a ``divergence`` re-check runs (``steps``; the toolkit's witnesses stop at 10^4)."""

MAX_POINTS = 2_000
"""The most points of a ``rate-fit`` witness (``x``, ``y``: the jackknife refits n times at 30 digits)."""

MAX_VALUES = 1_000_000
"""The most per-replicate ``values`` of a ``sample-mean`` witness (the toolkit writes at most 4096, then the
count, mean and standard deviation)."""

MAX_STATE = 1_000
"""The most state variables of a ``divergence`` witness, scalars and coordinate constants of any witness."""


def _expression_field(v, field):
    """An expression field (``lhs``, ``rhs``, ...): srepr text or a number, read by the safe parser."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float, sp.Basic)):
        raise WitnessRefused(f"{field}: an expression is a string (sympy srepr) or a number, got {type(v).__name__}")
    if isinstance(v, (int, float)):
        field_number(v, field)
    return parse(v, field)


def _scalars_field(w, field="scalars"):
    sc = w.get(field)
    if sc is None:
        return
    field_mapping(sc, field, max_len=MAX_STATE)
    for k, v in sc.items():
        field_number(v, f"{field}[{k!r}]")


def check_expression_witness(w: dict) -> None:
    """Every field of an ``expression`` witness checked before any arithmetic (WitnessRefused naming the field):
    ``relation``; ``lhs``, ``rhs`` (and ``require``) expressions of the grammar; ``scalars`` finite numbers;
    ``coords`` lists of finite numbers, one per coordinate (as many as the distribution's dimension);
    ``distribution`` (:func:`~proofs_checks.witness_core.check_distribution`); ``assumptions`` a list of
    ``{name, lhs, relation, rhs, per_coordinate}``; ``tolerance`` in [0, 1)."""
    field_relation(w.get("relation"), "relation")
    _expression_field(w.get("lhs"), "lhs")
    _expression_field(w.get("rhs"), "rhs")
    if w.get("require") is not None:
        _expression_field(w["require"], "require")
    _scalars_field(w)
    d = None
    if w.get("distribution") is not None:
        dist = w["distribution"]
        check_distribution(dist)
        vals = dist["values"]
        d = len(vals) if dist.get("coupling", "independent") == "independent" else len(vals[0])
    coords = w.get("coords")
    if coords is not None:
        field_mapping(coords, "coords", max_len=MAX_STATE)
        for k, v in coords.items():
            field_numbers(v, f"coords[{k!r}]", min_len=1, max_len=MAX_OUTCOMES)
            if d is None:
                d = len(v)
            elif len(v) != d:
                raise WitnessRefused(f"coords[{k!r}]: {len(v)} coordinates, the witness has {d}")
    if "tolerance" in w:
        field_number(w["tolerance"], "tolerance", lo=0, hi=1, hi_open=True)
    assumptions = w.get("assumptions", [])
    if not isinstance(assumptions, list) or len(assumptions) > MAX_STATE:
        raise WitnessRefused(f"assumptions: must be a list (of at most {MAX_STATE}), got {type(assumptions).__name__}")
    for j, a in enumerate(assumptions):
        field_mapping(a, f"assumptions[{j}]")
        name = a.get("name")
        if not isinstance(name, str):
            raise WitnessRefused(f"assumptions[{j}].name: must be a string, got {type(name).__name__}")
        where = f"assumptions[{name!r}]"
        _expression_field(a.get("lhs"), f"{where}.lhs")
        _expression_field(a.get("rhs"), f"{where}.rhs")
        field_relation(a.get("relation"), f"{where}.relation")
        field_bool(a.get("per_coordinate", False), f"{where}.per_coordinate")


def check_sample_mean_witness(w: dict) -> None:
    """Every field of a ``sample-mean`` witness checked before any arithmetic (WitnessRefused naming the field):
    ``relation`` (<=, >= or ==); ``bound`` a finite number; ``level`` in (0, 1 - 1e-15]; ``tests`` an integer >= 1;
    either ``values`` (2 to MAX_VALUES finite numbers) or ``n`` (an integer >= 2), ``mean`` (finite) and ``std``
    (finite, >= 0), not both."""
    field_relation(w.get("relation", "<="), "relation")
    field_number(w.get("bound"), "bound")
    field_number(w.get("level", 0.95), "level", lo=0, hi=1 - 1e-15, lo_open=True)
    field_int(w.get("tests", 1), "tests", 1, 10**9)
    if "values" in w:
        both = [k for k in ("n", "mean", "std") if k in w]
        if both:
            raise WitnessRefused(f"{both[0]}: give either values or n, mean and std, not both")
        field_numbers(w["values"], "values", min_len=2, max_len=MAX_VALUES)
    else:
        for k in ("n", "mean", "std"):
            if k not in w:
                raise WitnessRefused(f"{k}: missing (a sample-mean witness gives values, or n, mean and std)")
        field_int(w["n"], "n", 2, 10**15)
        field_number(w["mean"], "mean")
        field_number(w["std"], "std", lo=0)


def _xy_field(obj, where):
    xs = field_numbers(obj.get("x"), f"{where}x", min_len=3, max_len=MAX_POINTS, lo=0, lo_open=True)
    ys = field_numbers(obj.get("y"), f"{where}y", min_len=3, max_len=MAX_POINTS, lo=0)
    if len(xs) != len(ys):
        raise WitnessRefused(f"{where}y: {len(ys)} values for the {len(xs)} of {where}x (the same length)")
    if len({mpmath.mpf(v) for v in xs}) < 3:
        raise WitnessRefused(f"{where}x: needs at least 3 distinct values (a slope and its jackknife interval)")


def check_rate_fit_witness(w: dict) -> None:
    """Every field of a ``rate-fit`` witness checked before any arithmetic (WitnessRefused naming the field):
    ``x`` (> 0) and ``y`` (>= 0) of the same length, 3 to MAX_POINTS points, at least 3 distinct x; ``theory``
    finite; ``margin`` finite, >= 0; ``pinned`` true or false; ``reference`` (when not pinned) an object whose
    ``x`` and ``y`` obey the same rules."""
    _xy_field(w, "")
    field_number(w.get("theory"), "theory")
    field_number(w.get("margin", 0.05), "margin", lo=0)
    pinned = field_bool(w.get("pinned", True), "pinned")
    ref = w.get("reference")
    if ref is not None and not pinned:
        field_mapping(ref, "reference")
        _xy_field(ref, "reference.")


def check_divergence_witness(w: dict) -> None:
    """Every field of a ``divergence`` witness checked before any arithmetic (WitnessRefused naming the field):
    ``update`` an object (state name -> expression), ``start`` the same names -> finite numbers, ``steps`` an
    integer in [0, MAX_STEPS], ``measure`` an expression, ``threshold`` finite, ``scalars`` finite numbers,
    ``last`` (optional) state names -> finite numbers."""
    upd = field_mapping(w.get("update"), "update", max_len=MAX_STATE)
    if not upd:
        raise WitnessRefused("update: must name at least one state variable")
    start = field_mapping(w.get("start"), "start", max_len=MAX_STATE)
    if set(start) != set(upd):
        raise WitnessRefused(f"start: must give every state variable {sorted(upd)}, got {sorted(start)}")
    for k, v in start.items():
        field_number(v, f"start[{k!r}]")
    for k, v in upd.items():
        _expression_field(v, f"update[{k!r}]")
    field_int(w.get("steps"), "steps", 0, MAX_STEPS)
    _expression_field(w.get("measure"), "measure")
    field_number(w.get("threshold"), "threshold")
    _scalars_field(w)
    if w.get("last") is not None:
        field_mapping(w["last"], "last", max_len=MAX_STATE)
        for k, v in w["last"].items():
            field_number(v, f"last[{k!r}]")


def _not_finite(lhs, rhs):
    """The reason a 60-digit evaluation is no evidence (a side not finite, or beyond float64's range where the
    verdict reads float64 values), or None."""
    for name, v in (("lhs", lhs), ("rhs", rhs)):
        if not mpmath.isfinite(v):
            return f"the {name} evaluates to {v} (an overflow, a division by zero or an undefined value): not evidence"
    return None


def _float64_loss(lhs, rhs):
    """Why the float64 values of two finite 60-digit sides do not stand for them (a side that underflows to 0 or
    overflows float64), or None."""
    big = mpmath.mpf(2) ** 1024
    for name, v in (("lhs", lhs), ("rhs", rhs)):
        size = f"about 10^{mpmath.nstr(mpmath.log10(abs(v)), 4)}" if v != 0 else ""
        if abs(v) >= big:
            return f"the {name} ({size}) overflows float64"
        if v != 0 and float(v) == 0.0:
            return f"the {name} ({size}) underflows float64 to 0"
    return None


def recheck_expression(w: dict, dps: int = DPS) -> dict:
    check_expression_witness(w)
    with mpmath.workdps(dps):
        ev = _Eval(w)
        tol = mp_number(w.get("tolerance", 1e-9))
        checks, ok = [], True
        for a in w.get("assumptions", []):
            where = f"assumptions[{a.get('name', '?')!r}]"
            lhs_e, rhs_e = parse(a["lhs"], f"{where}.lhs"), parse(a["rhs"], f"{where}.rhs")
            idx = range(ev.d) if a.get("per_coordinate") else [None]
            ev.field = where
            for i in idx:
                ctx = {"i": i}
                lv, rv = ev.ev(lhs_e, ctx), ev.ev(rhs_e, ctx)
                good = bool(_holds(lv, a["relation"], rv, tol))
                if not good:  # broken, or only rounding (a cancellation)? measured at more digits
                    slack = _rounding_slack(w, dps, (lhs_e, rhs_e), ctx, (lv, rv))
                    good = bool(_holds(lv, a["relation"], rv, tol, slack))
                checks.append(
                    {"assumption": a["name"], "coordinate": i, "lhs": float(lv), "rhs": float(rv), "holds": good}
                )
                ok = ok and good
        if w.get("require"):  # the claim's precondition on the candidate, written into the witness
            req = parse(w["require"], "require")
            ev.field = "require"
            inside = ev.ev(req, {"i": None}) != 0
            checks.append({"precondition": "require", "expression": str(req), "holds": bool(inside)})
            ok = ok and bool(inside)
        lhs_e, rhs_e = parse(w["lhs"], "lhs"), parse(w["rhs"], "rhs")
        bad = None
        try:
            ev.field = "lhs"
            lhs = ev.ev(lhs_e, {"i": None})
            ev.field = "rhs"
            rhs = ev.ev(rhs_e, {"i": None})
        except (ZeroDivisionError, OverflowError) as exc:  # 1/0 at 60 digits: no value, so no evidence either way
            lhs = rhs = mpmath.nan
            bad = f"evaluating the sides raises {type(exc).__name__} (a division by zero or an overflow): not evidence"
        rel = w["relation"]
        rel_tol = mpmath.mpf(10) ** (-(dps - 20)) if rel != "==" else tol
        bad = bad or _not_finite(lhs, rhs)
        if bad:  # inf, nan: no relation between the sides is shown, whichever way it reads
            return {
                "violated": False,
                "assumptions_ok": bool(ok),
                "empirical": float(lhs) if not mpmath.isnan(lhs) else None,
                "bound": float(rhs) if not mpmath.isnan(rhs) else None,
                "ratio": None,
                "checks": checks,
                "dps": dps,
                "inconclusive": bad,
                "proved": False,
                "proof": bad,
            }
        fails = not _holds(lhs, rel, rhs, rel_tol)
        if fails:  # a failure beyond the relative tolerance: also beyond the measured rounding error?
            fails = not _holds(lhs, rel, rhs, rel_tol, _rounding_slack(w, dps, (lhs_e, rhs_e), {"i": None}, (lhs, rhs)))
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
        lost = _float64_loss(lhs, rhs)
        if lost:  # the 60-digit values decide here, but a reader of the float64 fields would not see why
            out["float64"] = lost
    if out["violated"]:  # grade the violation: rigorous enclosures that separate, or why not
        pr = prove_expression(w)
        out["proved"], out["proof"] = bool(pr["proved"]), pr["proof"]
        if "enclosures" in pr:
            out["enclosures"] = pr["enclosures"]
    else:
        out["proved"], out["proof"] = False, "not violated at high precision: nothing to prove"
    return out


def recheck_sample_mean(w: dict, dps: int = 30) -> dict:
    check_sample_mean_witness(w)
    with mpmath.workdps(dps):
        if "values" in w:
            vals = [mp_number(v) for v in w["values"]]
            n = len(vals)
            mean = mpmath.fsum(vals) / n
            sd = mpmath.sqrt(mpmath.fsum((v - mean) ** 2 for v in vals) / (n - 1))
        else:
            n, mean, sd = int(w["n"]), mp_number(w["mean"]), mp_number(w["std"])
        level = mp_number(w.get("level", 0.95))
        tests = int(w.get("tests", 1))
        q = t_quantile(1 - (1 - level) / (2 * tests), n - 1)
        half = q * sd / mpmath.sqrt(n)
        lo, hi = mean - half, mean + half
        bound = mp_number(w["bound"])
        rel = w.get("relation", "<=")
        if rel == "<=":
            violated = lo > bound
        elif rel == ">=":
            violated = hi < bound
        else:  # ==: the whole interval on one side of the bound
            violated = lo > bound or hi < bound
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
    check_rate_fit_witness(w)
    with mpmath.workdps(dps):
        xs = [mpmath.log(mp_number(v)) for v in w["x"]]
        ys = [mpmath.log(max(mp_number(v), mpmath.mpf(10) ** -300)) for v in w["y"]]

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
        theory, margin = mp_number(w["theory"]), mp_number(w.get("margin", 0.05))
        below = hi < theory - margin
        ref = w.get("reference")
        if w.get("pinned", True) or ref is None:
            violated = below and bool(w.get("pinned", True))
            ref_e = None
        else:
            rx = [mpmath.log(mp_number(v)) for v in ref["x"]]
            ry = [mpmath.log(max(mp_number(v), mpmath.mpf(10) ** -300)) for v in ref["y"]]
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


def recheck_divergence(w: dict, dps: int = DPS) -> dict:
    """Re-check a ``divergence`` witness: the iteration ``state <- update(state)`` (``update``: state name ->
    expression of the state and the ``scalars``) run ``steps`` times from ``start`` at ``dps`` digits; violated
    (the claim that the iteration stays bounded, ``measure <= threshold`` at every step, is false) when every
    iterate is finite and ``measure`` at the last one exceeds ``threshold`` (relative tolerance 10^-(dps-20)).
    The checks compare the re-computed last state with the reported finite ``last`` values."""
    check_divergence_witness(w)
    with mpmath.workdps(dps):
        steps = int(w["steps"])
        names = list(w["update"])

        def own(e):  # the state's symbols under names of their own (a state may be called x, which the
            ren = {s: sp.Symbol(f"state {s.name}") for s in e.free_symbols if s.name in names}  # vocabulary reserves)
            return e.xreplace(ren)

        upd = {k: own(parse(v, f"update[{k!r}]")) for k, v in w["update"].items()}
        measure = own(parse(w["measure"], "measure"))
        base = {k: mp_number(v) for k, v in (w.get("scalars") or {}).items()}
        state = {k: mp_number(v) for k, v in w["start"].items()}

        work = 0  # evaluations over all the steps: one budget (MAX_EVALUATIONS) for the whole iteration

        def evaluator():
            ev = _Eval({})
            ev.scalars = {**base, **{f"state {k}": v for k, v in state.items()}}
            ev.work, ev.field = work, "update (over steps)"
            return ev

        finite = True
        for _ in range(steps):
            ev = evaluator()
            state = {k: ev.ev(e, {"i": None}) for k, e in upd.items()}
            work = ev.work
            if not all(mpmath.isfinite(v) for v in state.values()):
                finite = False
                break
        m = evaluator().ev(measure, {"i": None}) if finite else mpmath.inf
        thr = mp_number(w["threshold"])
        exceeds = finite and not _holds(m, "<=", thr, mpmath.mpf(10) ** (-(dps - 20)))
        checks = [{"steps": steps, "all_finite": finite}]
        for k, v in (w.get("last") or {}).items():
            got = state.get(k)
            checks.append({"state": k, "reported": float(v), "recomputed": None if got is None else float(got)})
        return {
            "violated": bool(exceeds),
            "assumptions_ok": True,
            "empirical": float(m) if finite else float("inf"),
            "bound": float(thr),
            "ratio": float(m / thr) if finite and thr > 0 else None,
            "checks": checks,
            "dps": dps,
            "proved": False,
            "proof": "re-computed at high precision, without rigorous error bounds",
        }


RECHECKERS = {
    "expression": recheck_expression,
    "sample-mean": recheck_sample_mean,
    "rate-fit": recheck_rate_fit,
    "divergence": recheck_divergence,
}
_SHIPPED = frozenset(RECHECKERS)
RECHECK_SOURCES: dict = {}  # kind -> the module that registered it (importable name, or its file's path)


def register(kind: str, fn, *, module: str | None = None) -> None:
    """Register ``fn(witness, dps) -> dict`` (the keys of :func:`recheck`) for witnesses of ``kind``.

    ``module``: where the re-check is defined, for a standalone re-check in another process (an importable
    module name, or a ``.py`` file's path); default: ``fn``'s module when it is importable by that name, else
    its source file. A re-check of a registered kind reports it (``"module"`` in its result, so a record's
    witness carries it) and :func:`recheck` imports it only when the caller allows that module by name
    (``allow_modules``; ``--allow-module`` on the command line): a witness is data and never runs code by itself."""
    if not callable(fn):
        raise TypeError("the re-check must be callable")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a non-empty string, got {kind!r}")
    RECHECKERS[kind] = fn
    if kind not in _SHIPPED:
        RECHECK_SOURCES[kind] = module or _source_of(fn)


def _source_of(fn):
    import importlib.util
    import inspect
    import sys

    name = getattr(fn, "__module__", None)
    mod = sys.modules.get(name) if name else None
    try:
        if name and name != "__main__" and importlib.util.find_spec(name) is not None:
            return name
    except (ImportError, ValueError):
        pass
    try:
        path = inspect.getsourcefile(mod if mod is not None else fn)
    except TypeError:
        path = None
    return path


def _import_allowed(source: str, allow_modules) -> None:
    """Import the module that registers a witness kind, ``source`` (a name or a ``.py`` path), only when it is
    in ``allow_modules`` (names compared as given, paths by their real path); else ValueError saying how."""
    import importlib
    import importlib.util
    import os

    allowed = {str(a) for a in allow_modules or ()}
    is_path = source.endswith(".py") or os.sep in source
    if is_path:
        ok = os.path.realpath(source) in {os.path.realpath(a) for a in allowed}
    else:
        ok = source in allowed
    if not ok:
        raise ValueError(
            f"the witness's kind is registered by {source!r}, which this re-check does not import unless allowed: "
            f"pass allow_modules=[{source!r}] (command line: --allow-module {source})"
        )
    if is_path:
        name = "lptheory_recheck_" + os.path.splitext(os.path.basename(source))[0].replace("-", "_")
        spec = importlib.util.spec_from_file_location(name, source)
        if spec is None or spec.loader is None:
            raise ValueError(f"{source!r} is not a Python file")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        importlib.import_module(source)


def recheck(witness: dict, dps: int | None = None, *, allow_modules=()) -> dict:
    """Re-check ``witness`` with the function registered for its ``kind``.

    A kind registered by a claim file (:func:`register`) that this process has not imported is re-checked when
    the witness names its module (``"module"``, or ``"module"`` in its stored ``recheck``) and that module is
    in ``allow_modules``: then it is imported (which registers the kind) and the witness re-checked; otherwise a
    ValueError says which module to allow. Nothing named by a witness is imported without that consent."""
    if not isinstance(witness, dict) or "kind" not in witness:
        raise WitnessRefused("a witness is a JSON object with a 'kind' field")
    kind = witness["kind"]
    if not isinstance(kind, str):
        raise WitnessRefused(f"kind: must be a string (known: {sorted(RECHECKERS)}), got {type(kind).__name__}")
    if kind not in RECHECKERS:
        stored = witness.get("recheck") if isinstance(witness.get("recheck"), dict) else {}
        source = witness.get("module") or stored.get("module")
        if not source:
            raise ValueError(f"no re-check registered for witness kind {kind!r} (known: {sorted(RECHECKERS)})")
        if not isinstance(source, str):
            raise ValueError(f"the witness's 'module' must be a module name or a .py path, got {source!r}")
        _import_allowed(source, allow_modules)
        if kind not in RECHECKERS:
            raise ValueError(f"{source!r} was imported but registers no re-check for witness kind {kind!r}")
    fn = RECHECKERS[kind]
    clean = {k: v for k, v in witness.items() if k != "recheck"}
    out = fn(clean) if dps is None else fn(clean, dps)
    src = RECHECK_SOURCES.get(kind)
    if src and isinstance(out, dict) and not str(src).startswith("proofs_checks."):  # a user's kind: say where
        out = {**out, "module": src}
    return out


def _ball_assumptions(w, num):
    """The constants as rigorous enclosures: a constant an assumption defines (``==``) takes the
    enclosure of its defining value; a bounded one (``>=``/``<=``) keeps its stated value when that is
    certainly admissible, and takes the defining value itself (admissible with equality) when the
    enclosures cannot tell. A condition whose left side is an expression (``MinEig(...) >= 0``, ...) must
    hold certainly (:func:`_condition_holds`). Returns ``(overrides, notes)``; raises :class:`Infeasible` for a
    stated constant or a condition certainly broken, Undecided (naming the condition) when one cannot be
    decided."""
    ev = BallEval(w, num)
    overrides, notes, conditions = {}, [], []
    for a in w.get("assumptions", []):
        where = f"assumptions[{a.get('name', '?')!r}]"
        lhs_e = parse(a["lhs"], f"{where}.lhs")
        name = lhs_e.name if isinstance(lhs_e, sp.Symbol) else None
        rhs_e = parse(a["rhs"], f"{where}.rhs")
        idx = list(range(ev.d)) if a.get("per_coordinate") else [None]
        vals = []
        for i in idx:
            if name is None:  # a condition on an expression (e.g. MinEig(...) >= 0): checked below
                conditions.append((a, lhs_e, rhs_e, {"i": i}))
                continue
            val = ev.ev(rhs_e, {"i": i})
            stated = ev.value(name, {"i": i})
            rel = a["relation"]
            if rel == "==":
                vals.append(val)
                continue
            ok = num.ge(stated, val) if rel == ">=" else num.ge(val, stated)
            bad = num.gt(val, stated) if rel == ">=" else num.gt(stated, val)
            if bad:
                raise Infeasible(f"the stated {name} breaks {a['name']!r}")
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
    for a, lhs_e, rhs_e, ctx in conditions:  # every condition on an expression: certainly true, or no proof
        try:
            _condition_holds(ev, a, lhs_e, rhs_e, ctx)
        except Infeasible:
            raise
        except Undecided:  # equality, which no enclosure of irrational values can show: exactly, by sympy?
            if not _exactly_equal(w, lhs_e, rhs_e, ctx, set(overrides)):
                raise
        notes.append(a["name"])
    return overrides, notes


def _exactly_equal(w, lhs_e, rhs_e, ctx, defined) -> bool:
    """Whether ``lhs - rhs`` is exactly 0 at the witness's exact data (binary floats and decimal strings as
    rationals): sympy reduces the difference to the number 0 with no floating point involved, which proves
    ``lhs == rhs`` and so both ``<=`` and ``>=``. Only for expressions of the scalars (and, at coordinate i, the
    coordinate constants) without operators, and none of the constants an assumption defines."""
    diff = lhs_e - rhs_e
    if any(op_of(a) for a in sp.preorder_traversal(diff)) or sp.count_ops(diff) > 400:
        return False
    exact = {}
    for s in diff.free_symbols:
        if s.name in defined:
            return False
        raw = (w.get("scalars") or {}).get(s.name)
        if raw is None and ctx.get("i") is not None:
            vals = (w.get("coords") or {}).get(s.name)
            raw = vals[ctx["i"]] if vals is not None else None
        if raw is None or isinstance(raw, bool):
            return False
        exact[s] = sp.Rational(raw) if isinstance(raw, str) else sp.Rational(float(raw))
    try:
        d = sp.simplify(diff.xreplace(exact))
    except Exception:  # noqa: BLE001 (sympy cannot simplify it: not shown equal)
        return False
    return d.is_Number and not d.is_Float and d == 0


class Infeasible(Undecided):
    """The enclosures show that the witness breaks one of its own conditions (never proved)."""


def _condition_holds(ev, a, lhs_e, rhs_e, ctx):
    """Raise unless the assumption ``a`` (whose left side is an expression, not a constant it defines) holds
    certainly at ``ctx`` in ball arithmetic: :class:`Infeasible` when the enclosures show it broken,
    :class:`Undecided` (naming the condition) when they cannot decide, or when one side has no rigorous
    enclosure. An equality between two expressions is certain only between identical exact values."""
    where = f"{a.get('name', '?')!r}" + ("" if ctx.get("i") is None else f" (coordinate {ctx['i']})")
    try:
        lv, rv = ev.ev(lhs_e, ctx), ev.ev(rhs_e, ctx)
    except Undecided as exc:
        raise Undecided(f"the condition {where} has no rigorous enclosure ({exc})") from None
    num, rel = ev.num, a["relation"]
    if rel == "<=":
        ok, broken = num.ge(rv, lv), num.gt(lv, rv)
    elif rel == ">=":
        ok, broken = num.ge(lv, rv), num.gt(rv, lv)
    elif rel == "==":
        ok, broken = num.ge(lv, rv) and num.ge(rv, lv), not num.overlaps(lv, rv)
    else:
        raise ValueError(f"assumptions[{a.get('name', '?')!r}].relation must be <=, >= or ==, got {rel!r}")
    if broken:
        raise Infeasible(f"the witness breaks its condition {where}")
    if not ok:
        lo_l, hi_l = num.bounds(lv)
        lo_r, hi_r = num.bounds(rv)
        txt = f"lhs in [{lo_l:.17g}, {hi_l:.17g}], rhs in [{lo_r:.17g}, {hi_r:.17g}]"
        raise Undecided(f"the condition {where} is not certain: {txt}")


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
    with working_precision(num, bits):
        try:
            overrides, _ = _ball_assumptions(w, num)
            ev = BallEval(w, num, overrides)
            if w.get("require"):
                if not ev._truth(parse(w["require"], "require"), {"i": None}):
                    return {
                        "proved": False,
                        "proof": "the witness is outside the claim's require= precondition",
                        "backend": num.name,
                    }
            lhs = ev.ev(parse(w["lhs"], "lhs"), {"i": None})
            rhs = ev.ev(parse(w["rhs"], "rhs"), {"i": None})
        except Infeasible as exc:
            return {"proved": False, "proof": f"not a valid witness: {exc}", "backend": num.name}
        except Undecided as exc:
            return {"proved": False, "proof": f"ball arithmetic cannot decide: {exc}", "backend": num.name}
        except (RefusedExpression, WitnessRefused):  # a field outside the grammar: refused, not "not proved"
            raise
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


def main(argv=None) -> int:
    """``python -m proofs_checks.recheck [--allow-module MODULE]... [witness.json]``: re-check one witness (a file,
    or stdin) and print the result as JSON. Exit 0 when the re-check ran (whatever it found), 2 on a witness that
    cannot be read or is refused (a field outside the toolkit's expression grammar: the message names the field;
    a kind registered by a module that ``--allow-module`` does not name: the message names the module)."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else list(argv)
    allow = []
    while args and args[0].startswith("--allow-module"):
        flag = args.pop(0)
        if "=" in flag:
            allow.append(flag.split("=", 1)[1])
        elif args:
            allow.append(args.pop(0))
        else:
            print("error: --allow-module needs a module name or a .py path", file=sys.stderr)
            return 2
    usage = "usage: python -m proofs_checks.recheck [--allow-module MODULE]... [witness.json]  (stdin when no file)"
    if len(args) > 1 or (args and args[0] in ("-h", "--help")) or (args and args[0].startswith("--")):
        print(usage, file=sys.stderr)
        return 2
    name = args[0] if args else "<stdin>"
    try:
        if args:
            with open(args[0], encoding="utf-8") as fh:
                witness = json.loads(fh.read(_MAX_FILE + 1))
        else:
            witness = json.loads(sys.stdin.read(_MAX_FILE + 1))
        out = recheck(witness, allow_modules=allow)  # a record's witness: its stored result is set aside
    except RecursionError:
        print(f"error: {name}: nested too deeply to read (not a witness)", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError, TypeError, ArithmeticError) as exc:
        if isinstance(exc, KeyError):
            what = f"missing field {exc}"
        elif isinstance(exc, ArithmeticError):
            what = f"cannot be evaluated ({type(exc).__name__}: {exc or 'no detail'})"
        else:
            what = str(exc)
        print(f"error: {name}: {what}", file=sys.stderr)
        return 2
    try:
        print(json.dumps(out, indent=2, default=str))
        sys.stdout.flush()
    except BrokenPipeError:  # piped into a reader that stopped (``| head``): no traceback at exit either
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    return 0


_MAX_FILE = 256 * 1024 * 1024
"""The most characters of a witness file read (a file of more is refused; ``/dev/zero`` is not read forever)."""


if __name__ == "__main__":  # run the module's canonical copy: a kind registered by an allowed module (through
    import importlib  # proofs_checks.api) lands in that copy's RECHECKERS, not in this __main__ one's

    raise SystemExit(importlib.import_module(__spec__.name if __spec__ else "proofs_checks.recheck").main())
