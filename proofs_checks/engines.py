"""The engines, callable on any claim (:class:`proofs_checks.spec.ClaimSpec`): each takes a spec and a
setting and returns a claim record with its verdict from :mod:`proofs_checks.verdict`.

* :func:`exact_expectation`: E[term] against the bound for a finite distribution, exactly;
* :func:`monte_carlo`: the same from samples, with a Student-t interval (Bonferroni over ``tests``);
* :func:`interval_claim`: any per-replicate measurement (e.g. along simulator runs) against a bound;
* :func:`adversarial_search`: the worst ratio term / bound over a declared space of finite
  distributions (:class:`DistributionSpace`) that meet the assumptions exactly;
* :func:`value_claim`: a computed value against a bound, with a witness (exact methods);
* :func:`rate_claim` and :func:`fit_exponent`, :func:`fit_slope`: decay exponents with intervals.

Witnesses are built here (:func:`expression_witness`) and re-checked by :mod:`proofs_checks.recheck`,
which imports nothing from the toolkit.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from . import expressions as X
from .records import Claim
from .search import maximize_many
from .spec import ClaimError, ClaimSpec
from .verdict import Verdict, control_verdict, decide, decide_rate

__all__ = [
    "Point",
    "claim_record",
    "control_record",
    "DistributionSpace",
    "FAMILIES",
    "SearchBudget",
    "constants",
    "with_batch_size",
    "evaluate_sides",
    "pointwise",
    "expression_witness",
    "exact_expectation",
    "monte_carlo",
    "interval_claim",
    "value_claim",
    "adversarial_search",
    "search_worst",
    "search_worst_many",
    "SearchJob",
    "adversarial_search_many",
    "fit_exponent",
    "fit_slope",
    "rate_claim",
    "sample_witness",
]


def _srepr(e) -> str:
    return sp.srepr(sp.sympify(e))


def _names(expr) -> set[str]:
    return {s.name for s in sp.sympify(expr).free_symbols}


def _finite(spec, name, values, params):
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ClaimError(
            f"claim {spec.id}: the {name} is not finite ({v.ravel()[:4].tolist()}) at the setting {params}; "
            "a claim must evaluate to finite numbers where it is checked"
        )


# ---------------------------------------------------------------------------------------------------
# constants from the assumptions


def constants(
    spec: ClaimSpec,
    dist: X.Distribution,
    scalars: dict,
    given: dict | None = None,
    rows=None,
    lanes=None,
    quiet: bool = False,
):
    """The constants defined by the spec's assumptions (distribution form), evaluated on ``dist``:
    returns ``(scalars, coords, checks)``. A constant in ``given`` (a stated value) is kept and its
    assumption checked (``checks``: list of (name, ok) per assumption); otherwise the tightest
    admissible value is used. ``rows``, ``lanes``: per-row scalars (:class:`~proofs_checks.expressions.Env`);
    ``quiet``: the caller silences numpy's floating-point errors (one ``errstate`` for many evaluations)."""
    given = dict(given or {})
    sc = dict(scalars)
    coords = {}
    checks = []
    env = X.Env(scalars=sc, dist=dist, rows=rows, lanes=lanes)  # grows with each constant (outcomes shared)
    for a in spec.defining():
        val = _per(a.value, env, a.per_coordinate, quiet)
        name = a.symbol.name
        if name in given:
            stated = np.asarray(given[name], dtype=np.float64)
            stated_b = np.broadcast_to(stated, val.shape)
            tol = 1e-9 * (np.abs(val) + np.abs(stated_b) + 1e-300)
            if a.relation == "==":
                ok = np.abs(stated_b - val) <= tol
            elif a.relation == ">=":
                ok = stated_b >= val - tol
            else:
                ok = stated_b <= val + tol
            checks.append((a.name, bool(np.all(ok))))
            val = stated_b
        if a.per_coordinate:
            coords[name] = val
            env.coords[name] = env._coord(val)
        else:
            sc[name] = val
            env.scalars[name] = env._scalar(val)
    return sc, coords, checks


def _per(expr, env, per_coordinate, quiet=False):
    """An expression evaluated per coordinate ((S, d)) or as a scalar ((S,))."""
    return X.evaluate_shaped(expr, env, per_coordinate=per_coordinate, quiet=quiet)


def with_batch_size(spec: ClaimSpec, n: int, scalars: dict) -> dict:
    """The scalars with ``n``, the batch size of the distribution (its ``n``); a user scalar ``n`` that
    differs from it is a ClaimError (the expectation would be over another batch than the one stated)."""
    if "n" in scalars:
        given = np.asarray(scalars["n"], dtype=np.float64)
        if given.size != 1 or float(given.reshape(-1)[0]) != float(n):
            raise ClaimError(
                f"claim {spec.id}: scalars n={scalars['n']!r} conflicts with the distribution's batch size n={n} "
                "(set the batch size on the DistributionSpace / Distribution, not as a scalar)"
            )
    return {"n": n, **{k: v for k, v in scalars.items() if k != "n"}}


def pointwise(expr, x, *, scalars: dict | None = None, coords: dict | None = None) -> np.ndarray:
    """``expr`` (an expression in the random vector's coordinate ``x``, e.g. a pathwise term) at the
    points ``x`` (R, d), one value per row; ``coords`` per row (R, d) or shared (d,)."""
    xv = np.asarray(x, dtype=np.float64)
    R, d = xv.shape
    dist = X.Distribution(xv[:, :, None], np.ones((R, d, 1)), 1)
    return X.evaluate(X.Expect(expr), X.Env(scalars=scalars or {}, coords=coords or {}, dist=dist, S=R))


