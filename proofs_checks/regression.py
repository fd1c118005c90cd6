"""Claims as regression tests: compare records with a baseline and with failure rules
(``lptheory check --fail-on ... --baseline ...``, ``lptheory diff``)."""

from __future__ import annotations

__all__ = ["key", "compare", "format_regressions", "diff", "format_rows"]

_RANK = {"holds": 0, "not-applicable": 1, "inconclusive": 2, "violated": 3}
_SETTING = (
    "p",
    "d",
    "n",
    "noise",
    "problem",
    "instance",
    "method",
    "direction",
    "variant",
    "setting",
    "proof",
    "step",
    "lemma",
)


# parameters that are results of a run, not its setting (the worst case a search found, ...)
_OUTCOMES = {"worst_t", "bound_scale"}
_SEARCH_OUTCOMES = {"d", "k", "n"}


def _setting(rec: dict) -> list[tuple[str, object]]:
    pr = rec.get("params", {})
    skip = _OUTCOMES | (_SEARCH_OUTCOMES if rec.get("method") == "adversarial-search" else set())
    first = [k for k in _SETTING if k in pr]
    rest = sorted(k for k in pr if k not in _SETTING)
    return [(k, pr[k]) for k in first + rest if k not in skip and not isinstance(pr[k], (dict, list))]


def key(rec: dict) -> tuple:
    """The identity of a record across runs: check, claim id, method and its setting (every scalar
    parameter that is not a result of the run, such as the worst case a search found), not the numbers."""
    return (rec.get("check"), rec["id"], rec.get("method"), tuple((k, repr(v)) for k, v in _setting(rec)))


def _label(rec):
    s = ", ".join(f"{k}={v}" for k, v in _setting(rec))
    return f"{rec.get('check')}:{rec['id']}" + (f" ({s})" if s else "")


def compare(
    claims: list[dict], baseline: list[dict] | None, *, fail_on=(), ratio_tolerance: float = 0.05
) -> list[dict]:
    """The problems that fail a run: records whose status is in ``fail_on`` (``violated``,
    ``inconclusive``; a negative control that fails as it must is neither: :func:`records.control_failed`),
    with ``unproved`` a ``holds`` that holds on what was tested only (:func:`records.holds_scope` ``"tested"``;
    a class-wide holds, ``proved`` or ``exhaustive``, never fails it),
    and with ``regressed`` (or a baseline): a status worse than the baseline's, a
    violated claim whose witness no longer re-checks, a ratio that moved towards its bound by more than
    ``ratio_tolerance`` (relative), a baseline record that disappeared."""
    from .recheck import recheck
    from .records import control_failed, holds_scope, is_control

    out = []
    for r in claims:
        if is_control(r) and control_failed(r):  # a negative control failing as it must: not a finding
            continue
        if r["status"] in fail_on and r["status"] in ("violated", "inconclusive"):
            out.append({"kind": r["status"], "record": _label(r), "detail": (r.get("reason") or "")[:160]})
        if "unproved" in fail_on and holds_scope(r) == "tested" and not is_control(r):
            detail = f"holds on what was tested only (evidence {r.get('evidence')}): {r.get('scope') or ''}"
            out.append({"kind": "unproved", "record": _label(r), "detail": detail[:160]})
    if baseline is None or ("regressed" not in fail_on and fail_on):
        return out
    base = {key(b): b for b in baseline}
    now = {key(r): r for r in claims}
    for k, b in base.items():
        r = now.get(k)
        if r is None:
            out.append({"kind": "missing", "record": _label(b), "detail": "in the baseline, not in this run"})
            continue
        if _RANK[r["status"]] > _RANK[b["status"]]:
            out.append({"kind": "status", "record": _label(r), "detail": f"{b['status']} -> {r['status']}"})
        if r["status"] == "violated" and r.get("witness"):
            chk = recheck({kk: v for kk, v in r["witness"].items() if kk != "recheck"})
            if not chk["violated"]:
                out.append({"kind": "witness", "record": _label(r), "detail": "the witness no longer re-checks"})
        rb, rn = b.get("ratio"), r.get("ratio")
        if isinstance(rb, (int, float)) and isinstance(rn, (int, float)) and rb > 0 and r["status"] == b["status"]:
            if (
                rn > rb * (1 + ratio_tolerance)
                and rn <= 1.0 + 1e-12
                or (rn > rb * (1 + ratio_tolerance) and rb <= 1.0 < rn)
            ):
                out.append(
                    {
                        "kind": "ratio",
                        "record": _label(r),
                        "detail": f"ratio {rb:.4g} -> {rn:.4g} (towards the bound by more than {ratio_tolerance:.0%})",
                    }
                )
    return out


