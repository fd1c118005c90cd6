"""Figures of the practice pack, drawn from its records (nothing trained or re-decided here), the ones a reader
checks first (issue 42): per task,

* ``practice_<task>_tuning``: the validation loss of every tuning point against each tuned hyper-parameter, per
  optimizer (the Sobol points, the chosen one starred, the range's edges dashed, log axes where the
  hyper-parameter is searched on a log scale, the learning-rate pilot in grey, diverged or off-scale points as
  triangles at the top);
* ``practice_<task>_forest``: the paired differences of the primary family (final checkpoint) with their 95%
  intervals and per-seed values, coloured by the Holm reading, against the zero line; the slowed-AdamW control
  below;
* ``practice_<task>_curves``: the learning curves (mean and 95% band over the final seeds) per optimizer, one line
  style per optimizer;
* ``practice_<task>_p``: the final headline value against p with 95% intervals, and the nested-bootstrap
  probability of the best p;

and ``practice_probe_controls`` for the probe's synthetic control. :func:`plot_profile` draws the across-task
performance profile (:mod:`proofs_checks.practice.profiles`) from the records of several tasks.

Registered on :data:`~proofs_checks.practice.PACK` for the built-in tasks; :func:`register_task_figures` registers
them for any other task's check. Every figure survives non-finite values (diverged runs) and missing data: what
cannot be drawn is left out, and a figure with nothing to draw writes no file (returns ``[]``). Imported only when
the report draws figures.
"""

from __future__ import annotations

import math

import numpy as np

from figures.style import d, plt, save

from . import PACK
from .tasks import installed

__all__ = [
    "plot_tuning",
    "plot_forest",
    "plot_curves",
    "plot_p",
    "plot_profile",
    "plot_controls",
    "register_task_figures",
    "figures_for_task",
    "for_pack",
    "KINDS",
]

HEADLINE = "practice.outperforms.headline"
_FS = 9  # tick labels and legends; axis labels and titles one point larger

# one look per optimizer, the same on every task's figures (unknown names take the next of _EXTRA)
_LOOK = {
    "SGD w/ momentum": ("tab:blue", (0, (1, 1.2)), "v"),
    "Adam": ("tab:orange", (0, (5, 2)), "s"),
    "AdamW": ("tab:green", (0, (6, 2, 1, 2)), "D"),
    "Lion": ("tab:brown", (0, (3, 1, 1, 1, 1, 1)), "^"),
    "Stacey(p,p)": ("tab:red", "-", "o"),
    "Stacey(p,2)": ("tab:purple", (0, (8, 1.5)), "X"),
}
_EXTRA = [("tab:pink", "-", "P"), ("tab:olive", "--", "*"), ("tab:cyan", "-.", "h"), ("tab:gray", ":", "d")]


def _look(label: str, seen: dict):
    """(colour, line style, marker) of an optimizer label (``"Stacey(p,p) p=3"`` looks like ``Stacey(p,p)``)."""
    fam = label.split(" p=")[0].split(" = ")[0]
    if fam in _LOOK:
        c, ls, m = _LOOK[fam]
        if "p=" in label and fam.startswith("Stacey"):  # several p of one variant: the same colour, other dashes
            k = seen.setdefault(("p", fam), {}).setdefault(label, len(seen[("p", fam)]))
            if k:
                ls = [(0, (4, 1.5)), (0, (2, 1)), (0, (6, 1, 1, 1)), (0, (1, 1))][(k - 1) % 4]
        return c, ls, m
    k = seen.setdefault(label, len([x for x in seen if isinstance(x, str)]))
    return _EXTRA[k % len(_EXTRA)]


def _num(v) -> float:
    """A record's number as a float (JSON's ``"inf"``/``"nan"`` strings, None and junk: their value or NaN)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _arr(xs) -> np.ndarray:
    """A flat float64 array of ``xs`` (a list of numbers or number-like strings; None: empty)."""
    if xs is None:
        return np.array([], dtype=np.float64)
    return np.array([_num(x) for x in np.ravel(np.asarray(xs, dtype=object))], dtype=np.float64)


def _task_of(r: dict):
    return (r.get("params") or {}).get("task")


def _of_task(records, task: str | None) -> list[dict]:
    """The records (as dicts) of ``task`` (all of them when ``task`` is None or no record names a task)."""
    rs = [d(r) for r in records]
    if task is None:
        return rs
    mine = [r for r in rs if _task_of(r) == task]
    return mine if mine else [r for r in rs if _task_of(r) is None]


def _headline(rs):
    return next((r for r in rs if r.get("id") == HEADLINE and isinstance(r.get("data"), dict)), None)


def _title(fig, r: dict, what: str):
    pr = r.get("params") or {}
    bits = [str(pr.get("task", "?"))]
    if pr.get("scale"):
        bits.append(f"{pr['scale']} run")
    if pr.get("seeds"):
        bits.append(f"{pr['seeds']} seeds")
    fig.suptitle(f"{' · '.join(bits)}: {what}", fontsize=_FS + 2)


def _metric_label(key: str, r: dict) -> str:
    """What a curve key measures: the losses by name, the headline test quantity by the record's metric."""
    names = {"train_loss": "training loss", "test_loss": "test loss", "val_loss": "validation loss"}
    if key in names:
        return names[key]
    if key == (r.get("data") or {}).get("headline") and (r.get("params") or {}).get("metric"):
        return str(r["params"]["metric"])
    return key.replace("_", " ")


