"""Figures of simulator traces (drawn from recorded metrics, never recomputing them)."""

from __future__ import annotations

import numpy as np

from lptheory.simulate import mean_interval

from .style import plt, save

__all__ = ["plot_runs"]


def _band(v):
    """Mean and Student-t 95% band over the replicates at each recorded step (finite values only)."""
    out = np.array([mean_interval(row) for row in v])
    return out[:, 0], out[:, 1], out[:, 2]


def plot_runs(traces: dict, path, *, title: str = "", p_measure: float = 2.0) -> list[str]:
    """f - f* and ||grad f||_{p*}^{p*} against steps: mean over the replicates that did not diverge with
    95% bands, one line per optimizer. Divergence is a result: diverged replicates are left out of the
    bands and the step where they diverged is marked (x, with the count in the legend). Writes
    ``path`` (``.png``) and the SVG beside it."""
    fig, axes = plt.subplots(1, 2, figsize=(12.0, 4.4))
    has_data = [False, False]
    for i, (name, tr) in enumerate(traces.items()):
        c = f"C{i}"
        x = np.maximum(tr.steps, 1)
        ok = ~tr.diverged
        label = name
        if tr.diverged.any():
            at = tr.diverged_at[tr.diverged] if tr.diverged_at is not None else np.array([int(tr.steps[-1])])
            label = f"{name} ({int(tr.diverged.sum())}/{tr.diverged.size} diverged, first at step {int(at.min())})"
        for j, (ax, metric) in enumerate(zip(axes, ("gap", "grad_pstar"))):
            v = getattr(tr, metric)[:, ok]
            if v.size and np.isfinite(v).any():
                m, lo, hi = _band(v)
                good = np.isfinite(m) & (m > 0)
                ax.plot(x[good], m[good], color=c, label=label)
                has_data[j] |= bool(good.any())
                band = good & np.isfinite(lo) & np.isfinite(hi)
                ax.fill_between(x[band], np.maximum(lo[band], m[band] * 1e-3), hi[band], color=c, alpha=0.2)
            else:
                ax.plot([], [], color=c, label=label)
            if tr.diverged.any() and tr.diverged_at is not None:
                for step in np.unique(tr.diverged_at[tr.diverged]):
                    ax.axvline(max(int(step), 1), color=c, ls=":", lw=1)
                    ax.plot([max(int(step), 1)], [1.0], "x", color=c, ms=9, mew=2, transform=ax.get_xaxis_transform())
    axes[0].set_ylabel(r"$f(\theta_t) - f^*$  (mean, 95% band)")
    axes[1].set_ylabel(r"$\|\nabla f(\theta_t)\|_{p^*}^{p^*}$" + f"  (p = {p_measure:g})")
    for ax, data in zip(axes, has_data):
        ax.set_xlabel("step t")
        ax.set_xscale("log")
        if data:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no finite values: every replicate diverged", transform=ax.transAxes, ha="center")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if any(tr.diverged.any() for tr in traces.values()):
        handles.append(plt.Line2D([], [], color="k", marker="x", ls=":", label="divergence (step)"))
        labels.append("divergence (step)")
    fig.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(3, len(labels)),
        fontsize=8,
        frameon=False,
    )
    if title:
        fig.suptitle(title)
    stem = str(path)[:-4] if str(path).endswith(".png") else str(path)
    return save(fig, stem)