RECORD_WIDTH = 60  # the record column's width in the terminal tables; a longer label gets a line of its own


def format_rows(rows: list[dict], before: list[tuple[str, int]], after: list[tuple[str, int]]) -> list[str]:
    """Terminal table lines: ``before`` columns, the ``record`` column, then ``after`` columns (each
    ``(name, width)``; the last column unpadded). The record column is at most :data:`RECORD_WIDTH` wide: a
    longer record label is printed alone on its line, its columns on the next, so no line is hundreds of
    characters wide."""
    w = min(RECORD_WIDTH, max([len("record"), *(len(r["record"]) for r in rows)]))

    def cells(r, cols):
        return [
            f"{str(r.get(c, '')):<{n}}" if i < len(cols) - 1 else str(r.get(c, "")) for i, (c, n) in enumerate(cols)
        ]

    head = [f"{c:<{n}}" for c, n in before] + [f"{'record':<{w}}"] + [f"{c:<{n}}" for c, n in after]
    lines = [" ".join(head).rstrip()]
    for r in rows:
        left = " ".join(f"{str(r.get(c, '')):<{n}}" for c, n in before)
        right = " ".join(cells(r, after))
        pad = " " * (len(left) + 1 if before else 0)
        if len(r["record"]) > w:
            lines.append((left + " " if before else "") + r["record"])
            lines.append(pad + " " * w + " " + right)
        else:
            lines.append((left + " " if before else "") + f"{r['record']:<{w}} " + right)
    return lines


def format_regressions(problems: list[dict]) -> str:
    lines = [f"{len(problems)} finding(s) fail this run:"]
    lines += format_rows(problems, [("kind", 13)], [("detail", 0)])
    return "\n".join(lines)


def diff(old: list[dict], new: list[dict]) -> list[dict]:
    """What changed, claim by claim: status, ratio, witness, evidence (and records added or removed)."""
    a = {key(r): r for r in old}
    b = {key(r): r for r in new}
    rows = []
    for k in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(k), b.get(k)
        rec = rb or ra
        row = {"record": _label(rec), "id": rec["id"], "check": rec.get("check")}
        if ra is None:
            row.update(change="added", status=f"- -> {rb['status']}")
        elif rb is None:
            row.update(change="removed", status=f"{ra['status']} -> -")
        else:
            changes = []
            if ra["status"] != rb["status"]:
                changes.append("status")
            if ra.get("ratio") != rb.get("ratio"):
                changes.append("ratio")
            if (ra.get("witness") or {}) != (rb.get("witness") or {}):
                changes.append("witness")
            if ra.get("evidence") != rb.get("evidence"):  # e.g. searched -> proved: how far a holds reaches
                changes.append("evidence")
            if not changes:
                continue
            row.update(
                change=",".join(changes),
                status=(
                    f"{ra['status']} ({ra.get('evidence')}) -> {rb['status']} ({rb.get('evidence')})"
                    if "evidence" in changes
                    else f"{ra['status']} -> {rb['status']}"
                ),
                ratio=f"{ra.get('ratio')} -> {rb.get('ratio')}",
            )
        rows.append(row)
    return rows
