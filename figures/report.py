"""The report: one HTML page and one Markdown file with the same content, every figure, ``claims.json``
and ``results.csv`` (and ``results.parquet`` when pyarrow is installed), written from claim records.

This module never runs a check: :func:`write_report` takes the records (``lptheory report`` runs the
checks with :mod:`proofs_checks.runner` first). Pages are rendered with Jinja2 templates
(``figures/templates``); the pack supplies the title, the description, the section titles, the
figures and the reproduce commands.
"""

from __future__ import annotations

import csv
import json
import os
from importlib import resources

from proofs_checks.records import (
    EVIDENCE,
    SETTING_KEYS,
    STATUSES,
    clean,
    control_failed,
    controls_breakdown,
    controls_text,
    distinguishing_keys,
    holds_scope,
    holds_scope_sentence,
    holds_split_text,
    is_control,
    is_scalar_param,
    setting_text,
    status_counts_text,
    status_text,
)
from proofs_checks.records_io import FORMAT
from proofs_checks.verdict import EVIDENCE_TEXT

from . import figures_for

__all__ = [
    "write_report",
    "draw_figures",
    "evidence_levels",
    "load_config",
    "RESULT_COLUMNS",
    "result_columns",
    "finding_sentence",
    "csv_text",
    "png_css_size",
]

# the re-check of a witness file the report writes (witnesses/ID.json, :func:`witness_files`), run in the report's
# folder; proofs_checks.recheck.main reads the file and prints the re-check as JSON
RECHECK_CMD = "python -m proofs_checks.recheck {path}"
WITNESS_DIR = "witnesses"
# the tidy columns of results.csv (one row per record and recorded quantity); documented in the README.
# The setting columns between "relation" and "setting" are the pack's (Pack.setting_columns).
BASE_COLUMNS = ("check", "id", "record", "status", "holds_scope", "evidence", "control", "method", "relation")
TAIL_COLUMNS = (
    "setting",
    "quantity",
    "value",
    "seed",
    "quick",
    "config_hash",
    "git_commit",
    "date",
    "lptheory",
    "numpy",
    "scipy",
    "sympy",
    "mpmath",
    "matplotlib",
    "torch",
)


def result_columns(setting_columns=()) -> tuple:
    """The columns of ``results.csv`` with the pack's setting columns ``((column, parameter), ...)``."""
    return (*BASE_COLUMNS, *(c for c, _ in setting_columns), *TAIL_COLUMNS)


RESULT_COLUMNS = result_columns()  # without setting columns


def load_config(path: str | None, pack) -> dict:
    """The report configuration: ``seed`` and per-check options (``[checks.NAME] p = [...]``), from the
    pack's defaults with ``path`` (a TOML file) merged over them. Unknown keys, unknown checks and wrong
    types raise ValueError naming the key."""
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover
        import tomli as tomllib

    cfg = {"seed": 0, "checks": {n: dict(c.defaults) for n, c in pack.checks.items()}}
    if not path:
        return cfg
    if not os.path.exists(path):
        raise ValueError(f"--config {path}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"--config {path}: is a directory, not a TOML file")
    try:
        with open(path, "rb") as fh:
            user = tomllib.load(fh)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"--config {path}: not valid TOML: {exc}") from exc
    unknown = sorted(set(user) - {"seed", "checks"})
    if unknown:
        raise ValueError(f"--config {path}: unknown key {unknown[0]!r} (allowed: seed, checks)")
    if "seed" in user:
        s = user["seed"]
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ValueError(f"--config {path}: seed must be an integer >= 0, got {s!r}")
        cfg["seed"] = s
    checks = user.get("checks", {})
    if not isinstance(checks, dict):
        raise ValueError(f"--config {path}: [checks] must be a table")
    for name, opts in checks.items():
        if name not in pack.checks:
            raise ValueError(f"--config {path}: unknown check 'checks.{name}' (checks: {', '.join(pack.checks)})")
        if not isinstance(opts, dict):
            raise ValueError(f"--config {path}: checks.{name} must be a table")
        for k, v in opts.items():
            if k not in pack.checks[name].options:
                takes = ", ".join(pack.checks[name].options) or "no options"
                raise ValueError(f"--config {path}: unknown key 'checks.{name}.{k}' (check {name} takes {takes})")
            vals = v if isinstance(v, list) else [v]
            if k == "p" and not all(isinstance(u, (int, float)) and not isinstance(u, bool) for u in vals):
                raise ValueError(f"--config {path}: checks.{name}.p must be a number or a list of numbers, got {v!r}")
            cfg["checks"][name][k] = [float(u) for u in vals] if k == "p" else v
    return cfg


