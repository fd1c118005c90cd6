"""Claim records: the contract every check in the project follows.

A record states one claim of the paper exactly as the paper writes it, where it comes from, the
setting it was checked in, and the verdict:

``id``         stable identifier (e.g. ``lemma3.variance``); several records may share an id (one per setting)
``statement``  the claim as the paper writes it
``source``     where in the paper
``assumptions`` the assumptions the claim needs (as the paper names them)
``params``     the setting (p, d, n, noise, problem, method parameters, ...)
``scope``      what was tested, in words: the instance, grid, family, box or search space the verdict covers
               (set by the check where it knows better, else derived from the evidence level and the setting:
               :func:`default_scope`); a reader of files written before the field derives it the same way
``status``     ``holds`` | ``violated`` | ``inconclusive`` | ``not-applicable``
``empirical``  the measured value (an expectation, a worst ratio's numerator, ...)
``bound``      the paper's bound in this setting
``relation``   ``<=`` (empirical <= bound), ``>=``, ``==``, or ``rate`` (a decay exponent against a claimed one)
``ratio``      one meaning in every record: > 1 means the relation fails (``<=``: empirical / bound;
               ``>=``: bound / empirical); empty where no ratio is meaningful (equalities, signed values)
``ci``         ``[lo, hi]`` for Monte Carlo estimates (Student-t, 95% unless said), else None
``method``     ``exact`` | ``monte-carlo`` | ``adversarial-search`` | ``symbolic`` | ``simulation``
``witness``    for ``violated``: a JSON object with a ``kind`` that :func:`proofs_checks.recheck.recheck`
               re-checks without the toolkit
``reason``     for ``inconclusive`` and ``not-applicable`` (and a short note otherwise)
``data``       optional series the figures draw (never recomputed by ``figures``)
``evidence``   how strong the verdict's evidence is (:data:`EVIDENCE`, strongest first): ``proved``
               (rigorous enclosures that separate, or an exact symbolic identity/counterexample), ``exact``
               (an exact finite computation in floating point), ``measured`` (a statistical interval),
               ``searched`` (no counterexample found by a search of stated budget), ``fit`` (a rate fit),
               ``instance`` (a claim over a class -- a worst-case rate, "for every f" -- looked at on chosen
               instances only: it can refute the claim there, never establish it, so such a record is never
               ``holds``; :func:`proofs_checks.verdict.scope_to_instances`); set by the verdict rules,
               else derived from ``method`` (:func:`proofs_checks.verdict.evidence_for`)

Statuses follow the design notes: ``holds`` when exact, or when the upper confidence limit is below
the bound, or when a search found no violation within its stated budget; ``violated`` only with a
witness that re-checks independently; ``inconclusive`` with the reason; ``not-applicable`` when the
setting breaks an assumption of the claim (the broken assumption is named, the measurement is kept).
"""

from __future__ import annotations

import json
import math
import platform
import re
from dataclasses import asdict, dataclass, field

__all__ = [
    "Claim",
    "Records",
    "STATUSES",
    "METHODS",
    "RELATIONS",
    "EVIDENCE",
    "ratio",
    "validate_record",
    "default_scope",
    "SCOPE_WORDS",
    "CLASS_WIDE_EVIDENCE",
    "CLASS_WIDE_SCOPES",
    "HOLDS_SCOPES",
    "EXHAUSTIVE_KEY",
    "exhaustive_marker",
    "mark_exhaustive",
    "is_exhaustive",
    "holds_scope",
    "holds_split_text",
    "holds_scope_sentence",
    "meta",
    "format_table",
    "is_control",
    "control_failed",
    "controls_text",
    "controls_breakdown",
    "control_names",
    "control_label",
    "status_text",
    "CONTROL_MARK",
    "status_counts_text",
    "dumps",
    "to_html",
    "clean",
    "source_info",
]

STATUSES = ("holds", "violated", "inconclusive", "not-applicable")
METHODS = ("exact", "monte-carlo", "adversarial-search", "symbolic", "simulation")
RELATIONS = ("<=", ">=", "==", "rate")
EVIDENCE = ("proved", "exact", "measured", "searched", "fit", "instance")
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


