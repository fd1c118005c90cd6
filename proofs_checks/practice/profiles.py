"""Across tasks, the AlgoPerf way: time (steps) to a target per task and optimizer, and a performance profile
across tasks with bootstrap intervals over seeds, drawn from the practice pack's headline records
(``practice.outperforms.headline``, one per task; nothing is trained here).

Per task (its record's ``data["curves_by_seed"]``: per optimizer, the headline test quantity along the run, one
curve per final seed; ``data["maximize"]``: whether it is maximized):

* **target**: the best baseline's final mean over seeds (the best of SGD w/ momentum, Adam, AdamW and Lion at the
  last step: the highest when the quantity is maximized, else the lowest), as AlgoPerf sets its targets from the
  best baseline (here from the final runs themselves, on the test split: a reading of this run, not a
  pre-registered target);
* **time to target** of an optimizer: the first evaluation step at which its mean curve over seeds reaches the
  target (``>=`` when maximized, ``<=`` otherwise); never: ``inf``. A non-finite value of any seed at a step (a
  diverged run) makes the mean there not reach it. The best baseline reaches it by construction (at the last step
  at the latest). Steps are evaluation steps (no interpolation), floored at 1 so that a ratio is defined;
* **performance profile** (Dolan and More 2002; AlgoPerf, Dahl et al. 2023): for optimizer o, ``rho_o(tau)`` is
  the fraction of tasks whose time to target is at most ``tau`` times the fastest optimizer's on that task; its
  **score** is the area under ``rho_o`` over ``[1, tau_max]`` divided by ``tau_max - 1`` (1: fastest on every task;
  0: never within ``tau_max`` of the fastest).

Intervals: a percentile bootstrap over the final seeds, the seeds resampled within each task (paired: the same
resampled seeds for every optimizer of a task, as the final runs share their seeds) and the whole procedure
(target, times, profile) recomputed per draw.

Optimizers are matched across tasks by their name without the p (``Stacey(p,p) p=3`` on one task and
``Stacey(p,p) p=2`` on another are both ``Stacey(p,p)``, each at its task's p); at p = 2 the two Stacey variants
are one algorithm and one set of runs, so a task whose curves list only ``Stacey(p,p) p=2`` gives ``Stacey(p,2)``
the same curves. An optimizer absent from a task counts as not reaching its target there.
"""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = [
    "HEADLINE_ID",
    "BASELINE_NAMES",
    "headline_records",
    "summary",
    "table",
    "section_rows",
    "register_section",
    "SECTION_COLUMNS",
]

HEADLINE_ID = "practice.outperforms.headline"
BASELINE_NAMES = ("SGD w/ momentum", "Adam", "AdamW", "Lion")
_P_SUFFIX = re.compile(r"\s+p=([0-9.eE+-]+)$")


def _d(r) -> dict:
    return r.to_dict() if hasattr(r, "to_dict") else r


def _family(label: str) -> tuple[str, float | None]:
    """``("Stacey(p,p)", 3.0)`` from ``"Stacey(p,p) p=3"``; ``(label, None)`` without a p."""
    m = _P_SUFFIX.search(label)
    if not m:
        return label, None
    return label[: m.start()], float(m.group(1))


def headline_records(records) -> dict:
    """``{task: headline record (dict)}`` for the headline records of ``records`` that carry their per-seed
    curves, in their order (a task's first such record)."""
    out: dict = {}
    for r in map(_d, records):
        if r.get("id") != HEADLINE_ID:
            continue
        dd = r.get("data") or {}
        if not isinstance(dd.get("curves_by_seed"), dict) or not dd["curves_by_seed"]:
            continue
        task = (r.get("params") or {}).get("task") or r.get("check") or "?"
        out.setdefault(str(task), r)
    return out


