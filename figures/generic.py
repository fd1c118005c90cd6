"""Figures any check gets when its pack registers none: the ratio of every record with a ratio
(> 1 means the relation fails), one marker per record, coloured by verdict, grouped by claim id; and
for rate records (``data["rate"]`` from :func:`proofs_checks.engines.rate_claim`) the measured series
on log-log axes with the fitted and the claimed slopes."""

from __future__ import annotations

from proofs_checks.records import setting_text

from .style import STATUS_COLOR, d, plt, save, status_handles

__all__ = ["plot_ratios", "plot_rates"]


def plot_ratios(records, stem) -> list[str]:
    recs = [r for r in map(d, records) if isinstance(r.get("ratio"), (int, float))]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(7.6, 0.32 * len(recs) + 1.5))
    labels = [f"{r['id']}  {setting_text(r['params'], r.get('show'))}"[:70] for r in recs]
    for i, r in enumerate(recs):
        ax.plot(max(float(r["ratio"]), 1e-300), i, "o", color=STATUS_COLOR[r["status"]], ms=7)
    ax.axvline(1.0, color="k", ls="--", lw=1)
    ax.set_yticks(range(len(recs)), labels, fontsize=7)
    ax.invert_yaxis()
    vals = [float(r["ratio"]) for r in recs]
    if min(vals) > 0 and max(vals) / min(vals) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("ratio (> 1: the claimed relation fails)")
    ax.set_title("Claims: measured against claimed")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ratio_one = plt.Line2D([], [], color="k", ls="--", label="ratio 1")
    ax.legend(
        handles=status_handles({r["status"] for r in recs}) + [ratio_one],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    return save(fig, stem)


def plot_rates(records, stem) -> list[str]:
    """Each rate record's y against x (log-log), its fitted decay x^-e and the claimed x^-theory through
    the last point, coloured by verdict."""
    recs = [r for r in map(d, records) if r.get("relation") == "rate" and (r.get("data") or {}).get("rate")]
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
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save(fig, stem)