def clean(x):
    """JSON-safe: numpy scalars and arrays to Python, non-finite floats to strings ('inf', 'nan')."""
    try:
        import numpy as np

        if isinstance(x, np.ndarray):
            return [clean(v) for v in x.tolist()]
        if isinstance(x, np.generic):
            x = x.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
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
    relation: str = "<="
    show: list | None = None  # the parameters to display (the claim spec's choice)
    check: str | None = None  # the check that produced the record (set by the runner)
    evidence: str | None = None  # EVIDENCE level; None: derived from method/status/witness (verdict.evidence_for)
    scope: str | None = None  # what was tested (instance, grid, family, box); None: derived (default_scope)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        if self.status == "violated" and not (isinstance(self.witness, dict) and self.witness.get("kind")):
            raise ValueError(f"claim {self.id}: a 'violated' record needs a witness with a 'kind' (re-checkable)")
        if self.status in ("inconclusive", "not-applicable") and not self.reason:
            raise ValueError(f"claim {self.id}: an {self.status!r} record needs a reason")
        for name in ("empirical", "bound"):
            v = getattr(self, name)
            if isinstance(v, float) and math.isnan(v):
                raise ValueError(f"claim {self.id} ({_setting(self.params)}): {name} is NaN")
        if self.ratio is None and self.empirical is not None and self.bound is not None:
            self.ratio = ratio(self.relation, self.empirical, self.bound)
        if self.evidence is None:
            from .verdict import evidence_for

            self.evidence = evidence_for(self.method, self.status, self.relation, self.witness, self.reason)
            if self.evidence == "proved" and not _certified(self):  # derived, but no toolkit decision behind it
                self.evidence = evidence_for(
                    self.method, self.status, self.relation, self.witness, self.reason, certified=False
                )
        elif self.evidence == "proved" and not _certified(self):  # issue 44: proved is earned, never written
            from .certificates import refusal

            raise ValueError(refusal(self.id, self.data, self.witness))
        if self.evidence not in EVIDENCE:
            raise ValueError(f"claim {self.id}: evidence must be one of {EVIDENCE}, got {self.evidence!r}")
        if self.scope is None:
            self.scope = default_scope(self.evidence, self.params, self.show, self.status)
        if not isinstance(self.scope, str) or not self.scope.strip():
            raise ValueError(f"claim {self.id}: scope must be a non-empty string, got {self.scope!r}")
        _check_exhaustive(self.id, self.data)  # a data["exhaustive"] marker, where present, is well-formed
        object.__setattr__(self, "_built", True)  # from here on, an assigned "proved" passes the gate again

    def __setattr__(self, name, value):
        # "proved" is earned also after construction: a record's evidence set to "proved" by assignment (not by a
        # toolkit decision whose certificate the record carries) is refused as at construction
        if (
            name == "evidence"
            and value == "proved"
            and self.__dict__.get("_built")
            and not certified_data(self.data, self.witness)
        ):
            from .certificates import refusal

            raise ValueError(refusal(self.id, self.data, self.witness))
        object.__setattr__(self, name, value)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("check", "show"):  # only some records carry these
            if d[k] is None:
                del d[k]
        return clean(d)

    def _repr_html_(self) -> str:
        """The record as a one-row HTML table (Jupyter and other notebooks)."""
        return to_html([self])


def certified_data(data, witness) -> bool:
    from .certificates import certified

    return certified(data, witness)


def _certified(rec: Claim) -> bool:
    """Whether the record carries a certificate of a toolkit decision (:mod:`proofs_checks.certificates`)."""
    from .certificates import certified

    return certified(rec.data, rec.witness)


def ratio(relation: str, empirical: float, bound: float) -> float | None:
    """The ratio with one meaning in every record, > 1 when the relation fails: empirical / bound for
    ``<=`` (bound > 0), bound / empirical for ``>=`` (empirical > 0); None otherwise."""
    try:
        e, b = float(empirical), float(bound)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(e) and math.isfinite(b)):
        return None
    if relation == "<=" and b > 0:
        return e / b
    if relation == ">=" and e > 0:
        return b / e
    return None


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
    if "evidence" in rec and rec["evidence"] not in EVIDENCE:  # absent only in files written before the field
        raise ValueError(f"record {rec['id']!r}: bad evidence {rec['evidence']!r} (one of {EVIDENCE})")
    if "scope" in rec and not (isinstance(rec["scope"], str) and rec["scope"].strip()):  # absent in older files
        raise ValueError(f"record {rec['id']!r}: scope must be a non-empty string, got {rec['scope']!r}")
    _check_exhaustive(rec["id"], rec.get("data"))


SCOPE_WORDS = {
    "proved": "proved for the setting",
    "exact": "computed exactly at the setting",
    "measured": "measured at the setting",
    "searched": "searched (the stated budget) at the setting",
    "fit": "a rate fitted on the grid of the setting",
    "instance": "on the chosen instances and grid of the setting only (a class-wide claim is not established)",
}
"""How :func:`default_scope` words what a record of each evidence level tested."""


