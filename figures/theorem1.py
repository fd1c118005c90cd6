"""Figures for the Theorem 1 checks, drawn from claim records (dicts or ``Claim`` objects); nothing is
recomputed here. Each function writes ``<stem>.png`` and ``<stem>.svg`` and returns the paths."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plot_rate", "plot_terms", "plot_search", "plot_bound_terms", "plot_acceleration", "figures_for"]

_STATUS_COLOR = {
    "holds": "tab:green",
    "violated": "tab:red",
    "inconclusive": "tab:orange",
    "not-applicable": "tab:gray",
}


def _d(r):
    return r.to_dict() if hasattr(r, "to_dict") else r


def _save(fig, stem) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        path = f"{stem}.{ext}"
        fig.savefig(path, dpi=130, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def plot_rate(records, stem) -> list[str]:
    """thm1.rate: the left side E[(1/T) sum ||g_t||_{p*}^{p*}] with its 95% band against the theorem's
    N^{-1/4} bound, log-log, the tail-fitted slope annotated."""
    recs = [_d(r) for r in records if _d(r)["id"] == "thm1.rate" and _d(r).get("data")]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, r in enumerate(recs):
        d = r["data"]
        c = f"C{i}"
        lo = [x[0] for x in d["ci"]]
        hi = [x[1] for x in d["ci"]]
        ax.fill_between(d["N"], lo, hi, color=c, alpha=0.25)
        ax.plot(
            d["N"],
            d["lhs"],
            "o-",
            color=c,
            label=f"p={r['params']['p']:g}: empirical (tail slope {d['slope']:.3f} "
            f"[{d['slope_ci'][0]:.3f}, {d['slope_ci'][1]:.3f}])",
        )
        ax.plot(
            d["N"],
            d["bound"],
            "--",
            color=c,
            label=f"p={r['params']['p']:g}: Theorem 1 bound (slope -1/4) [{r['status']}]",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient calls N = T^2 (n_t = T)")
    ax.set_ylabel("E[(1/T) sum_t ||g_t||_{p*}^{p*}]")
    ax.set_title("Theorem 1: empirical left side against the N^{-1/4} bound")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, stem)


def plot_terms(records, stem) -> list[str]:
    """Per-term bars, measured against bound, for A, B1, B2, B, C at a fixed theta (the exact settings
    of ``check lemmas``); one panel per p. A is an identity: its bar pair is eta ||g||_{p*}^{p*} twice."""
    by_p = {}
    for r in map(_d, records):
        if r["id"].startswith("thm1.") and r["method"] == "exact" and "noise" in r["params"]:
            by_p.setdefault(r["params"]["p"], {}).setdefault((r["params"]["noise"], r["params"]["n"]), {})[r["id"]] = r
    if not by_p:
        return []
    ps = sorted(by_p)
    fig, axes = plt.subplots(1, len(ps), figsize=(4.2 * len(ps), 3.8), squeeze=False)
    for ax, p in zip(axes[0], ps):
        (noise, n), recs = next(iter(by_p[p].items()))
        terms = next((r["data"]["terms"] for r in recs.values() if r.get("data")), {})
        names = ["A", "B1", "B2", "B", "C"]
        meas, bnds, cols = [], [], []
        for nm in names:
            if nm == "A":
                meas.append(terms.get("A", float("nan")))
                bnds.append(terms.get("A", float("nan")))
                cols.append("tab:blue")
            else:
                r = recs.get("thm1." + nm)
                meas.append(r["empirical"] if r else float("nan"))
                bnds.append(r["bound"] if r else float("nan"))
                cols.append(_STATUS_COLOR[r["status"]] if r else "tab:gray")
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], meas, width=0.4, color=cols, label="measured E[term]")
        ax.bar([i + 0.2 for i in x], bnds, width=0.4, color="lightgray", edgecolor="k", label="paper's bound")
        ax.set_xticks(list(x), names)
        ax.set_yscale("log")
        ax.set_title(f"p={p:g}, {noise} noise, n={n}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("Theorem 1 terms at a fixed theta: exact expectation (colour = verdict) vs bound", fontsize=10)
    return _save(fig, stem)


def plot_search(records, stem) -> list[str]:
    """The worst adversarial ratio E[term] / bound found for each lemma against p (1 = the bound)."""
    by = {}
    for r in map(_d, records):
        if r["method"] == "adversarial-search" and r["ratio"] is not None:
            by.setdefault(r["id"], []).append((r["params"]["p"], float(r["ratio"]), r["status"]))
    if not by:
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (lemma, pts) in enumerate(sorted(by.items())):
        pts.sort()
        ax.plot([q[0] for q in pts], [q[1] for q in pts], "o-", color=f"C{i}", label=lemma)
        for q in pts:
            if q[2] == "violated":
                ax.plot(q[0], q[1], "x", color="tab:red", ms=10, mew=2)
    ax.axhline(1.0, color="k", lw=1, ls="--", label="bound (ratio 1)")
    ax.set_xlabel("p")
    ax.set_ylabel("worst E[term] / bound found")
    ax.set_yscale("log")
    ax.set_title("Adversarial search over finite-support noise (x = violated, re-checked)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, stem)


def plot_bound_terms(records, stem) -> list[str]:
    """thm1.bound: the empirical left side (with 95% interval) against the three right-hand terms
    stacked, for each noise setting."""
    recs = [r for r in map(_d, records) if r["id"] == "thm1.bound" and r.get("data")]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(recs)), 4.2))
    keys = list(recs[0]["data"]["terms"].keys())[:3]
    labels = []
    for i, r in enumerate(recs):
        bottom = 0.0
        for j, k in enumerate(keys):
            v = r["data"]["terms"][k]
            ax.bar(
                i + 0.2,
                v,
                width=0.4,
                bottom=bottom,
                color=("tab:cyan", "tab:olive", "tab:purple")[j],
                label=k if i == 0 else None,
            )
            bottom += v
        m, lo, hi = r["data"]["lhs"]
        ax.bar(
            i - 0.2,
            m,
            width=0.4,
            color=_STATUS_COLOR[r["status"]],
            yerr=[[m - lo], [hi - m]],
            label="left side (colour = verdict)" if i == 0 else None,
        )
        labels.append(f"p={r['params']['p']:g}\n{r['params']['noise']}, n={r['params']['n']}")
    ax.set_xticks(range(len(recs)), labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_title("Theorem 1 at fixed T: left side vs the bound's terms")
    ax.legend(fontsize=7)
    return _save(fig, stem)


def figures_for(check: str, records, out_dir: str) -> list[str]:
    """All figures of a check into ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    if check == "lemmas":
        paths += plot_terms(records, os.path.join(out_dir, "lemma_terms"))
        paths += plot_search(records, os.path.join(out_dir, "lemma_search"))
    if check == "majorization":
        paths += plot_majorization(records, os.path.join(out_dir, "majorization"))
    if check == "acceleration":
        paths += plot_acceleration(records, os.path.join(out_dir, "acceleration"))
    if check == "theorem1":
        paths += plot_rate(records, os.path.join(out_dir, "theorem1_rate"))
        paths += plot_bound_terms(records, os.path.join(out_dir, "theorem1_bound"))
    return paths