def evidence_levels(claims: list[dict]) -> list[dict]:
    """The legend of the evidence levels, strongest first, each explained once
    (:data:`proofs_checks.verdict.EVIDENCE_TEXT`): ``[{"level", "text", "count"}]`` (``count``: the records at
    that level; every level is listed, used or not, so that the reader sees the whole scale)."""
    return [
        {"level": e, "text": EVIDENCE_TEXT[e], "count": sum(r.get("evidence") == e for r in claims)} for e in EVIDENCE
    ]


def _fmt(x):
    if x is None or x == "":
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def finding_sentence(recs: list[dict]) -> str:
    """One sentence for a violated claim (its records in every setting where it fails)."""
    r0 = recs[0]
    stmt = r0["statement"] if len(r0["statement"]) <= 170 else r0["statement"][:167] + "..."
    where = "; ".join(setting_text(r["params"], r.get("show")) or "as stated" for r in recs)
    ratios = [r["ratio"] for r in recs if isinstance(r.get("ratio"), (int, float))]
    rtxt = f" (ratio {', '.join(f'{v:.3g}' for v in ratios)}; > 1 means the relation fails)" if ratios else ""
    return f"{r0['id']} ({r0['source']}) is violated at {where}{rtxt}: \u201c{stmt}\u201d."


def _anchor(check, i):
    return f"r-{check}-{i}"


HUGE_RATIO = 1e3
HUGE_NOTE = (
    "a ratio this large is where a search that maximizes it stopped, not a measured size: the relation fails, "
    "and the search could drive the ratio further"
)


def size_text(r: dict) -> tuple[str, str]:
    """A meaningful size of a record's relation, and a note explaining it (empty when none): ``<=``/``>=``:
    the ratio (> 1 fails; above 1000: search-driven, explained); ``==``: the difference of the two sides
    (absolute and relative); ``rate``: the fitted exponent with its interval against the claimed one."""
    rel, emp, bnd, rat = r.get("relation"), r.get("empirical"), r.get("bound"), r.get("ratio")
    num = (int, float)
    if rel == "rate" and isinstance(emp, num):
        ci = r.get("ci")
        iv = f" [{ci[0]:.3g}, {ci[1]:.3g}]" if isinstance(ci, list) and len(ci) == 2 else ""
        return f"exponent {emp:.3g}{iv} vs {_fmt(bnd)}", ""
    if rel == "==" and isinstance(emp, num) and isinstance(bnd, num):
        diff = abs(float(emp) - float(bnd))
        scale = max(abs(float(emp)), abs(float(bnd)))
        if diff == 0:
            return "difference 0", ""
        rel_txt = f" (relative {diff / scale:.2g})" if scale > 0 else ""
        return f"difference {diff:.3g}{rel_txt}", ""
    if isinstance(rat, num):
        if rat > HUGE_RATIO and r.get("method") in ("adversarial-search", "symbolic"):
            return f"ratio {rat:.3g} (search-driven)", HUGE_NOTE
        return f"ratio {rat:.4g}", ""
    if isinstance(emp, num) and isinstance(bnd, num):
        return f"difference {float(emp) - float(bnd):.3g}", ""
    return "", ""


def _merge_notes(rows: list[dict]) -> list[dict]:
    """The inconclusive / not-applicable notes of a section, records with the same reason (numbers and
    parenthesized details aside) merged into one note: ``{"status", "text" (the shared words), "items"
    [(row, the rest of its reason)], "anchors"}``."""
    import re

    groups: dict = {}
    for row in rows:
        head = re.sub(r"\([^()]*\)", "", row["reason"])
        head = re.split(r"[:;]", head, maxsplit=1)[0]
        head = re.sub(r"[-+]?\d[\d.,eE+-]*", "#", head).strip()
        groups.setdefault((row["status"], head), []).append(row)
    out = []
    for (status, _), rs in groups.items():
        texts = [r["reason"] for r in rs]
        common = os.path.commonprefix(texts) if len(rs) > 1 else texts[0]
        if len(rs) > 1 and common != texts[0]:
            # back to the end of a clause ("; ", ": ", ". "), else to a word
            cut = max(common.rfind("; "), common.rfind(": "), common.rfind(". "))
            cut = cut if cut > 0 else common.rfind(" ")
            common = common[: cut + 1] if cut > 0 else ""
        out.append(
            {
                "status": status,
                "text": common.strip() or "(see each record)",
                "recs": [(r, r["reason"][len(common) :].strip()) for r in rs],
                "anchor": "n-" + rs[0]["anchor"],
            }
        )
    return out


def _control_outcome(r: dict) -> str:
    """How a negative control came out: ``fails`` as it must, ``not-applicable`` (outside the claim's
    assumptions: it shows nothing), or ``passes`` the rule it must fail."""
    if control_failed(r):
        return "fails"
    return "not-applicable" if r.get("status") == "not-applicable" else "passes"


