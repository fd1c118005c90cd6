"""Claim records and their witnesses: :func:`claim_record` (a verdict as a record),
:func:`control_record`, the ``expression`` witness of one candidate (:func:`expression_witness`, :class:`Point`)
and the ``sample-mean`` witness (:func:`sample_witness`); re-checked by :mod:`proofs_checks.recheck`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from . import expressions as X
from .records import Claim
from .spec import ClaimError, ClaimSpec
from .verdict import Verdict, control_verdict

__all__ = ["expression_witness", "Point", "sample_witness", "claim_record", "control_record"]


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