# -- (a) validation loss against each tuned hyper-parameter ----------------------------------------------------------
_HP_NAMES = {"lr": "learning rate", "weight_decay": "weight decay", "warmup": "warm-up fraction", "alpha": "alpha"}


def _clip_axis(vals: np.ndarray, log: bool, best: float):
    """(bottom, top) of a loss axis showing the typical values: from the smallest shown value to 100x the best
    (or the largest finite value, if smaller), a margin around; None when nothing finite is shown."""
    ok = np.isfinite(vals) & ((vals > 0) if log else True)
    if not ok.any():
        return None
    lo, hi = float(vals[ok].min()), float(vals[ok].max())
    if math.isfinite(best) and (best > 0 or not log):
        hi = min(hi, best * 100 if best > 0 else hi)
    if log:
        return lo / 1.6, max(hi, lo * 1.01) * 1.6
    pad = 0.08 * (hi - lo) or 0.1 * (abs(hi) or 1.0)
    return lo - pad, hi + pad


def _scatter_clipped(ax, x, y, lim, log, **kw):
    """``y`` against ``x``: points within ``lim`` as given, the others (non-finite, above, below or not positive
    on a log axis) as open triangles at the edge they passed. Returns whether any was clipped."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    good_x = np.isfinite(x) & ((x > 0) if ax.get_xscale() == "log" else True)
    above = good_x & (~np.isfinite(y) | (y > lim[1]))
    below = good_x & np.isfinite(y) & ((y < lim[0]) | ((y <= 0) if log else False))
    inside = good_x & ~above & ~below
    ax.scatter(x[inside], y[inside], **kw)
    c = kw.get("color", "k")
    if above.any():
        ax.scatter(x[above], np.full(above.sum(), lim[1]), marker="^", facecolors="none", edgecolors=c, s=28, lw=0.9)
    if below.any():
        ax.scatter(x[below], np.full(below.sum(), lim[0]), marker="v", facecolors="none", edgecolors=c, s=28, lw=0.9)
    return bool(above.any() or below.any())


def _draw_tuning(rs, stem):
    r = _headline(rs)
    tuning = (r or {}).get("data", {}).get("tuning") if r else None
    if not isinstance(tuning, dict) or not tuning:
        tuning = next((x["data"]["tuning"] for x in rs if isinstance((x.get("data") or {}).get("tuning"), dict)), None)
        r = r or next((x for x in rs if isinstance((x.get("data") or {}).get("tuning"), dict)), None)
    if not tuning:
        return []
    rows = [(lab, t) for lab, t in tuning.items() if isinstance(t, dict) and t.get("points")]
    if not rows:
        return []
    hps: list = []
    for _, t in rows:
        for hp in list((t.get("space") or {}).keys()) + [k for p in t["points"] for k in p]:
            if hp not in hps:
                hps.append(hp)
    nr, nc = len(rows), len(hps)
    fig, axes = plt.subplots(nr, nc, figsize=(3.0 * nc + 0.6, 2.15 * nr + 0.8), squeeze=False)
    seen: dict = {}
    clipped_any = False
    for i, (lab, t) in enumerate(rows):
        colour, _, _ = _look(lab, seen)
        scores = _arr(t.get("scores"))
        pts = t["points"][: scores.size]
        scores = scores[: len(pts)]
        chosen = t.get("chosen") or {}
        ci = next((k for k, p in enumerate(pts) if p == chosen), None)
        fin = scores[np.isfinite(scores)]
        best = float(scores[ci]) if ci is not None and np.isfinite(scores[ci]) else math.nan
        if not math.isfinite(best) and fin.size:
            best = float(fin.min())
        pilot = t.get("pilot") if isinstance(t.get("pilot"), dict) else None
        pv = _arr(pilot.get("val_loss")) if pilot else np.array([])
        log_y = bool(fin.size) and bool(np.all(fin > 0))
        lim = _clip_axis(np.concatenate([scores, pv]), log_y, best)
        space = t.get("space") or {}
        logs = set(t.get("log") or [])
        edges = set(t.get("at_edge") or [])
        for j, hp in enumerate(hps):
            ax = axes[i][j]
            x = _arr([p.get(hp) for p in pts])
            if not np.isfinite(x).any():
                ax.text(
                    0.5,
                    0.5,
                    f"{_HP_NAMES.get(hp, hp)}:\nnot tuned",
                    ha="center",
                    va="center",
                    fontsize=_FS,
                    color="0.4",
                    transform=ax.transAxes,
                )
                ax.set_xticks([]), ax.set_yticks([])
                continue
            if hp in logs:
                ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
            if not fin.size:
                ax.text(
                    0.5,
                    0.5,
                    "every tuning point diverged",
                    ha="center",
                    va="center",
                    fontsize=_FS,
                    color="tab:red",
                    transform=ax.transAxes,
                )
            if lim is not None:
                ax.set_ylim(*lim)
                clipped_any |= _scatter_clipped(ax, x, scores, lim, log_y, color=colour, s=22, alpha=0.85, lw=0)
                if hp == "lr" and pilot and pv.size:
                    px = _arr(pilot.get("lr"))[: pv.size]
                    order = np.argsort(px)
                    ok = np.isfinite(pv[order]) & (pv[order] >= lim[0]) & (pv[order] <= lim[1])
                    ax.plot(px[order][ok], pv[order][ok], color="0.55", lw=0.8, marker="x", ms=4, zorder=1)
                    clipped_any |= _scatter_clipped(ax, px, pv, lim, log_y, color="0.55", s=0)
                if ci is not None and np.isfinite(x[ci]):
                    yc = float(scores[ci]) if np.isfinite(scores[ci]) else lim[1]
                    ax.scatter(
                        [x[ci]],
                        [min(max(yc, lim[0]), lim[1])],
                        marker="*",
                        s=150,
                        color="tab:red" if hp in edges else "k",
                        edgecolors="white",
                        lw=0.6,
                        zorder=5,
                    )
            lo_hi = space.get(hp)
            if isinstance(lo_hi, (list, tuple)) and len(lo_hi) == 2:
                for e in map(_num, lo_hi):
                    if math.isfinite(e) and (e > 0 or hp not in logs):
                        ax.axvline(e, color="0.3", ls="--", lw=0.9)
            ax.tick_params(labelsize=_FS - 1)
            ax.minorticks_off()  # (hundreds of log-axis minor ticks: most of the drawing time)
            ax.set_xlabel(
                _HP_NAMES.get(hp, hp) + (" (at the edge)" if hp in edges else ""),
                fontsize=_FS,
                color="tab:red" if hp in edges else "black",
            )
            if j == 0:
                ax.set_ylabel(f"{lab}\nval loss", fontsize=_FS)
    handles = [
        plt.Line2D([], [], marker="o", ls="", color="0.35", label="Sobol point (mean over tuning seeds)"),
        plt.Line2D([], [], marker="*", ls="", color="k", ms=11, label="chosen"),
        plt.Line2D([], [], marker="*", ls="", color="tab:red", ms=11, label="chosen at the range's edge"),
        plt.Line2D([], [], ls="--", color="0.3", label="range searched (after widening)"),
        plt.Line2D([], [], marker="x", color="0.55", lw=0.8, label="learning-rate pilot (1 seed)"),
    ]
    if clipped_any:
        handles.append(
            plt.Line2D(
                [],
                [],
                marker="^",
                ls="",
                mfc="none",
                color="0.3",
                label="diverged or off scale (at the edge it passed)",
            )
        )
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=_FS, frameon=False)
    _title(fig, r or {}, "validation loss of each tuning point against each tuned hyper-parameter")
    return save(fig, stem)


# -- (b) forest plot of the paired differences -----------------------------------------------------------------------
_READING = {
    "better": ("tab:green", "Stacey better after Holm"),
    "worse": ("tab:red", "baseline better after Holm"),
    "none": ("0.45", "no difference after Holm"),
    "diverged": ("tab:red", "a run diverged: no test"),
}


def _reading(r: dict) -> str:
    dd = r.get("data") or {}
    alpha = _num((dd.get("test") or {}).get("alpha", 0.05))
    hb, hw = _num(dd.get("holm_better")), _num(dd.get("holm_worse"))
    if not math.isfinite(_num(dd.get("mean"))):
        return "diverged"
    if hb < alpha:
        return "better"
    if hw < alpha:
        return "worse"
    return "none"


def _interval(diff):
    from .stats import t_interval

    v = _arr(diff)
    if v.size < 2 or not np.all(np.isfinite(v)):
        return None
    return t_interval(v)


def _forest_row(r: dict, is_ctl: bool):
    """(label, reading key, mean, lo, hi, per-seed differences, right-hand text) of one record."""
    pr, dd = r.get("params") or {}, r["data"]
    diffs = _arr(dd.get("difference"))
    if is_ctl:
        found = bool(((r.get("witness") or {}).get("recheck") or {}).get("violated"))
        got = _interval(diffs)
        mean, lo, hi = got if got else (math.nan, math.nan, math.nan)
        text = "found losing, as it must" if found else "NOT found losing"
        return (
            f"{pr.get('variant', 'control')}\nvs {pr.get('baseline', '?')}",
            "worse" if found else "none",
            mean,
            lo,
            hi,
            diffs,
            text,
        )
    ci = dd.get("ci95") or [math.nan, math.nan]
    hb, hw = _num(dd.get("holm_better")), _num(dd.get("holm_worse"))
    text = str(r.get("status", ""))
    if math.isfinite(hb) and math.isfinite(hw):
        text += f" (Holm p {min(hb, hw):.2g})"
    p = _num(pr.get("p"))
    var = str(pr.get("variant", "?")) + (f", p = {p:g}" if math.isfinite(p) else "")
    return (
        f"{var} vs {pr.get('baseline', '?')}",
        _reading(r),
        _num(dd.get("mean")),
        _num(ci[0]),
        _num(ci[1]),
        diffs,
        text,
    )


def _draw_forest(rs, stem):
    prim = [
        r
        for r in rs
        if r.get("id") == "practice.outperforms"
        and (r.get("params") or {}).get("role", "primary") == "primary"
        and isinstance(r.get("data"), dict)
    ]
    ctl = [r for r in rs if r.get("id") == "practice.outperforms.control" and isinstance(r.get("data"), dict)]
    if not prim and not ctl:
        return []
    panels: dict = {}
    for r in prim:
        panels.setdefault((r.get("params") or {}).get("metric", "?"), []).append(r)
    if ctl:
        panels["control"] = ctl
    nrow = max(len(v) for v in panels.values())
    widths = [1.0 if k != "control" else 0.7 for k in panels]
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(5.6 * sum(widths) + 2.5, 0.42 * nrow + 2.0),
        squeeze=False,
        gridspec_kw={"width_ratios": widths},
    )
    used = set()
    head = _headline(rs)
    maximize = bool(((head or {}).get("data") or {}).get("maximize"))
    for ax, (m, recs) in zip(axes[0], panels.items()):
        is_ctl = m == "control"
        xs_all, ticks = [0.0], []
        for y, r in enumerate(recs):
            lab, key, mean, lo, hi, diffs, text = _forest_row(r, is_ctl)
            colour = _READING[key][0]
            used.add(key)
            fin = diffs[np.isfinite(diffs)]
            if fin.size:
                jitter = np.linspace(-0.15, 0.15, fin.size)
                ax.scatter(fin, -y + jitter, s=10, color=colour, alpha=0.35, lw=0, zorder=2)
                xs_all += fin.tolist()
            if math.isfinite(mean):
                if math.isfinite(lo) and math.isfinite(hi):
                    ax.plot([lo, hi], [-y, -y], color=colour, lw=2.4, solid_capstyle="butt", zorder=3)
                    xs_all += [lo, hi]
                ax.plot(
                    [mean], [-y], marker="D" if is_ctl else "o", ms=6.5, color=colour, mec="white", mew=0.6, zorder=4
                )
                xs_all.append(mean)
            else:
                ax.plot([0.0], [-y], marker="x", ms=8, mew=2, color=colour, zorder=4)
            ax.annotate(
                text,
                (1.0, -y),
                xycoords=("axes fraction", "data"),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=_FS - 1,
                color=colour,
            )
            ticks.append(lab)
        ax.axvline(0.0, color="k", lw=0.9)
        ax.set_yticks([-y for y in range(len(recs))], ticks, fontsize=_FS - 0.5)
        ax.set_ylim(-nrow + 0.4, 0.6)
        xs = np.array(xs_all)
        span = float(np.ptp(xs)) or 1.0
        ax.set_xlim(xs.min() - 0.08 * span, xs.max() + 0.08 * span)
        ax.tick_params(axis="x", labelsize=_FS)
        ax.grid(axis="x", alpha=0.25, lw=0.5)
        pr0 = recs[0].get("params") or {}
        if is_ctl:
            ax.set_title(f"control that must lose ({pr0.get('metric', '?')})", fontsize=_FS + 1)
            ax.set_xlabel(
                "paired difference (per seed; 95% t-interval)\nright of 0: the tuned AdamW better", fontsize=_FS + 0.5
            )
        else:
            better = " (higher is better)" if maximize and m != "training loss" else ""
            ax.set_title(f"{m}{better}, {pr0.get('checkpoint', '')}", fontsize=_FS + 1)
            ax.set_xlabel(
                f"paired difference in {m} (per seed; 95% t-interval)\n"
                "left of 0: Stacey better · right of 0: the baseline better",
                fontsize=_FS + 0.5,
            )
    handles = [
        plt.Line2D([], [], marker="o", ls="-", lw=2, color=_READING[k][0], label=_READING[k][1])
        for k in ("better", "worse", "none", "diverged")
        if k in used
    ]
    handles.append(plt.Line2D([], [], marker="o", ls="", ms=3, alpha=0.5, color="0.4", label="one seed"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=_FS, frameon=False)
    r0 = (prim or ctl)[0]
    fam = ((r0.get("data") or {}).get("test") or {}).get("family")
    _title(
        fig,
        r0,
        "paired differences at the final checkpoint (primary family"
        + (f" of {fam} comparisons, Holm)" if fam else ", Holm)"),
    )
    return save(fig, stem)


# -- (c) learning curves with bands ---------------------------------------------------------------------------------
def _draw_curves(rs, stem):
    r = _headline(rs)
    curves = (r or {}).get("data", {}).get("curves") if r else None
    if not isinstance(curves, dict) or not curves:
        return []
    keys: list = []
    for per in curves.values():
        for k in per or {}:
            if k not in keys:
                keys.append(k)
    if not keys:
        return []
    dd = r["data"]
    fig, axes = plt.subplots(1, len(keys), figsize=(5.4 * len(keys), 4.0), squeeze=False)
    seen: dict = {}
    cps = _arr(dd.get("checkpoints"))
    for ax, key in zip(axes[0], keys):
        lows = []
        for lab, per in curves.items():
            c = (per or {}).get(key)
            if not isinstance(c, dict):
                continue
            st, mean = _arr(c.get("step")), _arr(c.get("mean"))
            lo, hi = _arr(c.get("lo")), _arr(c.get("hi"))
            n = min(st.size, mean.size)
            if not n:
                continue
            st, mean = st[:n], mean[:n]
            colour, ls, mk = _look(lab, seen)
            mean = np.where(np.isfinite(mean), mean, np.nan)
            if lo.size >= n and hi.size >= n:
                lo, hi = lo[:n], hi[:n]
                ok = np.isfinite(lo) & np.isfinite(hi)
                ax.fill_between(st, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=colour, alpha=0.15, lw=0)
            ax.plot(
                st,
                mean,
                color=colour,
                ls=ls,
                lw=2.0 if lab.startswith("Stacey") else 1.6,
                marker=mk,
                ms=4.5,
                markevery=max(1, n // 8),
                label=lab + ("" if np.isfinite(mean).all() else " (diverged)"),
            )
            fin = np.flatnonzero(np.isfinite(mean))
            if fin.size and fin[-1] < n - 1:  # diverged: a cross where the mean was last a number
                ax.plot([st[fin[-1]]], [mean[fin[-1]]], marker="x", ms=9, mew=2, color=colour, ls="")
            lows += mean[fin].tolist()
        if "loss" in key and lows and min(lows) > 0:
            ax.set_yscale("log")
        for c in cps[np.isfinite(cps)]:
            ax.axvline(c, color="0.75", lw=0.8, ls=":", zorder=0)
        ax.set_xlabel("step", fontsize=_FS + 1)
        ax.set_ylabel(_metric_label(key, r), fontsize=_FS + 1)
        ax.tick_params(labelsize=_FS)
        ax.grid(alpha=0.25, which="both", lw=0.5)
    h, lab = axes[0][0].get_legend_handles_labels()
    if h:
        fig.legend(h, lab, loc="outside right upper", fontsize=_FS, frameon=False)
    model = (r.get("params") or {}).get("model", "")
    _title(fig, r, "mean and 95% band over the final seeds (checkpoints dotted)")
    if model:
        fig.text(0.5, -0.01, model, ha="center", va="top", fontsize=_FS - 1, color="0.35")
    return save(fig, stem)


# -- (d) final headline value against p ----------------------------------------------------------------------------
def _draw_p(rs, stem):
    best = [
        r
        for r in rs
        if r.get("id") == "practice.best-p"
        and isinstance(r.get("data"), dict)
        and r["data"].get("p")
        and r["data"].get("values")
    ]
    if not best:
        return []
    by_var: dict = {}
    for r in best:
        by_var.setdefault((r.get("params") or {}).get("variant", "?"), []).append(r)
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.0))
    seen: dict = {}
    nv = len(by_var)
    claimed = None
    for i, (var, recs) in enumerate(by_var.items()):
        dd = recs[0]["data"]
        ps = _arr(dd["p"])
        colour, ls, mk = _look(var, seen)
        verdicts = ", ".join(f"{(x.get('params') or {}).get('reading', '?')}: {x.get('status', '?')}" for x in recs)
        off = (i - (nv - 1) / 2) * 0.05 * (float(np.ptp(ps)) or 1.0)
        ms, los, his = [], [], []
        for k, row in enumerate(dd["values"][: ps.size]):
            v = _arr(row)
            fin = v[np.isfinite(v)]
            got = _interval(v)
            if got:
                m, lo, hi = got
            elif fin.size:
                m, lo, hi = float(fin.mean()), math.nan, math.nan
            else:
                m = lo = hi = math.nan
            ms.append(m), los.append(lo), his.append(hi)
            if fin.size:
                axes[0].scatter(np.full(fin.size, ps[k] + off), fin, s=10, color=colour, alpha=0.35, lw=0)
            if fin.size < v.size:
                axes[0].annotate(
                    f"{v.size - fin.size} diverged",
                    (ps[k] + off, m if math.isfinite(m) else 0),
                    fontsize=_FS - 1,
                    color="tab:red",
                    xytext=(3, 3),
                    textcoords="offset points",
                )
        ms, los, his = map(np.array, (ms, los, his))
        ok = np.isfinite(ms) & np.isfinite(los) & np.isfinite(his)
        axes[0].errorbar(
            ps[ok] + off,
            ms[ok],
            yerr=[ms[ok] - los[ok], his[ok] - ms[ok]],
            fmt="none",
            ecolor=colour,
            capsize=3,
            lw=1.4,
        )
        axes[0].plot(ps + off, ms, color=colour, ls=ls, marker=mk, ms=6, lw=1.5, label=f"{var} [{verdicts}]")
        freq = _arr(dd.get("freq"))
        if freq.size == ps.size:
            w = 0.8 * (float(np.min(np.diff(np.sort(ps)))) if ps.size > 1 else 1.0) / max(nv, 1)
            axes[1].bar(ps + (i - (nv - 1) / 2) * w, np.nan_to_num(freq), width=w, color=colour, alpha=0.8, label=var)
        claimed = _num((recs[0].get("params") or {}).get("claimed_p"))
    grid = sorted({float(p) for recs in by_var.values() for p in _arr(recs[0]["data"]["p"]) if math.isfinite(p)})
    for ax in axes:
        if grid:
            ax.set_xticks(grid, [f"{p:g}" for p in grid])
        if claimed is not None and math.isfinite(claimed):
            ax.axvline(claimed, color="0.3", ls=":", lw=1.2, label=f"claimed p = {claimed:g}")
        ax.set_xlabel("p", fontsize=_FS + 1)
        ax.tick_params(labelsize=_FS)
        ax.legend(fontsize=_FS - 0.5, frameon=False)
    r0 = best[0]
    head = _headline(rs)
    metric = _metric_label(head["data"].get("headline", ""), head) if head else "headline value"
    axes[0].set_ylabel(f"final {metric}\n(seeds, mean and 95% t-interval)", fontsize=_FS + 1)
    axes[1].set_ylabel("P(best p), nested bootstrap\nover tuning and final seeds", fontsize=_FS + 1)
    axes[1].set_ylim(0, 1.05)
    _title(fig, r0, "the final headline value against p")
    return save(fig, stem)


# -- the probe's synthetic control ----------------------------------------------------------------------------------
def plot_controls(records, stem):
    """The probe on the synthetic control: sigma_i measured against planted, and G, L against their certificates."""
    rs = [r for r in map(d, records) if r.get("id") == "practice.probe.sigma" and isinstance(r.get("data"), dict)]
    if not rs:
        return []
    dd = rs[0]["data"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].plot(_arr(dd.get("sigma")), "k_", ms=8, label="planted sigma_i")
    axes[0].plot(_arr(dd.get("sigma_est")), "C0.", label="probe")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("coordinate i", fontsize=_FS + 1)
    axes[0].set_ylabel("per-coordinate noise sigma_i", fontsize=_FS + 1)
    axes[0].set_title("sigma_i: measured by the probe against planted", fontsize=_FS + 1)
    axes[0].legend(fontsize=_FS - 1)
    ps = _arr(dd.get("p"))
    with np.errstate(divide="ignore", invalid="ignore"):
        for a, b, mk, lab in (("G", "G_cert", "o-", "G_p / certified"), ("L", "L_cert", "s-", "secant L_p / cert.")):
            num, den = _arr(dd.get(a)), _arr(dd.get(b))
            n = min(ps.size, num.size, den.size)
            if n:
                axes[1].plot(ps[:n], num[:n] / den[:n], mk, label=lab)
    axes[1].axhline(1.0, color="grey", ls=":")
    axes[1].set_xlabel("p", fontsize=_FS + 1)
    axes[1].set_ylabel("measured / certified (at most 1)", fontsize=_FS + 1)
    axes[1].set_title("G_p and the secant L_p against their certificates", fontsize=_FS + 1)
    axes[1].legend(fontsize=_FS - 1)
    return save(fig, stem)


# -- across tasks: the performance profile --------------------------------------------------------------------------
def plot_profile(records, stem, *, draws: int = 1000, seed: int = 0):
    """The AlgoPerf-style performance profile across the tasks in ``records`` (their headline records;
    :func:`proofs_checks.practice.profiles.summary`) with its bootstrap band, the profile scores with their
    intervals, and the time to target per task and optimizer. Draws nothing (returns ``[]``) with fewer than two
    tasks."""
    from .profiles import summary

    s = summary(records, draws=draws, seed=seed)
    if len(s["tasks"]) < 2:
        return []
    taus = np.array(s["tau"])
    tasks, opts = s["tasks"], s["optimizers"]
    fig, axes = plt.subplots(
        1, 3, figsize=(16.0, 4.6), gridspec_kw={"width_ratios": [1.15, 0.6, 1.0 + 0.12 * len(tasks)]}
    )
    seen: dict = {}
    looks = {fam: _look(fam, seen) for fam in opts}
    ax = axes[0]
    for fam in opts:
        prof, (colour, ls, _) = s["profile"][fam], looks[fam]
        if s["draws"]:
            ax.fill_between(taus, prof["lo"], prof["hi"], step="post", color=colour, alpha=0.07, lw=0)
        ax.step(taus, prof["rho"], where="post", color=colour, ls=ls, lw=2.0, label=fam)
    ax.set_xlim(1.0, s["tau_max"])
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("tau (steps to target / the fastest optimizer's on that task)", fontsize=_FS + 1)
    ax.set_ylabel(f"fraction of the {len(tasks)} tasks\nreaching the target within tau", fontsize=_FS + 1)
    ax.tick_params(labelsize=_FS)
    ax.grid(alpha=0.25, lw=0.5)
    ax.set_title(
        "performance profile" + (f" ({int(round(s['level'] * 100))}% bootstrap band)" if s["draws"] else ""),
        fontsize=_FS + 1,
    )
    ax = axes[1]
    for k, fam in enumerate(opts):
        sc, (colour, _, mk) = s["score"][fam], looks[fam]
        if s["draws"] and math.isfinite(sc["lo"]) and math.isfinite(sc["hi"]):
            ax.plot([sc["lo"], sc["hi"]], [-k, -k], color=colour, lw=2.4, solid_capstyle="butt")
        ax.plot([sc["score"]], [-k], marker=mk, color=colour, ms=7, mec="white", mew=0.6)
    ax.set_yticks([-k for k in range(len(opts))], opts, fontsize=_FS)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-len(opts) + 0.5, 0.5)
    ax.set_xlabel(
        f"score: area under the profile, tau 1 to {s['tau_max']:g}\n(1: fastest on every task)", fontsize=_FS + 0.5
    )
    ax.tick_params(axis="x", labelsize=_FS)
    ax.grid(axis="x", alpha=0.25, lw=0.5)
    ax.set_title("score" + (" [95% bootstrap]" if s["draws"] else ""), fontsize=_FS + 1)
    ax = axes[2]
    w = 0.8 / max(len(opts), 1)
    never = 1.12
    for j, fam in enumerate(opts):
        colour, _, mk = looks[fam]
        for k, task in enumerate(tasks):
            row = next((x for x in s["rows"] if x["task"] == task and x["optimizer"] == fam), None)
            if row is None or not row["run"]:
                continue
            x, last = k + (j - (len(opts) - 1) / 2) * w, row["last_step"]
            y = row["steps"] / last if row["reached"] else never
            if s["draws"]:
                lo = row["steps_lo"] / last if math.isfinite(row["steps_lo"]) else never
                hi = row["steps_hi"] / last if math.isfinite(row["steps_hi"]) else never
                ax.plot([x, x], [lo, hi], color=colour, lw=1.3, alpha=0.8)
            ax.plot([x], [y], marker=mk, ls="", ms=6.5, color=colour, mfc=colour if row["reached"] else "white")
    ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0, never], ["0", "0.25", "0.5", "0.75", "1 (end)", "never"], fontsize=_FS)
    ax.set_xticks(range(len(tasks)), tasks, fontsize=_FS)
    ax.set_xlim(-0.5, len(tasks) - 0.5)
    ax.set_ylim(-0.03, never + 0.06)
    ax.set_ylabel("steps to target / run length", fontsize=_FS + 1)
    ax.set_title(
        "time to target (the best baseline's final mean)" + (", 95% bootstrap" if s["draws"] else ""), fontsize=_FS + 1
    )
    handles = [plt.Line2D([], [], color=looks[f][0], ls=looks[f][1], marker=looks[f][2], lw=2, label=f) for f in opts]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(opts), fontsize=_FS, frameon=False)
    fig.suptitle(
        f"Across {len(tasks)} tasks (AlgoPerf-style): time to the best baseline's final mean, bootstrap over seeds "
        "(small-scale runs; targets read from the final runs)",
        fontsize=_FS + 2,
    )
    return save(fig, stem)


# -- registration ---------------------------------------------------------------------------------------------------
KINDS = {
    "tuning": (
        _draw_tuning,
        "Validation loss of every tuning point against each tuned hyper-parameter, per "
        "optimizer (chosen point starred, range edges dashed, the learning-rate pilot in grey).",
    ),
    "forest": (
        _draw_forest,
        "The paired differences of the primary family with their 95% intervals and per-seed "
        "values, coloured by the Holm reading; the slowed-AdamW control below.",
    ),
    "curves": (_draw_curves, "Learning curves per optimizer, mean and 95% band over the final seeds."),
    "p": (_draw_p, "The final headline value against p with 95% intervals, and the nested-bootstrap P(best p)."),
}


def _public(kind: str):
    draw, doc = KINDS[kind]

    def plot(records, stem, task: str | None = None):
        return draw(_of_task(records, task), stem)

    plot.__name__ = plot.__qualname__ = f"plot_{kind}"
    plot.__doc__ = doc + " ``plot(records, stem, task=None)``: the records of ``task`` (all when None)."
    return plot


plot_tuning, plot_forest, plot_curves, plot_p = (_public(k) for k in ("tuning", "forest", "curves", "p"))


def figures_for_task(task_name: str) -> list:
    """``[(stem, fn), ...]``: the figures of one task's check, ``fn(records, stem)`` drawing from that task's
    records (stems ``practice_<task>_<kind>``)."""
    out = []
    for kind, (draw, doc) in KINDS.items():

        def fn(records, stem, _draw=draw):
            return _draw(_of_task(records, task_name), stem)

        fn.__name__ = fn.__qualname__ = f"plot_{kind}_{task_name.replace('-', '_')}"
        fn.__doc__ = doc
        out.append((f"practice_{task_name}_{kind}", fn))
    return out


def register_task_figures(pack, task_name: str) -> list:
    """Register the figures of task ``task_name`` (:data:`KINDS`) on ``pack`` as figures of its check of that
    name. Returns the ``(stem, fn)`` pairs registered."""
    if not isinstance(task_name, str) or not task_name:
        raise ValueError(f"task_name must be a non-empty string, got {task_name!r}")
    made = figures_for_task(task_name)
    for stem, fn in made:
        pack.figure(task_name, stem)(fn)
    return made


NOT_TASKS = ("efficiency", "probe-controls")  # the practice pack's checks that are not tasks


def for_pack(pack) -> dict:
    """``{check: [(stem, fn), ...]}``: the task figures of every check of ``pack`` that is a practice task (every
    check but :data:`NOT_TASKS`), for a pack built by :func:`proofs_checks.practice.task_pack` (a user's tasks),
    whose claim modules cannot import this figure module: the pack names ``"proofs_checks.practice.figures:for_pack"``
    as its figures and :meth:`~proofs_checks.packs.Pack.figure_functions` calls it with the pack."""
    return {name: figures_for_task(name) for name in getattr(pack, "checks", {}) if name not in NOT_TASKS}


for _name in installed():  # the built-in tasks and those of installed packages
    register_task_figures(PACK, _name)
PACK.figure("probe-controls", "practice_probe_controls")(plot_controls)