def _control_notes(rows: list[dict], recs: list[dict], anchor: str = "") -> dict | None:
    """A section's negative controls as one group, apart from its open questions: ``{"count", "text" (how
    many fail as they must; named, those not applicable here and those that do not fail), "groups" (the
    records merged by reason, as in :func:`_merge_notes`), "anchor", "ok" (every control fails)}``; None when
    the section has no control. ``rows``: the controls' report rows (those shown in the group; a legacy
    pack's violated control is shown with the findings' details); ``recs``: every control record;
    ``anchor``: the group's anchor when no row is shown in it (every control a legacy violated one)."""
    if not recs:
        return None
    groups = _merge_notes(rows) if rows else []
    for g in groups:  # the shared words head a sub-list: no dangling colon
        g["text"] = g["text"].rstrip(":;, ")
    return {
        "count": len(recs),
        "text": controls_breakdown(recs),
        "groups": groups,
        "anchor": "c-" + groups[0]["anchor"].removeprefix("n-") if groups else anchor,
        "ok": all(control_failed(r) for r in recs),
    }


def _link_labels(recs: list[dict]) -> list[str]:
    """Distinct labels for the evidence links of one summary item: the claim id and p; where several links
    would read the same, the setting parameters that tell them apart (the record's ``show`` first, then the
    common keys, then the rest; only as many as needed, e.g. ``lemma3 (p=3, d=4)``), then the
    check."""

    def part(k, v):
        return f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"

    def label(r, keys):
        pr = r["params"]
        bits = [part(k, pr[k]) for k in keys if is_scalar_param(pr.get(k))]
        return r["id"] + (f" ({', '.join(bits)})" if bits else "")

    base = [["p"] if isinstance(r["params"].get("p"), (int, float)) else [] for r in recs]
    keys_of = distinguishing_keys(recs, base, lambda i, ks: label(recs[i], ks), prefer=SETTING_KEYS)
    groups: dict = {}
    for i, r in enumerate(recs):
        groups.setdefault(label(r, keys_of[i]), []).append(i)
    for idx in groups.values():
        if len(idx) > 1:  # the same setting in several checks
            for i in idx:
                keys_of[i] = keys_of[i] + ["check"]
    out = []
    for r, keys in zip(recs, keys_of):
        if "check" in keys:
            lab = label(r, [k for k in keys if k != "check"])
            lab = lab[:-1] + f", {r.get('check')})" if lab.endswith(")") else f"{lab} ({r.get('check')})"
        else:
            lab = label(r, keys)
        out.append(lab)
    return out


def _summary(pack, claims_anchored, findings_by) -> dict:
    """The executive summary: the pack's (:meth:`Pack.summarize`), each item's evidence as links, plus a
    generic item for every violated claim no item covers."""
    got = pack.summarize(claims_anchored) if hasattr(pack, "summarize") else None
    got = got or {}
    items, covered = [], set()
    for it in got.get("items", []):
        recs, seen = [], set()
        for r in it.get("evidence", []):
            if r["anchor"] in seen:
                continue
            seen.add(r["anchor"])
            covered.add(r["id"]) if r["status"] == "violated" else None
            recs.append(r)
        links = [
            {
                "anchor": r["anchor"] if r["status"] == "holds" else "d-" + r["anchor"],
                "label": lab,
                "status": r["status"],
            }
            for r, lab in zip(recs, _link_labels(recs))
        ]
        items.append({**it, "links": links})
    for it in got.get("sharper") or []:  # a refuted conjecture of the toolkit's is said there, not as an error
        covered.update(r["id"] for r in it.get("evidence", []) if r["status"] == "violated")
    for (_check, cid), recs in findings_by.items():
        if cid in covered:
            continue
        items.append(
            {
                "key": cid,
                "kind": "error",
                "title": cid,
                "parts": [("What fails", finding_sentence([x[0] for x in recs]))],
                "links": [{"anchor": "d-" + a, "label": s or cid, "status": "violated"} for _, a, s in recs],
            }
        )
    return {
        "lead": " ".join(t for t in (got.get("lead", ""), holds_scope_sentence(claims_anchored)) if t),
        "errors": [x for x in items if x.get("kind") not in ("typo", "imprecise")],
        "imprecise": [x for x in items if x.get("kind") == "imprecise"],
        "typos": [x for x in items if x.get("kind") == "typo"],
        "sharper": [_with_links(x) for x in got.get("sharper") or []],
    }


def _with_links(it: dict) -> dict:
    """A summary item with its evidence records as links (as :func:`_summary` gives its findings)."""
    recs = list({r["anchor"]: r for r in it.get("evidence", [])}.values())
    links = [
        {"anchor": r["anchor"] if r["status"] == "holds" else "d-" + r["anchor"], "label": lab, "status": r["status"]}
        for r, lab in zip(recs, _link_labels(recs))
    ]
    return {**it, "links": links}


