"""Figures of the practice pack, drawn from its records (nothing recomputed): learning curves with 95% bands per
optimizer, the final metric against p with intervals and the bootstrap probability of the best p, Theorem 1's
right-hand side with measured constants against p (predicted against measured best p), the probe's sigma_i
histogram and ratios on the synthetic controls. Imported only when the report draws figures."""

from __future__ import annotations

import functools
import math

from figures.style import d, plt, save

from . import PACK

__all__ = ["plot_curves", "plot_p", "plot_probe", "plot_controls"]


def _finite(xs):
    return [x if isinstance(x, (int, float)) and math.isfinite(x) else float("nan") for x in map(_num, xs)]


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _per_task(kind: str, draw, **docs) -> tuple:
    """The figure functions ``plot_<kind>_<task>(records, stem)`` drawing with ``draw``, one per task of ``docs``
    (task -> docstring, in order), each registered as the figure ``practice_<task>_<kind>`` of that task."""
    made = []
    for task, doc in docs.items():

        def plot(records, stem):
            return draw(records, stem)

        plot.__name__ = plot.__qualname__ = f"plot_{kind}_{task}"
        plot.__doc__ = doc
        made.append(PACK.figure(task, f"practice_{task}_{kind}")(plot))
    return tuple(made)


def _with_data(records, *ids) -> list:
    """The records (as dicts) whose id is one of ``ids`` and that carry data, in their order."""
    return [r for r in map(d, records) if r["id"] in ids and r.get("data")]


def _drawn_from(*ids):
    """Decorator: ``draw(rs, stem)`` as a figure function ``(records, stem)`` drawing from the records of ``ids``
    that carry data (:func:`_with_data`), and drawing nothing (``[]``) when there are none."""

    def deco(draw):
        @functools.wraps(draw)
        def plot(records, stem):
            rs = _with_data(records, *ids)
            return draw(rs, stem) if rs else []

        return plot

    return deco


def _curves(records):
    rs = [d(r) for r in records if d(r)["id"] == "practice.outperforms" and (d(r).get("data") or {}).get("curves")]
    return rs[0] if rs else None


def _draw_curves(records, stem):
    r = _curves(records)
    if r is None:
        return []
    curves = r["data"]["curves"]
    metrics = list(next(iter(curves.values())).keys())
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 3.8), squeeze=False)
    for ax, key in zip(axes[0], metrics):
        for i, (name, per) in enumerate(curves.items()):
            c = per[key]
            ax.fill_between(c["step"], _finite(c["lo"]), _finite(c["hi"]), color=f"C{i}", alpha=0.2)
            ax.plot(c["step"], _finite(c["mean"]), color=f"C{i}", lw=1.6, label=name)
        ax.set_xlabel("step")
        ax.set_ylabel(key.replace("_", " "))
        if "loss" in key:
            ax.set_yscale("log")
    axes[0][0].legend(fontsize=7)
    pr = r["params"]
    fig.suptitle(f"{pr['task']} ({pr['model']}): mean and 95% band over seeds", fontsize=9)
    return save(fig, stem)


@_drawn_from("practice.best-p", "practice.probe.best-p")
def _draw_p(rs, stem):
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for i, r in enumerate(x for x in rs if x["id"] == "practice.best-p"):
        dd = r["data"]
        ps = dd["p"]
        vals = dd["values"]
        import numpy as np

        from .stats import t_interval

        ms, lo, hi = [], [], []
        for row in vals:
            m, a, b = t_interval(row)
            ms.append(m), lo.append(m - a), hi.append(b - m)
        axes[0].errorbar(
            ps, ms, yerr=[lo, hi], fmt="o-", color=f"C{i}", capsize=3, label=f"{r['params']['variant']} [{r['status']}]"
        )
        axes[1].bar(
            np.array(ps) + 0.12 * (i - 0.5),
            dd["freq"],
            width=0.12,
            color=f"C{i}",
            label=f"{r['params']['variant']}: P(best p)",
        )
        axes[0].axvline(r["params"]["claimed_p"], color="grey", ls=":", lw=1)
    probe = [x for x in rs if x["id"] == "practice.probe.best-p"]
    if probe:
        axes[1].axvline(probe[0]["params"]["predicted_p"], color="k", ls="--", lw=1.2, label="Theorem 1 predicts")
    axes[0].set_xlabel("p")
    axes[0].set_ylabel(rs[0]["params"].get("metric", "final metric") + " (95% interval)")
    axes[1].set_xlabel("p")
    axes[1].set_ylabel("bootstrap probability of being best")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"{rs[0]['params']['task']}: final metric against p (paper's p dotted)", fontsize=9)
    return save(fig, stem)


