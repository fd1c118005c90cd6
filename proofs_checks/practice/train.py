"""Training runs of the practice pack: the optimizers (``torch.optim`` and :mod:`lptheory.torch`) with the
paper's hyper-parameters, one seeded run, the result cache and the process pool.

A run is a JSON-able ``config`` (task, scale, split seed, optimizer, its hyper-parameters, learning rate, run
seed, device); its result is a small JSON file in the cache directory named by the hash of the config
(:func:`cache_dir`), so a rerun or an interrupted run resumes where it stopped. Every run is deterministic
given its config on one machine (one thread per worker; the seed fixes the initialization and the batches;
two optimizers with the same run seed see the same initialization and the same batches: paired runs).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time

import numpy as np

__all__ = [
    "OPTIMIZERS",
    "BASELINES",
    "VARIANTS",
    "PAPER_HP",
    "PAPER_P",
    "cache_dir",
    "cached",
    "checkpoints",
    "task_for",
    "config_key",
    "make_optimizer",
    "run_config",
    "run_many",
    "train",
]

VERSION = "practice-1"
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

# The paper's hyper-parameters (Appendix C): the digits task takes the CIFAR table (Table 4: image
# classification), the charlm task the LLM table (Table 6). The learning rate is the centre of the grid.
_CIFAR = {
    "sgd": dict(lr=0.02, momentum=0.9, weight_decay=2e-4),
    "adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=5e-4),
    "adamw": dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=5e-4),
    "lion": dict(lr=1e-3, betas=(0.9, 0.99), weight_decay=0.01),
    "stacey-pp": dict(lr=0.1, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-12),
    "stacey-p2": dict(lr=0.1, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-12),
}
_LLM = {
    "sgd": dict(lr=0.01, momentum=0.9, weight_decay=5e-4),
    "adam": dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    "adamw": dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05),
    "lion": dict(lr=0.05, betas=(0.9, 0.999), weight_decay=0.01),
    "stacey-pp": dict(lr=0.01, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-8),
    "stacey-p2": dict(lr=0.01, alpha=0.1, betas=(0.9, 0.99), weight_decay=5e-4, tau=1e-3, eps=1e-8),
}
PAPER_HP = {"digits": _CIFAR, "charlm": _LLM}
# the paper's p for the task's analogue: CIFAR p = 2 (both variants); LLM p = 3 (Stacey(p,p)) and 2.8
# (Stacey(p,2)), 2.8 taken at the nearest exponent of the grid, 3
PAPER_P = {"digits": 2.0, "charlm": 3.0}


def cache_dir() -> str:
    """Where run results are cached: ``$LPTHEORY_PRACTICE_CACHE``, else ``~/.cache/lptheory/practice``."""
    from lptheory import config

    d = config.raw("LPTHEORY_PRACTICE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "lptheory", "practice"
    )
    os.makedirs(d, exist_ok=True)
    return d


def config_key(config: dict) -> str:
    """The cache key of a run: sha256 of its canonical JSON (with the cache format's version)."""
    text = json.dumps({"version": VERSION, **config}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def make_optimizer(name: str, params, hp: dict, lr: float, p: float | None = None):
    """The optimizer ``name`` (:data:`OPTIMIZERS`) on ``params`` with hyper-parameters ``hp`` and learning
    rate ``lr``: SGD/Adam/AdamW from ``torch.optim``, Lion, Stacey(p,p) and Stacey(p,2) from
    :mod:`lptheory.torch` (``p`` required for the Stacey variants)."""
    import torch

    from lptheory import torch as lpt

    hp = {k: (tuple(v) if isinstance(v, list) else v) for k, v in hp.items() if k != "lr"}
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, **hp)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **hp)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, **hp)
    if name == "lion":
        return lpt.Lion(params, lr=lr, **hp)
    if name in VARIANTS:
        if p is None:
            raise ValueError(f"optimizer {name!r} needs p")
        cls = lpt.StaceyPP if name == "stacey-pp" else lpt.StaceyP2
        return cls(params, lr=lr, p=float(p), **hp)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


_TASKS: dict = {}


def task_for(config: dict):
    from .tasks import make_task

    key = (config["task"], config["scale"], config["split_seed"], config.get("device", "cpu"))
    if key not in _TASKS:
        _TASKS[key] = make_task(*key)
    return _TASKS[key]