def copy_katex(out_dir: str) -> list[str]:
    """Copy the vendored KaTeX (``figures/static/katex``: the renderer, its auto-render extension, the woff2
    fonts and its licence) to ``out_dir/katex``, so that index.html renders its formulas with no network."""
    import shutil

    src = resources.files("figures").joinpath("static", "katex")
    dst = os.path.join(out_dir, "katex")
    with resources.as_file(src) as path:
        shutil.copytree(path, dst, dirs_exist_ok=True)
    return [os.path.join(dp, f) for dp, _, fs in os.walk(dst) for f in fs]


def _section_cell(pack, key, rid, value, repeat=False):
    """A cell of a pack's report section: text, a list (shown collapsed), or ``{"tex": ...}`` where the pack
    has the notation: the ``corrected`` statement of a ``<id>.corrected`` row and the ``claimed`` one of
    ``<id>``. A claimed statement repeated from the row above is shown once."""
    if key == "claimed" and repeat:
        return "(same claim as above)"
    # the setting-specific tail of a corrected statement ("...; at p = 3: kappa = 1.117 ...") stays as text
    note = value.split("; at ", 1)[1] if isinstance(value, str) and "; at " in value else ""
    if key == "corrected" and _tex(pack, rid):
        return {"tex": _tex(pack, rid), "text": value, "note": f"at {note}" if note else ""}
    if key == "claimed" and rid.endswith(".corrected") and _tex(pack, rid[: -len(".corrected")]):
        return {"tex": _tex(pack, rid[: -len(".corrected")]), "text": value, "note": ""}
    return value


def _tex(pack, cid):
    """The claim's statement in LaTeX (the pack's notation), or None."""
    fn = getattr(pack, "statement_tex", None)
    return fn(cid) if fn else None


def _cell(v):
    """A parameter as one CSV cell: scalars as they are, a numeric list as ``first..last``, other
    containers as text."""
    if isinstance(v, list):
        if v and all(isinstance(u, (int, float)) and not isinstance(u, bool) for u in v):
            return f"{v[0]}..{v[-1]}"
        return None
    if isinstance(v, dict):
        return None
    return v


def _setting_columns(pack, claims):
    """The pack's setting columns, renamed ``param_KEY`` where a default one collides with a base column."""
    taken = set(BASE_COLUMNS) | set(TAIL_COLUMNS)
    return tuple((f"param_{c}" if c in taken else c, k) for c, k in pack.setting_columns(claims))


# a text cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: str) -> str:
    """A text cell of ``results.csv`` safe to open in a spreadsheet: text starting with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return gets a leading ``'`` (OWASP's rule against formula injection), unless it
    is a number (``-0.5``, ``-1e-3``: a negative number stays a number)."""
    if not text.startswith(FORMULA_STARTS):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


def _csv_value(v) -> str:
    """One value as a CSV cell: None empty, a float in full precision (``repr``), text escaped
    (:func:`csv_text`); numbers are never escaped."""
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return csv_text(v) if isinstance(v, str) else v


def _write_csv_and_parquet(out_dir, claims, meta, setting_cols=()):
    v = meta.get("versions", {})
    columns = result_columns(setting_cols)
    rows = []
    for k, r in enumerate(claims):
        pr = r["params"]
        base = {
            "check": r.get("check", ""),
            "id": r["id"],
            "record": k,
            "status": r["status"],
            "holds_scope": holds_scope(r) or "",  # proved | exhaustive (class-wide) | tested (on what was tested) | ""
            "evidence": r.get("evidence") or "",  # what stands behind the status (the report's evidence levels)
            "control": is_control(r),  # a negative control's record: counted apart from the claims
            "method": r["method"],
            "relation": r.get("relation", ""),
            **{col: _cell(pr.get(key)) for col, key in setting_cols},
            "setting": setting_text(pr, r.get("show")),
            "seed": meta.get("seed"),
            "quick": meta.get("quick"),
            "config_hash": meta.get("config_hash"),
            "git_commit": meta.get("git_commit"),
            "date": meta.get("date"),
            **{name: v.get(name) for name in ("lptheory", "numpy", "scipy", "sympy", "mpmath", "matplotlib", "torch")},
        }
        qs = [(name, r.get(name)) for name in ("empirical", "bound", "ratio") if isinstance(r.get(name), (int, float))]
        if r.get("ci"):
            qs += [("ci_lo", r["ci"][0]), ("ci_hi", r["ci"][1])]
        for name, val in qs or [("", None)]:
            rows.append({**base, "quantity": name, "value": val})
    path = os.path.join(out_dir, "results.csv")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([csv_text(c) for c in columns])
        for row in rows:
            w.writerow([_csv_value(row[k]) for k in columns])
    paths = [path]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return paths
    cols = {}
    for c in columns:
        vals = [row[c] for row in rows]
        numeric = all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in vals)
        if c in ("quick", "control"):
            cols[c] = pa.array(vals, type=pa.bool_())
        elif numeric and (c == "value" or any(isinstance(v, float) for v in vals)):
            cols[c] = pa.array([None if v is None else float(v) for v in vals], type=pa.float64())
        elif numeric and any(v is not None for v in vals):
            cols[c] = pa.array([None if v is None else int(v) for v in vals], type=pa.int64())
        else:
            cols[c] = pa.array([None if v is None else str(v) for v in vals], type=pa.string())
    tmp = os.path.join(out_dir, ".results.parquet.part")
    pq.write_table(pa.table(cols), tmp)
    os.replace(tmp, os.path.join(out_dir, "results.parquet"))
    return paths + [os.path.join(out_dir, "results.parquet")]


