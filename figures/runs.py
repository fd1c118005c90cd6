"""Figures of simulator traces (drawn from recorded metrics, never recomputing them)."""

from __future__ import annotations

import math

import numpy as np


def _band(v):
    ok = np.all(np.isfinite(v), axis=0)
    v = v[:, ok] if ok.any() else v
    n = v.shape[1]
    m = v.mean(axis=1)
    half = 1.96 * v.std(axis=1, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(m)
    return m, m - half, m + half


def plot_runs(traces: dict, path, *, title: str = "", p_measure: float = 2.0) -> None:
    """f - f* and ||grad f||_{p*}^{p*} against steps, mean over replicates with 95% bands, one line per
    optimizer; written to ``path`` (PNG or SVG by extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, tr in traces.items():
        x = np.maximum(tr.steps, 1)
        for ax, metric in zip(axes, ("gap", "grad_pstar")):
            m, lo, hi = _band(getattr(tr, metric))
            (line,) = ax.plot(x, m, label=name)
            ax.fill_between(x, np.maximum(lo, 1e-300), hi, color=line.get_color(), alpha=0.2)
    axes[0].set_ylabel(r"$f(\theta_t) - f^*$  (mean, 95% band)")
    axes[1].set_ylabel(r"$\|\nabla f(\theta_t)\|_{p^*}^{p^*}$" + f"  (p = {p_measure:g})")
    for ax in axes:
        ax.set_xlabel("step t")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
