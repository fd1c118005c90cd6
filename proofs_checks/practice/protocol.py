"""The fair practice protocol: the same tuning budget for every optimizer, over the hyper-parameters that matter,
ranges centred per optimizer and per p, edges widened or declared, tuning on validation over several seeds, results
on the test split over fresh seeds (AlgoPerf and benchopt are the models).

For each optimizer (SGD w/ momentum, Adam, AdamW, Lion; Stacey(p,p) and Stacey(p,2) at each p of the grid; at p = 2
the two Stacey variants are one algorithm, both mirror maps Euclidean, and run once):

1. **pilot** (centring): the learning rate ``c0 * 10^k``, k = -3..3, with ``c0`` the paper's value for the task's
   analogue (Appendix C), one tuning seed, no weight decay, no warm-up; the best final validation loss gives the
   centre ``c`` of the learning-rate range (Stacey's step scales like ``|g|^{1/(p-1)}``, so the centre moves with
   p: a pilot per p, not a rule);
2. **tuning**: ``points`` scrambled-Sobol points (the same number for every optimizer) over
   lr in ``[c/10, 10c]`` (log), weight decay (log; decoupled methods over ``[1e-6/c, 1e-2/c]``, i.e. a per-step
   shrink ``eta lambda`` in [1e-6, 1e-2] at the centre; coupled L2 methods, SGD and Adam, over [1e-6, 1e-1]),
   warm-up fraction in [0, 0.25], and Stacey's alpha in [1e-3, 1] (log; tau stays at the paper's 1e-3, which
   Appendix C does not tune), each point trained with ``tuning_seeds`` seeds, scored by the mean final validation
   loss (a diverged seed scores +inf);
3. **edges**: a chosen value in the outer tenth of its range (lr and alpha either side; weight decay and warm-up
   at the upper end: their lower ends, no decay and no warm-up, are natural ends) shifts that range by half its
   width towards the edge, and ``points`` new points run, up to ``widen`` times; a choice still at an edge is
   reported (``at_edge``) and makes every verdict resting on it inconclusive;
4. **final runs**: the chosen configuration over ``final_seeds`` fresh seeds (paired: a seed fixes the
   initialization and the batch order for every optimizer), evaluated on the test split.

Every training goes through :func:`run_trials`: cached per trial (signed, :mod:`proofs_checks.disk_cache`),
trained many at once (:mod:`proofs_checks.practice.stacked`, in chunks of trials), in this process, a process pool
or on Dask; the values do not depend on where a chunk ran.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from .stacked import Trial, train_stacked

__all__ = [
    "OPTIMIZERS",
    "BASELINES",
    "VARIANTS",
    "LABELS",
    "COUPLING",
    "Budget",
    "BUDGETS",
    "Tuned",
    "run_trials",
    "tune",
    "space_for",
    "cache_dir",
    "VERSION",
]

VERSION = "practice-2"
BASELINES = ("sgd", "adam", "adamw", "lion")
VARIANTS = ("stacey-pp", "stacey-p2")
OPTIMIZERS = BASELINES + VARIANTS
LABELS = {
    "sgd": "SGD w/ momentum",
    "adam": "Adam",
    "adamw": "AdamW",
    "lion": "Lion",
    "stacey-pp": "Stacey(p,p)",
    "stacey-p2": "Stacey(p,2)",
}
COUPLING = {
    "sgd": "coupled L2 (g + lambda theta, as torch.optim.SGD), tuned over [1e-6, 1e-1]",
    "adam": "coupled L2 (g + lambda theta, as torch.optim.Adam), tuned over [1e-6, 1e-1]",
    "adamw": "decoupled (theta <- (1 - eta lambda) theta), tuned: per-step shrink eta*lambda in [1e-6, 1e-2] at "
    "the centre lr",
    "lion": "decoupled (theta <- theta - eta lambda theta), tuned: per-step shrink in [1e-6, 1e-2] at the centre lr",
    "stacey-pp": "decoupled (Alg. 2 line 7: - eta lambda theta_t), tuned: per-step shrink in [1e-6, 1e-2] at the "
    "centre lr",
    "stacey-p2": "decoupled (Alg. 1 line 7: - eta lambda theta_t), tuned: per-step shrink in [1e-6, 1e-2] at the "
    "centre lr",
}
_DECOUPLED = {"adamw", "lion", "stacey-pp", "stacey-p2"}
PILOT = tuple(10.0**k for k in range(-3, 4))
EDGE = 0.1


@dataclass(frozen=True)
class Budget:
    """The trial budget, the same for every optimizer: ``points`` Sobol points x ``tuning_seeds`` seeds per
    tuning round, at most ``widen`` widening rounds, ``final_seeds`` fresh seeds, chunks of at most ``chunk``
    trials trained as one stacked model."""

    points: int
    tuning_seeds: int
    final_seeds: int
    widen: int = 2
    chunk: int = 64

    def text(self) -> str:
        return (
            f"pilot {len(PILOT)} learning rates x 1 seed; {self.points} Sobol points x {self.tuning_seeds} tuning "
            f"seeds (up to {self.widen} widening rounds of as many); {self.final_seeds} fresh seeds for the test split"
        )


BUDGETS = {"quick": Budget(points=8, tuning_seeds=3, final_seeds=5), "default": Budget(16, 3, 6)}


def space_for(name: str, centre: float, shift: dict | None = None) -> dict:
    """The search space of optimizer ``name`` around the learning-rate centre ``centre``: hp -> (lo, hi, log),
    each range shifted by ``shift[hp]`` half-widths (widening rounds)."""
    sp = {"lr": (centre / 10.0, centre * 10.0, True)}
    if name in _DECOUPLED:
        sp["weight_decay"] = (1e-6 / centre, 1e-2 / centre, True)
    else:
        sp["weight_decay"] = (1e-6, 1e-1, True)
    sp["warmup"] = (0.0, 0.25, False)
    if name in VARIANTS:
        sp["alpha"] = (1e-3, 1.0, True)
    for hp, k in (shift or {}).items():
        lo, hi, log = sp[hp]
        if log:
            w = math.log10(hi / lo) / 2.0
            sp[hp] = (lo * 10 ** (k * w), hi * 10 ** (k * w), True)
        else:
            w = (hi - lo) / 2.0
            sp[hp] = (lo + k * w, min(hi + k * w, 0.9), False)
    return sp


def _position(sp, hp, v) -> float:
    lo, hi, log = sp[hp]
    if log:
        return math.log(v / lo) / math.log(hi / lo)
    return (v - lo) / (hi - lo) if hi > lo else 0.5


def edges_of(name: str, sp: dict, chosen: dict) -> list:
    """The hyper-parameters whose chosen value lies in the outer tenth of the range, with the side
    (``"lr:low"``, ``"weight_decay:high"``, ...); weight decay and warm-up count at their upper end only."""
    out = []
    for hp in sp:
        u = _position(sp, hp, chosen[hp])
        if u < EDGE and hp in ("lr", "alpha"):
            out.append(f"{hp}:low")
        elif u > 1.0 - EDGE:
            out.append(f"{hp}:high")
    return out


def sobol_points(sp: dict, n: int, seed: int) -> list:
    """``n`` scrambled-Sobol points of the box ``sp`` (log axes in log space), as hp dicts."""
    from scipy.stats import qmc

    names = list(sp)
    m = int(math.ceil(math.log2(max(n, 2))))
    U = qmc.Sobol(len(names), scramble=True, seed=np.random.default_rng(seed)).random_base2(m)[:n]
    pts = []
    for u in U:
        d = {}
        for j, hp in enumerate(names):
            lo, hi, log = sp[hp]
            d[hp] = float(lo * (hi / lo) ** u[j]) if log else float(lo + (hi - lo) * u[j])
        pts.append(d)
    return pts


# -- the run cache -------------------------------------------------------------------------------------------------
def cache_dir() -> str:
    """Where trial results are cached: ``$LPTHEORY_PRACTICE_CACHE``, else ``~/.cache/lptheory/practice``."""
    from lptheory import config

    d = config.raw("LPTHEORY_PRACTICE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lptheory", "practice")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise ValueError(f"LPTHEORY_PRACTICE_CACHE={d!r}: cannot create the practice cache directory ({e})") from None
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise ValueError(f"LPTHEORY_PRACTICE_CACHE={d!r} is not a writable directory")
    return d


def _task_key(task, steps: int, split_seed: int, device: str) -> dict:
    return {
        "version": VERSION,
        "task": task.name,
        "steps": int(steps),
        "batch": task.batch_size,
        "evals": task.evals,
        "eval_size": task.eval_size,
        "split_seed": int(split_seed),
        "device": "cuda" if str(device).startswith("cuda") else "cpu",
        "fixed": {k: repr(task.fixed_hp(k)) for k in OPTIMIZERS},
    }


def trial_key(tk: dict, trial: Trial) -> str:
    text = json.dumps({**tk, **trial.key()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _read(path: str, key: str):
    """The cached result of the trial ``key`` (a signed entry, :func:`proofs_checks.disk_cache.load_signed`), or
    None: a miss; an entry edited, damaged, signed by someone else or of another trial is a miss with a warning
    naming the file."""
    from proofs_checks.disk_cache import load_signed

    def parse(text):
        got = json.loads(text, parse_constant=lambda c: {"Infinity": math.inf, "-Infinity": -math.inf}.get(c))
        if not isinstance(got, dict) or got.get("key") != key or not isinstance(got.get("result"), dict):
            raise ValueError("not the entry of this trial")
        curve = got["result"]["curve"]
        if not isinstance(curve, dict) or not all(isinstance(v, list) for v in curve.values()):
            raise ValueError("no curve")
        return got["result"]

    return load_signed(path, parse, what="practice trial")


def _write(path: str, key: str, result: dict) -> None:
    from proofs_checks.disk_cache import save_signed

    save_signed(path, {"key": key, "result": result}, lambda o: json.dumps(o, sort_keys=True))


# -- running trials -------------------------------------------------------------------------------------------------
@dataclass
class Runner:
    """Where chunks of trials train: ``workers`` 0 (this process), N (a Dask LocalCluster of N single-threaded
    workers) or a ``scheduler`` address; ``jobs`` > 1 without Dask: a spawned process pool. ``say`` gets
    progress lines; ``task_ref`` is how a worker finds the task (a built-in name or ``file.py:NAME``)."""

    jobs: int = 1
    workers: int = 0
    scheduler: str | None = None
    say: object = None
    _client: object = field(default=None, repr=False)
    _cluster: object = field(default=None, repr=False)

    def close(self):
        if self._client is not None:
            from lptheory.parallel import close_dask

            close_dask(self._client, self._cluster)
        self._client = self._cluster = None

    def map(self, fn, items: list):
        """Yield ``(index, fn(items[index]))`` as chunks complete (in this process: in order)."""
        if not items:
            return
        if self.scheduler or self.workers:
            if self._client is None:
                from lptheory.parallel import dask_client

                self._client, self._cluster = dask_client(self.scheduler, self.workers or None)
            from distributed import as_completed

            futs = {self._client.submit(fn, it, pure=False): i for i, it in enumerate(items)}
            for f in as_completed(list(futs)):
                yield futs[f], f.result()
            return
        from proofs_checks.pools import spare_tokens

        # under the run's process budget (a report, several checks) this check holds one token: its pool takes
        # only the spare ones, so no more than --jobs processes are busy (no nested oversubscription)
        with spare_tokens(max(0, min(self.jobs, len(items)) - 1)) as extra:
            if extra and len(items) > 1:
                import multiprocessing as mp
                from concurrent.futures import ProcessPoolExecutor, as_completed

                from lptheory.lifetime import die_with_parent

                with ProcessPoolExecutor(
                    max_workers=1 + extra,
                    mp_context=mp.get_context("spawn"),
                    initializer=die_with_parent,  # a worker dies with this process, however it ends (SIGKILL too)
                    initargs=(os.getpid(),),
                ) as ex:
                    futs = {ex.submit(fn, it): i for i, it in enumerate(items)}
                    for f in as_completed(futs):
                        yield futs[f], f.result()
                return
        for i, it in enumerate(items):
            yield i, fn(it)


def _train_chunk(item):
    """One chunk on a worker: ``(task_ref, split_seed, device, steps, trials, plugins, curve)`` -> results (one
    torch thread)."""
    from lptheory.plugins import ensure

    task_ref, plugins = item[0], item[5]

    from .task_ref import resolve

    ensure(plugins)  # the parent's user plug-ins (optimizer modules), loaded the same way here
    return _train_chunk_local(resolve(task_ref), item)


def _train_chunk_local(task, item):
    """One chunk of ``task`` in this process, on one torch thread (the values do not depend on where it runs)."""
    import torch

    _, split_seed, device, steps, trials, _plugins, curve = item
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train_stacked(
            task, task.splits(split_seed, device), trials, steps=steps, evals=task.evals, device=device, curve=curve
        )
    finally:
        torch.set_num_threads(before)


def run_trials(
    task,
    trials: list,
    *,
    steps: int,
    split_seed: int,
    device: str,
    budget: Budget,
    runner: Runner,
    label: str = "runs",
    task_ref=None,
    curve: bool = True,
) -> list:
    """The results of ``trials`` (in order): cached ones read, the others trained in chunks of at most
    ``budget.chunk`` trials as one stacked model each (chunks sorted by optimizer so a chunk holds few rules)."""
    tk = {**_task_key(task, steps, split_seed, device), "curve": bool(curve)}
    d = cache_dir()
    keys = [trial_key(tk, t) for t in trials]
    out = [_read(os.path.join(d, k + ".json"), k) for k in keys]
    todo = [i for i, r in enumerate(out) if r is None]
    say = runner.say or (lambda m: None)
    if not todo:
        say(f"{task.name} {label}: {len(trials)} trials, all cached")
        return out
    say(f"{task.name} {label}: {len(todo)} of {len(trials)} trials to train ({len(trials) - len(todo)} cached)")
    todo.sort(key=lambda i: (trials[i].optimizer, trials[i].p or 0.0, i))
    chunks = [todo[s : s + budget.chunk] for s in range(0, len(todo), budget.chunk)]
    ref = task_ref if task_ref is not None else task.name
    from lptheory.plugins import loaded

    items = [(ref, split_seed, device, steps, [trials[i] for i in ch], loaded(), curve) for ch in chunks]
    t0 = time.perf_counter()
    local = not (runner.workers or runner.scheduler or runner.jobs > 1)
    fn = (lambda it: _train_chunk_local(task, it)) if local else _train_chunk
    for n, (c, res) in enumerate(runner.map(fn, items)):
        for i, r in zip(chunks[c], res):  # written as each chunk completes: an interrupted run resumes from here
            out[i] = _json_round(r)
            _write(os.path.join(d, keys[i] + ".json"), keys[i], out[i])
        el = time.perf_counter() - t0
        say(
            f"{task.name} {label}: chunk {n + 1}/{len(items)} trained, {el:.0f}s, "
            f"about {el * (len(items) - n - 1) / (n + 1):.0f}s left"
        )
    return out


def _json_round(r: dict) -> dict:
    """The result as the cache stores it (JSON numbers; +-inf kept), so a fresh and a cached result are equal."""
    text = json.dumps(r, sort_keys=True)
    return json.loads(text, parse_constant=lambda c: {"Infinity": math.inf, "-Infinity": -math.inf}.get(c))


# -- tuning -----------------------------------------------------------------------------------------------------
@dataclass
class Tuned:
    """One optimizer's tuning: its search ``space`` (the union of its rounds' ranges), every trial's hp and score,
    the ``chosen`` configuration, the hyper-parameters ``at_edge`` after the last round, the pilot's learning rates
    and scores."""

    name: str
    p: float | None
    space: dict
    points: list
    scores: list
    chosen: dict
    at_edge: list
    rounds: int
    pilot: dict
    val_by_seed: list  # per point: the final validation loss of each tuning seed
    test_by_seed: list  # per point: the final test value (headline quantity) of each tuning seed

    @property
    def label(self) -> str:
        return LABELS[self.name] + (f" p={self.p:g}" if self.p is not None else "")

    def summary(self) -> dict:
        """``data["tuning"]``'s entry: space, trials, chosen, at_edge, coupling."""
        return {
            "space": {hp: [lo, hi] for hp, (lo, hi, _) in self.space.items()},
            "log": [hp for hp, (_, _, log) in self.space.items() if log],
            "trials": len(self.points),
            "trainings": len(self.points) * (len(self.val_by_seed[0]) if self.val_by_seed else 0),
            "rounds": self.rounds,
            "chosen": dict(self.chosen),
            "at_edge": list(self.at_edge),
            "coupling": COUPLING[self.name],
            "points": [dict(p) for p in self.points],
            "scores": list(self.scores),
            "pilot": self.pilot,
        }