def plot_acceleration(records, stem) -> list[str]:
    """Normalized gap against T for every method on each instance (one row per p, one column per
    instance) with the slope -(p+2)/p drawn; and the fitted exponents against p with (p+2)/p."""
    recs = [r for r in map(_d, records) if r["id"] == "acc.exponent" and r.get("data")]
    if not recs:
        return []
    ps = sorted({r["params"]["p"] for r in recs})
    insts = list(dict.fromkeys(r["params"]["instance"] for r in recs))
    fig, axes = plt.subplots(len(ps), len(insts), figsize=(3.6 * len(insts), 2.9 * len(ps)), squeeze=False)
    methods = list(dict.fromkeys(r["params"]["method"] for r in recs))
    for r in recs:
        i, j = ps.index(r["params"]["p"]), insts.index(r["params"]["instance"])
        ax = axes[i][j]
        N = [t + 1 for t in r["data"]["T"]]
        ax.loglog(
            N,
            r["data"]["gap"],
            "o-",
            ms=3,
            color=f"C{methods.index(r['params']['method'])}",
            label=f"{r['params']['method']} ({r['empirical']:.2f})",
        )
    for i, p in enumerate(ps):
        for j, inst in enumerate(insts):
            ax = axes[i][j]
            lines = [ln for ln in ax.get_lines()]
            if lines:
                x0, y0 = lines[0].get_xdata()[0], max(max(ln.get_ydata()) for ln in lines)
                xs = [x0, x0 * 16]
                ax.loglog(
                    xs,
                    [y0 * (x / x0) ** (-(p + 2) / p) for x in xs],
                    "k--",
                    lw=1,
                    label=f"slope -(p+2)/p = {-(p + 2) / p:.2f}",
                )
            ax.set_title(f"p={p:g}, {inst}", fontsize=8)
            ax.legend(fontsize=5)
            if j == 0:
                ax.set_ylabel("(f - f*) / (L R^2)")
            if i == len(ps) - 1:
                ax.set_xlabel("N = T + 1")
    paths = _save(fig, stem)
    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    grid = [2 + k * 0.05 for k in range(0, 121)]
    ax.plot(grid, [(p + 2) / p for p in grid], "k-", label="(p+2)/p")
    ax.axhline(1.0, color="gray", ls=":", label="steepest descent's 1")
    for k, m in enumerate(methods):
        for inst, mk in zip(insts, "os^vD"):
            pts = sorted(
                (r["params"]["p"], r["empirical"])
                for r in recs
                if r["params"]["method"] == m and r["params"]["instance"] == inst
            )
            if pts:
                ax.plot(
                    [q[0] for q in pts],
                    [q[1] for q in pts],
                    mk,
                    color=f"C{k}",
                    ms=4,
                    alpha=0.8,
                    label=f"{m}" if inst == insts[-1] else None,
                )
    ax.set_xlabel("p")
    ax.set_ylabel("fitted decay exponent")
    ax.set_yscale("log")
    ax.set_title("Fitted exponents (markers: instances; Guzman-Nemirovski = last) vs (p+2)/p")
    ax.legend(fontsize=7)
    return paths + _save(fig, stem + "_exponents")


def plot_majorization(records, stem) -> list[str]:
    """Appendix B: lower bound on L_p / ||L||_{p/(p-2)} for each setting and p (1 = the claimed constant)."""
    recs = [r for r in map(_d, records) if r["id"] in ("maj.lp-smoothness", "maj.tight") and r["ratio"] is not None]
    if not recs:
        return []
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    labels, vals, cols = [], [], []
    for r in recs:
        what = (
            "tight diag(L)"
            if r["id"] == "maj.tight"
            else ("quadratics" if "quadratics" in r["params"].get("setting", "") else "separable")
        )
        labels.append(f"p={r['params']['p']:g}\n{what}")
        vals.append(float(r["ratio"]))
        cols.append(_STATUS_COLOR[r["status"]])
    ax.bar(range(len(vals)), vals, color=cols)
    ax.axhline(1.0, color="k", ls="--", lw=1, label="||L||_{p/(p-2)} (claimed constant)")
    ax.set_xticks(range(len(vals)), labels, fontsize=6)
    ax.set_ylabel("estimated L_p / ||L||_{p/(p-2)}")
    ax.set_title("Appendix B: l2 majorization -> l_p smoothness (colour = verdict)")
    ax.legend(fontsize=7)
    return _save(fig, stem)
