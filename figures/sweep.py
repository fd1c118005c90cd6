"""Rate curves of a sweep (``lptheory plot SWEEP_DIR``): a metric against a swept parameter on log-log
axes, one line per ``hue`` value and one panel per ``col`` value, with intervals over seeds (or over the
replicates of a cell when there is one seed) and the fitted slope of each line; a dashed reference line
with the theoretical slope when one is given."""

from __future__ import annotations

import math
import os

import numpy as np

from .style import plt, save

__all__ = ["plot_sweep"]


def _column(table, name):
    if name not in table.column_names:
        raise ValueError(f"no column {name!r} in the sweep's results (columns: {', '.join(table.column_names)})")
    return table.column(name).to_pylist()


def _aggregate(values, los, his):
    """Mean over seeds with a Student-t interval; with one seed, that cell's interval over replicates."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return float(v[0]), float(los[0]), float(his[0])
    m = float(v.mean())
    half = float(student_t.ppf(0.975, v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return m, m - half, m + half


def plot_sweep(
    table,
    stem: str,
    *,
    x: str,
    y: str,
    hue: str | None = None,
    col: str | None = None,
    theory_slope: float | None = None,
    step: str = "last",
    title: str = "",
) -> tuple[dict, list[str]]:
    """Draw the figure to ``stem``.png and ``stem``.svg; returns the fitted slopes
    ``{(col value, hue value): slope}`` and the paths."""
    metric = _column(table, "metric")
    rows = [i for i, m in enumerate(metric) if m == y]
    if not rows:
        raise ValueError(f"metric {y!r} was not recorded (recorded: {', '.join(sorted(set(metric)))})")
    xs = _column(table, x)
    hues = _column(table, hue) if hue else ["all"] * len(metric)
    cols = _column(table, col) if col else ["all"] * len(metric)
    steps = _column(table, "step")
    cells = _column(table, "cell_hash")
    means, los, his = _column(table, "mean"), _column(table, "lo"), _column(table, "hi")
    seeds = _column(table, "seed")
    if step == "last":  # the last recorded step of each cell
        last = {}
        for i in rows:
            last[cells[i]] = max(last.get(cells[i], -1), steps[i])
        rows = [i for i in rows if steps[i] == last[cells[i]]]
    groups: dict = {}
    for i in rows:
        groups.setdefault((cols[i], hues[i], xs[i]), []).append(i)
    col_vals = sorted({k[0] for k in groups}, key=_sort_key)
    hue_vals = sorted({k[1] for k in groups}, key=_sort_key)
    fig, axes = plt.subplots(1, len(col_vals), figsize=(3.6 * len(col_vals) + 0.6, 3.4), squeeze=False, sharey=True)
    slopes = {}
    for ax, cv in zip(axes[0], col_vals):
        for hv in hue_vals:
            pts = sorted((k[2], v) for k, v in groups.items() if k[0] == cv and k[1] == hv)
            if not pts:
                continue
            X, M, LO, HI = [], [], [], []
            for xv, idx in pts:
                by_seed = {}
                for i in idx:
                    by_seed.setdefault(seeds[i], i)
                sel = list(by_seed.values())
                m, lo, hi = _aggregate([means[i] for i in sel], [los[i] for i in sel], [his[i] for i in sel])
                X.append(float(xv))
                M.append(m)
                LO.append(lo)
                HI.append(hi)
            X, M = np.array(X), np.array(M)
            good = (X > 0) & (M > 0)
            slope = math.nan
            if good.sum() >= 2:
                slope = float(np.polyfit(np.log(X[good]), np.log(M[good]), 1)[0])
            slopes[(cv, hv)] = slope
            (line,) = ax.plot(X, M, marker="o", ms=3, label=f"{hv} (slope {slope:.2f})")
            ax.fill_between(X, np.maximum(LO, 1e-300), np.maximum(HI, 1e-300), color=line.get_color(), alpha=0.2)
        if theory_slope is not None and np.isfinite(theory_slope):
            allx = sorted({float(k[2]) for k in groups if k[0] == cv})
            ym = [np.mean([means[i] for i in groups[k]]) for k in groups if k[0] == cv and float(k[2]) == allx[0]]
            if allx and ym and ym[0] > 0:
                ref = ym[0] * (np.array(allx) / allx[0]) ** theory_slope
                ax.plot(allx, ref, "k--", lw=1, label=f"theory: slope {theory_slope:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(x)
        if col:
            ax.set_title(f"{col} = {cv}")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(f"{y} (mean, 95% interval)")
    if title:
        fig.suptitle(title)
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    return slopes, save(fig, stem)


def _sort_key(v):
    return (0, float(v), "") if isinstance(v, (int, float)) else (1, 0.0, str(v))
