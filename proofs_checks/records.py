"""Claim records: the contract every check in the project follows.

A record states one claim of the paper exactly as the paper writes it, where it comes from, the
setting it was checked in, and the verdict:

``id``         stable identifier (e.g. ``thm1.B2``); several records may share an id (one per setting)
``statement``  the claim as the paper writes it
``source``     where in the paper
``assumptions`` the assumptions the claim needs (as the paper names them)
``params``     the setting (p, d, n, noise, problem, method parameters, ...)
``status``     ``holds`` | ``violated`` | ``inconclusive`` | ``not-applicable``
``empirical``  the measured value (an expectation, a worst ratio's numerator, ...)
``bound``      the paper's bound in this setting
``ratio``      empirical / bound
``ci``         ``[lo, hi]`` for Monte Carlo estimates (95%), else None
``method``     ``exact`` | ``monte-carlo`` | ``adversarial-search`` | ``symbolic``
``witness``    for ``violated``: everything needed to re-check the violation without the toolkit
``reason``     for ``inconclusive`` and ``not-applicable`` (and a short note otherwise)
``data``       optional series the figures draw (never recomputed by ``figures``)

Statuses follow the design notes: ``holds`` when exact, or when the upper confidence limit is below
the bound, or when a search found no violation within its stated budget; ``violated`` only with a
witness that re-checks independently; ``inconclusive`` with the reason; ``not-applicable`` when the
setting breaks an assumption of the claim (the broken assumption is named, the measurement is kept).
"""

from __future__ import annotations

import json
import math
import platform
from dataclasses import asdict, dataclass, field

__all__ = ["Claim", "STATUSES", "METHODS", "validate_record", "meta", "format_table", "dumps"]

STATUSES = ("holds", "violated", "inconclusive", "not-applicable")
METHODS = ("exact", "monte-carlo", "adversarial-search", "symbolic")
_REQUIRED = (
    "id",
    "statement",
    "source",
    "params",
    "status",
    "empirical",
    "bound",
    "ratio",
    "ci",
    "method",
    "witness",
    "reason",
)


def _clean(x):
    """JSON-safe: numpy scalars and arrays to Python, non-finite floats to strings ('inf', 'nan')."""
    try:
        import numpy as np

        if isinstance(x, np.ndarray):
            return [_clean(v) for v in x.tolist()]
        if isinstance(x, np.generic):
            x = x.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


@dataclass
class Claim:
    """One claim record (see the module docstring for the fields)."""

    id: str
    statement: str
    source: str
    status: str
    method: str
    params: dict = field(default_factory=dict)
    assumptions: list = field(default_factory=list)
    empirical: float | None = None
    bound: float | None = None
    ratio: float | None = None
    ci: list | None = None
    witness: dict | None = None
    reason: str | None = None
    data: dict | None = None
    proof: str | None = None  # symbolic audit: which proof (thm1, lemma-B1, lemma-B2, appendix-B)
    step: str | None = None  # symbolic audit: the step's label
    rule: str | None = None  # symbolic audit: the rule the paper invokes

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.status == "violated" and not self.witness:
            raise ValueError(f"claim {self.id}: a 'violated' record needs a witness")
        if self.status in ("inconclusive", "not-applicable") and not self.reason:
            raise ValueError(f"claim {self.id}: an {self.status!r} record needs a reason")
        if self.ratio is None and self.empirical is not None and self.bound not in (None, 0):
            self.ratio = ratio(self.empirical, self.bound)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("proof", "step", "rule"):  # only symbolic records carry these
            if d[k] is None:
                del d[k]
        return _clean(d)


def ratio(empirical: float, bound: float) -> float:
    """empirical / bound, with 0/0 = 0 (a zero term against a zero bound) and x/0 = inf for x > 0."""
    if bound == 0:
        return 0.0 if empirical == 0 else math.inf
    return float(empirical) / float(bound)


def validate_record(rec: dict) -> None:
    """Raise ValueError unless ``rec`` (a dict, e.g. parsed from ``--json``) follows the record schema."""
    missing = [k for k in _REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"record {rec.get('id')!r} lacks fields {missing}")
    if rec["status"] not in STATUSES:
        raise ValueError(f"record {rec['id']!r}: bad status {rec['status']!r}")
    if rec["method"] not in METHODS:
        raise ValueError(f"record {rec['id']!r}: bad method {rec['method']!r}")
    if rec["status"] == "violated" and not rec["witness"]:
        raise ValueError(f"record {rec['id']!r}: violated without a witness")
    if rec["status"] in ("inconclusive", "not-applicable") and not rec["reason"]:
        raise ValueError(f"record {rec['id']!r}: {rec['status']} without a reason")
    if not isinstance(rec["params"], dict):
        raise ValueError(f"record {rec['id']!r}: params must be an object")


def meta(check: str, seed: int, config: dict) -> dict:
    """Provenance for a set of records: versions, seed, configuration."""
    import numpy
    import scipy

    import lptheory

    out = {
        "check": check,
        "seed": seed,
        "config": config,
        "versions": {
            "lptheory": lptheory.__version__,
            "python": platform.python_version(),
            "numpy": numpy.__version__,
            "scipy": scipy.__version__,
        },
    }
    try:
        import mpmath

        out["versions"]["mpmath"] = mpmath.__version__
    except ImportError:  # pragma: no cover
        pass
    return _clean(out)


def dumps(claims: list, meta_: dict) -> str:
    """The ``--json`` document: ``{"claims": [...], "meta": {...}}``."""
    return json.dumps({"claims": [c.to_dict() if isinstance(c, Claim) else c for c in claims], "meta": meta_})


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return f"{x:.3g}"
    return str(x)


def _setting(params: dict) -> str:
    keys = ("p", "d", "n", "noise", "problem", "T", "setting", "direction")
    return " ".join(f"{k}={_fmt(params[k])}" for k in keys if k in params)


def format_table(claims: list) -> str:
    """A readable table: id, setting, method, empirical, bound, ratio, status, reason (shortened)."""
    rows = [c.to_dict() if isinstance(c, Claim) else c for c in claims]
    head = ("id", "setting", "method", "empirical", "bound", "ratio", "status")
    body = [
        (
            r["id"],
            _setting(r["params"]),
            r["method"],
            _fmt(r["empirical"]),
            _fmt(r["bound"]),
            _fmt(r["ratio"]),
            r["status"].upper() if r["status"] == "violated" else r["status"],
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r, b in zip(rows, body):
        lines.append("  ".join(v.ljust(w) for v, w in zip(b, widths)))
        if r.get("reason") and r["status"] != "holds":
            lines.append(" " * 4 + "reason: " + r["reason"])
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    lines.append("")
    lines.append("verdicts: " + ", ".join(f"{counts[s]} {s}" for s in STATUSES))
    if counts["violated"]:
        lines.append("A 'violated' verdict is a finding about the paper, not a failure of the run.")
    return "\n".join(lines)
