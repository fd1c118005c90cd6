"""Figures any check gets when its pack registers none: every record that carries numbers, one row per
record, coloured by verdict, grouped by claim id. Records with a ratio are drawn at their ratio (> 1 means
the relation fails), with the interval of a Monte Carlo estimate; equalities and other records without a
ratio (the ratio has no meaning there) are drawn at 1 with a diamond and their difference written next to
them, so a violated equality is never left out.
Rate records (``data["rate"]`` from :func:`proofs_checks.engines.rate_claim`) get their measured series
on log-log axes with the fitted and the claimed slopes."""

from __future__ import annotations

import json
import textwrap

from proofs_checks.records import SETTING_KEYS, clean, setting_text

from .style import STATUS_COLOR, d, plt, save, status_handles

__all__ = ["plot_ratios", "plot_rates"]

# the fields of a record these figures read
_FIELDS = ("id", "check", "status", "params", "show", "ratio", "empirical", "bound", "relation", "ci")


def _read_back(records, rates: bool = False) -> list[dict]:
    """The fields these figures read of ``records``, as a report's ``claims.json`` gives them back (the report
    writes :func:`proofs_checks.records.clean`'s JSON with sorted keys): tuples as lists, numpy numbers as
    Python's, non-finite floats as strings, parameters in name order. A figure drawn from a check's records and one
    drawn from its claims.json read back are then the same (the coverage figure's row labels differed: they
    listed the parameters in the order of the record's dict). ``rates``: the rate series (``data["rate"]``) too."""
    out = []
    for r in map(d, records):
        keep = {k: r[k] for k in _FIELDS if k in r}
        if rates and isinstance(r.get("data"), dict) and "rate" in r["data"]:
            keep["data"] = {"rate": r["data"]["rate"]}
        out.append(keep)
    return json.loads(json.dumps(clean(out), sort_keys=True, allow_nan=False))


def _label(r, width: int = 58) -> str:
    """The record's id and the parts of its setting the id does not already say: its ``show`` in its order, or
    every parameter, the common ones (:data:`~proofs_checks.records.SETTING_KEYS`) first, the others by name."""
    pr = r["params"]
    order = r.get("show") or [*(k for k in SETTING_KEYS if k in pr), *sorted(k for k in pr if k not in SETTING_KEYS)]
    keys = [k for k in order if k in pr and str(pr[k]) not in r["id"]]
    s = setting_text(pr, keys) if keys else ""
    text = f"{r['id']}  {s}" if s else r["id"]
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def plot_ratios(records, stem, title: str | None = None) -> list[str]:
    """The records of one check: ratio measured / claimed per record (log scale when it spans decades);
    ``title`` says which check (default: the first record's check)."""
    num = (int, float)
    recs = [
        r
        for r in _read_back(records)
        if isinstance(r.get("ratio"), num)
        or (isinstance(r.get("empirical"), num) and isinstance(r.get("bound"), num) and r.get("relation") != "rate")
    ]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(8.4, 0.3 * len(recs) + 1.7))
    diamonds = False
    for i, r in enumerate(recs):
        col = STATUS_COLOR[r["status"]]
        if isinstance(r.get("ratio"), num):
            x = max(float(r["ratio"]), 1e-300)
            ci, b = r.get("ci"), r.get("bound")
            if isinstance(ci, list) and len(ci) == 2 and isinstance(b, num) and b > 0 and r.get("relation") == "<=":
                ax.errorbar(
                    x, i, xerr=[[max(x - ci[0] / b, 0)], [max(ci[1] / b - x, 0)]], fmt="none", ecolor=col, capsize=3
                )
            ax.plot(x, i, "o", color=col, ms=7)
        else:
            diamonds = True
            diff = abs(float(r["empirical"]) - float(r["bound"]))
            ax.plot(1.0, i, "D", color=col, ms=7)
            ax.annotate(
                f" {'equality' if r.get('relation') == '==' else r.get('relation', '')} off by {diff:.3g}",
                (1.0, i),
                fontsize=8,
                va="center",
                xytext=(6, 0),
                textcoords="offset points",
                color=col,
            )
    ax.axvline(1.0, color="k", ls="--", lw=1)
    ax.set_yticks(range(len(recs)), [_label(r) for r in recs], fontsize=8)
    ax.invert_yaxis()
    vals = [float(r["ratio"]) for r in recs if isinstance(r.get("ratio"), num)] or [1.0]
    vals.append(1.0)
    log = min(vals) > 0 and max(vals) / min(vals) > 20
    if log:
        ax.set_xscale("log")
    if diamonds:  # room for the differences written right of the diamonds
        lo, hi = min(vals), max(vals)
        ax.set_xlim(right=hi * 40 if log else hi + 0.6 * (hi - lo) + 0.3)
    ax.set_xlabel("measured / claimed (dimensionless ratio; > 1: the claimed relation fails)")
    check = recs[0].get("check")
    ax.set_title(
        "\n".join(textwrap.wrap(title, 90))
        if title
        else (f"{check}: every record, measured against claimed" if check else "measured against claimed"),
        fontsize=10,
    )
    ax.grid(True, axis="x", which="both", alpha=0.3)
    handles = status_handles({r["status"] for r in recs}) + [plt.Line2D([], [], color="k", ls="--", label="ratio 1")]
    if diamonds:
        handles.append(plt.Line2D([], [], marker="D", ls="", color="k", label="no ratio (equality): difference shown"))
    if any(isinstance(r.get("ci"), list) for r in recs):
        handles.append(plt.Line2D([], [], marker="|", ls="-", color="k", label="95% interval (Monte Carlo)"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, stem)


def plot_rates(records, stem) -> list[str]:
    """Each rate record's y against x (log-log), its fitted decay x^-e and the claimed x^-theory through
    the last point, coloured by verdict."""
    recs = [
        r for r in _read_back(records, rates=True) if r.get("relation") == "rate" and (r.get("data") or {}).get("rate")
    ]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    for r in recs:
        rate = r["data"]["rate"]
        xs, ys = rate["x"], rate["y"]
        if min(xs) <= 0 or min(ys) <= 0:
            continue
        color = STATUS_COLOR[r["status"]]
        label = f"{r['id']} {setting_text(r['params'], r.get('show'))}"[:60]
        ax.plot(xs, ys, "o-", color=color, ms=4, lw=1.2, alpha=0.8, label=f"{label}: e = {rate['fit']['exponent']:.3g}")
        x1, y1 = xs[-1], ys[-1]
        ax.plot(xs, [y1 * (x / x1) ** (-rate["theory"]) for x in xs], ":", color=color, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(recs[0]["data"]["rate"].get("x_label", "x"))
    ax.set_title("Rates: measured (markers) and claimed slope through the last point (dotted)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, stem)