def _final(res: dict, key: str):
    v = res["curve"][key][-1]
    return float(v)


def tune(
    task,
    opts: list,
    *,
    steps: int,
    split_seed: int,
    device: str,
    budget: Budget,
    runner: Runner,
    seed: int,
    headline: str,
    task_ref=None,
) -> dict:
    """Pilot, Sobol rounds and widening for every (optimizer, p) of ``opts``, all optimizers' trials of a round
    trained together. Returns (name, p) -> :class:`Tuned`. ``headline`` is the curve key whose final value the
    best-p nested bootstrap reads from the tuning runs."""
    tseeds = [10_000 + 100 * seed + s for s in range(budget.tuning_seeds)]

    def hp0(name):
        return {"alpha": float(task.hp_table.get(name, {}).get("alpha", 0.1))} if name in VARIANTS else {}

    # 1. pilot
    pilot_trials = [
        Trial(n, p, {"lr": task.paper_lr(n) * m, "weight_decay": 0.0, "warmup": 0.0, **hp0(n)}, tseeds[0])
        for n, p in opts
        for m in PILOT
    ]
    res = run_trials(
        task,
        pilot_trials,
        steps=steps,
        split_seed=split_seed,
        device=device,
        budget=budget,
        runner=runner,
        label="pilot",
        task_ref=task_ref,
        curve=False,  # scored by the final validation loss: evaluated at T only
    )
    centre, pilot = {}, {}
    for i, (n, p) in enumerate(opts):
        rs = res[i * len(PILOT) : (i + 1) * len(PILOT)]
        vals = [_finite(_final(r, "val_loss")) for r in rs]
        j = int(np.argmin(vals))
        centre[(n, p)] = task.paper_lr(n) * PILOT[j]
        pilot[(n, p)] = {"lr": [task.paper_lr(n) * m for m in PILOT], "val_loss": vals, "chosen": j}

    state = {
        o: {"shift": {}, "points": [], "scores": [], "val": [], "test": [], "rounds": 0, "space": None, "union": None}
        for o in opts
    }
    active = list(opts)
    rnd = 0
    while active and rnd <= budget.widen:
        trials, index = [], []
        for o in active:
            st = state[o]
            sp = space_for(o[0], centre[o], st["shift"])
            st["space"] = sp
            st["union"] = _union(st["union"], sp)
            pts = sobol_points(sp, budget.points, seed=hash_seed(task.name, o, rnd, seed))
            for pt in pts:
                if o[0] not in VARIANTS:
                    pt.pop("alpha", None)
                index.append((o, pt))
                trials += [Trial(o[0], o[1], pt, s) for s in tseeds]
        res = run_trials(
            task,
            trials,
            steps=steps,
            split_seed=split_seed,
            device=device,
            budget=budget,
            runner=runner,
            label=f"tuning round {rnd + 1}",
            task_ref=task_ref,
            curve=False,
        )
        S = len(tseeds)
        for k, (o, pt) in enumerate(index):
            rs = res[k * S : (k + 1) * S]
            vals = [_finite(_final(r, "val_loss")) for r in rs]
            st = state[o]
            st["points"].append(pt)
            st["val"].append(vals)
            st["test"].append([_final(r, headline) for r in rs])
            st["scores"].append(float(np.mean(vals)) if all(map(math.isfinite, vals)) else math.inf)
        nxt = []
        for o in active:
            st = state[o]
            st["rounds"] = rnd + 1
            best = st["points"][int(np.argmin(st["scores"]))]
            edges = edges_of(o[0], st["space"], best)
            if edges and rnd < budget.widen:
                for e in edges:
                    hp, side = e.split(":")
                    st["shift"][hp] = st["shift"].get(hp, 0) + (1 if side == "high" else -1)
                nxt.append(o)
        active = nxt
        rnd += 1

    out = {}
    for o in opts:
        st = state[o]
        j = int(np.argmin(st["scores"]))
        best = st["points"][j]
        # the edges of the last round's range (the widest the chosen value was searched in)
        out[o] = Tuned(
            o[0],
            o[1],
            st["union"],
            st["points"],
            st["scores"],
            dict(best),
            edges_of(o[0], st["union"], best),
            st["rounds"],
            pilot[o],
            st["val"],
            st["test"],
        )
    return out


def _union(a: dict | None, b: dict) -> dict:
    """The smallest box holding the ranges ``a`` and ``b`` (the union of the rounds' ranges: where the chosen value
    was searched)."""
    if a is None:
        return dict(b)
    return {hp: (min(a[hp][0], b[hp][0]), max(a[hp][1], b[hp][1]), b[hp][2]) for hp in b}


def _finite(v: float) -> float:
    return v if math.isfinite(v) else math.inf


def hash_seed(*parts) -> int:
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)
