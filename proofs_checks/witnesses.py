"""Claim records and their witnesses: :func:`claim_record` (a verdict as a record),
:func:`control_record`, the ``expression`` witness of one candidate (:func:`expression_witness`, :class:`Point`)
and the ``sample-mean`` witness (:func:`sample_witness`); re-checked by :mod:`proofs_checks.recheck`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from . import expressions as X
from .records import Claim
from .spec import ClaimError, ClaimSpec
from .verdict import Verdict, control_verdict

__all__ = [
    "expression_witness",
    "Point",
    "sample_witness",
    "claim_record",
    "control_record",
    "MinEig",
    "SingVal",
    "PolarFactor",
    "Rank",
    "gate_on_controls",
    "divergence_claim",
    "bnb_record",
    "with_certificate",
    "prove_expression",
    "scoped",
]

MinEig = sp.Function("MinEig")
MinEig.__doc__ = """MinEig(M): the smallest eigenvalue of the symmetric matrix ``M`` (a ``sympy.ImmutableMatrix`` of
expressions), for a witness's conditions such as ``("H <= diag(L)", MinEig(ImmutableMatrix(diag(L) - H)), ">=", 0)``.
The re-check evaluates it at 60 digits and encloses it rigorously for any n x n (Rayleigh quotient above, interval
LDL^T below), so a witness with such a condition can be proved."""
MinEig.__module__ = "proofs_checks.witnesses"  # sympy's undefined functions have neither (help() and pydoc need both)

SingVal = sp.Function("SingVal")
SingVal.__doc__ = """SingVal(M, k): the k-th largest singular value (k = 1, 2, ...) of the matrix ``M`` (a
``sympy.ImmutableMatrix`` of numbers or expressions of the witness's scalars), in a witness's sides or conditions. The
re-check computes it from M's entries by an SVD at 60 digits, so the singular values a witness speaks of are those
of the matrix it carries (not enclosed in ball arithmetic: such a violation is ``exact``, not ``proved``)."""
SingVal.__module__ = "proofs_checks.witnesses"

PolarFactor = sp.Function("PolarFactor")
PolarFactor.__doc__ = """PolarFactor(M, i, j): entry (i, j) (from 0) of the orthogonal polar factor U V^T of
``M = U S V^T`` (rows >= cols, full column rank: the factor is unique), e.g. Muon's orthogonalized update; the
re-check computes it by an SVD of M's entries at 60 digits."""
PolarFactor.__module__ = "proofs_checks.witnesses"

Rank = sp.Function("Rank")
Rank.__doc__ = """Rank(M, tol): how many singular values of ``M`` exceed ``tol`` (the numerical rank), computed by the
re-check from M's entries at 60 digits."""
Rank.__module__ = "proofs_checks.witnesses"


def srepr_text(e) -> str:
    return sp.srepr(sp.sympify(e))


def _names(expr) -> set[str]:
    return {s.name for s in sp.sympify(expr).free_symbols}


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
        "lhs": srepr_text(lhs),
        "rhs": srepr_text(rhs),
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
                "lhs": srepr_text(a.symbol),
                "relation": a.relation,
                "rhs": srepr_text(a.value),
                "per_coordinate": a.per_coordinate,
            }
            for a in spec.defining()
        ]
    if conds:
        w.setdefault("assumptions", [])
        w["assumptions"] += [
            {"name": name, "lhs": srepr_text(c_lhs), "relation": rel, "rhs": srepr_text(c_rhs), "per_coordinate": per}
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


def round_up_constants(spec, scalars, coords):
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
    show=None,
    scope: str | None = None,
    evidence: str | None = None,
) -> Claim:
    """The record of ``spec`` with the verdict ``verdict`` (:func:`proofs_checks.verdict.decide`,
    :func:`~proofs_checks.verdict.combine`, ...) in the setting ``params``: the one place where records
    are built, for checks whose verdict combines several parts (a bound along a grid and a rate, a
    proof step's rule and spot checks). ``empirical``/``bound`` may be None (nothing measured); ``show``
    (default: the spec's), ``scope`` (default: derived from the evidence and setting) and ``evidence``
    (default: the verdict's own level, else derived) override the record's fields. A verdict's certificate (a
    toolkit decision's: :mod:`proofs_checks.certificates`) is kept in ``data["certificate"]``."""
    data = with_certificate(data, getattr(verdict, "certificate", None))
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
        show=list(show) if show is not None else (list(spec.show) or None),
        # the level given, else the verdict's own when it sets one, else derived
        evidence=evidence or getattr(verdict, "evidence", None),
        scope=scope,
    )