def _curves(rec: dict) -> tuple[dict, dict, np.ndarray | None, str]:
    """``({family: (S, n) array}, {family: label}, steps, why)`` of one headline record; ``why`` is non-empty
    when the task cannot enter the summary."""
    by_seed = rec["data"]["curves_by_seed"]
    steps = None
    cur, lab = {}, {}
    for label, c in by_seed.items():
        try:
            st = np.asarray(c["step"], dtype=np.float64)
            vals = np.array([[_num(x) for x in row] for row in c["values"]], dtype=np.float64)
        except (KeyError, TypeError, ValueError):
            continue
        if vals.ndim != 2 or vals.shape[0] < 1 or vals.shape[1] != st.size or st.size == 0:
            continue
        if steps is None:
            steps = st
        elif st.size != steps.size or not np.array_equal(st, steps):
            return {}, {}, None, f"{label}'s evaluation steps differ from the other optimizers'"
        fam, _ = _family(label)
        cur.setdefault(fam, vals)
        lab.setdefault(fam, label)
    if "Stacey(p,2)" not in cur and "Stacey(p,p)" in cur and _family(lab["Stacey(p,p)"])[1] == 2.0:
        cur["Stacey(p,2)"], lab["Stacey(p,2)"] = cur["Stacey(p,p)"], lab["Stacey(p,p)"] + ", the same runs"
    if steps is None:
        return {}, {}, None, "no readable per-seed curves"
    if not any(b in cur for b in BASELINE_NAMES):
        return {}, {}, None, "no baseline's curves (the target is set from the best baseline)"
    return cur, lab, steps, ""


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _times(means: np.ndarray, target: np.ndarray, steps: np.ndarray, maximize: bool) -> np.ndarray:
    """First evaluation step at which each row of ``means`` (B, n) reaches ``target`` (B,), floored at 1;
    inf where never (non-finite means never reach)."""
    with np.errstate(invalid="ignore"):
        hit = (means >= target[:, None]) if maximize else (means <= target[:, None])
    hit &= np.isfinite(means)
    first = np.argmax(hit, axis=1)
    t = np.maximum(steps[first], 1.0)
    return np.where(hit.any(axis=1), t, np.inf)


def _task_draws(cur: dict, steps: np.ndarray, maximize: bool, idx: np.ndarray) -> tuple[dict, np.ndarray]:
    """Times to target ``{family: (B,)}`` and the target ``(B,)`` for the seed resamples ``idx`` (B, S) (row 0
    of a caller's ``idx`` may be the identity: the point estimate)."""
    means = {}
    for fam, V in cur.items():
        S = V.shape[0]
        # (an optimizer with fewer seeds than the task's most, which the experiments never write: the first S
        # resampled indices folded into its seeds; the point estimate's row stays every seed once)
        ii = idx if idx.shape[1] == S else idx[:, :S] % S
        with np.errstate(invalid="ignore", over="ignore"):
            sub = V[ii]  # (B, S, n)
            m = sub.mean(axis=1)
        m[~np.all(np.isfinite(sub), axis=1)] = np.nan  # a diverged seed: the mean is not a value
        means[fam] = m
    finals = np.stack([means[b][:, -1] for b in BASELINE_NAMES if b in means], axis=1)  # (B, nb)
    finals = np.where(np.isfinite(finals), finals, -np.inf if maximize else np.inf)
    target = finals.max(axis=1) if maximize else finals.min(axis=1)
    return {fam: _times(m, target, steps, maximize) for fam, m in means.items()}, target