PROVED_NOT_HOLDS_WORDS = {
    "violated": "a counterexample proved at the setting",
    "inconclusive": "decided rigorously at the setting, without settling the claim (e.g. a control's proved "
    "counterexample)",
    "not-applicable": "decided rigorously at the setting, outside the claim's assumptions",
}
"""How :func:`default_scope` words a ``proved`` record that is not ``holds``: what was proved is a counterexample
(or a control's), never the claim for the setting (issue 44)."""


def default_scope(evidence: str | None, params: dict, show=None, status: str | None = None) -> str:
    """What a record tested, in words, when its check does not say: the evidence level's phrase
    (:data:`SCOPE_WORDS`; for a ``proved`` record that is not ``holds``, :data:`PROVED_NOT_HOLDS_WORDS`: a
    counterexample was proved there, not the claim) and the setting (the parameters shown, else every scalar
    parameter), e.g. ``"measured at the setting p=3 problem=quadratic-diagonal"``. The records reader derives it
    the same way for files written before the ``scope`` field."""
    words = SCOPE_WORDS.get(evidence or "exact", SCOPE_WORDS["exact"])
    if evidence == "proved" and status in PROVED_NOT_HOLDS_WORDS:
        words = PROVED_NOT_HOLDS_WORDS[status]
    setting = setting_text(params or {}, show, sep=" ") if params else ""
    if not setting and params:
        setting = "(" + ", ".join(sorted(str(k) for k in params)) + ")"
    return f"{words} {setting}" if setting else f"{words} (no parameters)"


CLASS_WIDE_EVIDENCE = ("proved",)
"""The evidence levels whose ``holds`` covers the claim's whole class (every f, every law, every setting the
statement ranges over): a rigorous proof. Every other level (``exact``, ``measured``, ``searched``, ``fit``)
establishes the claim on what was tested (the record's ``scope``) only -- except an ``exact`` record that
enumerated every member of a finite class (:func:`is_exhaustive`)."""

HOLDS_SCOPES = ("proved", "exhaustive", "tested")
"""The kinds of ``holds`` (:func:`holds_scope`): ``proved`` (class-wide by a proof), ``exhaustive`` (class-wide:
every member of the claim's finite class computed exactly) and ``tested`` (on what was tested only)."""

CLASS_WIDE_SCOPES = ("proved", "exhaustive")
"""The :data:`HOLDS_SCOPES` that cover the claim's whole class: the counts, tables and ``--fail-on unproved`` keep
them apart from ``tested``."""

EXHAUSTIVE_KEY = "exhaustive"
"""The key of ``record["data"]`` under which a check that enumerated a finite class says so
(:func:`exhaustive_marker`)."""


def exhaustive_marker(cls: str, members: int, checked: int) -> dict:
    """What a check that enumerates a claim's whole finite class puts under ``data["exhaustive"]`` (and only such a
    check): ``{"class": cls, "members": members, "checked": checked}``, the class in words (e.g. ``"the 16 sign
    patterns of {-1, 1}^4"``), how many members it has and how many were computed exactly. A ``holds`` with
    evidence ``exact`` and such a marker with ``checked == members`` covers the class (:func:`holds_scope`:
    ``"exhaustive"``); one with ``checked < members`` stays ``"tested"``.

    Raises
    ------
    ValueError
        ``cls`` empty, ``members`` < 1, or ``checked`` outside [0, members].
    TypeError
        ``cls`` not a string, ``members`` or ``checked`` not an int (a bool is not one)."""
    if not isinstance(cls, str):
        raise TypeError(f"exhaustive: class must be a string (the finite class in words), got {type(cls).__name__}")
    if not cls.strip():
        raise ValueError("exhaustive: class must name the finite class in words, got an empty string")
    for name, v in (("members", members), ("checked", checked)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"exhaustive: {name} must be an int, got {v!r}")
    if members < 1:
        raise ValueError(f"exhaustive: members must be >= 1 (the size of the finite class), got {members}")
    if not 0 <= checked <= members:
        raise ValueError(f"exhaustive: checked must be in [0, members = {members}], got {checked}")
    return {"class": cls, "members": members, "checked": checked}