def scoped(rec: Claim, scope: str | None) -> Claim:
    """``rec`` with the scope ``scope`` (what was tested, in words) when given: the ``scope=`` of every engine
    (:func:`bnb_record`, :func:`divergence_claim`, :func:`proofs_checks.api.adversarial_search`,
    :func:`~proofs_checks.api.rate_claim`, ...); None keeps the derived one. Raises ValueError on an empty
    string (a record's scope names what was tested)."""
    if scope is None:
        return rec
    if not isinstance(scope, str) or not scope.strip():
        raise ValueError(f"claim {rec.id}: scope must be a non-empty string (what was tested), got {scope!r}")
    return dataclasses.replace(rec, scope=scope)


def with_certificate(data, cert):
    """``data`` (a dict or None) with the certificate ``cert`` added under ``data["certificate"]`` (a list when
    there are several); ``data`` unchanged when ``cert`` is None."""
    if not cert:
        return data
    data = dict(data or {})
    old = data.get("certificate")
    if old is None:
        data["certificate"] = cert
    else:
        olds = old if isinstance(old, list) else [old]
        data["certificate"] = olds + ([cert] if cert not in olds else [])
    return data


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
        raise ValueError(
            f"control_record: {rec.id!r} is not named a control (a '.control' part in the id or a 'control' parameter)"
        )
    raw = Verdict(rec.status, rec.reason or rec.status, rec.witness, None, rec.evidence)
    v = control_verdict(control, raw, what, failed=failed)
    return dataclasses.replace(rec, status=v.status, reason=v.reason, evidence=rec.evidence)


def applicability(spec: ClaimSpec, setting: dict | None, checks=()):
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


# ---------------------------------------------------------------------------------------------------
# negative controls on verdicts or records


def gate_on_controls(method: str, v, controls: dict):
    """:func:`proofs_checks.verdict.gate_on_controls` for verdicts *or* records: ``v`` a :class:`Verdict` or a
    :class:`Claim` (e.g. what :func:`rate_claim` returns), ``controls`` name -> a verdict or a record of that
    control under the same rule. Returns the same type as ``v`` (a record keeps everything but its status and
    reason)."""
    from .verdict import gate_on_controls as gate

    for name, c in controls.items():
        if not hasattr(c, "status"):
            raise TypeError(f"controls[{name!r}] must be a Verdict or a Claim record, got {type(c).__name__}")
    if isinstance(v, Claim):
        chk = v.witness.get("recheck") if isinstance(v.witness, dict) else None
        gated = gate(method, Verdict(v.status, v.reason or v.status, v.witness, chk, v.evidence), controls)
        return dataclasses.replace(v, status=gated.status, reason=gated.reason)
    if not isinstance(v, Verdict):
        raise TypeError(f"v must be a Verdict or a Claim record, got {type(v).__name__}")
    return gate(method, v, controls)


# ---------------------------------------------------------------------------------------------------
# divergence: a boundedness / convergence claim violated by an iteration that leaves every bound


def divergence_claim(
    spec: ClaimSpec,
    update: dict,
    start: dict,
    params: dict,
    *,
    threshold: float,
    scalars: dict | None = None,
    measure=None,
    max_steps: int = 10000,
    scope: str | None = None,
) -> Claim:
    """The record of a convergence (boundedness) claim against an iteration ``state <- update(state)``
    (``update``: state name -> sympy expression of the state symbols and ``scalars``), run from ``start`` in
    float64 until ``measure`` (default: the largest |state|) exceeds ``threshold`` (the bound any convergent run
    from here would respect; e.g. a multiple of the start's size) or an iterate stops being finite.

    The claim is ``violated`` with a witness of kind ``divergence`` (the update, start, the iterate count and the
    finite last values; re-checked at 60 digits by :func:`proofs_checks.recheck.recheck`) when the measure
    exceeds the threshold at a finite iterate; ``inconclusive`` when nothing exceeds it in ``max_steps`` steps (a
    finite run shows no convergence). The numbers are the last finite iterate's: never NaN or infinite.
    ``scope``: what was run, in words (default: derived from the evidence and the setting)."""
    return scoped(
        _divergence_claim(
            spec, update, start, params, threshold=threshold, scalars=scalars, measure=measure, max_steps=max_steps
        ),
        scope,
    )


