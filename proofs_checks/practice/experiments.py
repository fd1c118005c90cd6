"""The experimental claims of the paper's Section 5 at small scale, as claim records.

Protocol (one task; :func:`run_task`):

1. tuning: every optimizer (SGD w/ momentum, Adam, AdamW, Lion; Stacey(p,p) and Stacey(p,2) at each p of the
   grid) gets the same number of learning-rate trials, the paper's learning rate for the task's analogue
   (Appendix C) times the grid (``quick``: 0.1, 1, 10; default: 10^-1, 10^-1/2, 1, 10^1/2, 10), one run each
   with a tuning seed; the learning rate with the lowest final validation loss is kept;
2. final runs: each optimizer at its learning rate over S seeds (paired: the same seed gives every optimizer
   the same initialization and batches);
3. records: "outperforms" per Stacey variant (at the paper's p for the task's analogue), baseline, metric and
   checkpoint, by a paired Student-t interval of the difference over seeds, Bonferroni-corrected over the
   8 comparisons of each (task, metric, checkpoint) (holds when the whole interval is on Stacey's side, strictly:
   a tie is not a win); "best p" by the exact bootstrap of the argmin over p; the geometry probe's prediction.

Every record names the task and the scale, and its reason says that it is evidence at small scale on one task.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from proofs_checks.api import ClaimSpec, Verdict, claim_record, control_record, decide, interval_claim

from . import stats
from .train import BASELINES, LABELS, PAPER_HP, PAPER_P, VARIANTS, checkpoints, run_many

__all__ = ["OUTPERFORMS", "BEST_P", "PROBE_P", "run_task", "outperforms_record", "best_p_record", "scale_text"]

TUNE_SEED = 10_000
# the learning-rate grids, multiples of the paper's learning rate for the task's analogue (the same for every
# optimizer); they reach two decades above it because small models on short schedules take larger steps
GRID_QUICK = (0.1, 1.0, 10.0, 100.0)
GRID = tuple(10 ** (k / 2) for k in range(-2, 6))
TABLE = {"digits": "Table 1 (CIFAR, ResNet-18)", "charlm": "Table 3 (LLM pretraining, llama-100m on C4)"}
PAPER_TASK = {
    "digits": "CIFAR image classification (ResNet-18, 200 epochs)",
    "charlm": "LLM pretraining (llama-100m on C4, 30k steps)",
}
METRICS = {
    "digits": (("train_loss", "training NLL", False), ("test_acc", "test accuracy", True)),
    "charlm": (("train_loss", "training loss", False), ("test_loss", "test loss", False)),
}

OUTPERFORMS = ClaimSpec(
    id="practice.outperforms",
    statement="Stacey consistently outperforms other optimizers [SGD w/ momentum, Adam, AdamW, Lion], "
    "demonstrating both superior accuracy and faster convergence",
    source="Section 5 (Experiments), Tables 1-3 and their captions; the Conclusion",
    assumptions=("the paper's grid-search protocol (Appendix C), here at small scale with a stated grid",),
    relation="<=",
    show=("task", "variant", "baseline", "metric", "checkpoint"),
)
BEST_P = ClaimSpec(
    id="practice.best-p",
    statement="in the CIFAR image classification, an l_p-norm for p close to 2 delivers the best performance; "
    "an l_p-norm with p around 3 proves more effective in LLM pretraining",
    source="Section 5 (Experiments, introduction; Sections 5.1-5.2 and the figures on varying p)",
    relation="<=",
    show=("task", "variant", "claimed_p"),
)
PROBE_P = ClaimSpec(
    id="practice.probe.best-p",
    statement="Theorem 1's right-hand side, evaluated with the constants measured along the run (sigma_i, G, "
    "the local l_p smoothness L) at the run's T, eta and batch, is smallest at the p that trains best",
    source="Theorem 1 (Section 3), read as a predictor of the best p (issue 36; not a claim of the paper)",
    relation="<=",
    show=("task", "predicted_p"),
)


def scale_text(task, seeds: int) -> str:
    s = task.scale
    if task.name == "digits":
        model = f"MLP 64-{s.width}-10"
    else:
        model = f"2-layer transformer, d_model {s.width}, context {s.ctx}, vocabulary {task.vocab}"
    return f"{model}, {s.steps} steps of batch {s.batch}, {seeds} seeds"


def _small(task, seeds, nparams) -> str:
    return (
        f"evidence at small scale on one task ({task.name}: {scale_text(task, seeds)}, {nparams:,} parameters), "
        f"not at the paper's scale ({PAPER_TASK[task.name]}); it does not speak for the class of tasks"
    )


def outperforms_record(values, params: dict, *, tests: int, note: str, data=None):
    """The "outperforms" record of one comparison: ``values`` are the per-seed paired differences oriented so
    that < 0 favours Stacey; the Student-t interval (Bonferroni over ``tests``) wholly below 0 holds, wholly
    above 0 is violated (the witness re-checks it), else inconclusive. A tie (the interval's upper end not
    strictly below 0, e.g. identical runs) is not a win: inconclusive. Non-finite values (diverged runs):
    inconclusive, naming them."""
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        bad = [i for i, x in enumerate(v) if not math.isfinite(x)]
        why = f"runs diverged at seeds {bad} (their metric is not finite): no paired test; {note}"
        return claim_record(OUTPERFORMS, Verdict("inconclusive", why), params=params, method="simulation", data=data)
    rec = interval_claim(OUTPERFORMS, v, 0.0, params, method="simulation", tests=tests, note=note, data=data)
    if rec.status == "holds" and not rec.ci[1] < 0.0:
        why = (
            f"a tie is not a win: the interval's upper end is {rec.ci[1]:.3g}, not below 0 "
            f"(mean difference {rec.empirical:.3g}); {note}"
        )
        rec = dataclasses.replace(rec, status="inconclusive", reason=why, evidence="measured")
    return rec


def best_p_record(spec, values, ps, *, claimed: float, near: float, maximize: bool, params: dict, note: str, data=None):
    """A "best p" record: the exact bootstrap distribution of the argmin over ``ps`` of the mean over seeds of
    ``values`` (P x S; argmax when ``maximize``), its 95% set, and the distance of that set from ``claimed``
    against ``near`` (the claim's neighbourhood): the whole set within ``near`` holds, none of it violated
    (witness ``practice-best-p``, re-checked by enumeration), else inconclusive."""
    V = np.asarray(values, dtype=np.float64)
    freq = stats.bootstrap_argmin(V, maximize=maximize)
    best_set = stats.covering_set(freq, ps)
    point = float(ps[int(np.argmax(V.mean(axis=1)) if maximize else np.argmin(V.mean(axis=1)))])
    dist = [abs(p - claimed) for p in best_set]
    ci = (min(dist), max(dist))
    witness = {
        "kind": "practice-best-p",
        "claim": spec.id,
        "p": [float(p) for p in ps],
        "values": V.tolist(),
        "maximize": bool(maximize),
        "claimed": float(claimed),
        "near": float(near),
        "level": 0.95,
    }
    txt = (
        f"bootstrap P(best p) = {', '.join(f'{p:g}: {f:.2f}' for p, f in zip(ps, freq))}; 95% set of the best p "
        f"{best_set}; distance to p = {claimed:g}"
    )
    v = decide("<=", abs(point - claimed), near, method="simulation", ci=ci, witness=witness, note=f"{txt}; {note}")
    d = {
        **(data or {}),
        "p": list(map(float, ps)),
        "freq": [float(f) for f in freq],
        "set95": best_set,
        "mean": V.mean(axis=1).tolist(),
        "values": V.tolist(),
    }
    return claim_record(
        spec,
        v,
        params={**params, "best_p": point, "set95": best_set},
        method="simulation",
        empirical=abs(point - claimed),
        bound=near,
        ci=ci,
        data=d,
    )


def _cfg(task_name, scale, ctx, name, p, lr, seed, device):
    hp = dict(PAPER_HP[task_name][name])
    return {
        "task": task_name,
        "scale": scale,
        "split_seed": int(ctx.seed),
        "optimizer": name,
        "hp": hp,
        "lr": float(lr),
        "p": None if p is None else float(p),
        "seed": int(seed),
        "device": device,
    }


def _final(res, key, step_index):
    return float(res["curve"][key][step_index])


@dataclasses.dataclass(frozen=True)
class _Runs:
    """What the record-building steps of :func:`run_task` share: the final runs and how to name them.

    ``by`` maps (optimizer, p) to its runs over the ``seeds`` seeds, ``chosen`` to its tuned learning rate;
    ``cps`` are the curve indices of the checkpoints named ``cp_names``; ``common`` the parameters every
    record carries; ``note`` the scale note every reason ends with.
    """

    task_name: str
    ps: list
    seeds: int
    by: dict
    chosen: dict
    cps: list
    cp_names: list
    common: dict
    note: str


def _tune(ctx, task_name, scale, device, opts, base, mults):
    """Step 1: one tuning run per optimizer and learning rate of the grid; the lowest final validation loss wins.

    Returns
    -------
    chosen : dict
        (optimizer, p) -> the chosen learning rate.
    grid : dict
        Per optimizer: the learning rates tried, their final validation losses and the chosen index.
    edges : list of str
        The optimizers whose learning rate was chosen at an edge of the grid.
    """
    tune = [
        _cfg(task_name, scale, ctx, n, p, base[n] * m, TUNE_SEED + ctx.seed, device) for n, p in opts for m in mults
    ]
    tuned = run_many(tune, ctx.jobs, ctx.say, f"{task_name} tuning")
    chosen, grid, edges = {}, {}, []
    for i, (n, p) in enumerate(opts):
        rs = tuned[i * len(mults) : (i + 1) * len(mults)]
        vals = [float(r["curve"]["val_loss"][-1]) for r in rs]
        vals = [v if math.isfinite(v) else math.inf for v in vals]
        j = int(np.argmin(vals))
        chosen[(n, p)] = base[n] * mults[j]
        grid[f"{n}@{p:g}" if p else n] = {"lr": [base[n] * m for m in mults], "val_loss": vals, "chosen": j}
        if j in (0, len(mults) - 1):
            edges.append(f"{LABELS[n]}{f' p={p:g}' if p else ''}")
    return chosen, grid, edges


def _final_runs(ctx, task_name, scale, device, opts, chosen, seeds) -> dict:
    """Step 2: every optimizer at its chosen learning rate over the paired ``seeds``; (optimizer, p) -> runs."""
    finals = [_cfg(task_name, scale, ctx, n, p, chosen[(n, p)], s, device) for n, p in opts for s in seeds]
    res = run_many(finals, ctx.jobs, ctx.say, f"{task_name} final runs")
    S = len(seeds)
    return {(n, p): res[i * S : (i + 1) * S] for i, (n, p) in enumerate(opts)}


def _probe_run(ctx, task_name, scale, device, p_used, chosen, seed, ps) -> dict:
    """The geometry probe's run: Stacey(p,p) at ``p_used`` and its learning rate, probing every p of ``ps``."""
    probe_cfg = {
        **_cfg(task_name, scale, ctx, "stacey-pp", p_used, chosen[("stacey-pp", p_used)], seed, device),
        "kind": "probe",
        "ps": ps,
    }
    (probe,) = run_many([probe_cfg], 1, ctx.say, f"{task_name} probe run")
    return probe


def _scale_note(task, S, nparams, p_used, edges) -> str:
    """The note every record's reason carries: the small scale, p = 2's coincidence, grid-edge choices."""
    note = _small(task, S, nparams)
    if p_used == 2.0:
        note += "; at p = 2 Stacey(p,p) and Stacey(p,2) are one algorithm (both mirror maps Euclidean): same runs"
    if edges:
        note += f"; learning rate chosen at an edge of the grid for {', '.join(edges)}"
    return note


def _outperforms_records(runs: _Runs, stacey) -> list:
    """Step 3a: "outperforms" per Stacey variant, baseline, metric and checkpoint, with the self-control.

    Bonferroni over ``len(stacey) * len(BASELINES)`` comparisons; the control (the first variant against its
    own runs at T, on the first metric) must never be a win.
    """
    task_name, by, S = runs.task_name, runs.by, runs.seeds
    records = []
    tests = len(stacey) * len(BASELINES)
    for key, label, maximize in METRICS[task_name]:
        for ci, cp in enumerate(runs.cps):
            for v, p in stacey:
                sv = np.array([_final(r, key, cp) for r in by[(v, p)]])
                for b in BASELINES:
                    bv = np.array([_final(r, key, cp) for r in by[(b, None)]])
                    diff = (bv - sv) if maximize else (sv - bv)
                    params = {
                        **runs.common,
                        "variant": LABELS[v],
                        "p": p,
                        "baseline": LABELS[b],
                        "metric": label,
                        "checkpoint": runs.cp_names[ci],
                        "seeds": S,
                        "comparisons": tests,
                        "lr": runs.chosen[(v, p)],
                        "baseline_lr": runs.chosen[(b, None)],
                        "source_table": TABLE[task_name],
                    }
                    data = {"stacey": sv.tolist(), "baseline": bv.tolist(), "difference": diff.tolist()}
                    records.append(outperforms_record(diff, params, tests=tests, note=runs.note, data=data))
        # the control: a Stacey variant against itself (the same runs) must never be a win
        if key == METRICS[task_name][0][0]:
            sv = np.array([_final(r, key, runs.cps[-1]) for r in by[stacey[0]]])
            params = {
                **runs.common,
                "variant": LABELS[stacey[0][0]],
                "p": stacey[0][1],
                "baseline": "itself",
                "metric": label,
                "checkpoint": runs.cp_names[-1],
                "seeds": S,
                "comparisons": tests,
                "control": "stacey-vs-itself",
            }
            rec = outperforms_record(sv - sv, params, tests=tests, note=runs.note)
            rec = dataclasses.replace(rec, id=OUTPERFORMS.id + ".control")
            records.append(control_record(rec, "stacey-vs-itself", "the same runs compared with themselves (a tie)"))
    return records


def _best_p_records(runs: _Runs, paper_p, key, label, maximize) -> list:
    """Step 3b: "best p" per variant on the metric ``key`` at T, by the exact bootstrap of the argmin over p.

    Diverged runs make the record inconclusive; the first variant also gets the control (the p that trained
    worst, claimed as best, must not hold).
    """
    ps, by, chosen, note = runs.ps, runs.by, runs.chosen, runs.note
    records = []
    for v in VARIANTS:
        V = [[_final(r, key, runs.cps[-1]) for r in by[(v, p)]] for p in ps]
        params = {
            **runs.common,
            "variant": LABELS[v],
            "claimed_p": paper_p,
            "metric": f"final {label}",
            "seeds": runs.seeds,
            "near": 0.5,
            "paper_task": PAPER_TASK[runs.task_name],
        }
        curves = {f"{p:g}": _curve_band(by[(v, p)], key) for p in ps}
        if not np.all(np.isfinite(V)):
            why = f"some runs diverged (non-finite {label}): no bootstrap; {note}"
            records.append(claim_record(BEST_P, Verdict("inconclusive", why), params=params, method="simulation"))
            continue
        records.append(
            best_p_record(
                BEST_P,
                V,
                ps,
                claimed=paper_p,
                near=0.5,
                maximize=maximize,
                params=params,
                note=note + "; 'close to 2' / 'around 3' read as within 0.5 of it",
                data={"curves": curves, "lr": {f"{p:g}": chosen[(v, p)] for p in ps}},
            )
        )

        if v == VARIANTS[0] and np.all(np.isfinite(V)):
            # the control: the same rule with the p the runs put last as the claim must not hold
            means = np.mean(V, axis=1)
            worst = float(ps[int(np.argmin(means) if maximize else np.argmax(means))])
            rec = best_p_record(
                BEST_P,
                V,
                ps,
                claimed=worst,
                near=0.5,
                maximize=maximize,
                params={**params, "claimed_p": worst, "control": "worst-p"},
                note=note,
            )
            rec = dataclasses.replace(rec, id=BEST_P.id + ".control")
            records.append(control_record(rec, "worst-p", f"the same rule with the p that trained worst ({worst:g})"))
    return records


def _attach_curves(records, runs: _Runs, stacey, steps, grid) -> None:
    """Learning curves with 95% bands per optimizer (at the paper's p) and the tuning grid, put in place on the
    first record (an informational payload for the report's figures)."""
    curves = {
        LABELS[n] + (f" p={p:g}" if p else ""): {
            k: _curve_band(runs.by[(n, p)], k) for k, _, _ in METRICS[runs.task_name]
        }
        for n, p in [(b, None) for b in BASELINES] + stacey
    }
    first = records[0]
    records[0] = dataclasses.replace(
        first, data={**(first.data or {}), "curves": curves, "steps": steps, "tuning": grid}
    )


def run_task(ctx, task_name: str) -> list:
    """Tuning, final runs, the probe run and the records of one task (module docstring).

    Parameters
    ----------
    ctx : Context
        Its ``p`` (the grid of p), ``seeds`` (0: 5 with ``quick``, else 6), ``device``, ``quick``, ``seed``,
        ``jobs`` and ``say``.
    task_name : {"digits", "charlm"}
        The task (:func:`proofs_checks.practice.tasks.make_task`).

    Returns
    -------
    list of ClaimRecord
        The outperforms records and their control, the best-p records and their control, the probe's record.
    """
    from .tasks import make_task

    device = ctx.get("device", "cpu")
    scale = "cuda" if device.startswith("cuda") else ("quick" if ctx.quick else "default")
    task = make_task(task_name, scale, ctx.seed, device)
    ps = sorted(float(p) for p in ctx.p)
    S = int(ctx.get("seeds") or (5 if ctx.quick else 6))
    mults = list(GRID_QUICK if ctx.quick else GRID)
    opts = [(b, None) for b in BASELINES] + [(v, p) for v in VARIANTS for p in ps]
    base = {name: PAPER_HP[task_name][name]["lr"] for name in PAPER_HP[task_name]}

    chosen, grid, edges = _tune(ctx, task_name, scale, device, opts, base, mults)
    seeds = [1000 * ctx.seed + s for s in range(S)]
    by = _final_runs(ctx, task_name, scale, device, opts, chosen, seeds)
    paper_p = PAPER_P[task_name]
    p_used = min(ps, key=lambda q: (abs(q - paper_p), q))
    probe = _probe_run(ctx, task_name, scale, device, p_used, chosen, seeds[0], ps)

    nparams = sum(q.numel() for q in task.model(0).parameters())
    steps = by[(BASELINES[0], None)][0]["curve"]["step"]
    T = task.scale.steps
    runs = _Runs(
        task_name=task_name,
        ps=ps,
        seeds=S,
        by=by,
        chosen=chosen,
        cps=[steps.index(c) for c in checkpoints(T)],
        cp_names=[f"T/4 (step {T // 4})", f"T/2 (step {T // 2})", f"T (step {T})"],
        common={"task": task_name, "scale": scale, "model": scale_text(task, S), "parameters": nparams},
        note=_scale_note(task, S, nparams, p_used, edges),
    )
    stacey = [(v, p_used) for v in VARIANTS]
    records = _outperforms_records(runs, stacey)
    # best p and the probe, on the task's headline test metric
    key, label, maximize = METRICS[task_name][1]
    records += _best_p_records(runs, paper_p, key, label, maximize)
    records.append(_probe_record(task, probe, by, ps, chosen, key, maximize, runs.cps, runs.common, runs.note, S))
    _attach_curves(records, runs, stacey, steps, grid)
    return records


def _curve_band(runs, key) -> dict:
    """Mean and 95% Student-t band over seeds of ``key`` along the curve (non-finite points left out)."""
    M = np.array([[float(v) for v in r["curve"][key]] for r in runs])
    mean, lo, hi = [], [], []
    for col in M.T:
        if np.all(np.isfinite(col)) and col.size >= 2:
            m, a, b = stats.t_interval(col)
        else:
            m = a = b = math.inf
        mean.append(m), lo.append(a), hi.append(b)
    return {"step": [int(s) for s in runs[0]["curve"]["step"]], "mean": mean, "lo": lo, "hi": hi}


def _probe_record(task, probe, by, ps, chosen, key, maximize, cps, common, note, S):
    from .probe import theorem1_rhs

    pts = probe["points"]
    f0 = float(pts[0]["f"])
    sigma_l1 = max(float(q["sigma_l1"]) for q in pts)
    T, n = task.scale.steps, task.scale.batch
    rhs = {}
    for p in ps:
        G = max(float(q["G"][str(p)]) for q in pts)
        L = float(probe["L"][str(p)])
        eta = chosen[("stacey-pp", p)]
        rhs[p] = {**theorem1_rhs(f0, T, eta, n, L, G, sigma_l1, p), "G": G, "L": L, "eta": eta}
    predicted = min(ps, key=lambda p: rhs[p]["rhs"])
    V = [[_final(r, key, cps[-1]) for r in by[("stacey-pp", p)]] for p in ps]
    params = {
        **common,
        "variant": "Stacey(p,p)",
        "predicted_p": predicted,
        "f0": f0,
        "f_star": 0.0,
        "sigma_l1": sigma_l1,
        "probe_samples": task.scale.probe,
        "probe_points": len(pts),
    }
    data = {
        "rhs": {f"{p:g}": v for p, v in rhs.items()},
        "points": pts,
        "L": probe["L"],
        "d": probe["d"],
        "sigma_hist": probe["sigma_hist"],
        "probe_fraction": probe["probe_fraction"],
    }
    why = (
        "f* >= 0 (cross-entropy) stands for f*; G and L are measured maxima along the run (lower estimates of "
        "the suprema the theorem needs); the bound is Alg. 3's, applied to Stacey(p,p)'s run, and its left side "
        "||grad f||_{p*}^{p*} changes with p, so its argmin is a reading, not a claim of the paper; " + note
    )
    if not np.all(np.isfinite(V)):
        return claim_record(
            PROBE_P, Verdict("inconclusive", "diverged runs; " + why), params=params, method="simulation", data=data
        )
    return best_p_record(
        PROBE_P, V, ps, claimed=predicted, near=0.25, maximize=maximize, params=params, note=why, data=data
    )