def _write_claims_json(out_dir: str, claims: list[dict], meta: dict) -> str:
    """Write ``claims.json`` (every record with its check, and the run's provenance with the records format
    ``meta.format``, :data:`proofs_checks.records_io.FORMAT`; strict JSON) atomically."""
    doc = {"claims": clean(claims), "meta": {**clean(meta), "format": FORMAT}}
    tmp = os.path.join(out_dir, ".claims.json.part")
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True, allow_nan=False)
    path = os.path.join(out_dir, "claims.json")
    os.replace(tmp, path)
    return path


def witness_files(records: dict) -> dict:
    """Where the report writes each violated record's witness: ``{(check, i): "witnesses/NAME.json"}`` for
    record ``i`` of ``check`` (``records``: ``{check: [record dicts]}``), NAME the record's id with every character
    outside ``[A-Za-z0-9._-]`` written ``_``, then ``-2``, ``-3``, ... on the second, third record of the same
    name (compared without case, so that no two files collide on a case-insensitive disk), in the report's
    order. Records without a witness object get none."""
    import re

    out, seen = {}, {}
    for check, recs in records.items():
        for i, r in enumerate(recs):
            if r.get("status") != "violated" or not isinstance(r.get("witness"), dict):
                continue
            name = re.sub(r"[^A-Za-z0-9._-]", "_", str(r.get("id", ""))).lstrip(".") or "witness"
            k = seen[name.lower()] = seen.get(name.lower(), 0) + 1
            out[(check, i)] = f"{WITNESS_DIR}/{name}{'' if k == 1 else f'-{k}'}.json"
    return out


def _write_witnesses(out_dir: str, records: dict, files: dict) -> list[str]:
    """Write each violated record's witness to its file of ``files`` (:func:`witness_files`), under
    ``out_dir``, as strict JSON (what the re-check command of the report's details reads)."""
    paths = []
    if files:
        os.makedirs(os.path.join(out_dir, WITNESS_DIR), exist_ok=True)
    for (check, i), rel in files.items():
        path = os.path.join(out_dir, *rel.split("/"))
        tmp = path + ".part"
        with open(tmp, "w") as fh:
            json.dump(clean(records[check][i]["witness"]), fh, indent=1, sort_keys=True, allow_nan=False)
            fh.write("\n")
        os.replace(tmp, path)
        paths.append(path)
    return paths


def _record_row(pack, check: str, i: int, r: dict, *, seed: int, quick: bool, options: dict) -> dict:
    """The report row of record ``i`` of ``check``: what the templates show of it (formatted numbers, its
    size, its statement in the pack's notation, its anchor, the command that reproduces it)."""
    p = r["params"].get("p")
    size, size_note = size_text(r)
    row = {
        "check": check,
        "id": r["id"],
        "statement": r["statement"],
        "source": r["source"],
        "setting": setting_text(r["params"], r.get("show")),
        "status": r["status"],
        "status_text": status_text(r),  # "inconclusive (control)" for a negative control, "holds (tested)", ...
        "holds_scope": holds_scope(r) or "",  # proved | exhaustive | tested | "" (records.holds_scope)
        "scope": r.get("scope") or "",  # what was tested (records.default_scope where the file predates it)
        "evidence": r.get("evidence") or "-",  # absent only in files written before the field
        "empirical": _fmt(r.get("empirical")),
        "bound": _fmt(r.get("bound")),
        "ratio": _fmt(r.get("ratio")),
        "size": size,
        "size_note": size_note,
        "tex": _tex(pack, r["id"]),
        "relation": r.get("relation", ""),
        "method": r["method"],
        "anchor": _anchor(check, i),
        "reason": r.get("reason") or "",
        "reproduce": pack.reproduce(
            check,
            seed=seed,
            quick=quick,
            p=p if isinstance(p, float) else None,
            options={k: v for k, v in options.get(check, {}).items() if k != "p"},
        ),
        "witness": "",
        "witness_file": "",  # set by _check_section where the report writes one (witnesses/ID.json)
        "recheck_cmd": "",
    }
    # a negative control: neither a finding nor an open question (counted apart)
    row["control"] = _control_outcome(r) if is_control(r) else ""
    if r["status"] == "violated":
        wit = json.dumps(r["witness"], indent=1, sort_keys=True, allow_nan=False)
        row["witness"] = (
            wit if len(wit) <= 4000 else wit[:4000] + "\n... (truncated; the whole witness is in claims.json)"
        )
    return row