def _divergence_claim(
    spec: ClaimSpec,
    update: dict,
    start: dict,
    params: dict,
    *,
    threshold: float,
    scalars: dict | None = None,
    measure=None,
    max_steps: int = 10000,
) -> Claim:
    """The record of :func:`divergence_claim` (without its scope)."""
    if not isinstance(update, dict) or not update:
        raise ValueError("update must map each state name to its update expression")
    if set(start) != set(update):
        raise ValueError(f"start must give every state variable {sorted(update)}, got {sorted(start)}")
    if not (isinstance(threshold, (int, float)) and np.isfinite(threshold) and threshold > 0):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold!r}")
    if not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
    sc = {k: float(v) for k, v in (scalars or {}).items()}
    names = list(update)
    syms = {s.name: s for e in update.values() for s in sp.sympify(e).free_symbols}
    state_syms = [syms.get(k, sp.Symbol(k)) for k in names]
    measure = sp.Max(*[sp.Abs(s) for s in state_syms]) if measure is None else sp.sympify(measure)
    args = state_syms + [syms.get(k, sp.Symbol(k)) for k in sc]
    fns = [sp.lambdify(args, sp.sympify(update[k]), modules="math") for k in names]
    mfn = sp.lambdify(args, measure, modules="math")
    state = [float(start[k]) for k in names]
    extra = list(sc.values())
    last_ok, steps, m, overflow = state, 0, float(mfn(*state, *extra)), False
    with np.errstate(all="ignore"):
        for t in range(1, max_steps + 1):
            try:
                new = [float(f(*state, *extra)) for f in fns]
                m_new = float(mfn(*new, *extra))
            except (OverflowError, ZeroDivisionError, ValueError):
                new, m_new = [math.nan], math.nan
            if not (all(np.isfinite(new)) and np.isfinite(m_new)):
                overflow = True  # step t leaves float64: the witness names it, the re-check computes it
                steps = t
                break
            state, last_ok, steps, m = new, new, t, m_new
            if m > threshold:
                break
    w = {
        "kind": "divergence",
        "claim": spec.id,
        "update": {k: srepr_text(update[k]) for k in names},
        "start": {k: float(start[k]) for k in names},
        "scalars": sc,
        "steps": steps,
        "measure": srepr_text(measure),
        "threshold": float(threshold),
        "last": dict(zip(names, last_ok)),
    }
    from .verdict import decide

    if overflow:  # the float iterate at `steps` is not finite: only the high-precision re-check can show it
        from .verdict import certified_recheck

        chk = certified_recheck(w)
        if chk["violated"]:
            v = Verdict(
                "violated",
                f"diverges: the float64 iterate leaves the floats at step {steps} (last finite measure {m:.4g}); "
                f"re-checked from the witness alone ({chk['dps']} digits): the measure at step {steps} is "
                f"{chk['empirical']:.4g} > {threshold:.4g}",
                {**w, "recheck": chk},
                chk,
            )
            return claim_record(spec, v, params=params, method="exact", empirical=m, bound=threshold, relation="<=")
        v = Verdict(
            "inconclusive",
            f"the float64 iterate leaves the floats at step {steps}, but the re-check does "
            f"not confirm that the measure exceeds {threshold:.4g} there",
        )
        return claim_record(spec, v, params=params, method="exact", empirical=m, bound=threshold, relation="<=")
    if m <= threshold:
        v = Verdict(
            "inconclusive",
            f"no iterate exceeds {threshold:.4g} in {steps} finite steps (a finite run does not show convergence)",
        )
        return claim_record(spec, v, params=params, method="exact", empirical=m, bound=threshold, relation="<=")
    v = decide(
        "<=",
        m,
        float(threshold),
        method="exact",
        witness=w,
        note=f"diverges: the measure exceeds the threshold after {steps} steps",
    )
    return claim_record(spec, v, params=params, method="exact", empirical=m, bound=threshold, relation="<=")


