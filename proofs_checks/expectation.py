"""The expectation engines: :func:`exact_expectation` (E[term] against the bound for a finite distribution,
exactly), :func:`monte_carlo` (the same from samples, Student-t interval with Bonferroni over ``tests``),
:func:`interval_claim` (a per-replicate measurement against a bound) and :func:`value_claim` (a computed
value against a bound, with a witness).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import expressions as X
from .evaluation import constants, evaluate_sides, require_finite, with_batch_size
from .records import Claim
from .spec import ClaimError, ClaimSpec
from .verdict import Verdict, decide
from .witnesses import Point, applicability, claim_record, expression_witness, sample_witness

__all__ = ["exact_expectation", "monte_carlo", "interval_claim", "t_ppf", "value_claim"]


def t_ppf(q: float, df) -> float:
    """``float(scipy.stats.t.ppf(q, df))`` for scalar ``q`` and ``df`` (the Student-t quantile of the checks'
    intervals), computed as scipy computes it without importing ``scipy.stats``: ``t._ppf`` is
    ``scipy.special.stdtrit(df, q)`` for 0 < q < 1 and df > 0, times the scale 1.0 plus the location 0.0;
    -inf / inf at q = 0 / 1 (the support's ends). Where scipy returns NaN (q outside [0, 1], df <= 0, a NaN
    argument) this raises ValueError naming the argument and its range: nothing returns NaN silently.
    Importing ``scipy.stats`` took ~0.3 s of CPU on top of the scipy modules a report loads anyway
    (``python -X importtime``), and these quantiles were the report's only use of it; the bits are scipy's
    (``tests/test_t_ppf.py`` compares them with ``scipy.stats.t.ppf``)."""
    from scipy.special import stdtrit

    q, df = float(q), float(df)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"t_ppf: q must be a probability in [0, 1], got {q!r}")
    if not df > 0:
        raise ValueError(f"t_ppf: df (degrees of freedom) must be > 0 (inf allowed), got {df!r}")
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    return float(stdtrit(df, q)) * 1.0 + 0.0


def exact_expectation(
    spec: ClaimSpec,
    dist: X.Distribution,
    params: dict,
    *,
    scalars: dict | None = None,
    given: dict | None = None,
    setting: dict | None = None,
    data=None,
    scope: str | None = None,
) -> Claim:
    """E[term] against the bound for one finite distribution (``dist``, S = 1), exactly.

    ``scalars``: the setting's parameters (p, eta, n, ...); ``given``: stated constants (checked
    against their assumptions: a broken one gives ``not-applicable``); other constants take their
    tightest admissible values. A violation is reported only after the witness re-checks."""
    sc = with_batch_size(spec, dist.n, scalars or {})
    sc, coords, checks = constants(spec, dist, sc, given)
    env = X.Env(scalars=sc, coords=coords, dist=dist)
    term, bound = evaluate_sides(spec, env)
    require_finite(spec, "term", term, params)
    require_finite(spec, "bound", bound, params)
    applicable, why = applicability(spec, setting, checks)
    wsc, wco = (sc, coords)
    witness = expression_witness(spec, scalars=wsc, coords=wco, dist=dist)
    v = decide(
        spec.relation, float(term[0]), float(bound[0]), method="exact", witness=witness, applicable=applicable, why=why
    )
    return claim_record(
        spec, v, params=params, method="exact", empirical=term[0], bound=bound[0], data=data, scope=scope
    )


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
    scope: str | None = None,
) -> Claim:
    """E[term] against the bound from samples (N, d) of the random vector: the spec's term must be
    ``Expect(inner)`` (times constants); the interval is Student-t at ``level``, Bonferroni over
    ``tests`` simultaneous claims."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim != 2 or samples.shape[0] < 2:
        raise ValueError(
            f"monte_carlo: samples must be a 2-D array (N, d) with N >= 2 rows (a Student-t interval needs two), "
            f"got shape {samples.shape}"
        )
    N, d = samples.shape
    term = sp.sympify(spec.term)
    coef, inner = _split_expect(spec, term)
    pop = X.Distribution(samples[:, :, None], np.ones((N, d, 1)), 1)  # one point mass per sample
    sc = dict(scalars or {})
    env = X.Env(scalars=sc, coords=coords or {}, dist=pop, S=N)
    per = X.evaluate(coef * X.Expect(inner), env)
    env1 = X.Env(scalars=sc, coords=coords or {}, S=1)
    bound = float(X.evaluate(spec.bound, env1)[0])
    require_finite(spec, "term", per, params)
    require_finite(spec, "bound", bound, params)
    m = float(per.mean())
    q = t_ppf(1 - (1 - level) / (2 * tests), N - 1)
    half = q * float(per.std(ddof=1)) / math.sqrt(N)
    ci = (m - half, m + half)
    applicable, why = applicability(spec, setting)
    w = sample_witness(spec, per, bound, tests=tests, level=level)
    v = decide(spec.relation, m, bound, method="monte-carlo", ci=ci, witness=w, applicable=applicable, why=why)
    return claim_record(
        spec,
        v,
        params={**params, "samples": N},
        method="monte-carlo",
        empirical=m,
        bound=bound,
        ci=ci,
        data=data,
        scope=scope,
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
    scope: str | None = None,
) -> Claim:
    """The mean of per-replicate ``values`` against ``bound`` (Student-t interval, Bonferroni over
    ``tests``), e.g. a quantity measured along simulator runs.

    ``of``: test a function of the mean instead, a sympy expression in one symbol standing for the
    mean (e.g. ``m**2`` for (E X)^2 <= B): the estimate is f(mean) and its interval the image of the
    mean's interval under f (interval arithmetic, sympy ``AccumBounds``: exact for monotone pieces,
    e.g. [0, max] when the interval of m straddles 0 for m**2); the witness (kind ``mean-function``)
    re-checks the same at 30 digits."""
    v = np.asarray(values, dtype=np.float64).ravel()
    require_finite(spec, "measured value", v, params)
    require_finite(spec, "bound", bound, params)
    m = float(v.mean())
    if v.size > 1:
        half = t_ppf(1 - (1 - level) / (2 * tests), v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
    else:
        half = math.inf
    ci = (m - half, m + half)
    w = sample_witness(spec, v, bound, tests=tests, level=level)
    if of is not None:
        fn, sym = _function_of_mean(spec, of)
        m, ci = _image(fn, sym, m, ci)
        require_finite(spec, "function of the mean", [m, *ci], params)
        w = {**w, "kind": "mean-function", "function": sp.srepr(fn), "variable": sym.name}
    verdict = decide(
        spec.relation, m, float(bound), method=method, ci=ci, witness=w, applicable=applicable, why=why, note=note
    )
    return claim_record(
        spec, verdict, params=params, method=method, empirical=m, bound=bound, ci=ci, data=data, scope=scope
    )


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
    from .witness_core import parse

    base = recheck_sample_mean({**w, "kind": "sample-mean", "bound": 0.0, "relation": "<="}, dps)
    fn = parse(w["function"], "function")  # the srepr text written by interval_claim, read by the safe parser
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
    setting: dict | None = None,
    scope: str | None = None,
) -> Claim:
    """A computed value against a bound (exact methods).

    A failure is ``violated`` only with a witness that re-checks: give ``at``, the :class:`Point` where
    the value was computed (the engine builds the witness from the spec's sides), or a ``witness`` of
    another kind (:func:`proofs_checks.recheck.register`). ``uncertified``: the numbers are estimates
    that certify neither side (e.g. both lower bounds): the record is ``inconclusive`` with this
    reason, the numbers kept. ``relation``: the record's relation when it is not the spec's (an
    equality measured as a difference against a tolerance). ``setting``: the setting the spec's setting-form
    assumptions (``Assumption(name, check=fn)``) are checked on, as the other engines do (a broken one gives
    ``not-applicable``, its reason joined to ``why``). ``scope``: what was tested, in words (default: derived
    from the evidence and the setting)."""
    require_finite(spec, "value", empirical, params)
    if setting is not None:
        ok, broken = applicability(spec, setting)
        if not ok:
            applicable, why = False, "; ".join(w for w in (why, broken) if w)
    require_finite(spec, "bound", bound, params)
    rel = relation or spec.relation
    if at is not None:
        if witness is not None:
            raise TypeError(f"claim {spec.id}: give either at= (a Point) or witness=, not both")
        witness = at.witness(spec)
    if uncertified is not None:
        v = Verdict("inconclusive", uncertified)
        return claim_record(
            spec,
            v,
            params=params,
            method=method,
            empirical=empirical,
            bound=bound,
            data=data,
            relation=rel,
            scope=scope,
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
        spec, v, params=params, method=method, empirical=empirical, bound=bound, data=data, relation=rel, scope=scope
    )