def _section_counts(recs: list[dict]) -> dict:
    """A check's counts: the claims' statuses, the negative controls counted apart."""
    return {
        **{s: n for s in STATUSES if (n := sum(r["status"] == s and not is_control(r) for r in recs))},
        **({"negative controls": n} if (n := sum(is_control(r) for r in recs)) else {}),
    }


def png_css_size(path: str) -> tuple[int, int] | None:
    """The size in CSS pixels (1/96 inch) at which a PNG shows at its resolution (its ``pHYs`` chunk; 96 dpi
    without one): ``(width, height)``, or None when ``path`` is not a readable PNG. The page gives each
    figure this size, so that a phone shows it as large as a desktop does (its legend readable), scrolling in
    its own box."""
    import struct

    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return None
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    w, h = struct.unpack(">II", data[16:24])
    dpi, pos = 96.0, 8
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"pHYs" and pos + 17 <= len(data):
            ppu, _, unit = struct.unpack(">IIB", data[pos + 8 : pos + 17])
            if unit == 1 and ppu > 0:  # pixels per metre
                dpi = ppu * 0.0254
            break
        if kind == b"IDAT":
            break
        pos += 12 + n
    return round(w * 96 / dpi), round(h * 96 / dpi)


def _check_section(pack, check, recs, figs, *, run: dict, findings_by: dict, open_q: list) -> dict:
    """The report section of one check (its rows, the details of its violated records, its merged notes, its
    negative controls, its figures ``figs``); adds its findings to ``findings_by`` and its inconclusive records to
    ``open_q``. ``run``: ``dir`` (the output folder), ``seed``, ``quick``, ``options`` and ``elapsed`` of the run."""
    rows, details, notes_in, controls_in, seen = [], [], [], [], set()
    options = run["options"]
    for i, r in enumerate(recs):
        row = _record_row(pack, check, i, r, seed=run["seed"], quick=run["quick"], options=options)
        if wf := run.get("witness_files", {}).get((check, i)):
            row["witness_file"], row["recheck_cmd"] = wf, RECHECK_CMD.format(path=wf)
        control = bool(row["control"])
        if r["status"] == "violated":
            if not control:
                findings_by.setdefault((check, r["id"]), []).append((r, row["anchor"], row["setting"]))
            details.append(row)
        elif control:  # a negative control: its own group, apart from the open questions
            controls_in.append(row)
        elif r["status"] in ("inconclusive", "not-applicable"):
            notes_in.append(row)
            if r["status"] == "inconclusive":
                open_q.append({"anchor": "d-" + row["anchor"], "label": f"{r['id']} ({row['setting'] or check})"})
        row["first"] = r["id"] not in seen  # the statement is printed once per claim in the table
        seen.add(r["id"])
        rows.append(row)
    return {
        "check": check,
        "title": pack.section(check),
        "rows": rows,
        "details": details,
        "notes": _merge_notes(notes_in),
        "controls": _control_notes(
            controls_in,
            [r for r in recs if is_control(r)],
            next(("c-" + _anchor(check, i) for i, r in enumerate(recs) if is_control(r)), ""),
        ),
        "figures": [f for f in figs if f.endswith(".png") and not f.endswith(".narrow.png")],
        "figure_sizes": {
            f: wh for f in figs if f.endswith(".png") and (wh := png_css_size(os.path.join(run["dir"], f)))
        },
        # a figure's layout for a phone (figures.style.save: its panels stacked), shown there instead
        "narrow": {f[: -len(".narrow.png")] + ".png": f for f in figs if f.endswith(".narrow.png")},
        "seconds": f"{run['elapsed'].get(check, 0.0):.1f}",
        "counts": _section_counts(recs),
        "command": pack.reproduce(check, seed=run["seed"], quick=run["quick"], options=options.get(check, {})).replace(
            " --json", ""
        ),
    }


def _findings(findings_by: dict) -> list[dict]:
    """The violated claims (not controls), one sentence each with links to their records' details."""
    return [
        {
            "sentence": finding_sentence([x[0] for x in items]),
            "anchors": [{"anchor": "d-" + a, "label": s or k[1]} for _, a, s in items],
        }
        for k, items in findings_by.items()
    ]


def _provenance(meta: dict, pack, checks) -> list[tuple]:
    """The run's provenance as ``(label, value)`` pairs (the pages' provenance table)."""
    v = meta.get("versions", {})
    return [
        ("date (UTC)", meta.get("date")),
        ("seed", meta.get("seed", 0)),
        ("quick", "yes (smoke run)" if meta.get("quick") else "no"),
        ("config hash", meta.get("config_hash")),
        ("git commit", meta.get("git_commit") or "not a git checkout"),
        ("versions", ", ".join(f"{k} {val}" for k, val in v.items())),
        ("pack", f"{pack.name} ({pack.target})"),
        ("checks", ", ".join(checks)),
        *_kept_row(meta.get("kept_decisions")),
    ]