def evaluate_sides(spec: ClaimSpec, env: X.Env, quiet: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(term, bound) of ``spec`` on ``env``, (S,) arrays. A side left out of the spec (None) is a
    ClaimError naming it (it used to surface as an AttributeError deep in the expression compiler).
    ``quiet``: the caller silences numpy's floating-point errors (:func:`~proofs_checks.expressions.evaluate_quiet`)."""
    for side in ("term", "bound"):
        if getattr(spec, side) is None:
            raise ClaimError(
                f"claim {spec.id}: ClaimSpec has no {side} (give {side}=<a sympy expression>); the exact and "
                "search engines evaluate both sides"
            )
    ev = X.evaluate_quiet if quiet else X.evaluate
    return ev(spec.term, env), ev(spec.bound, env)


# ---------------------------------------------------------------------------------------------------
# witnesses


def _up(v: float) -> float:
    return float(np.nextafter(np.nextafter(float(v) * (1 + 1e-15), np.inf), np.inf))


def expression_witness(
    spec: ClaimSpec,
    *,
    scalars: dict,
    coords: dict | None = None,
    dist=None,
    row: int = 0,
    relation: str | None = None,
    lhs=None,
    rhs=None,
    extra: dict | None = None,
    conditions=(),
) -> dict:
    """A re-checkable witness (kind ``expression``) for row ``row`` of a population: both sides as
    sympy expressions, the scalars and coordinate constants, the raw distribution and the assumptions
    in distribution form (re-derived by the re-check). ``conditions``: more assumptions, as
    ``(name, lhs, relation, rhs)`` expressions of the scalars (e.g. a matrix inequality through
    ``MinEig``) or :class:`~proofs_checks.spec.Assumption` objects in distribution form, re-checked too."""
    lhs = spec.term if lhs is None else lhs
    rhs = spec.bound if rhs is None else rhs

    def pick(v, per):
        a = np.asarray(v, dtype=np.float64)
        if per:
            a = a[row] if a.ndim == 2 else a
            return [float(u) for u in a]
        a = a.reshape(-1)
        return float(a[row] if a.size > 1 else a[0])

    need = _names(lhs) | _names(rhs)
    for a in spec.defining():
        need |= _names(a.value) | {a.symbol.name}
    conds = []
    for c in conditions:  # (name, lhs, relation, rhs) or an Assumption in distribution form
        if hasattr(c, "symbol"):
            conds.append((c.name, c.symbol, c.relation, c.value, c.per_coordinate))
        else:
            conds.append((*c, False))
    for _, c_lhs, _, c_rhs, _ in conds:
        need |= _names(c_lhs) | _names(c_rhs)
    w = {
        "kind": "expression",
        "claim": spec.id,
        "relation": relation or spec.relation,
        "lhs": _srepr(lhs),
        "rhs": _srepr(rhs),
        "scalars": {k: pick(v, False) for k, v in scalars.items() if k in need},
        "coords": {k: pick(v, True) for k, v in (coords or {}).items() if k in need},
    }
    if not w["coords"] and dist is None:
        del w["coords"]  # a witness in scalars only
    if dist is not None:
        if dist.coupling == "independent":
            vals, wts = dist.values[row], dist.weights[row]
        else:
            vals, wts = dist.values[row], dist.weights[row]
        w["distribution"] = {
            "coupling": dist.coupling,
            "n": dist.n,
            "values": np.asarray(vals).tolist(),
            "weights": np.asarray(wts).tolist(),
        }
        w["assumptions"] = [
            {
                "name": a.name,
                "lhs": _srepr(a.symbol),
                "relation": a.relation,
                "rhs": _srepr(a.value),
                "per_coordinate": a.per_coordinate,
            }
            for a in spec.defining()
        ]
    if conds:
        w.setdefault("assumptions", [])
        w["assumptions"] += [
            {"name": name, "lhs": _srepr(c_lhs), "relation": rel, "rhs": _srepr(c_rhs), "per_coordinate": per}
            for name, c_lhs, rel, c_rhs, per in conds
        ]
    if extra:
        w.update(extra)
    return w


@dataclass(frozen=True)
class Point:
    """Where a claim was measured, so that the engine builds its re-checkable witness (kind
    ``expression``) itself: the claim's two sides (default: the spec's ``term`` and ``bound``) at these
    ``scalars``, per-coordinate ``coords`` and, for expectations, the finite ``dist`` (a
    :class:`~proofs_checks.expressions.Distribution` of one row, or ``{"values", "weights", "n",
    "coupling"}``); the spec's distribution-form assumptions are re-derived by the re-check.

    ``lhs``/``rhs``: other sides than the spec's (e.g. a pathwise form of the term); ``relation``: the
    witness's relation when it is not the record's (an equality measured as ``|difference| <= tol``);
    ``extra``: more fields shown with the witness (a note, a matrix, a ``tolerance`` for ``==``);
    ``conditions``: assumptions the witness carries besides the spec's, as ``(name, lhs, relation, rhs)``
    expressions of the scalars (e.g. ``("H <= diag(L)", MinEig(...), ">=", 0)``) or
    :class:`~proofs_checks.spec.Assumption` objects in distribution form, re-checked with the witness."""

    scalars: dict = field(default_factory=dict)
    coords: dict | None = None
    dist: object = None
    lhs: object = None
    rhs: object = None
    relation: str | None = None
    extra: dict | None = None
    conditions: tuple = ()

    def witness(self, spec: ClaimSpec) -> dict:
        """The witness of ``spec`` at this point (:func:`expression_witness`; relation: the spec's unless
        the point gives one)."""
        lhs = spec.term if self.lhs is None else self.lhs
        rhs = spec.bound if self.rhs is None else self.rhs
        for name, side in (("lhs", lhs), ("rhs", rhs)):
            if not isinstance(side, sp.Basic):
                raise ClaimError(
                    f"claim {spec.id}: a Point needs the {name} as a sympy expression (give the spec a term and a "
                    f"bound, or Point(lhs=..., rhs=...)), got {type(side).__name__}"
                )
        dist = self.dist
        if isinstance(dist, dict):
            dist = X.Distribution(
                np.asarray(dist["values"], dtype=np.float64)[None],
                np.asarray(dist["weights"], dtype=np.float64)[None],
                int(dist.get("n", 1)),
                dist.get("coupling", "independent"),
            )
        return expression_witness(
            spec,
            scalars=self.scalars,
            coords=self.coords,
            dist=dist,
            relation=self.relation,
            lhs=lhs,
            rhs=rhs,
            extra=self.extra,
            conditions=self.conditions,
        )


def _round_up_constants(spec, scalars, coords):
    """Stated constants for a witness: those bounded from above by an assumption (``c >= value``) are
    rounded up, so the re-computed bound is never smaller than the one the search used."""
    sc, co = dict(scalars), dict(coords)
    for a in spec.defining():
        if a.relation != ">=":
            continue
        tgt = co if a.per_coordinate else sc
        v = np.asarray(tgt[a.symbol.name], dtype=np.float64)
        tgt[a.symbol.name] = np.vectorize(_up)(v) if v.size else v
    return sc, co


def sample_witness(
    spec: ClaimSpec, values, bound: float, *, tests: int = 1, level: float = 0.95, extra: dict | None = None
) -> dict:
    """A re-checkable witness (kind ``sample-mean``) for an interval verdict: the per-replicate
    measurements (or, beyond 4096 of them, their count, mean and standard deviation)."""
    v = np.asarray(values, dtype=np.float64)
    w = {
        "kind": "sample-mean",
        "claim": spec.id,
        "relation": spec.relation,
        "bound": float(bound),
        "level": level,
        "tests": int(tests),
    }
    if v.size <= 4096:
        w["values"] = v.tolist()
    else:
        w.update(n=int(v.size), mean=float(v.mean()), std=float(v.std(ddof=1)))
    if extra:
        w.update(extra)
    return w


# ---------------------------------------------------------------------------------------------------
# record builders


def claim_record(
    spec: ClaimSpec,
    verdict,
    *,
    params: dict,
    method: str,
    empirical=None,
    bound=None,
    ci=None,
    data=None,
    relation: str | None = None,
) -> Claim:
    """The record of ``spec`` with the verdict ``verdict`` (:func:`proofs_checks.verdict.decide`,
    :func:`~proofs_checks.verdict.combine`, ...) in the setting ``params``: the one place where records
    are built, for checks whose verdict combines several parts (a bound along a grid and a rate, a
    proof step's rule and spot checks). ``empirical``/``bound`` may be None (nothing measured)."""
    return Claim(
        id=spec.id,
        statement=spec.statement,
        source=spec.source,
        assumptions=spec.assumption_names,
        params=params,
        status=verdict.status,
        method=method,
        empirical=None if empirical is None else float(empirical),
        bound=None if bound is None else float(bound),
        ci=None if ci is None else [float(ci[0]), float(ci[1])],
        witness=verdict.witness,
        reason=verdict.reason,
        data=data,
        relation=relation or spec.relation,
        show=list(spec.show) or None,
        evidence=getattr(verdict, "evidence", None),  # the verdict's own level when it sets one, else derived
    )


def control_record(rec: Claim, control: str, what: str, *, failed: bool | None = None) -> Claim:
    """A negative control's record from the record an engine built for it under the claim's own rule
    (``rec``: e.g. :func:`value_claim` on a false neighbour, :func:`rate_claim` on a method that must fail),
    by the one convention of :func:`proofs_checks.verdict.control_verdict`: ``inconclusive`` (never
    ``holds`` nor ``violated``; ``not-applicable`` stays), the reason saying what the control is
    (``what``), what the rule said about it (its verdict and reason, a re-checked witness's digits and
    proof included) and that its failure is the expected one. Everything the engine measured is kept:
    empirical, bound, ratio, interval, data, the witness with its re-check, and the evidence level.
    ``failed``: as in :func:`~proofs_checks.verdict.control_verdict` (default: the rule did not give it
    holds). The record's id must name it a control (a ``.control`` part) or its params a ``control``."""
    from .records import is_control

    if not is_control(rec.to_dict()):
        raise ValueError(f"control_record: {rec.id!r} is not named a control (a '.control' part in the id or a "
                         "'control' parameter)")  # fmt: skip
    raw = Verdict(rec.status, rec.reason or rec.status, rec.witness, None, rec.evidence)
    v = control_verdict(control, raw, what, failed=failed)
    return dataclasses.replace(rec, status=v.status, reason=v.reason, evidence=rec.evidence)


def _applicability(spec: ClaimSpec, setting: dict | None, checks=()):
    """(applicable, why): the spec's setting-form assumptions checked against ``setting`` plus the
    distribution-form ``checks`` [(name, ok)]."""
    broken = [name for name, ok in checks if not ok]
    for a in spec.assumptions:
        if a.check is not None and setting is not None:
            ok, why = a.check(setting)
            if not ok:
                broken.append(f"{a.name} fails: {why}" if why else a.name)
    if broken:
        return False, "; ".join(broken)
    return True, None


def exact_expectation(
    spec: ClaimSpec,
    dist: X.Distribution,
    params: dict,
    *,
    scalars: dict | None = None,
    given: dict | None = None,
    setting: dict | None = None,
    data=None,
) -> Claim:
    """E[term] against the bound for one finite distribution (``dist``, S = 1), exactly.

    ``scalars``: the setting's parameters (p, eta, n, ...); ``given``: stated constants (checked
    against their assumptions: a broken one gives ``not-applicable``); other constants take their
    tightest admissible values. A violation is reported only after the witness re-checks."""
    sc = with_batch_size(spec, dist.n, scalars or {})
    sc, coords, checks = constants(spec, dist, sc, given)
    env = X.Env(scalars=sc, coords=coords, dist=dist)
    term, bound = evaluate_sides(spec, env)
    _finite(spec, "term", term, params)
    _finite(spec, "bound", bound, params)
    applicable, why = _applicability(spec, setting, checks)
    wsc, wco = (sc, coords)
    witness = expression_witness(spec, scalars=wsc, coords=wco, dist=dist)
    v = decide(
        spec.relation, float(term[0]), float(bound[0]), method="exact", witness=witness, applicable=applicable, why=why
    )
    return claim_record(spec, v, params=params, method="exact", empirical=term[0], bound=bound[0], data=data)


def monte_carlo(
    spec: ClaimSpec,
    samples,
    params: dict,
    *,
    scalars: dict | None = None,
    coords: dict | None = None,
    setting: dict | None = None,
    tests: int = 1,
    level: float = 0.95,
    data=None,
) -> Claim:
    """E[term] against the bound from samples (N, d) of the random vector: the spec's term must be
    ``Expect(inner)`` (times constants); the interval is Student-t at ``level``, Bonferroni over
    ``tests`` simultaneous claims."""
    from scipy.stats import t as student_t

    samples = np.asarray(samples, dtype=np.float64)
    N, d = samples.shape
    term = sp.sympify(spec.term)
    coef, inner = _split_expect(spec, term)
    pop = X.Distribution(samples[:, :, None], np.ones((N, d, 1)), 1)  # one point mass per sample
    sc = dict(scalars or {})
    env = X.Env(scalars=sc, coords=coords or {}, dist=pop, S=N)
    per = X.evaluate(coef * X.Expect(inner), env)
    env1 = X.Env(scalars=sc, coords=coords or {}, S=1)
    bound = float(X.evaluate(spec.bound, env1)[0])
    _finite(spec, "term", per, params)
    _finite(spec, "bound", bound, params)
    m = float(per.mean())
    q = float(student_t.ppf(1 - (1 - level) / (2 * tests), N - 1))
    half = q * float(per.std(ddof=1)) / math.sqrt(N)
    ci = (m - half, m + half)
    applicable, why = _applicability(spec, setting)
    w = sample_witness(spec, per, bound, tests=tests, level=level)
    v = decide(spec.relation, m, bound, method="monte-carlo", ci=ci, witness=w, applicable=applicable, why=why)
    return claim_record(
        spec, v, params={**params, "samples": N}, method="monte-carlo", empirical=m, bound=bound, ci=ci, data=data
    )


def _split_expect(spec, term):
    coef, inner = sp.Integer(1), None
    for f in sp.Mul.make_args(term):
        if X.operator_of(f) == "Expect":
            if inner is not None:
                break
            inner = f.args[0]
        else:
            coef = coef * f
    if inner is None or coef.has(X.x):
        raise ClaimError(f"claim {spec.id}: Monte Carlo needs the term in the form c * Expect(...)")
    return coef, inner


def interval_claim(
    spec: ClaimSpec,
    values,
    bound: float,
    params: dict,
    *,
    method: str = "simulation",
    tests: int = 1,
    level: float = 0.95,
    applicable: bool = True,
    why: str | None = None,
    data=None,
    note: str = "",
    of=None,
) -> Claim:
    """The mean of per-replicate ``values`` against ``bound`` (Student-t interval, Bonferroni over
    ``tests``), e.g. a quantity measured along simulator runs.

    ``of``: test a function of the mean instead, a sympy expression in one symbol standing for the
    mean (e.g. ``m**2`` for (E X)^2 <= B): the estimate is f(mean) and its interval the image of the
    mean's interval under f (interval arithmetic, sympy ``AccumBounds``: exact for monotone pieces,
    e.g. [0, max] when the interval of m straddles 0 for m**2); the witness (kind ``mean-function``)
    re-checks the same at 30 digits."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=np.float64).ravel()
    _finite(spec, "measured value", v, params)
    _finite(spec, "bound", bound, params)
    m = float(v.mean())
    if v.size > 1:
        half = (
            float(student_t.ppf(1 - (1 - level) / (2 * tests), v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(v.size)
        )
    else:
        half = math.inf
    ci = (m - half, m + half)
    w = sample_witness(spec, v, bound, tests=tests, level=level)
    if of is not None:
        fn, sym = _function_of_mean(spec, of)
        m, ci = _image(fn, sym, m, ci)
        _finite(spec, "function of the mean", [m, *ci], params)
        w = {**w, "kind": "mean-function", "function": sp.srepr(fn), "variable": sym.name}
    verdict = decide(
        spec.relation, m, float(bound), method=method, ci=ci, witness=w, applicable=applicable, why=why, note=note
    )
    return claim_record(spec, verdict, params=params, method=method, empirical=m, bound=bound, ci=ci, data=data)


def _function_of_mean(spec, of):
    if not isinstance(of, sp.Basic) or len(of.free_symbols) != 1:
        raise TypeError(
            f"claim {spec.id}: of= must be a sympy expression in one symbol (the mean), e.g. m**2, got {of!r}"
        )
    return of, next(iter(of.free_symbols))


def _image(fn, sym, m, ci, dps: int = 17):
    """(f(m), [lo, hi]): the value at the mean and the image of the interval (sympy AccumBounds)."""
    val = float(fn.subs(sym, sp.Float(m, dps)))
    lo, hi = ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return val, (-math.inf, math.inf)
    img = fn.subs(sym, sp.AccumBounds(sp.Float(lo, dps), sp.Float(hi, dps)))
    if isinstance(img, sp.AccumBounds):
        return val, (float(img.min), float(img.max))
    return val, (float(img), float(img))


def _recheck_mean_function(w: dict, dps: int = 30) -> dict:
    """Re-check of a ``mean-function`` witness: the sample-mean re-check of the raw values, then the
    interval mapped through the function (sympy AccumBounds at ``dps`` digits)."""
    from .recheck import recheck_sample_mean

    base = recheck_sample_mean({**w, "kind": "sample-mean", "bound": 0.0, "relation": "<="}, dps)
    fn = sp.sympify(w["function"])  # the srepr text written by interval_claim
    sym = next((s for s in fn.free_symbols if s.name == w["variable"]), sp.Symbol(w["variable"]))
    lo, hi = base["checks"][0]["interval"]
    val, (flo, fhi) = _image(fn, sym, base["empirical"], (lo, hi), dps)
    bound = float(w["bound"])
    rel = w.get("relation", "<=")
    return {
        "violated": bool(flo > bound if rel == "<=" else fhi < bound),
        "assumptions_ok": True,
        "empirical": val,
        "bound": bound,
        "ratio": val / bound if rel == "<=" and bound > 0 else None,
        "checks": [{"interval": [flo, fhi], "mean_interval": [lo, hi]}],
        "dps": dps,
    }


def _register_rechecks():
    from .recheck import register

    register("mean-function", _recheck_mean_function)


_register_rechecks()


def value_claim(
    spec: ClaimSpec,
    empirical: float,
    bound: float,
    params: dict,
    *,
    method: str = "exact",
    witness: dict | None = None,
    tolerance: float = 0.0,
    applicable: bool = True,
    why: str | None = None,
    data=None,
    note: str = "",
    relation: str | None = None,
    budget: str | None = None,
    at: Point | None = None,
    uncertified: str | None = None,
) -> Claim:
    """A computed value against a bound (exact methods).

    A failure is ``violated`` only with a witness that re-checks: give ``at``, the :class:`Point` where
    the value was computed (the engine builds the witness from the spec's sides), or a ``witness`` of
    another kind (:func:`proofs_checks.recheck.register`). ``uncertified``: the numbers are estimates
    that certify neither side (e.g. both lower bounds): the record is ``inconclusive`` with this
    reason, the numbers kept. ``relation``: the record's relation when it is not the spec's (an
    equality measured as a difference against a tolerance)."""
    _finite(spec, "value", empirical, params)
    _finite(spec, "bound", bound, params)
    rel = relation or spec.relation
    if at is not None:
        if witness is not None:
            raise TypeError(f"claim {spec.id}: give either at= (a Point) or witness=, not both")
        witness = at.witness(spec)
    if uncertified is not None:
        v = Verdict("inconclusive", uncertified)
        return claim_record(
            spec, v, params=params, method=method, empirical=empirical, bound=bound, data=data, relation=rel
        )
    v = decide(
        rel,
        float(empirical),
        float(bound),
        method=method,
        witness=witness,
        tolerance=tolerance,
        applicable=applicable,
        why=why,
        note=note,
        budget=budget,
    )
    return claim_record(
        spec, v, params=params, method=method, empirical=empirical, bound=bound, data=data, relation=rel
    )


# ---------------------------------------------------------------------------------------------------
# the adversarial search


FAMILIES = ("any", "symmetric", "unimodal-symmetric")


@dataclass(frozen=True)
class DistributionSpace:
    """Finite distributions of a d-dimensional random vector: ``k`` support points per coordinate
    (``coupling="independent"``) or ``k`` support points in R^d (``"joint"``), and the mean of ``n``
    samples. Support values are ``u**power`` with u in [-1, 1] (the claims searched here are
    scale-invariant; ``power`` > 1 also explores magnitudes down to ~1e-6), weights free.

    Families (independent coordinates; every decoded candidate is a member, by construction):

    * ``family="any"``: the above;
    * ``"symmetric"``: each coordinate symmetric about its mean m: pairs m +- s_j with equal weights
      (and m itself when k is odd), support in [-1, 1];
    * ``"unimodal-symmetric"`` (k odd): mixtures of discrete uniform laws on the symmetric lattices
      {m + j s : |j| <= i}, i = 0..(k-1)/2 (the discrete form of Khinchine's characterization of
      symmetric unimodal laws as mixtures of uniforms; Dharmadhikari & Joag-Dev, *Unimodality,
      Convexity, and Applications* (1988), Thm. 1.3): weights symmetric and non-increasing away from m;
    * ``support_bound=B``: every support value scaled into [-B, B];
    * ``variance=v``: every coordinate's one-sample variance rescaled to v (k >= 2; not with
      ``support_bound``).

    ``where``: optional candidate filter ``where(setting) -> bool`` on :meth:`setting` (the engines use it
    for setting-form assumptions); a candidate outside it is never the worst case of a search.
    """

    d: int = 1
    k: int = 2
    n: int = 1
    coupling: str = "independent"
    power: int = 3
    family: str = "any"
    support_bound: float | None = None
    variance: float | None = None
    where: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for name in ("d", "k", "n"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ClaimError(f"DistributionSpace.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if self.coupling not in ("independent", "joint"):
            raise ClaimError(f"DistributionSpace.coupling must be 'independent' or 'joint', got {self.coupling!r}")
        if self.family not in FAMILIES:
            raise ClaimError(f"DistributionSpace.family must be one of {FAMILIES}, got {self.family!r}")
        if self.coupling == "joint" and (self.family != "any" or self.variance is not None):
            raise ClaimError("DistributionSpace: families and a fixed variance need coupling='independent'")
        if self.family == "unimodal-symmetric" and self.k % 2 == 0:
            raise ClaimError(f"DistributionSpace.k must be odd for the unimodal-symmetric family, got {self.k}")
        for name in ("support_bound", "variance"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ClaimError(f"DistributionSpace.{name} must be a finite number > 0, got {v!r}")
        if self.variance is not None and (self.k < 2 or self.support_bound is not None):
            raise ClaimError("DistributionSpace.variance needs k >= 2 and no support_bound")
        if self.where is not None and not callable(self.where):
            raise ClaimError("DistributionSpace.where must be callable (setting -> bool)")

    @property
    def _per_coord(self) -> int:
        if self.family == "symmetric":
            return self.k + 1  # m, k//2 spreads, k//2 pair weights (+ the center's weight when k is odd)
        if self.family == "unimodal-symmetric":
            return 2 + (self.k - 1) // 2 + 1  # m, the lattice step, one weight per uniform component
        return 2 * self.k

    @property
    def dim(self) -> int:
        return self.d * self._per_coord if self.coupling == "independent" else self.d * self.k + self.k

    def bounds(self):
        if self.coupling == "joint":
            nv = self.d * self.k
            return [(-1.0, 1.0)] * nv + [(0.0, 1.0)] * (self.dim - nv)
        if self.family == "any":
            nv = self.d * self.k
            return [(-1.0, 1.0)] * nv + [(0.0, 1.0)] * (self.dim - nv)
        h = self.k // 2 if self.family == "symmetric" else 1  # location-like parameters per coordinate
        per = [(-1.0, 1.0)] * (1 + h) + [(0.0, 1.0)] * (self._per_coord - 1 - h)
        return per * self.d

    def decode(self, xs) -> X.Distribution:
        xs = np.atleast_2d(np.asarray(xs, dtype=np.float64))
        d, k = self.d, self.k
        if self.coupling == "joint":
            nv = d * k
            u = xs[:, :nv].reshape(-1, k, d)
            w = _weights(xs, nv, 1, k).reshape(-1, k)
            vals = u**self.power
            if self.support_bound is not None:
                vals = vals * self.support_bound
            return self._filtered(X.Distribution(vals, w, self.n, self.coupling))
        if self.family == "any":
            nv = d * k
            vals = xs[:, :nv].reshape(-1, d, k) ** self.power
            w = _weights(xs, nv, d, k)
            if self.support_bound is not None:
                vals = vals * self.support_bound
            if self.variance is not None:
                mu = np.sum(w * vals, axis=-1, keepdims=True)
                vals, w = self._rescale(mu, vals - mu, w)
                vals = mu + vals
            return self._filtered(X.Distribution(vals, w, self.n, self.coupling))
        z = xs.reshape(-1, d, self._per_coord)
        m = z[..., :1]
        room = 1.0 - np.abs(m)
        if self.family == "symmetric":
            h = k // 2
            spread = np.abs(z[..., 1 : 1 + h]) ** self.power * room
            wp = np.abs(z[..., 1 + h : 1 + 2 * h])
            sign = np.concatenate([np.ones(h), -np.ones(h)] + ([np.zeros(1)] if k % 2 else []))
            om = np.concatenate([wp / 2, wp / 2] + ([np.abs(z[..., -1:])] if k % 2 else []), axis=-1)
            unit = np.concatenate([spread, spread] + ([np.zeros_like(m)] if k % 2 else []), axis=-1)
        else:
            h = (k - 1) // 2
            step = np.abs(z[..., 1:2]) ** self.power * room / max(h, 1)
            j = np.arange(-h, h + 1, dtype=np.float64)
            sign, unit = np.sign(j), np.abs(j) * step
            comp = np.abs(z[..., 2:])  # weight of the uniform component on {|j| <= i}, i = 0..h
            per_pt = comp / (2 * np.arange(h + 1) + 1)
            tail = np.cumsum(per_pt[..., ::-1], axis=-1)[..., ::-1]  # sum over i >= |j|
            om = tail[..., np.abs(j).astype(int)]
        tot = om.sum(axis=-1, keepdims=True)
        w = np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)
        if self.support_bound is not None:
            m, unit = m * self.support_bound, unit * self.support_bound
        if self.variance is not None:
            unit, w = self._rescale(m, unit, w, sign)
        # exact symmetry in floating point: m on a coarse dyadic grid, deviations on the grid of the row's
        # magnitude (both truncated toward 0, so a support bound still holds): m + dev is exact
        top = np.max(np.abs(m) + np.abs(unit), axis=-1, keepdims=True)
        e = np.ceil(np.log2(np.maximum(top, 1e-300)))
        qm, qs = np.exp2(e - 20), np.exp2(e - 52)
        m = np.trunc(m / qm) * qm
        dev = np.trunc(unit / qs) * qs * sign
        return self._filtered(X.Distribution(m + dev, w, self.n, self.coupling))

    def _rescale(self, mu, dev, w, sign=None):
        """Deviations (signed; or magnitudes with the family's ``sign`` pattern) rescaled to the one-sample
        variance ``self.variance``; a row with no spread becomes a member of the family with that variance
        (uniform on a symmetric lattice; +-sqrt(v) for the symmetric family)."""
        v, k = self.variance, dev.shape[-1]
        sg = 1.0 if sign is None else sign
        var = np.sum(w * (dev * sg) ** 2, axis=-1, keepdims=True)
        flat = var <= 1e-300
        scaled = dev * np.sqrt(v / np.where(flat, 1.0, var))
        if sign is None:
            lattice = np.linspace(-1.0, 1.0, k)
            fb_dev, fb_w = math.sqrt(v) * lattice / np.sqrt(np.mean(lattice**2)), np.full(k, 1.0 / k)
        elif self.family == "symmetric":
            live = np.abs(sign)
            fb_dev, fb_w = math.sqrt(v) * live, live / live.sum()
        else:
            h = (k - 1) // 2
            fb_dev, fb_w = np.abs(np.arange(-h, h + 1)) * math.sqrt(3.0 * v / (h * (h + 1))), np.full(k, 1.0 / k)
        return np.where(flat, fb_dev, scaled), np.where(flat, fb_w, w)

    def _filtered(self, dist):
        if self.where is None:
            return dist
        ok = np.array([bool(self.where(self.setting(dist, r))) for r in range(dist.S)])
        if not ok.all():  # a candidate outside the filter evaluates to NaN: never the worst case
            vals = dist.values.copy()
            vals[~ok] = np.nan
            dist = X.Distribution(vals, dist.weights, dist.n, dist.coupling)
        return dist

    def setting(self, dist, row: int = 0) -> dict:
        """The setting of candidate ``row`` for setting-form assumptions: the family, whether the law is
        symmetric (each coordinate about its mean; computed) and unimodal (members of the unimodal
        family only; a point mass too), the largest |support value|, per-coordinate means and variances,
        and the distribution itself."""
        vals, w = np.asarray(dist.values[row]), np.asarray(dist.weights[row])
        if dist.coupling == "joint":
            per = [(vals[:, i], w) for i in range(vals.shape[1])]  # marginals
        else:
            per = [(vals[i], w[i]) for i in range(vals.shape[0])]
        means, variances, symmetric = [], [], True
        for v, ww in per:
            mu = float(np.sum(ww * v))
            means.append(mu)
            variances.append(float(np.sum(ww * (v - mu) ** 2)))
            symmetric = symmetric and _symmetric_about(v, ww, mu)
        live = [float(np.max(np.abs(v[ww > 0]))) if np.any(ww > 0) else 0.0 for v, ww in per]
        point = all(np.count_nonzero(ww > 0) <= 1 for _, ww in per)
        return {
            "candidate": True,
            "family": self.family,
            "symmetric": bool(symmetric),
            "unimodal": self.family == "unimodal-symmetric" or point,
            "support": max(live) if live else 0.0,
            "mean": means,
            "variance": variances,
            "space": self.describe(),
            "distribution": {"coupling": dist.coupling, "n": dist.n, "values": vals.tolist(), "weights": w.tolist()},
        }

    def describe(self) -> list:
        out = [self.d, self.k, self.n] if self.coupling == "independent" else [self.d, self.k, self.n, "joint"]
        if self.family != "any":
            out.append(self.family)
        if self.support_bound is not None:
            out.append(f"|x| <= {self.support_bound:g}")
        if self.variance is not None:
            out.append(f"variance {self.variance:g}")
        return out


_WEIGHTS: dict = {}


def _weights(xs, start, groups, k):
    """The normalized weights of :meth:`DistributionSpace.decode` (families "any" and joint): columns
    ``start:start + groups * k`` of ``xs`` in groups of ``k``, ``|x| / sum |x|`` per group (``1 / k`` each
    where the sum is not > 0), shape (rows, groups, k), C order. Computed by the numba kernel
    :func:`~proofs_checks._search_kernels.normalized_weights` (the same bits: numpy adds fewer than 8 terms
    of a contiguous axis in order) when numba is installed and k < 8, else by numpy."""
    if "kernel" not in _WEIGHTS:
        try:
            from ._search_kernels import normalized_weights
        except ImportError:
            normalized_weights = None
        _WEIGHTS["kernel"] = normalized_weights
    kern = _WEIGHTS["kernel"]
    if kern is not None and k < 8 and xs.flags.c_contiguous:
        return kern(xs, start, groups, k)
    om = np.abs(xs[:, start : start + groups * k]).reshape(-1, groups, k)
    tot = om.sum(axis=-1, keepdims=True)
    return np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)


def _symmetric_about(v, w, mu, tol=1e-9) -> bool:
    """Whether the finite law sum_j w_j delta_{v_j} is symmetric about mu (weights merged per point)."""
    live = w > 0
    v, w = np.asarray(v)[live], np.asarray(w)[live]
    if v.size == 0 or not np.all(np.isfinite(v)):
        return False
    scale = tol * (1.0 + float(np.max(np.abs(v - mu))))
    a = np.sort(v - mu)
    if not np.allclose(a, -a[::-1], atol=scale, rtol=0):
        return False
    o = np.argsort(v - mu)
    return bool(np.allclose(w[o], w[o][::-1], atol=tol, rtol=0))


@dataclass(frozen=True)
class SearchBudget:
    maxiter: int = 120
    popsize: int = 12


def _ratios(spec, space, xs, scalars, scale, require):
    dist, sc, coords, env = _search_env(spec, space, xs, scalars)
    return _ratio_of(spec, env, scale, require), dist, sc, coords


def _search_env(spec, space, xs, scalars, rows=None, lanes=None, quiet=False):
    """The population ``xs`` decoded, with the constants the assumptions define (shared by every spec
    with the same defining assumptions). ``rows``: per-row scalars (the rows of several settings in one
    population, :class:`~proofs_checks.expressions.Env`), ``lanes`` their runs when known."""
    dist = space.decode(xs)
    sc = with_batch_size(spec, space.n, scalars)
    sc, coords, _ = constants(spec, dist, sc, rows=rows, lanes=lanes, quiet=quiet)
    return dist, sc, coords, X.Env(scalars=sc, coords=coords, dist=dist, rows=rows, lanes=lanes)


def _ratio_of(spec, env, scale, require):
    """term / (scale * bound) per row (``scale`` a number or one per row), 0 where not finite or where
    ``require`` fails; bound / term for a ``>=`` claim."""
    with np.errstate(all="ignore"):
        term, bound = evaluate_sides(spec, env, quiet=True)
        req = None if require is None else X.evaluate_quiet(require, env)
        return _ratio_tail(term, bound, req, scale, spec.relation == ">=")


def _ratio_tail(term, bound, req, scale, ge):
    """:func:`_ratio_of` from the values of the sides and of the condition (``req``, or None): one pass of
    the numba kernel :func:`~proofs_checks._search_kernels.ratio_tail` (the same IEEE operations per row)
    for float64 rows, else numpy."""
    kern = _RATIO.get("kernel", False)
    if kern is False:
        try:
            from ._search_kernels import ratio_tail as kern
        except ImportError:
            kern = None
        _RATIO["kernel"] = kern
    if (
        kern is not None
        and type(term) is np.ndarray
        and type(bound) is np.ndarray
        and term.dtype == np.float64
        and bound.dtype == np.float64
        and term.ndim == 1
        and bound.shape == term.shape
        and (req is None or (type(req) is np.ndarray and req.dtype == np.float64 and req.shape == term.shape))
    ):
        sc = np.asarray(scale, dtype=np.float64).reshape(-1)
        if sc.size in (1, term.size):
            return kern(term, bound, _NO_REQ if req is None else req, sc, bool(ge), np.empty(term.size))
    return _ratio_tail_numpy(term, bound, req, scale, ge)


_RATIO: dict = {}
_NO_REQ = np.empty(0)


def _ratio_tail_numpy(term, bound, req, scale, ge):
    """:func:`_ratio_tail` in numpy."""
    ok = np.isfinite(term) & np.isfinite(bound) & (bound > 0)
    if req is not None:
        ok &= np.asarray(req, dtype=bool)
    r = np.where(ok, term / np.where(ok, scale * bound, 1.0), 0.0)
    if ge:
        r = np.where(ok & (term > 0), scale * bound / np.where(term > 0, term, 1.0), 0.0)
    return r


def _staged_objective(spec0, space, xs, shared, rows, lanes, shared_outcomes, parts, n_rows):
    """The lockstep objective's evaluation of one call (:func:`_lockstep_objective`), written by
    :class:`~proofs_checks.expressions.Stager` as a straight-line function of the population ``xs``:
    the decoding, the constants the assumptions define, and per block of rows (``parts``: ``(a, b, spec,
    scale, require)``) the sides, the condition and the ratio, with the same numpy calls on the same
    operands as the evaluation itself (the same bits) for every population laid out as ``xs`` (the
    caller keys the function by the rows per job and the layout of ``xs``). Returns ``(fn, value)``:
    the function and its value at ``xs`` (the staging run)."""
    st = X.Stager()
    xd = st.input(xs, "xs")
    dist = st.call(space.decode, xd)
    proto = dist.v
    sdist = X.SDist(st, proto, st.call(_get_values, dist), st.call(_get_weights, dist))
    renv = X.Env(S=n_rows, rows=rows, lanes=lanes)
    sc = with_batch_size(spec0, space.n, shared)
    senv = X.SEnv(st, renv, sdist)
    senv.scalars = {k: senv.scalar(v) for k, v in sc.items()}
    for a in spec0.defining():  # constants(): the tightest admissible value of each defined constant
        v = X.stage_shaped(a.value, senv, per_coordinate=a.per_coordinate)
        if a.per_coordinate:
            senv.coords[a.symbol.name] = senv.coord(v)
        else:
            senv.scalars[a.symbol.name] = senv.scalar(v)
    env = X.SEnv(st, renv, sdist, dict(senv.scalars), dict(senv.coords))  # a new Env: its own outcome contexts
    for which, layout in shared_outcomes:
        sdist.outcomes(which, layout)
    out = st.fresh(np.zeros, n_rows)
    for a, b, spec, scale, require in parts:
        sub = env if (a == 0 and b == n_rows) else env.take(a, b)
        for side in ("term", "bound"):
            if getattr(spec, side) is None:
                raise X.Unstageable(side)
        term = X.stage_quiet(spec.term, sub)
        bound = X.stage_quiet(spec.bound, sub)
        req = None if require is None else X.stage_quiet(require, sub)
        st.setitem(out, slice(a, b), st.call(_ratio_tail, term, bound, req, scale, spec.relation == ">="))
    return st.function(out, "objective"), out.v


def _get_values(dist):
    return dist.values


def _get_weights(dist):
    return dist.weights


def _defining_key(spec):
    return tuple((a.symbol, a.value, a.per_coordinate, a.relation) for a in spec.defining())


@dataclass(frozen=True)
class SearchJob:
    """One adversarial search of :func:`search_worst_many`: a spec, its seed, bound scale and condition,
    and optionally its own scalars (``scalars``, e.g. ``{"p": 4.0}``: over the shared ones).

    ``require``: a condition the candidates must meet, a sympy relation (or a boolean combination of
    relations) of the setting's scalars and the constants the assumptions define, evaluated on every
    candidate; e.g. ``CoordSum(sigma) > 1e-6 * G`` (non-negligible noise). Anything else is a TypeError."""

    spec: ClaimSpec
    seed: object
    scale: float = 1.0
    require: object = None
    scalars: dict | None = None

    def __post_init__(self):
        _check_require(self.spec, self.require)
        if self.scalars is not None and not isinstance(self.scalars, dict):
            raise TypeError(f"claim {self.spec.id}: SearchJob.scalars must be a dict of numbers, got {self.scalars!r}")


def _job_scalars(jb, scalars: dict) -> dict:
    """The job's own scalars (:class:`SearchJob`), then the shared ones it does not set."""
    own = dict(jb.scalars or {})
    return {**own, **{k: v for k, v in scalars.items() if k not in own}}


def _check_require(spec, require):
    """``require`` is None or a sympy relation / boolean (a TypeError naming the claim otherwise)."""
    if require is None or isinstance(require, (sp.core.relational.Relational, sp.logic.boolalg.Boolean)):
        return
    raise TypeError(
        f"claim {spec.id}: require= must be a sympy relation of the scalars and constants (e.g. "
        f"CoordSum(sigma) > 1e-6 * G), got {type(require).__name__}: {require!r}"
    )


def search_worst(
    spec: ClaimSpec,
    spaces,
    scalars: dict,
    *,
    seed,
    budget: SearchBudget = SearchBudget(),
    scale: float = 1.0,
    require=None,
) -> dict:
    """Maximize term / (scale * bound) over each space (one differential evolution + Nelder-Mead polish
    per space); returns the worst case found: ``{"ratio", "space", "x", "nfev"}``."""
    return search_worst_many([SearchJob(spec, seed, scale, require)], spaces, scalars, budget=budget)[0]


def search_worst_many(
    jobs, spaces, scalars: dict, *, budget: SearchBudget = SearchBudget(), workers: int = 1
) -> list[dict]:
    """:func:`search_worst` for several jobs on the same spaces, each with the result it gets alone.
    Jobs whose specs share their defining assumptions (and the names of their own scalars) are searched
    in lockstep: one evaluation of the constants per call serves every job's candidates, the jobs of
    other settings (their own ``scalars``, e.g. other p) included, as per-row scalars. ``workers > 1``:
    the spaces are searched in that many forked processes (same results)."""
    jobs = list(jobs)
    for jb in jobs:
        if jb.spec.relation not in ("<=", ">="):
            raise ClaimError(f"claim {jb.spec.id}: the search needs a <= or >= relation, got {jb.spec.relation!r}")
        for space in spaces:  # a scalar n must be each space's batch size (checked before any work)
            with_batch_size(jb.spec, space.n, _job_scalars(jb, scalars))
    children = []
    for jb in jobs:
        seq = jb.seed if isinstance(jb.seed, np.random.SeedSequence) else np.random.SeedSequence(jb.seed)
        children.append(seq.spawn(len(spaces)))
    groups: dict = {}
    for j, jb in enumerate(jobs):
        groups.setdefault((_defining_key(jb.spec), tuple(sorted(jb.scalars or {}))), []).append(j)
    order = []
    for members in groups.values():  # rows of one spec together, and within it those of one setting
        kinds: dict = {}
        for j in members:
            kinds.setdefault((id(jobs[j].spec), id(jobs[j].require)), len(kinds))
        order.append(
            sorted(
                members,
                key=lambda j: (
                    kinds[(id(jobs[j].spec), id(jobs[j].require))],
                    tuple(float(v) for _, v in sorted((jobs[j].scalars or {}).items())),
                    j,
                ),
            )
        )
    tasks = [(i, members) for i in range(len(spaces)) for members in order]
    state = (jobs, spaces, scalars, budget, children)
    cost = [spaces[i].dim * spaces[i].k ** (spaces[i].n - 1) * len(m) for i, m in tasks]  # biggest first
    results = _map_tasks(_search_task, state, tasks, workers, cost=cost)
    best = [{"ratio": -np.inf} for _ in jobs]
    nfev = [0] * len(jobs)
    for (i, members), res in zip(tasks, results):
        for (x, r, n), j in zip(res, members):
            nfev[j] += n
            if r > best[j]["ratio"]:
                best[j] = {"ratio": r, "space": spaces[i], "x": x}
    for j in range(len(jobs)):
        best[j]["nfev"] = nfev[j]
    return best


def _lockstep_objective(jobs, members, space, scalars):
    """``obj(xs, owner)``: the ratio of each row of ``xs`` for the job ``members[owner]``, for jobs that
    share their defining assumptions (one evaluation of the constants for all rows; a job's own scalars
    that differ between jobs become per-row scalars) and are ordered spec by spec (``members``)."""
    own = [dict(jobs[j].scalars or {}) for j in members]
    names = sorted(own[0]) if own else []
    varying = [k for k in names if len({float(o[k]) for o in own}) > 1]
    shared = {k: own[0][k] for k in names if k not in varying}  # the jobs' own scalars first (as _job_scalars)
    shared.update({k: v for k, v in scalars.items() if k not in names})
    lane_vals = {k: np.array([float(o[k]) for o in own]) for k in varying}
    settings: dict = {}  # one dict of lane scalars per setting, shared by the jobs of that setting
    lane_of = []
    for o in own:
        key = tuple(float(o[k]) for k in varying)
        lane_of.append(settings.setdefault(key, X.lane_values(varying, np.array(key))))
    spec0 = jobs[members[0]].spec
    # blocks of consecutive members with the same spec and condition: one evaluation each
    blocks = []
    for m, j in enumerate(members):
        key = (id(jobs[j].spec), id(jobs[j].require))
        if blocks and blocks[-1][0] == key:
            blocks[-1][2] = m + 1
        else:
            blocks.append([key, m, m + 1])
    scales = np.array([float(jobs[j].scale) for j in members])
    block_bounds = np.array([m for _, m0, m1 in blocks for m in (m0, m1)])
    shared_outcomes: list = []  # outcome keys (Distribution.outcomes) that several blocks read
    learning = [True]  # until a call with several blocks has shown them
    learn_lock = threading.Lock()
    layouts: dict = {}  # owner (rows per job) -> (per-row scalars, lanes): the polish repeats its layouts
    plans: dict = {}  # layout of a call -> its evaluation as a staged function (_staged_objective)
    counts: dict = {}  # layout of a call -> how many calls had it (staged from the _STAGE_AFTER-th on)

    def obj(xs, owner):
        xs = np.asarray(xs)
        owner = np.asarray(owner)
        perm = None
        if owner.size > 1 and np.any(owner[1:] < owner[:-1]):  # rows grouped by job (a row's value is its own)
            perm = np.argsort(owner, kind="stable")
            xs, owner = xs[perm], owner[perm]
        n = len(xs)
        if n >= _SPLIT_ROWS and _search_threads() > 1:  # two halves on two threads (numpy frees the GIL)
            c = n // 2
            fut = _search_pool().submit(evaluate, xs[:c], owner[:c])
            tail = evaluate(xs[c:], owner[c:])
            out = np.concatenate([fut.result(), tail])
        else:
            out = evaluate(xs, owner)
        if perm is not None:
            res = np.empty_like(out)
            res[perm] = out
            out = res
        return out

    def _lanes_of(owner):
        """Per-row scalars of rows grouped by job (owner sorted), and their runs (lanes)."""
        rows = {k: v[owner] for k, v in lane_vals.items()} or None
        lanes = None
        if rows:  # runs of consecutive jobs with the same setting
            cuts = np.searchsorted(owner, np.arange(len(members) + 1))
            lanes = []
            for m in range(len(members)):
                a, b = int(cuts[m]), int(cuts[m + 1])
                if a == b:
                    continue
                if lanes and lanes[-1][1] is lane_of[m] and lanes[-1][0].stop == a:
                    lanes[-1] = (slice(lanes[-1][0].start, b), lane_of[m])
                else:
                    lanes.append((slice(a, b), lane_of[m]))
        return rows, lanes

    def evaluate(xs, owner):
        """The ratios of rows grouped by job (owner sorted)."""
        # the evaluation as a staged straight-line function, per layout of the call (and outcomes shared).
        # The outcomes shared are read once, here (``so``), and this snapshot alone serves the key, the
        # staging and the walk below: a split call runs two halves on two threads, and one half may
        # rewrite ``shared_outcomes`` (learning, at the end of its walk) while the other is between
        # computing its key and staging; with the list read again there, a plan staged with the new
        # outcomes would be stored under a key naming the old ones (a key that does not describe it).
        so = tuple(shared_outcomes)  # (one C-level copy under the GIL: a consistent list)
        okey = (owner.dtype.str, owner.tobytes())
        pkey = (*okey, xs.shape, xs.strides, xs.dtype.str, xs.flags.c_contiguous, *so)
        fn = plans.get(pkey)
        if fn is not None:
            if fn is not _UNSTAGEABLE:
                try:
                    with np.errstate(all="ignore"):
                        return fn(xs)
                except Exception:  # a speed-only path: its failure is no result; the walk below decides
                    plans[pkey] = _UNSTAGEABLE
            pkey = None
        elif len(plans) > _PLANS:
            plans.clear()
        hit = layouts.get(okey) if lane_vals else None
        if hit is not None:  # the same rows per job as an earlier call (the polish's calls): the same lanes
            rows, lanes = hit
        else:
            rows, lanes = _lanes_of(owner)
            if lane_vals:
                if len(layouts) > 64:
                    layouts.clear()
                layouts[okey] = (rows, lanes)
        with np.errstate(all="ignore"):  # once for the whole call (the evaluations below are quiet)
            if pkey is not None and counts.get(pkey, 0) >= _STAGE_AFTER:
                cuts = np.searchsorted(owner, block_bounds)
                parts = []
                for bi, (_, m0, _) in enumerate(blocks):
                    a, b = int(cuts[2 * bi]), int(cuts[2 * bi + 1])
                    if a < b:
                        jb = jobs[members[m0]]
                        sc = scales[owner[a:b]]
                        parts.append((a, b, jb.spec, float(sc[0]) if np.all(sc == sc[0]) else sc, jb.require))
                try:
                    fn, out = _staged_objective(spec0, space, xs, shared, rows, lanes, so, parts, len(xs))
                except Exception:
                    # X.Unstageable (a node the Stager does not write), or any other error while staging (a
                    # limitation of the Stager, a spec shape its mirror of the evaluator does not handle):
                    # staging only saves time, so it never aborts the search; the layout is marked and
                    # this call (and the next ones of the layout) takes the walk below, which gives the
                    # value, or raises the evaluation's own error with its own message
                    plans[pkey] = _UNSTAGEABLE
                else:
                    plans[pkey] = fn
                    counts.pop(pkey, None)
                    return out
            elif pkey is not None:
                if len(counts) > 4 * _PLANS:
                    counts.clear()
                counts[pkey] = counts.get(pkey, 0) + 1
            _, _, _, env = _search_env(spec0, space, xs, shared, rows=rows, lanes=lanes, quiet=True)
            dist = env.dist
            for key in so:  # outcomes several blocks read: computed once on all rows
                dist.outcomes(key)
            before = set(dist.cached_keys())
            out = np.zeros(len(xs))
            cuts = np.searchsorted(owner, block_bounds)
            seen: dict = {}
            taken = 0
            for bi, (_, m0, _) in enumerate(blocks):
                a, b = int(cuts[2 * bi]), int(cuts[2 * bi + 1])
                if a == b:
                    continue
                jb = jobs[members[m0]]
                sub = env if (a == 0 and b == len(xs)) else env.take(a, b)
                sc = scales[owner[a:b]]
                scale = float(sc[0]) if np.all(sc == sc[0]) else sc
                out[a:b] = _ratio_of(jb.spec, sub, scale, jb.require)
                if learning and sub is not env:
                    taken += 1
                    for key in sub.dist.cached_keys():
                        if key not in before:
                            seen[key] = seen.get(key, 0) + 1
            if learning and taken >= 2:  # learnt from a call with several blocks: what they share
                with learn_lock:  # the first half of a split call to learn sets them (once)
                    if learning:
                        shared_outcomes[:] = [key for key, c in seen.items() if c >= 2]
                        learning.clear()
        return out

    return obj


_UNSTAGEABLE = object()
_STAGE_AFTER = 1  # a layout seen this many times before is staged (a function per layout costs ~1-3 ms)
_PLANS = 512  # staged functions kept per objective
_SPLIT_ROWS = 512  # an objective call with this many rows is split in two halves over two threads
_POOL: dict = {}


def _search_threads() -> int:
    """Threads for one large objective call: ``$LPTHEORY_SEARCH_THREADS``, else min(2, cores). A row's
    value does not depend on the other rows of its call, so the results do not depend on this (nor on
    where a call is cut: anywhere, the rows stay grouped by job)."""
    import os

    env = os.environ.get("LPTHEORY_SEARCH_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"LPTHEORY_SEARCH_THREADS must be an integer >= 1, got {env!r}") from None
    return min(2, os.cpu_count() or 1)


def _search_pool():
    """One worker thread for the other half of a split call (made again in a forked child)."""
    import concurrent.futures as cf
    import os

    got = _POOL.get("pool")
    if got is None or got[0] != os.getpid():
        got = _POOL["pool"] = (os.getpid(), cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lptheory-search"))
    return got[1]


def _search_task(state, task):
    """One space's searches for a group of jobs sharing their constants (see search_worst_many)."""
    jobs, spaces, scalars, budget, children = state
    i, members = task
    space = spaces[i]
    return maximize_many(
        _lockstep_objective(jobs, members, space, scalars),
        space.bounds(),
        seeds=[np.random.default_rng(children[j][i]) for j in members],
        maxiter=budget.maxiter,
        popsize=budget.popsize,
    )


_FORKED: dict = {}


def _forked_call(key, fn, k):
    state, tasks = _FORKED[key]
    return fn(state, tasks[k])


def _map_tasks(fn, state, tasks, workers: int, cost=None):
    """``[fn(state, t) for t in tasks]``, in ``workers`` forked processes when there are several (the
    state, which may hold closures, is inherited, not pickled; the costliest tasks, by ``cost``, are
    started first); in order, same results."""
    import multiprocessing as mp

    workers = min(int(workers), len(tasks))
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        return [fn(state, t) for t in tasks]
    import concurrent.futures as cf

    key = id(state)
    _FORKED[key] = (state, tasks)
    try:
        order = sorted(range(len(tasks)), key=lambda k: -(cost[k] if cost is not None else 0))
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as ex:
            futs = {k: ex.submit(_forked_call, key, fn, k) for k in order}
            return [futs[k].result() for k in range(len(tasks))]
    finally:
        _FORKED.pop(key, None)


def _candidate_filter(spec: ClaimSpec, scalars: dict):
    """``where(setting) -> bool`` for the spec's setting-form assumptions (None without any): every
    candidate of a search is checked with the setting :meth:`DistributionSpace.setting` describes."""
    checks = [a for a in spec.assumptions if a.check is not None]
    if not checks:
        return None

    def where(setting):
        full = {**scalars, **setting}
        for a in checks:
            try:
                ok = a.check(full)
            except (KeyError, TypeError, ValueError) as exc:
                raise ClaimError(
                    f"claim {spec.id}: the check of assumption {a.name!r} cannot read a search candidate's setting "
                    f"(keys {sorted(full)}): {exc!r}"
                ) from exc
            if not (ok[0] if isinstance(ok, tuple) else ok):
                return False
        return True

    return where


def adversarial_search(
    spec: ClaimSpec,
    spaces,
    params: dict,
    *,
    scalars: dict | None = None,
    seed,
    budget: SearchBudget = SearchBudget(),
    scale: float = 1.0,
    require=None,
    progress=None,
) -> Claim:
    """The worst ratio over the distributions of ``spaces`` that meet the spec's assumptions exactly
    (every constant defined by an assumption takes its tightest admissible value). The worst point is
    always re-checked at high precision (its re-checked values are reported); ``violated`` needs the
    re-check to confirm. ``scale`` multiplies the bound (planted false bounds in tests); ``require``:
    a condition on the constants that candidates must meet, a sympy relation such as
    ``CoordSum(sigma) > 1e-6 * G`` (non-negligible noise; :class:`SearchJob`; a callable is a TypeError)."""
    return adversarial_search_many(
        [SearchJob(spec, seed, scale, require)], spaces, [params], scalars=scalars, budget=budget, progress=progress
    )[0]


def adversarial_search_many(
    jobs,
    spaces,
    params: list[dict],
    *,
    scalars: dict | None = None,
    budget: SearchBudget = SearchBudget(),
    progress=None,
    workers: int = 1,
) -> list[Claim]:
    """:func:`adversarial_search` for several :class:`SearchJob` on the same spaces and scalars (one
    record each, the record it gets alone); their searches share evaluations
    (:func:`search_worst_many`), spread over ``workers`` processes."""
    from .recheck import recheck

    t0 = time.perf_counter()
    sc_in = dict(scalars or {})
    jobs = list(jobs)
    # setting-form assumptions (Assumption(check=...)) are checked on every candidate: a job with such
    # assumptions searches only the candidates that meet them (its own filtered spaces)
    filt = {j: _candidate_filter(jb.spec, _job_scalars(jb, sc_in)) for j, jb in enumerate(jobs)}
    plain = [j for j in range(len(jobs)) if filt[j] is None]
    bests = [None] * len(jobs)
    if plain:
        for j, b in zip(
            plain, search_worst_many([jobs[j] for j in plain], spaces, sc_in, budget=budget, workers=workers)
        ):
            bests[j] = b
    for j in range(len(jobs)):
        if filt[j] is not None:
            spaces_j = [dataclasses.replace(s, where=filt[j]) for s in spaces]
            bests[j] = search_worst_many([jobs[j]], spaces_j, sc_in, budget=budget, workers=workers)[0]
    out = []
    for j, (jb, best, prm) in enumerate(zip(jobs, bests, params)):
        spec, scale, require = jb.spec, jb.scale, jb.require
        sc_j = _job_scalars(jb, sc_in)
        space = dataclasses.replace(best["space"], where=None)
        applicable, why, searched_within = True, None, ""
        if filt[j] is not None:
            setting = {**sc_j, **space.setting(space.decode(best["x"][None]))}
            applicable, why = _applicability(spec, setting)
            if applicable:
                searched_within = "; searched only candidates meeting " + ", ".join(
                    a.name for a in spec.assumptions if a.check is not None
                )
            else:  # no candidate met them: measured anyway on the unfiltered space
                best = search_worst_many([jb], spaces, sc_in, budget=budget, workers=workers)[0]
                space = best["space"]
                setting = {**sc_j, **space.setting(space.decode(best["x"][None]))}
                applicable, why = _applicability(spec, setting)
                why = (why or "") + " (no candidate of the space meets it; the worst unrestricted candidate is shown)"
        r, dist, sc, coords = _ratios(spec, space, best["x"][None], sc_j, scale, require)
        wsc, wco = _round_up_constants(spec, sc, coords)
        bound_expr = spec.bound if scale == 1.0 else sp.Float(scale) * spec.bound
        extra = {"require": _srepr(require)} if require is not None else None  # re-checked from the witness
        w = expression_witness(spec, scalars=wsc, coords=wco, dist=dist, rhs=bound_expr, extra=extra)
        chk = recheck(w)
        budget_txt = (
            f"{len(spaces)} restarts, {best['nfev']} exact evaluations, (d, k, n) in {[s.describe() for s in spaces]}"
        )
        prm = {
            **prm,
            "d": space.d,
            "k": space.k,
            "n": space.n,
            "search": {
                "optimizer": "differential evolution (vectorized) + Nelder-Mead polish, one run per configuration",
                "configurations (d, k, n)": [s.describe() for s in spaces],
                "restarts": len(spaces),
                "evaluations": int(best["nfev"]),
                "maxiter": budget.maxiter,
                "popsize": budget.popsize,
                "support": f"per coordinate k points u^{space.power}, u in [-1, 1] (scale-invariant ratio); "
                f"{space.coupling} coordinates; family {space.family}"
                + (f", |x| <= {space.support_bound:g}" if space.support_bound is not None else "")
                + (f", variance {space.variance:g}" if space.variance is not None else ""),
            },
            "bound_scale": scale,
        }
        emp, bnd = chk["empirical"], chk["bound"]
        note = f"float64 worst ratio {float(r[0]):.6g}{searched_within}"
        v = decide(
            spec.relation,
            emp,
            bnd,
            method="adversarial-search",
            witness=w,
            budget=budget_txt,
            note=note,
            applicable=applicable,
            why=why,
        )
        rec = claim_record(
            spec,
            v,
            params=prm,
            method="adversarial-search",
            empirical=emp,
            bound=bnd,
            data=None if v.status == "violated" else {"worst_case": {**w, "recheck": chk}},
        )
        if progress:
            progress(
                f"search {spec.id} {prm.get('p', '')}: worst ratio {float(r[0]):.4g} ({time.perf_counter() - t0:.1f}s)"
            )
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------------
# rates


def fit_exponent(x, y) -> tuple[float, float, float]:
    """Decay exponent e of y ~ x^-e by log-log least squares, with a jackknife interval (two standard
    errors): ``(e, lo, hi)``."""
    lx = np.log(np.asarray(x, dtype=float))
    ly = np.log(np.maximum(np.asarray(y, dtype=float), 1e-300))
    e = -float(np.polyfit(lx, ly, 1)[0])
    n = lx.size
    if n < 3:
        return e, -math.inf, math.inf
    loo = np.array([-np.polyfit(np.delete(lx, i), np.delete(ly, i), 1)[0] for i in range(n)])
    se = math.sqrt((n - 1) / n * float(np.sum((loo - loo.mean()) ** 2)))
    return e, e - 2.0 * se, e + 2.0 * se


def fit_slope(x, samples, *, seed, n_boot: int = 1000) -> tuple[float, float, float]:
    """Slope of log(mean of samples) on log x, with a bootstrap 95% interval (replicates resampled
    within each x): ``(slope, lo, hi)``."""
    lx = np.log(np.asarray(x, dtype=float))
    means = [float(np.mean(s)) for s in samples]
    slope = float(np.polyfit(lx, np.log(means), 1)[0])
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    boots = []
    for _ in range(n_boot):
        ys = [np.log(s[rng.integers(0, s.size, s.size)].mean()) for s in samples]
        boots.append(np.polyfit(lx, ys, 1)[0])
    lo, hi = (float(v) for v in np.quantile(boots, [0.025, 0.975]))
    return slope, lo, hi


def rate_claim(
    spec: ClaimSpec,
    x,
    y,
    params: dict,
    *,
    theory: float | None = None,
    pinned: bool,
    reference=None,
    reference_label: str | None = None,
    data=None,
    applicable: bool = True,
    why: str | None = None,
    method: str = "simulation",
    tail: int | None = None,
) -> Claim:
    """A fitted decay exponent against the claimed one (:func:`proofs_checks.verdict.decide_rate`).

    The claimed rate comes from the spec's :class:`~proofs_checks.spec.RateSpec` (``exponent``, and
    when it gives them the ``grid`` the x-values must equal and the ``tail`` of largest points the fit
    uses); ``theory``/``tail`` given here must agree with it (a conflict is a ClaimError), or stand in
    for it when the spec has no ``rate``. ``reference``: ``(x, y)`` of another method of the same claimed
    class on the same instance. ``method``: how the data were obtained (``simulation`` for runs).

    The record keeps its data (``data["rate"]``: x, y, the fit, the claimed exponent; drawn by the
    generic rate figure), a ratio-like size ``theory / fitted exponent`` (> 1 when the fitted decay is
    slower than claimed; the verdict itself uses the interval and the margin), and a ``rate-fit``
    witness that describes the instance (``setting``: the record's parameters)."""
    rs = spec.rate
    if rs is not None:
        if theory is not None and not math.isclose(float(theory), float(rs.exponent), rel_tol=1e-12):
            raise ClaimError(f"claim {spec.id}: theory={theory} conflicts with its RateSpec exponent {rs.exponent}")
        theory = rs.exponent if theory is None else theory
        if rs.tail is not None and tail is not None and int(tail) != int(rs.tail):
            raise ClaimError(f"claim {spec.id}: tail={tail} conflicts with its RateSpec tail {rs.tail}")
        tail = rs.tail if tail is None else tail
        if rs.grid and [float(v) for v in rs.grid] != [float(v) for v in x]:
            raise ClaimError(f"claim {spec.id}: the x-values {list(x)} differ from its RateSpec grid {list(rs.grid)}")
    if theory is None:
        raise ClaimError(f"claim {spec.id}: no claimed exponent (give the spec a RateSpec, or theory=)")
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if len(xs) != len(ys) or len(xs) < 2:
        raise ClaimError(f"claim {spec.id}: x and y need the same length >= 2, got {len(xs)} and {len(ys)}")
    if tail is not None and not 2 <= int(tail) <= len(xs):
        raise ClaimError(f"claim {spec.id}: tail must be in [2, {len(xs)}], got {tail}")
    fx, fy = (xs[-int(tail) :], ys[-int(tail) :]) if tail is not None else (xs, ys)
    e, lo, hi = fit_exponent(fx, fy)
    ref_e = None
    w = {
        "kind": "rate-fit",
        "claim": spec.id,
        "x": fx,
        "y": fy,
        "theory": float(theory),
        "margin": 0.05,
        "pinned": bool(pinned),
        "setting": dict(params),
    }
    if reference is not None:
        ref_e = fit_exponent(*reference)[0]
        w["reference"] = {
            "x": [float(v) for v in reference[0]],
            "y": [float(v) for v in reference[1]],
            "label": reference_label,
        }
    v = decide_rate(e, (lo, hi), theory, pinned=pinned, reference=ref_e, witness=w, applicable=applicable, why=why)
    rate = {
        "x": xs,
        "y": ys,
        "x_label": rs.x_label if rs is not None else "x",
        "fit": {"exponent": e, "lo": lo, "hi": hi, "points": len(fx)},
        "theory": float(theory),
    }
    rec = claim_record(
        spec,
        v,
        params=params,
        method=method,
        empirical=e,
        bound=float(theory),
        ci=[lo, hi],
        data={**(data or {}), "rate": rate},
        relation="rate",
    )
    rec.ratio = float(theory) / e if e > 0 and math.isfinite(e) else None
    return rec