def _profile(times: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """``rho`` (..., O, len(taus)) from times (..., T tasks, O optimizers): the fraction of tasks whose time is
    at most tau times the task's fastest (a task nobody solves counts as unsolved for all)."""
    best = np.min(times, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isfinite(times), times / best, np.inf)  # (..., T, O)
    return (ratio[..., None] <= taus).mean(axis=-3)


def summary(records, *, draws: int = 1000, seed: int = 0, tau_max: float = 4.0, level: float = 0.95) -> dict:
    """Time to target per task and optimizer and the performance profile across tasks (module docstring).

    Parameters
    ----------
    records : claim records (objects or dicts); the ``practice.outperforms.headline`` ones are read
    draws : bootstrap draws over seeds (>= 0; 0: no intervals)
    seed : the bootstrap's seed
    tau_max : the profile's range ``[1, tau_max]`` (> 1)
    level : the intervals' level, in (0, 1)

    Returns
    -------
    dict with ``tasks`` (the tasks in the summary), ``left_out`` ({task: why}), ``optimizers`` (in order),
    ``rows`` (:func:`table`'s rows), ``tau`` (the grid), ``profile`` ({optimizer: {"rho", "lo", "hi"}}),
    ``score`` ({optimizer: {"score", "lo", "hi"}}), ``draws``, ``level``, ``tau_max``.

    Example
    -------
    >>> s = summary(records)  # doctest: +SKIP
    >>> s["score"]["AdamW"]["score"]  # doctest: +SKIP
    """
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 0:
        raise ValueError(f"draws must be an integer >= 0, got {draws!r}")
    if not (isinstance(tau_max, (int, float)) and math.isfinite(tau_max) and tau_max > 1):
        raise ValueError(f"tau_max must be a finite number > 1, got {tau_max!r}")
    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level must be a float in (0, 1), got {level!r}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 4343]))
    tasks, left_out, per_task = [], {}, {}
    for task, rec in headline_records(records).items():
        cur, lab, steps, why = _curves(rec)
        if why:
            left_out[task] = why
            continue
        tasks.append(task)
        per_task[task] = (cur, lab, steps, bool(rec["data"].get("maximize", False)))
    order: list = [b for b in BASELINE_NAMES if any(b in per_task[t][0] for t in tasks)]
    for t in tasks:
        order += [f for f in per_task[t][0] if f not in order]
    taus = np.linspace(1.0, float(tau_max), 301)
    B = draws + 1  # row 0: the point estimate (every seed once)
    T, O = len(tasks), len(order)
    times = np.full((B, T, O), np.inf)
    targets = np.full((B, T), np.nan)
    for k, task in enumerate(tasks):
        cur, lab, steps, mx = per_task[task]
        S = max(V.shape[0] for V in cur.values())
        idx = rng.integers(0, S, size=(B, S))
        idx[0] = np.arange(S)
        tt, target = _task_draws(cur, steps, mx, idx)
        targets[:, k] = target
        for j, fam in enumerate(order):
            if fam in tt:
                times[:, k, j] = tt[fam]
    a = (1 - level) / 2

    def q(x):  # the percentile interval over the draws (observed values: an inf stays inf)
        if not draws:
            return math.nan, math.nan
        return (
            float(np.quantile(x[1:], a, method="inverted_cdf")),
            float(np.quantile(x[1:], 1 - a, method="inverted_cdf")),
        )

    rows = []
    for k, task in enumerate(tasks):
        cur, lab, steps, mx = per_task[task]
        best = np.min(times[:, k, :], axis=1)
        for j, fam in enumerate(order):
            t = times[:, k, j]
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(np.isfinite(t), t / best, np.inf)
            lo, hi = q(t)
            rlo, rhi = q(ratio)
            fin = cur.get(fam)
            final = None
            if fin is not None and np.all(np.isfinite(fin[:, -1])):
                final = float(fin[:, -1].mean())
            rows.append(
                {
                    "task": task,
                    "optimizer": fam,
                    "label": lab.get(fam, fam),
                    "run": fam in cur,
                    "maximize": mx,
                    "target": float(targets[0, k]),
                    "final_mean": final,
                    "steps": float(t[0]),
                    "steps_lo": lo,
                    "steps_hi": hi,
                    "reached": bool(np.isfinite(t[0])),
                    "reached_frac": float(np.isfinite(t[1:]).mean()) if draws else math.nan,
                    "ratio": float(ratio[0]),
                    "ratio_lo": rlo,
                    "ratio_hi": rhi,
                    "last_step": float(steps[-1]),
                }
            )
    profile, score = {}, {}
    if T:
        rho = _profile(times, taus)  # (B, O, n_tau)
        area = _score(times, float(tau_max))  # (B, O)
        for j, fam in enumerate(order):
            lo_r = np.quantile(rho[1:, j], a, axis=0) if draws else np.full(taus.size, np.nan)
            hi_r = np.quantile(rho[1:, j], 1 - a, axis=0) if draws else np.full(taus.size, np.nan)
            profile[fam] = {"rho": rho[0, j].tolist(), "lo": lo_r.tolist(), "hi": hi_r.tolist()}
            slo, shi = q(area[:, j])
            score[fam] = {"score": float(area[0, j]), "lo": slo, "hi": shi}
    return {
        "tasks": tasks,
        "left_out": left_out,
        "optimizers": order,
        "rows": rows,
        "tau": taus.tolist(),
        "profile": profile,
        "score": score,
        "draws": draws,
        "level": level,
        "tau_max": float(tau_max),
    }