def _check_exhaustive(rec_id, data) -> None:
    """ValueError/TypeError naming the record when its ``data["exhaustive"]`` is malformed
    (:func:`exhaustive_marker`)."""
    if not isinstance(data, dict) or EXHAUSTIVE_KEY not in data:
        return
    m = data[EXHAUSTIVE_KEY]
    if not isinstance(m, dict) or set(m) != {"class", "members", "checked"}:
        raise ValueError(
            f"record {rec_id!r}: data.exhaustive must be an object with the keys class, members, checked, got {m!r}"
        )
    try:
        exhaustive_marker(m["class"], m["members"], m["checked"])
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"record {rec_id!r}: data.{exc}") from None


def mark_exhaustive(claim: Claim, cls: str, members: int, checked: int) -> Claim:
    """Record on ``claim`` (in place; returned) that its check enumerated the claim's finite class: sets
    ``claim.data["exhaustive"]`` (:func:`exhaustive_marker`, which validates the three values) and says so in the
    scope (``"16 of the 16 members of <class> computed exactly (the claim's whole class)"``; a scope the check
    wrote itself is kept, the sentence appended). Only a check that computed each member exactly calls it; the
    record is class-wide (:func:`holds_scope`) only when ``checked == members`` and its evidence is ``exact``."""
    marker = exhaustive_marker(cls, members, checked)
    words = f"{checked} of the {members} members of {cls} computed exactly" + (
        " (the claim's whole class)" if checked == members else " (not the whole class)"
    )
    derived = claim.scope == default_scope(claim.evidence, claim.params, claim.show, claim.status)
    claim.scope = words if derived else f"{claim.scope}; {words}"
    claim.data = {**(claim.data or {}), EXHAUSTIVE_KEY: marker}
    return claim


def is_exhaustive(rec) -> bool:
    """Whether a record's evidence covers every member of the claim's finite class: evidence ``exact`` and a
    well-formed ``data["exhaustive"]`` (:func:`exhaustive_marker`) with ``checked == members``. A marker on any
    other evidence level (a statistical, searched or fitted value is not an exact computation of each member),
    a malformed one, or one that checked fewer members than the class has, is not exhaustive."""
    r = rec.to_dict() if isinstance(rec, Claim) else rec
    data = r.get("data")
    if r.get("evidence") != "exact" or not isinstance(data, dict):
        return False
    try:
        _check_exhaustive(r.get("id"), data)
    except (TypeError, ValueError):
        return False
    m = data.get(EXHAUSTIVE_KEY)
    return isinstance(m, dict) and m["checked"] == m["members"]


def holds_scope(rec) -> str | None:
    """How far a record's ``holds`` reaches, the one rule the counts, tables, ``results.csv`` and ``--fail-on
    unproved`` follow: ``"proved"`` when its evidence is class-wide (:data:`CLASS_WIDE_EVIDENCE`),
    ``"exhaustive"`` when an exact computation covered every member of the claim's finite class
    (:func:`is_exhaustive`), ``"tested"`` when it holds on what was tested only (its ``scope``: the chosen
    instances, grid, family or search budget); None for a record that is not ``holds``. The record's ``status``
    is never changed by it."""
    r = rec.to_dict() if isinstance(rec, Claim) else rec
    if r.get("status") != "holds":
        return None
    if r.get("evidence") in CLASS_WIDE_EVIDENCE:
        return "proved"
    return "exhaustive" if is_exhaustive(r) else "tested"


def _holds_split(claims: list) -> dict:
    return {k: sum(holds_scope(r) == k for r in claims) for k in HOLDS_SCOPES}


def holds_split_text(rows: list) -> str:
    """The split of the holds among ``rows`` that are not negative controls (:func:`holds_scope`), in the words of
    every count: ``"3 proved, 9 on what was tested"``, with ``", 2 exhaustive"`` after the proved ones only when a
    record is exhaustive (so a report without one reads as before)."""
    n = _holds_split([r for r in rows if not is_control(r)])
    ex = f", {n['exhaustive']} exhaustive" if n["exhaustive"] else ""
    return f"{n['proved']} proved{ex}, {n['tested']} on what was tested"


def holds_scope_sentence(rows: list) -> str:
    """The report's sentence on how far its holds reach (:func:`holds_scope`), over the records that are not
    negative controls; empty when none holds."""
    n = _holds_split([r for r in rows if not is_control(r)])
    k, e, m = n["proved"], n["exhaustive"], n["tested"]
    if not k + e + m:
        return ""
    wide = f"{k} {'is' if k == 1 else 'are'} proved (for the claim's whole class)"
    if e:
        wide = (
            f"{k} {'is' if k == 1 else 'are'} proved and {e} checked exhaustively (every member of the claim's finite "
            "class computed exactly), each for the claim's whole class,"
        )
    return (
        f"Of the {k + e + m} holds, {wide} and {m} "
        f"hold{'s' if m == 1 else ''} on what was tested only (the chosen instances, grids, families or search "
        "budgets each record's scope names), shown as holds (tested)."
    )