# ---------------------------------------------------------------------------------------------------
# branch-and-bound results as records


def bnb_record(result, spec: ClaimSpec, params: dict | None = None, *, scope: str | None = None) -> Claim:
    """The record of ``spec`` decided by :func:`proofs_checks.bnb.branch_and_bound` (``result``, which keeps the
    claim it decided): ``proved`` -> ``holds`` with evidence ``proved`` (every box of the stated box proved: the
    box is in the record's params); ``violated`` -> a witness of kind ``expression`` at the separating point
    (the point's coordinates and the scalars), re-checked (60 digits, then ball arithmetic) before the record says
    ``violated``; ``inconclusive`` -> ``inconclusive`` with the unresolved boxes in the data.
    ``scope``: what the box covers, in words (default: derived from the evidence and the setting)."""
    return scoped(_bnb_record(result, spec, params), scope)


def _bnb_record(result, spec: ClaimSpec, params: dict | None = None) -> Claim:
    """The record of :func:`bnb_record` (without its scope)."""
    claim = getattr(result, "claim", None)
    if not claim:
        raise ValueError("bnb_record needs a result of branch_and_bound (it keeps the claim it decided)")
    box = {k: [float(lo), float(hi)] for k, (lo, hi) in claim["box"].items()}
    where = {**dict(params or {}), "box": box}
    data = {"bnb": result.to_dict()}
    rel = claim["relation"]
    if result.status == "proved":
        v = Verdict(
            "holds",
            f"proved on every point of the box {box} by interval branch-and-bound: {result.reason}",
            evidence="proved",
            certificate=result.certificate,
        )
        return claim_record(spec, v, params=where, method="exact", data=data, relation=rel)
    if result.status == "violated":
        from .verdict import decide

        pt = result.witness["point"]
        sc = {k: float(v) for k, v in claim["scalars"].items()} | {k: float(v) for k, v in pt.items()}
        lhs, rhs = claim["lhs"], claim["rhs"]
        if "x" in sc:  # the witness vocabulary reserves x (a sample of a distribution): the variable renamed
            new = next(n for n in ("x_", "x__", "x_box") if n not in sc)
            ren = {s: sp.Symbol(new, **s.assumptions0) for e in (lhs, rhs) for s in e.free_symbols if s.name == "x"}
            lhs, rhs = lhs.xreplace(ren), rhs.xreplace(ren)
            sc[new] = sc.pop("x")
        w = {
            "kind": "expression",
            "claim": spec.id,
            "relation": rel,
            "lhs": srepr_text(lhs),
            "rhs": srepr_text(rhs),
            "scalars": sc,
        }
        lo_l, hi_l = result.witness["lhs"]
        lo_r, hi_r = result.witness["rhs"]
        emp, bnd = (lo_l + hi_l) / 2, (lo_r + hi_r) / 2
        v = decide(rel, emp, bnd, method="exact", witness=w, note=f"branch-and-bound on the box {box}")
        return claim_record(spec, v, params=where, method="exact", empirical=emp, bound=bnd, data=data, relation=rel)
    v = Verdict("inconclusive", f"not decided on the whole box {box}: {result.reason}")
    return claim_record(spec, v, params=where, method="exact", data=data, relation=rel)


def prove_expression(witness: dict, **kw) -> dict:
    """:func:`proofs_checks.recheck.prove_expression` (a witness's violation proved in ball arithmetic), with the
    certificate of the proof (:mod:`proofs_checks.certificates`, kind ``ball-recheck``) under ``"certificate"``
    when it is proved: keep it in the record (``data={"certificate": ...}``) to earn evidence ``proved``."""
    from .certificates import issue
    from .recheck import prove_expression as prove

    out = prove(witness, **kw)
    if out.get("proved"):
        out = {
            **out,
            "certificate": issue(
                "ball-recheck",
                f"{witness.get('lhs')} {witness.get('relation', '<=')} {witness.get('rhs')} fails at the witness's "
                f"values: {out.get('proof')}",
                outcome="violated",
            ),
        }
    return out