def _kept_row(kept) -> list[tuple]:
    """The provenance row of the deciders' decisions read back from disk (none when every one was computed)."""
    if not isinstance(kept, dict) or not kept.get("read"):
        return []
    return [
        (
            "kept decisions",
            f"{kept['read']} read back from {kept.get('directory')} (made earlier by the same sources, in another process "
            f"of this run or in an earlier run; signed with the user's key), {kept.get('computed', 0)} computed; "
            "LPTHEORY_SHARP_CACHE=0 recomputes them all",
        )
    ]


def _section_figures(pack, claims: list[dict], out_dir: str, on_error) -> dict:
    """{section name: [PNG names]}: the figures of the pack's sections that have one (``ReportSection.figure``)
    and rows, drawn from every record into ``out_dir`` (a figure that fails is skipped through ``on_error``)."""
    import importlib

    out = {}
    for sec in getattr(pack, "report_sections", ()):
        ref = getattr(sec, "figure", None)
        if not ref or not list(sec.rows(claims)):
            continue
        mod, _, attr = ref.partition(":")
        try:
            files = getattr(importlib.import_module(mod), attr)(claims, os.path.join(out_dir, sec.name)) or []
        except Exception as exc:  # a figure never stops the report
            on_error(f"figure {ref} of section {sec.name}", exc)
            continue
        out[sec.name] = [os.path.basename(f) for f in files if str(f).endswith(".png") and ".narrow." not in str(f)]
    return out


def _extra_sections(pack, claims: list[dict], figures: dict | None = None) -> list[dict]:
    """The pack's own sections (:attr:`Pack.report_sections`, e.g. Corrections) with their cells
    (:func:`_section_cell`) and figures (:func:`_section_figures`); a section without rows is left out."""
    out = []
    for sec in getattr(pack, "report_sections", ()):
        rows = [dict(row) for row in sec.rows(claims)]
        if not rows:
            continue
        first_key, seen = sec.columns[0][0], {}
        for row in rows:
            for k, _ in sec.columns:
                row.setdefault(k, "")
            rid = str(row.get(first_key, ""))
            repeat = seen.setdefault((rid, "claimed"), row.get("claimed")) == row.get("claimed") and rid in seen
            seen[rid] = True
            row["cells"] = [_section_cell(pack, k, rid, row[k], repeat) for k, _ in sec.columns]
            row.setdefault("status", "")
        out.append(
            {
                "name": sec.name,
                "title": sec.title,
                "intro": sec.intro,
                "columns": sec.columns,
                "rows": rows,
                "figures": (figures or {}).get(sec.name, []),
            }
        )
    return out