_VERSIONED = ("lptheory", "numpy", "scipy", "sympy", "mpmath", "matplotlib", "torch", "numba", "dask", "pyarrow")


def versions() -> dict:
    """Installed versions of the toolkit and its numerical dependencies (torch etc. when present)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_commit() -> str | None:
    """The git commit of the toolkit's source tree (``LPTHEORY_GIT_COMMIT`` overrides), with
    ``-dirty`` when the tree has uncommitted changes: the checkout it runs from (an editable install
    included), else the clone an installed package was built from while that clone holds the same
    sources (see :func:`source_info`); None otherwise."""

    from lptheory import config

    env = config.git_commit()
    if env:
        return env
    return _git_head(_installed_root()) or _installed_from_clone()


def config_hash(config) -> str:
    """A short, stable hash of a configuration (canonical JSON)."""
    import hashlib

    return hashlib.sha256(json.dumps(clean(config), sort_keys=True).encode()).hexdigest()[:16]


def meta(check: str, seed: int, config: dict, *, quick: bool | None = None) -> dict:
    """Provenance for a set of records: what ran, seed, configuration and its hash, quick flag,
    package versions, git commit and date (UTC)."""
    import datetime as _dt

    out = {
        "check": check,
        "seed": seed,
        "config": config,
        "config_hash": config_hash(config),
        "quick": quick if quick is not None else bool(config.get("quick", False)) if isinstance(config, dict) else None,
        "versions": versions(),
        "git_commit": git_commit(),
        "source": source_info()["text"],
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return clean(out)


def dumps(claims: list, meta_: dict, **kw) -> str:
    """The ``--json`` document: ``{"claims": [...], "meta": {...}}`` (strict JSON: no NaN tokens); ``meta.format``
    is the records format (:data:`proofs_checks.records_io.FORMAT`)."""
    from .records_io import FORMAT

    doc = {"claims": [c.to_dict() if isinstance(c, Claim) else clean(c) for c in claims], "meta": clean(meta_)}
    doc["meta"]["format"] = FORMAT
    return json.dumps(doc, allow_nan=False, **kw)


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return f"{x:.4g}"
    return str(x)


SETTING_KEYS = ("p", "d", "n", "noise", "problem", "instance", "method", "T", "direction", "variant", "setting", "step")


def setting_text(params: dict, show=None, sep: str = ", ") -> str:
    """The setting of a record in one line: ``show`` (the claim's parameters to display) or the
    common keys, in a fixed order. The one formatter of the toolkit (tables, report, CLI)."""
    keys = list(show) if show else [k for k in SETTING_KEYS if k in params]
    parts = []
    for k in keys:
        if k not in params:
            continue
        v = params[k]
        if isinstance(v, list) and len(v) > 4 and all(isinstance(u, (int, float)) for u in v):
            v = f"{_fmt(v[0])}..{_fmt(v[-1])}"
        parts.append(f"{k}={_fmt(v)}")
    return sep.join(parts)


def _setting(params: dict, show=None) -> str:
    return setting_text(params, show, sep=" ")


def is_scalar_param(v) -> bool:
    """A parameter value a label can show (a string or a number, not a bool)."""
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def distinguishing_keys(recs: list[dict], keys: list[list[str]], same, prefer=()) -> list[list[str]]:
    """Per record, its label's parameter keys ``keys[i]`` plus, where records whose ``same(i, keys)`` agree would
    read alike, the parameters whose values tell them apart: the record's ``show`` first, then ``prefer``, then
    the rest by name, only as many as needed (a key is added to a record only where it has a scalar value).
    ``same(i, keys)``: what the label of record i with those keys reads (hashable). Labels of evidence links
    and of the report's table of violated claims both use it."""
    keys = [list(k) for k in keys]

    def has(i, ks):
        return [k for k in ks if is_scalar_param(recs[i]["params"].get(k))]

    groups: dict = {}
    for i in range(len(recs)):
        groups.setdefault(same(i, keys[i]), []).append(i)
    for idx in groups.values():
        if len(idx) < 2:
            continue
        cands: list = []
        for i in idx:
            pr = recs[i]["params"]
            for k in [*(recs[i].get("show") or ()), *prefer, *sorted(pr)]:
                if k not in cands and k not in keys[i] and is_scalar_param(pr.get(k)):
                    cands.append(k)
        chosen: list = []
        for k in cands:
            if len({repr(recs[i]["params"].get(k)) for i in idx}) > 1:
                chosen.append(k)
                if len({same(i, keys[i] + has(i, chosen)) for i in idx}) == len(idx):
                    break
        for i in idx:
            keys[i] = keys[i] + has(i, chosen)
    return keys


def format_table(claims: list) -> str:
    """A readable table: id, setting, method, empirical, bound, ratio, status, reason (shortened). The status is
    the one the HTML, Markdown and LaTeX tables show (:func:`status_text`): ``holds (proved)``, ``holds
    (exhaustive)`` or ``holds (tested)`` (:func:`holds_scope`), a negative control marked, a violated claim in
    capitals."""
    rows = [c.to_dict() if isinstance(c, Claim) else c for c in claims]
    head = ("id", "setting", "method", "empirical", "bound", "ratio", "status", "evidence")
    body = [
        (
            r["id"],
            _setting(r["params"], r.get("show")),
            r["method"],
            _fmt(r["empirical"]),
            _fmt(r["bound"]),
            _fmt(r["ratio"]),
            # the status as every verdict table shows it (status_text: holds (proved|exhaustive|tested), the
            # control mark), a violated one in capitals
            "VIOLATED" + (CONTROL_MARK if is_control(r) else "") if r["status"] == "violated" else status_text(r),
            r.get("evidence") or "-",
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
    lines.append("")
    lines.append("verdicts: " + status_counts_text(rows))
    if any(r["status"] == "violated" and not is_control(r) for r in rows):
        lines.append("A 'violated' verdict is a finding about the paper, not a failure of the run.")
    return "\n".join(lines)


def status_counts_text(rows: list) -> str:
    """``"12 holds (3 proved, 9 on what was tested), 1 violated, 0 inconclusive, 0 not-applicable"`` over the
    records that are not negative controls (the holds split by :func:`holds_scope`), then the controls counted
    apart (:func:`controls_text`): the one count of every table, total and report."""
    claims = [r.to_dict() if isinstance(r, Claim) else r for r in rows if not is_control(r)]
    parts = []
    for s in STATUSES:
        n = sum(r["status"] == s for r in claims)
        split = f" ({holds_split_text(claims)})" if s == "holds" and n else ""  # "0 holds": no split
        parts.append(f"{n} {s}{split}")
    text = ", ".join(parts)
    ctl = controls_text(rows)
    return text + (f"; {ctl}" if ctl else "")


def control_failed(rec: dict) -> bool:
    """Whether a negative control's record says that it fails as it must (the convention of
    :func:`proofs_checks.verdict.control_verdict`: "negative control 'x' fails as it must"; a record of a
    pack written before it, ``violated``, counts as failing too). A ``not-applicable`` control never does:
    outside the claim's assumptions it has not shown that the check can fail."""
    if rec.get("status") == "not-applicable":
        return False
    return rec.get("status") == "violated" or bool(_CONTROL_FAILS.match(str(rec.get("reason") or "")))


# the reason's opening words, the control's name as repr() writes it: only the opening counts (a reason that
# PASSES may quote the rule's own words, such as a gated method's "every negative control fails as it must")
_CONTROL_FAILS = re.compile(r"negative control (?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") fails as it must")

CONTROL_MARK = " (control)"  # after a negative control's status in every verdict table


def status_text(rec: dict) -> str:
    """A record's status as the verdict tables show it: ``inconclusive (control)`` for a negative control
    (:data:`CONTROL_MARK`), so that a control is never read as an open question of the claim; ``holds (proved)``,
    ``holds (exhaustive)`` or ``holds (tested)`` for a holds (:func:`holds_scope`: class-wide by a proof or by an
    exact enumeration of a finite class, or on what was tested only)."""
    scope = holds_scope(rec)
    return str(rec.get("status", "")) + (f" ({scope})" if scope else "") + (CONTROL_MARK if is_control(rec) else "")


def control_label(rec: dict) -> str:
    """A negative control named so that it can be found among its claim's records: ``id [control=NAME,
    for=CONTROL_FOR]`` (the parameters it has, ``for=`` left out where it repeats the id; the id alone when it has
    neither)."""
    pr = rec.get("params") or {}
    bits = [
        f"{label}={pr[k]}"
        for k, label in (("control", "control"), ("control_for", "for"))
        if pr.get(k) and not (k == "control_for" and str(pr[k]) == str(rec.get("id")))
    ]
    return str(rec.get("id")) + (f" [{', '.join(bits)}]" if bits else "")


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def controls_text(rows: list) -> str:
    """The negative controls among ``rows``, counted apart from the claims (empty when there are none):
    ``"4 negative controls, counted apart (4 fail as they must: runs built to fail, which show that the check
    can fail; not findings about the paper)"`` ("1 fails as it must"), naming (:func:`control_names`) those not
    applicable here (they show nothing) and those that do not fail (the holds verdicts they guard are withdrawn,
    counted as inconclusive)."""
    ctl = [r for r in rows if is_control(r)]
    if not ctl:
        return ""
    return f"{_n(len(ctl), 'negative control', 'negative controls')}, counted apart ({controls_breakdown(ctl)})"


def control_names(rows: list) -> str:
    """The controls ``rows`` named for the count lines: each :func:`control_label` once, with the values of p
    its records have (``"maj.lp-smoothness [control=planted-violation, for=maj.lp-smoothness] at p = 4, 8"``),
    or its number of records where they have no p and are several (``"x.claim.control-a (2 records)"``)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(control_label(r), []).append(r)
    names = []
    for label in sorted(groups):
        recs = groups[label]
        ps = [(r.get("params") or {}).get("p") for r in recs]
        if all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in ps):
            label += " at p = " + ", ".join(f"{p:g}" for p in sorted(set(ps)))
        elif len(recs) > 1:
            label += f" ({len(recs)} records)"
        names.append(label)
    return "; ".join(names)


def controls_breakdown(rows: list) -> str:
    """How the negative controls among ``rows`` came out, in plain words (the part of :func:`controls_text` in
    parentheses): how many fail as they must and what that shows, and, named (:func:`control_names`), those not
    applicable here and those that do not fail, with what follows for the verdicts they guard."""
    ctl = [r for r in rows if is_control(r)]
    idle = [r for r in ctl if r.get("status") == "not-applicable"]
    bad = [r for r in ctl if not control_failed(r) and r.get("status") != "not-applicable"]
    k = len(ctl) - len(bad) - len(idle)
    text = f"{_n(k, 'fails as it must', 'fail as they must')}: runs built to fail, which show that the check can "
    text += "fail; not findings about the paper"
    if idle:
        text += f"; {_n(len(idle), 'is', 'are')} not applicable here ({control_names(idle)}): no evidence that the "
        text += "check can fail"
    if bad:
        text += f"; {_n(len(bad), 'does', 'do')} not fail ({control_names(bad)}): the check has not shown that it "
        text += "catches a failure there, so the holds verdicts "
        text += "it guards are" if len(bad) == 1 else "they guard are"
        text += " withdrawn (counted as inconclusive)"
    return text


def is_control(rec: dict) -> bool:
    """A negative control's record: a false neighbour of a claim, or a method that must fail the claim's
    rule, run so that the check shows it can fail (its id has a ``.control`` part, or its parameters name the
    ``control``). Its status follows :func:`proofs_checks.verdict.control_verdict` (never ``holds`` nor
    ``violated``); the tables, totals and report count controls apart (:func:`status_counts_text`)."""
    parts = str(rec.get("id", "")).split(".")[1:]  # a part of the dotted id, not any text: "x.controlled" is none
    named = any(q == "control" or q.startswith("control-") for q in parts)
    return named or bool((rec.get("params") or {}).get("control"))


# ---------------------------------------------------------------------------------------------------
# notebooks


_STATUS_COLORS = {"holds": "#1b7f3b", "violated": "#b3261e", "inconclusive": "#8a6d00", "not-applicable": "#5f6368"}


class Records(list):
    """A list of records (:class:`Claim` objects or their dicts) that notebooks display as a table
    (``_repr_html_``); otherwise an ordinary list."""

    def _repr_html_(self) -> str:
        return to_html(self)


def to_html(claims) -> str:
    """An HTML table of records (:class:`Claim` objects or dicts): id, setting, status, empirical,
    relation, bound, ratio, method, source, and the reason under a record that does not hold. Every
    value is escaped; the table has inline styles only (no scripts, no network)."""
    import html

    rows = [c.to_dict() if isinstance(c, Claim) else dict(c) for c in claims]
    esc = html.escape
    head = ("id", "setting", "status", "empirical", "", "bound", "ratio", "method", "source")
    out = [
        '<table class="lptheory-records" style="border-collapse:collapse;font-size:0.9em">',
        "<thead><tr>"
        + "".join(f'<th style="text-align:left;padding:2px 6px">{h}</th>' for h in head)
        + "</tr></thead>",
        "<tbody>",
    ]
    for r in rows:
        status = str(r.get("status", ""))
        color = _STATUS_COLORS.get(status, "#000")
        cells = [
            esc(str(r.get("id", ""))),
            esc(setting_text(r.get("params") or {}, r.get("show"))),
            f'<b style="color:{color}">{esc(status_text(r))}</b>',
            esc(_fmt(r.get("empirical"))),
            esc(str(r.get("relation", "<="))),
            esc(_fmt(r.get("bound"))),
            esc(_fmt(r.get("ratio"))),
            esc(str(r.get("method", ""))),
            esc(str(r.get("source", ""))),
        ]
        out.append("<tr>" + "".join(f'<td style="padding:2px 6px">{c}</td>' for c in cells) + "</tr>")
        if r.get("reason") and status != "holds":
            out.append(
                f'<tr><td></td><td colspan="{len(head) - 1}" style="padding:0 6px 4px;color:#555">'
                f"reason: {esc(str(r['reason']))}</td></tr>"
            )
    found = any(r.get("status") == "violated" and not is_control(r) for r in rows)
    out.append("</tbody></table>")
    out.append(
        '<p style="font-size:0.85em;color:#555">'
        + esc(status_counts_text(rows))
        + ("; a violated claim is a finding about the paper, not a failure of the run" if found else "")
        + "</p>"
    )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------
# where the code came from


_PACKAGES = ("lptheory", "synthetic", "proofs_checks", "figures")


def _sources_digest(root: str) -> str | None:
    """sha256 over the ``.py`` files and templates of the four packages under ``root`` (relative paths
    and bytes, sorted); None when a package is missing there."""
    import hashlib
    import os

    h = hashlib.sha256()
    for pkg in _PACKAGES:
        base = os.path.join(root, pkg)
        if not os.path.isdir(base):
            return None
        for dirpath, dirnames, files in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for f in sorted(files):
                if f.endswith((".py", ".j2")):
                    path = os.path.join(dirpath, f)
                    h.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
                    with open(path, "rb") as fh:
                        h.update(fh.read())
                    h.update(b"\0")
    return h.hexdigest()


def _installed_root() -> str:
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git_head(root: str) -> str | None:
    import os
    import subprocess

    if not os.path.exists(os.path.join(root, ".git")):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            # --no-optional-locks: no .git/index.lock and no index refresh in the source checkout (a read)
            ["git", "--no-optional-locks", "-C", root, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "") if head else None


def _installed_from_clone() -> str | None:
    """The commit of an installed (not editable) package, from its PEP 610 ``direct_url.json``: the
    ``vcs_info`` commit of a ``pip install git+...``, or the HEAD of the local clone it was installed
    from when that clone's sources are still byte for byte the installed ones (else None: the clone
    has moved on since)."""
    import os
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        dist = metadata.distribution("lptheory")
        doc = json.loads(dist.read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(doc, dict):
        return None
    commit = (doc.get("vcs_info") or {}).get("commit_id")
    if commit:
        return str(commit)
    url = urlparse(str(doc.get("url", "")))
    if url.scheme != "file":
        return None
    clone = unquote(url.path)
    if not os.path.isdir(clone) or os.path.realpath(clone) == os.path.realpath(_installed_root()):
        return None
    head = _git_head(clone)
    if head is None:
        return None
    here, there = _sources_digest(_installed_root()), _sources_digest(clone)
    return head if here is not None and here == there else None


def source_info() -> dict:
    """Where the running code came from: ``{"git_commit", "version", "sources_sha256", "text"}``.
    ``git_commit`` is that of the checkout it runs from (an editable install included), or of the clone
    an installed package was built from (PEP 610 ``direct_url.json``; only while that clone still holds
    the same sources), else None; ``text`` says it in one line (with the version and a hash of the
    sources when there is no commit)."""
    from importlib import metadata

    try:
        version = metadata.version("lptheory")
    except metadata.PackageNotFoundError:
        version = None
    commit = git_commit()
    digest = _sources_digest(_installed_root())
    if commit:
        text = f"git {commit}"
    else:
        text = f"lptheory {version or 'unknown version'} (not a git checkout; sources sha256 {(digest or '?')[:16]})"
    return {"git_commit": commit, "version": version, "sources_sha256": digest, "text": text}