def _score(times: np.ndarray, tau_max: float) -> np.ndarray:
    """The profile's normalized area over ``[1, tau_max]`` (..., O) from times (..., T, O), exactly: a task
    solved at ratio r adds ``max(0, tau_max - r) / (tau_max - 1)``, averaged over the tasks."""
    best = np.min(times, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isfinite(times), times / best, np.inf)
    return (np.clip(tau_max - ratio, 0.0, None) / (tau_max - 1.0)).mean(axis=-2)


def table(records, **kw) -> list[dict]:
    """The rows of :func:`summary` (one per task and optimizer): ``task``, ``optimizer``, ``label`` (with the
    task's p), ``run``, ``maximize``, ``target``, ``final_mean``, ``steps`` (inf: never), ``steps_lo``,
    ``steps_hi`` (bootstrap interval), ``reached``, ``reached_frac`` (the fraction of draws reaching it),
    ``ratio`` (to the task's fastest), ``ratio_lo``, ``ratio_hi``, ``last_step``."""
    return summary(records, **kw)["rows"]


def _fmt_steps(v: float) -> str:
    return "never" if not math.isfinite(v) else f"{v:,.0f}"


SECTION_COLUMNS = (
    ("optimizer", "optimizer"),
    ("task", "task"),
    ("target", "target (best baseline's final mean)"),
    ("steps", "steps to target [95% bootstrap]"),
    ("ratio", "ratio to the fastest"),
    ("score", "profile score to tau = 4 [95%]"),
)


def section_rows(claims, *, draws: int = 1000, seed: int = 0) -> list[dict]:
    """The report section's rows (:func:`register_section`): per optimizer, one row per task and one row of the
    profile score across tasks; nothing when fewer than two tasks ran."""
    s = summary(claims, draws=draws, seed=seed)
    if len(s["tasks"]) < 2:
        return []
    out = []
    for fam in s["optimizers"]:
        for r in (r for r in s["rows"] if r["optimizer"] == fam):
            if not r["run"]:
                out.append({"optimizer": fam, "task": r["task"], "target": "", "steps": "not run", "ratio": ""})
                continue
            where = "max" if r["maximize"] else "min"
            steps = _fmt_steps(r["steps"])
            if s["draws"]:
                steps += f" [{_fmt_steps(r['steps_lo'])}, {_fmt_steps(r['steps_hi'])}]"
            steps += f" of {r['last_step']:,.0f}"
            out.append(
                {
                    "optimizer": fam,
                    "task": f"{r['task']} ({r['label']})" if r["label"] != fam else r["task"],
                    "target": f"{r['target']:.4g} ({where})",
                    "steps": steps,
                    "ratio": "-" if not math.isfinite(r["ratio"]) else f"{r['ratio']:.2f}",
                    "score": "",
                }
            )
        sc = s["score"][fam]
        out.append(
            {
                "optimizer": fam,
                "task": f"all {len(s['tasks'])} tasks",
                "target": "",
                "steps": "",
                "ratio": "",
                "score": f"{sc['score']:.3f}" + (f" [{sc['lo']:.3f}, {sc['hi']:.3f}]" if s["draws"] else ""),
            }
        )
    return out


PROFILE_INTRO = (
    "AlgoPerf-style summary over the tasks of this run: per task, the target is the best baseline's final mean "
    "of the headline test quantity; an optimizer's time to target is the first evaluation step at which its mean "
    "curve over seeds reaches it (never: not within the run). The performance profile's score is the area under "
    "the fraction of tasks solved within tau times the fastest optimizer's steps, tau from 1 to 4, divided by 3 "
    "(1: fastest everywhere). Intervals: percentile bootstrap over the final seeds within each task (the whole "
    "procedure redone per draw). Small-scale tasks with targets read from the final runs themselves: a summary "
    "of this run, not a benchmark result."
)


def register_section(pack) -> None:
    """Register the across-tasks section (``practice-profile``) on ``pack``: shown when two or more tasks'
    headline records are in the run."""
    pack.report_section(
        "practice-profile",
        title="Across tasks: time to target and performance profile",
        intro=PROFILE_INTRO,
        columns=SECTION_COLUMNS,
        figure="proofs_checks.practice.figures:plot_profile",  # drawn from every task's headline records
    )(section_rows)
