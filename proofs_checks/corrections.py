"""When a claim "term <= bound" fails, what holds instead: the best constant kappa with term <= kappa * bound
that the evidence supports, and its re-check.

* :func:`best_constant`: the worst ratio term / bound found by the adversarial search (re-checked at high
  precision), and, when a one-parameter family of admissible distributions is given, its supremum along
  the family (a sequence of admissible witnesses approaching it: the constant is then tight);
* :func:`recheck_correction`: the same search, with wider spaces if given, against kappa * bound. A
  corrected constant the search then violates is itself reported ``violated`` (never shrink a search to
  save a correction);
* :func:`correction_record`: both, as one record ``<id>.corrected`` with the corrected statement and the
  status of each part of the evidence: ``proved-symbolically``, ``tight-by-witness``,
  ``holds-in-search`` (with the budget), or ``violated-in-search``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .engines import SearchBudget, adversarial_search
from .records import Claim
from .spec import ClaimSpec

__all__ = [
    "as_correction",
    "best_constant",
    "recheck_correction",
    "correction_record",
    "family_supremum",
    "CORRECTION_COLUMNS",
    "EVIDENCE_KINDS",
    "correction_rows",
    "supported_constant",
    "annotate_supported",
]

# a report section of corrections (Pack.report_section(..., columns=CORRECTION_COLUMNS)(correction_rows))
CORRECTION_COLUMNS = (
    ("id", "id"),
    ("setting", "setting"),
    ("status", "status"),
    ("claimed", "claimed"),
    ("corrected", "corrected"),
    ("evidence", "evidence"),
    ("consequence", "consequence"),
)
EVIDENCE_KINDS = (
    "Evidence kinds: proved-symbolically; proved (a written argument whose numerical facts are enclosed "
    "rigorously); tight-by-witness (admissible distributions approaching the constant, "
    "re-checked at 60 digits); holds-in-search (the adversarial search re-run against the corrected statement, "
    "budget stated); violated-in-search (the correction itself fails)."
)


def correction_rows(claims) -> list[dict]:
    """The rows of a corrections report section: one per record carrying ``data["correction"]``
    (:func:`correction_record`, :func:`as_correction`), records as dicts; negative controls are left out."""
    from .records import is_control, setting_text

    out = []
    for c in claims:
        c = c.to_dict() if hasattr(c, "to_dict") else c
        cor = (c.get("data") or {}).get("correction")
        if not cor or is_control(c):  # a control (e.g. a planted violation) is no correction
            continue
        out.append(
            {
                "id": c["id"],
                "setting": setting_text(c["params"], c.get("show")),
                "status": c["status"],
                "claimed": cor.get("claimed", ""),
                "corrected": cor.get("corrected", ""),
                "evidence": [f"{e['kind']}: {e['detail']}" for e in cor.get("evidence", [])],
                "consequence": cor.get("consequence", ""),
            }
        )
    return out


_BUDGET = SearchBudget()


def family_supremum(ratio: Callable[[float], float], lo: float, hi: float, *, grid: int = 400) -> tuple[float, float]:
    """``(sup, argsup)`` of ``ratio`` over the open interval (lo, hi): a dense grid, then a bounded scalar
    refinement around the best grid point (the family's parameter, e.g. a probability)."""
    from scipy.optimize import minimize_scalar

    xs = [lo + (hi - lo) * (i + 0.5) / grid for i in range(grid)]
    vals = [ratio(x) for x in xs]
    i = max(range(grid), key=lambda j: vals[j] if math.isfinite(vals[j]) else -math.inf)
    w = (hi - lo) / grid
    a, b = max(lo, xs[i] - w), min(hi, xs[i] + w)
    res = minimize_scalar(lambda x: -ratio(x), bounds=(a, b), method="bounded", options={"xatol": 1e-12})
    best = (-float(res.fun), float(res.x)) if -res.fun >= vals[i] else (vals[i], xs[i])
    return best


def best_constant(
    spec: ClaimSpec,
    spaces,
    scalars: dict,
    *,
    seed,
    budget: SearchBudget = _BUDGET,
    family: Callable[[float], float] | None = None,
    family_range: tuple[float, float] = (0.0, 1.0),
    require=None,
) -> dict:
    """The smallest kappa the evidence supports for ``term <= kappa * bound``: ``{"kappa", "search",
    "family"}``. ``search``: the worst ratio of the adversarial search, from its 60-digit re-check.
    ``family``: a callable giving the exact ratio (term / bound) of an admissible distribution indexed by
    one parameter on ``family_range``; its supremum (``family_supremum``) when given. kappa is the larger
    of the two (never below 1: a claim that holds needs no correction)."""
    rec = adversarial_search(spec, spaces, {}, scalars=scalars, seed=seed, budget=budget, require=require)
    emp, bnd = float(rec.empirical), float(rec.bound)
    search = emp / bnd if bnd > 0 else math.inf
    fam = None
    if family is not None:
        sup, arg = family_supremum(family, *family_range)
        fam = {"sup": sup, "at": arg}
    kappa = max(1.0, search, fam["sup"] if fam else 0.0)
    return {"kappa": kappa, "search": search, "search_record": rec, "family": fam}


def recheck_correction(
    spec: ClaimSpec,
    kappa: float,
    spaces,
    params: dict,
    scalars: dict,
    *,
    seed,
    budget: SearchBudget = _BUDGET,
    require=None,
) -> Claim:
    """The adversarial search against ``kappa * bound`` (``bound_scale`` = kappa): its record holds when no
    admissible distribution of ``spaces`` beats the corrected constant, and is violated (with a witness that
    re-checks) otherwise."""
    return adversarial_search(
        spec, spaces, dict(params), scalars=scalars, seed=seed, budget=budget, scale=float(kappa), require=require
    )


def correction_record(
    spec: ClaimSpec,
    kappa: float,
    *,
    corrected_statement: str,
    spaces,
    params: dict,
    scalars: dict,
    seed,
    budget: SearchBudget = _BUDGET,
    evidence: list[dict] | None = None,
    tight: bool = False,
    require=None,
    consequence: str = "",
    scope: str | None = None,
) -> Claim:
    """The record ``<spec.id>.corrected``: the search re-check at ``kappa`` (its status is the record's
    status) plus the other evidence (``evidence``: dicts with ``kind`` and ``detail``). With ``tight``, the
    search's worst ratio against kappa * bound is reported as the approach to 1. ``scope``: what was searched, in
    words (default: the search's derived one; ValueError on an empty string, before the search runs)."""
    from .witnesses import scoped

    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise ValueError(
            f"claim {spec.id}.corrected: scope must be a non-empty string (what was tested), got {scope!r}"
        )
    rec = recheck_correction(spec, kappa, spaces, params, scalars, seed=seed, budget=budget, require=require)
    rec = as_correction(
        rec,
        spec,
        kappa,
        corrected_statement=corrected_statement,
        evidence=evidence,
        tight=tight,
        consequence=consequence,
    )
    return scoped(rec, scope)


def as_correction(
    rec: Claim,
    spec: ClaimSpec,
    kappa: float,
    *,
    corrected_statement: str,
    evidence: list[dict] | None = None,
    tight: bool = False,
    consequence: str = "",
) -> Claim:
    """Turn the search record of a re-check at ``kappa`` (:func:`recheck_correction`, or one job of
    ``adversarial_search_many`` with ``bound_scale = kappa``) into the record ``<spec.id>.corrected``: its
    status is the search's; the evidence list gets ``holds-in-search`` or ``violated-in-search`` with the
    budget appended."""
    worst = float(rec.empirical) / float(rec.bound) if float(rec.bound) > 0 else math.inf
    parts = list(evidence or [])
    search = params_budget(rec)
    if rec.status == "violated":
        parts.append(
            {
                "kind": "violated-in-search",
                "detail": f"the search beats kappa = {kappa:.6g}: worst ratio "
                f"{worst:.6g} against the corrected bound ({search})",
            }
        )
    else:
        parts.append(
            {
                "kind": "holds-in-search",
                "detail": f"worst ratio {worst:.6g} against the corrected bound "
                f"({search})" + (" (tight: approaches 1)" if tight else ""),
            }
        )
    rec.id = f"{spec.id}.corrected"
    rec.statement = corrected_statement
    rec.source = f"correction of {spec.id} ({spec.source})"
    rec.params = {**rec.params, "kappa": float(kappa), "correction_of": spec.id}
    rec.data = {
        **(rec.data or {}),
        "correction": {
            "claimed": spec.statement,
            "corrected": corrected_statement,
            "kappa": float(kappa),
            "evidence": parts,
            "worst_ratio_at_kappa": worst,
            "consequence": consequence,
        },
    }
    return rec


SUPPORTED_LABEL = (
    "smallest constant the evidence supports (the largest ratio term / bound the evidence found; a lower "
    "estimate of the true constant, not proved: the true one may be larger, up to the claimed 1)"
)


def supported_constant(rec: Claim) -> dict | None:
    """For a record of ``term <= bound`` that holds with room: the smallest kappa with term <= kappa * bound
    that the evidence supports, ``{"kappa", "label", "basis", "room"}``, never below any value found: the
    search's worst ratio (adversarial search: the largest ratio any candidate reached), the upper end of the
    interval over the bound (interval methods: every replicate mean the interval covers), or the computed
    ratio (exact). ``None`` when the record does not hold, is not a ``<=`` claim, or has no positive bound."""
    if rec.status != "holds" or rec.relation != "<=" or rec.bound is None or rec.empirical is None:
        return None
    bnd = float(rec.bound)
    if not (bnd > 0 and math.isfinite(bnd)):
        return None
    if rec.ci is not None:
        top, basis = max(float(rec.ci[1]), float(rec.empirical)), f"upper end of the 95% interval ({rec.method})"
    else:
        top = float(rec.empirical)
        basis = (
            f"worst case of the search ({params_budget(rec)})"
            if rec.method == "adversarial-search"
            else f"computed value ({rec.method})"
        )
    kappa = max(top / bnd, 0.0)
    return {"kappa": kappa, "label": SUPPORTED_LABEL, "basis": basis, "room": 1.0 - kappa}


def annotate_supported(records, methods=("adversarial-search",)) -> list:
    """``records`` with, on each of ``methods`` that holds with room (:func:`supported_constant`, kappa < 1), the
    supported constant in ``data["supported_constant"]`` and one sentence in the reason. Statuses are unchanged.
    By default only searches over the claim's whole admissible space: a ratio at one setting is no constant of the
    claim."""
    for rec in records:
        sc = supported_constant(rec) if rec.method in methods else None
        if sc is None or sc["kappa"] >= 1.0:
            continue
        rec.data = {
            **(rec.data if isinstance(rec.data, dict) else {} if rec.data is None else {"data": rec.data}),
            "supported_constant": sc,
        }
        rec.reason = (rec.reason or "") + (
            f"; smallest constant the evidence supports: kappa = {sc['kappa']:.4g} ({sc['basis']}; a lower estimate "
            "of the true constant, not proved)"
        )
    return records


def params_budget(rec: Claim) -> str:
    """The search budget of a search record, in words."""
    s = rec.params.get("search", {})
    return (
        f"{s.get('restarts', '?')} configurations (d, k, n[, coupling]) in {s.get('configurations (d, k, n)', '?')}, "
        f"{s.get('evaluations', '?')} exact evaluations, maxiter {s.get('maxiter', '?')}, popsize "
        f"{s.get('popsize', '?')}"
    )