def _environment(markdown: bool = False):
    """The Jinja2 environment of a page template: HTML autoescaped, its formulas written in plain text put
    between ``$...$`` (:func:`figures.mathtext.finalize`; ``|plain`` keeps a value as written); Markdown with
    every ``{{ ... }}`` escaped for Markdown (:func:`figures.markdown.install`)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("figures").joinpath("templates"))),
        autoescape=not markdown,
        trim_blocks=False,
        lstrip_blocks=False,
        undefined=jinja2.StrictUndefined,
    )
    if markdown:
        from . import markdown as md

        md.install(env)
    else:  # formulas written in plain text rendered by KaTeX like the pack's LaTeX (figures.mathtext)
        from . import mathtext

        env.finalize = mathtext.finalize
        env.filters["plain"] = mathtext.Plain
    return env


def _write_pages(out_dir: str, ctx: dict) -> list[str]:
    """Render ``index.html`` and ``report.md`` from ``ctx`` and write them atomically."""
    paths = []
    for name, tpl in (("index.html", "report.html.j2"), ("report.md", "report.md.j2")):
        text = _environment(markdown=name.endswith(".md")).get_template(tpl).render(**ctx)
        tmp = os.path.join(out_dir, f".{name}.part")
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, os.path.join(out_dir, name))
        paths.append(os.path.join(out_dir, name))
    return paths


def _context(
    pack, records: dict, claims: list[dict], sections: list[dict], findings_by: dict, open_q, meta, section_figs=None
) -> dict:
    """What the templates (HTML, Markdown) and :func:`figures.latex.render` get."""
    claim_counts = {s: sum(r["status"] == s and not is_control(r) for r in claims) for s in STATUSES}
    n_ctl = sum(is_control(r) for r in claims)
    claims_anchored = [
        {**r, "check": c, "anchor": _anchor(c, i)} for c, recs in records.items() for i, r in enumerate(recs)
    ]
    return {
        "title": pack.title,
        "extra_sections": _extra_sections(pack, claims, section_figs),
        "description": pack.description,
        "provenance": _provenance(meta, pack, records),
        "counts": {s: sum(r["status"] == s for r in claims) for s in STATUSES},  # every record, controls included
        "claim_counts": claim_counts,
        # the holds split (records.holds_scope), in the words of every count: class-wide (proved, exhaustive)
        # and on what was tested only
        "holds_split_text": holds_split_text(claims),
        "controls": controls_text(claims),
        # the verdict table's filter (value, label, count): the claims' statuses, then the negative controls apart
        "filters": [(s, s, n) for s, n in claim_counts.items()]
        + ([("control", "negative controls", n_ctl)] if n_ctl else []),
        "verdicts_text": status_counts_text(claims),
        "findings": _findings(findings_by),
        "summary": _summary(pack, claims_anchored, findings_by),
        "statuses": STATUSES,
        "checks": list(records),
        "open_questions": open_q,
        "sections": sections,
        "evidence_legend": evidence_levels(claims),
    }


def _warn(what: str, exc: BaseException) -> None:
    """The default of :func:`write_report`'s ``on_figure_error``: a RuntimeWarning naming the figure."""
    import warnings

    warnings.warn(f"{what} not drawn: {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=3)


def draw_figures(pack, check: str, records, out_dir: str) -> tuple[list[str], list]:
    """``check``'s figures drawn into ``out_dir`` as :func:`write_report` draws them, for another process (the
    worker that ran the check): ``(file names, [(what, exception)] of the figures skipped)``; an exception that
    cannot travel between processes comes back as a RuntimeError with its type and message."""
    import pickle

    skipped = []

    def keep(what, exc):
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 -- whatever stops it travelling, its text does
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        skipped.append((what, exc))

    return [os.path.basename(p) for p in figures_for(pack, check, records, out_dir, keep)], skipped


def write_report(
    out_dir: str,
    *,
    pack,
    records: dict[str, list[dict]],
    meta: dict,
    elapsed: dict | None = None,
    options: dict | None = None,
    on_figure_error=None,
    figures: dict | None = None,
) -> dict:
    """Write the report of ``records`` (``{check: [record dicts]}``, the pack's order) to ``out_dir``.
    ``figures`` (optional): ``{check: [file names in out_dir]}`` of checks whose figures are already drawn there
    (by :func:`draw_figures`, e.g. in the worker that ran the check); the others are drawn here.

    A figure that raises while it is drawn is skipped and the report written without it:
    ``on_figure_error(what, exc)`` is told (``what`` names the figure and its check), by default a
    :class:`RuntimeWarning`.

    Returns ``{"counts", "claim_counts", "violated", "findings", "controls", "claims", "paths"}``:

    * ``counts``: status -> number of records, negative controls INCLUDED (every record of claims.json);
    * ``claim_counts``: status -> number of records that are not negative controls (the report's totals);
    * ``violated``: every ``violated`` record, a legacy pack's violated control INCLUDED;
    * ``findings``: the ``violated`` records that are not controls (the findings about the paper);
    * ``controls``: the negative controls' records (:func:`proofs_checks.records.is_control`);
    * ``claims``: every record (with its ``check``); ``paths``: the files written."""
    from .latex import write_latex

    os.makedirs(out_dir, exist_ok=True)
    claims = [{"check": c, **r} for c, recs in records.items() for r in recs]
    paths = [_write_claims_json(out_dir, claims, meta)]
    paths += _write_csv_and_parquet(out_dir, claims, meta, _setting_columns(pack, claims))
    run = {
        "dir": out_dir,
        "seed": meta.get("seed", 0),
        "quick": bool(meta.get("quick")),
        "options": options or {},
        "elapsed": elapsed or {},
        "witness_files": witness_files(records),
    }
    paths += _write_witnesses(out_dir, records, run["witness_files"])
    sections, findings_by, open_q = [], {}, []
    for check, recs in records.items():
        if figures is not None and check in figures:
            figs = list(figures[check])
        else:
            figs = [os.path.basename(p) for p in figures_for(pack, check, recs, out_dir, on_figure_error or _warn)]
        paths += [os.path.join(out_dir, f) for f in figs]
        sections.append(_check_section(pack, check, recs, figs, run=run, findings_by=findings_by, open_q=open_q))
    section_figs = _section_figures(pack, claims, out_dir, on_figure_error or _warn)
    paths += [os.path.join(out_dir, f) for fs in section_figs.values() for f in fs]
    ctx = _context(pack, records, claims, sections, findings_by, open_q, meta, section_figs)
    paths += copy_katex(out_dir)
    paths += _write_pages(out_dir, ctx)
    paths.append(write_latex(out_dir, ctx, lambda cid: _tex(pack, cid)))
    return {
        "counts": ctx["counts"],
        "claim_counts": ctx["claim_counts"],
        "violated": [r for r in claims if r["status"] == "violated"],
        "findings": [r for r in claims if r["status"] == "violated" and not is_control(r)],
        "controls": [r for r in claims if is_control(r)],
        "claims": claims,
        "paths": paths,
    }