@_drawn_from("practice.probe.best-p")
def _draw_probe(rs, stem):
    dd = rs[0]["data"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    ps = sorted(float(p) for p in dd["rhs"])
    for k, name in enumerate(("descent", "smoothness", "noise", "rhs")):
        axes[0].plot(
            ps, [dd["rhs"][f"{p:g}"][name] for p in ps], "o-" if name == "rhs" else "s:", color=f"C{k}", label=name
        )
    axes[0].set_yscale("log")
    axes[0].set_xlabel("p")
    axes[0].set_title("Theorem 1's right-hand side, measured constants", fontsize=9)
    axes[0].legend(fontsize=7)
    h = dd["sigma_hist"]
    e = h["log10_edges"]
    axes[1].bar(e[:-1], h["counts"], width=[b - a for a, b in zip(e[:-1], e[1:])], align="edge", color="C5")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("log10 sigma_i (per-sample, max over the run)")
    axes[1].set_title(f"per-coordinate noise, d = {dd['d']:,}", fontsize=9)
    pts = dd["points"]
    for k, p in enumerate(ps):
        axes[2].plot(
            [q["step"] for q in pts],
            [_num(q["G"][str(p)]) / max(_num(q["grad_dual"][str(p)]), 1e-300) for q in pts],
            "o-",
            color=f"C{k}",
            label=f"p = {p:g}",
        )
    axes[2].set_yscale("log")
    axes[2].set_xlabel("step")
    axes[2].set_title("G_p / ||grad f||_{p*} along the run", fontsize=9)
    axes[2].legend(fontsize=7)
    fig.suptitle(
        f"{rs[0]['params']['task']}: geometry probe (probe time {dd['probe_fraction']:.0%} of the training "
        "steps' time)",
        fontsize=9,
    )
    return save(fig, stem)


# the figures drawn per task: kind -> (drawing function, {task: docstring}); registered in this order, each as
# plot_<kind>_<task> (figure practice_<task>_<kind>); plot_<kind> is the digits one
_PER_TASK = {
    "curves": (
        _draw_curves,
        {
            "digits": "Learning curves per optimizer on digits (training NLL and test accuracy), mean and 95% band.",
            "charlm": "Learning curves per optimizer on charlm (training and test loss), mean and 95% band.",
        },
    ),
    "p": (
        _draw_p,
        {
            "digits": "Final test accuracy against p per Stacey variant, with the bootstrap probability of the best p.",
            "charlm": "Final test loss against p per Stacey variant, with the bootstrap probability of the best p.",
        },
    ),
    "probe": (
        _draw_probe,
        {
            "digits": "The probe on digits: Theorem 1's terms against p, the sigma_i histogram, "
            "G_p over ||grad f||_{p*}.",
            "charlm": "The probe on charlm: Theorem 1's terms against p, the sigma_i histogram, "
            "G_p over ||grad f||_{p*}.",
        },
    ),
}
_MADE = {kind: _per_task(kind, draw, **task_docs) for kind, (draw, task_docs) in _PER_TASK.items()}
globals().update({f.__name__: f for made in _MADE.values() for f in made})
plot_curves, plot_p, plot_probe = (_MADE[kind][0] for kind in ("curves", "p", "probe"))


@PACK.figure("probe-controls", "practice_probe_controls")
@_drawn_from("practice.probe.sigma")
def plot_controls(rs, stem):
    """The probe on the synthetic control: sigma_i measured against planted, and G, L against their certificates."""
    dd = rs[0]["data"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    axes[0].plot(dd["sigma"], "k_", ms=8, label="planted sigma_i")
    axes[0].plot(dd["sigma_est"], "C0.", label="probe")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("coordinate i")
    axes[0].legend(fontsize=7)
    axes[1].plot(dd["p"], [a / b for a, b in zip(dd["G"], dd["G_cert"])], "o-", label="G_p / certified")
    axes[1].plot(dd["p"], [a / b for a, b in zip(dd["L"], dd["L_cert"])], "s-", label="secant L_p / certified")
    axes[1].axhline(1.0, color="grey", ls=":")
    axes[1].set_xlabel("p")
    axes[1].legend(fontsize=7)
    return save(fig, stem)