def checkpoints(T: int) -> list[int]:
    """The three checkpoints of a run of T steps: T/4, T/2 and T (as the paper's 50, 100, 200 epochs)."""
    return [T // 4, T // 2, T]


def _eval_steps(T: int, evals: int) -> list[int]:
    return sorted(set(np.linspace(0, T, evals + 1).round().astype(int).tolist()) | set(checkpoints(T)))


def train(config: dict, probe=None) -> dict:
    """One run of ``config``: T steps with a cosine-decay schedule (the paper's), evaluation at the learning
    curve's points (training loss on the training split, validation and test metrics).

    ``probe(model, step)``, when given, is called at the evaluation points (its time is measured apart).
    Returns ``{"curve": {"step", "train_loss", "val_loss", "test_loss"[, "test_acc"]}, "wall", "probe_wall",
    "diverged"}``; a run whose loss turns non-finite stops there and its later metrics are +inf (accuracy:
    chance level)."""
    import torch

    task = task_for(config)
    T = task.scale.steps
    model = task.model(config["seed"])
    opt = make_optimizer(config["optimizer"], model.parameters(), config["hp"], config["lr"], config.get("p"))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 * (1.0 + math.cos(math.pi * min(t, T) / T)))
    rng = np.random.default_rng(np.random.SeedSequence([int(config["seed"]), 21]))
    points = _eval_steps(T, task.scale.evals)
    curve = {k: [] for k in ("step", "train_loss", "val_loss", "test_loss")}
    if task.name == "digits":
        curve["test_acc"] = []
    diverged, wall, probe_wall = False, 0.0, 0.0

    def record(t):
        nonlocal probe_wall
        curve["step"].append(t)
        if diverged:
            for k in ("train_loss", "val_loss", "test_loss"):
                curve[k].append(math.inf)
            if "test_acc" in curve:
                curve["test_acc"].append(1.0 / task.classes)
            return
        tr, va, te = (task.evaluate(model, s) for s in ("train", "val", "test"))
        curve["train_loss"].append(tr["loss"])
        curve["val_loss"].append(va["loss"])
        curve["test_loss"].append(te["loss"])
        if "test_acc" in curve:
            curve["test_acc"].append(te["acc"])
        if probe is not None:
            t0 = time.perf_counter()
            probe(model, t)
            probe_wall += time.perf_counter() - t0

    record(0)
    for t in range(1, T + 1):
        x, y = task.batch(rng)
        t0 = time.perf_counter()
        if not diverged:
            opt.zero_grad(set_to_none=True)
            loss = task.loss(model, x, y)
            if not torch.isfinite(loss):
                diverged = True
            else:
                loss.backward()
                opt.step()
                sched.step()
        wall += time.perf_counter() - t0
        if t in points:
            if not diverged and not all(bool(torch.isfinite(q).all()) for q in model.parameters()):
                diverged = True
            record(t)
    return {"curve": curve, "wall": wall, "probe_wall": probe_wall, "diverged": diverged}


def run_config(config: dict, refresh: bool = False) -> dict:
    """The result of ``config``, from the cache when there (unless ``refresh``), else trained and cached."""
    path = os.path.join(cache_dir(), config_key(config) + ".json")
    got = None if refresh else cached(config)
    if got is not None:
        return got
    if config.get("kind") == "probe":
        from .probe import probe_run

        res = probe_run(config)
    else:
        res = train(config)
    out = {"config": config, **res}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(_jsonable(out), fh)
    os.replace(tmp, path)
    return json.loads(json.dumps(_jsonable(out)))


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    return x


def num(v) -> float:
    """A metric read back from a result (``"inf"`` strings to floats)."""
    return float(v)


def _worker_init():
    import torch

    torch.set_num_threads(1)


def cached(config: dict) -> dict | None:
    """The cached result of ``config``, or None (not run yet, another config under the same key, or a damaged
    file: trained again)."""
    path = os.path.join(cache_dir(), config_key(config) + ".json")
    if os.path.exists(path):
        try:
            with open(path) as fh:
                got = json.load(fh)
            if got.get("config") == json.loads(json.dumps(config)):
                return got
        except (OSError, ValueError):
            return None
    return None


def run_many(configs: list[dict], jobs: int = 1, say=lambda msg: None, label: str = "runs") -> list[dict]:
    """The results of ``configs`` (in order): cached ones read, the others trained on ``jobs`` processes
    (spawned, one torch thread each; results do not depend on ``jobs``), with a progress line at each tenth."""
    out: list = [cached(c) for c in configs]
    todo = [i for i, r in enumerate(out) if r is None]
    if not todo:
        say(f"{label}: {len(configs)} runs, all cached")
        return out
    say(f"{label}: {len(todo)} of {len(configs)} runs to train ({len(configs) - len(todo)} cached)")
    t0, done, next_tenth = time.perf_counter(), 0, 1

    def tick():
        nonlocal done, next_tenth
        done += 1
        if 10 * done >= next_tenth * len(todo):
            next_tenth = 10 * done // len(todo) + 1
            el = time.perf_counter() - t0
            say(f"{label}: {done}/{len(todo)} trained, {el:.0f}s, about {el * (len(todo) - done) / done:.0f}s left")

    if jobs <= 1 or len(todo) == 1:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for i in todo:
                out[i] = run_config(configs[i])
                tick()
        finally:
            torch.set_num_threads(before)
        return out
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        max_workers=min(jobs, len(todo)), mp_context=mp.get_context("spawn"), initializer=_worker_init
    ) as ex:
        futs = {ex.submit(run_config, configs[i]): i for i in todo}
        from concurrent.futures import as_completed

        for f in as_completed(futs):
            out[futs[f]] = f.result()
            tick()
    return out
