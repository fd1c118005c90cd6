"""Many small trainings as one: K trials of one task (any optimizers, hyper-parameters and seeds) trained as one
stacked model.

The K models' parameters live in one ``(K, D)`` float32 tensor ``theta`` (row k: trial k's parameters, flattened
in the module's parameter order). One step:

1. each trial's mini-batch (its own index sequence, a function of its seed alone: two trials with the same seed
   see the same batches in the same order, as one-at-a-time training does);
2. forward and backward of all K models at once: ``torch.func.vmap`` over ``torch.func.grad_and_value`` of
   ``torch.func.functional_call`` of the task's module with the trial's parameters (views of ``theta``'s row);
3. the update of every trial by its optimizer's one rule (:mod:`lptheory.optimizers`, the same rule the numpy,
   numba and ``torch.optim`` paths run): the rows of one optimizer form a contiguous block of ``theta``, updated
   in place by :func:`lptheory.fast.engine.run` with the step's scalars, the per-trial ones (learning rate with
   its schedule, weight decay, Stacey's alpha) as ``(rows, 1)`` tensors broadcast along the stacked dimension.

A trial whose loss or parameters turn non-finite is marked diverged at that step; its row (parameters, gradient
and optimizer state) is zeroed and frozen, so it cannot poison the others (every operation is row-wise: no
value of one row enters another's arithmetic), and its metrics from there on are +inf (accuracy: chance level).

The result of a trial does not depend on which trials it was stacked with, up to float32 rounding of the batched
kernels (``tests/test_practice_stacked.py`` states the tolerance and checks it against K = 1 training).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Trial", "core_optimizer", "schedule", "batch_indices", "train_stacked", "TUNED_FIELDS"]

# hyper-parameters that vary per trial (broadcast along the stacked dimension); the rest fix the rule
TUNED_FIELDS = ("lr", "weight_decay", "alpha")


@dataclass(frozen=True)
class Trial:
    """One training run: ``optimizer`` (a name of :data:`proofs_checks.practice.protocol.OPTIMIZERS`), its
    ``p`` (Stacey only), ``hp`` (``lr``, ``weight_decay``, ``warmup`` and for Stacey ``alpha``; the fixed ones,
    betas, eps, tau, come from the protocol) and the run ``seed`` (initialization and batch order)."""

    optimizer: str
    p: float | None
    hp: dict = field(hash=False)
    seed: int = 0

    def key(self) -> dict:
        return {"optimizer": self.optimizer, "p": self.p, "hp": dict(sorted(self.hp.items())), "seed": int(self.seed)}


def core_optimizer(name: str, p: float | None, fixed: dict):
    """The :mod:`lptheory.optimizers` object of ``name`` with the fixed hyper-parameters ``fixed`` (the tuned
    ones, :data:`TUNED_FIELDS`, are given per step): SGD w/ momentum and Adam with coupled L2 weight decay (as
    ``torch.optim.SGD``/``Adam``), AdamW and Lion with decoupled decay, Stacey(p,p) (Algorithm 2) and
    Stacey(p,2) (Algorithm 1) with the decoupled decay of their line 7."""
    from lptheory import optimizers as O

    kw = dict(fixed)
    if name == "sgd":
        return O.SGD(lr=0.0, momentum=kw.get("momentum", 0.9), weight_decay=1.0)
    if name in ("adam", "adamw"):
        cls = O.Adam if name == "adam" else O.AdamW
        return cls(lr=0.0, beta1=kw["betas"][0], beta2=kw["betas"][1], eps=kw.get("eps", 1e-8), weight_decay=1.0)
    if name == "lion":
        return O.Lion(lr=0.0, beta1=kw["betas"][0], beta2=kw["betas"][1], weight_decay=1.0)
    if name in ("stacey-pp", "stacey-p2"):
        if p is None:
            raise ValueError(f"optimizer {name!r} needs p")
        cls = O.StaceyPP if name == "stacey-pp" else O.StaceyP2
        return cls(
            p=float(p),
            lr=0.0,
            alpha=1.0,
            tau=kw.get("tau", 1e-3),
            beta1=kw["betas"][0],
            beta2=kw["betas"][1],
            eps=kw.get("eps", 1e-8),
            weight_decay=1.0,
        )
    raise ValueError(f"optimizer must be one of sgd, adam, adamw, lion, stacey-pp, stacey-p2; got {name!r}")


def schedule(T: int, warmup: float) -> np.ndarray:
    """The learning-rate multipliers of steps 0..T-1: linear warm-up over ``round(warmup T)`` steps, then
    cosine decay to 0 at T (the paper's "cosine decay"; ImageNet's runs add a warm-up, Section 5.1)."""
    if not (0.0 <= warmup < 1.0):
        raise ValueError(f"warmup must be a fraction in [0, 1), got {warmup!r}")
    w = int(round(warmup * T))
    t = np.arange(T, dtype=np.float64)
    cos = 0.5 * (1.0 + np.cos(np.pi * np.clip(t - w, 0, None) / max(T - w, 1)))
    ramp = np.minimum(1.0, (t + 1.0) / w) if w > 0 else np.ones(T)
    return ramp * cos


def batch_indices(seed: int, n: int, batch: int, T: int) -> np.ndarray:
    """The (T, batch) training-example indices of a run with seed ``seed`` (without replacement within a step):
    a function of the seed alone, so paired trials see the same batches."""
    if batch > n:
        raise ValueError(f"batch_size ({batch}) must be at most the training split's size ({n})")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 21]))
    return np.stack([rng.choice(n, size=batch, replace=False) for _ in range(T)])


class _Block:
    """The rows of one optimizer (same rule, same fixed hyper-parameters) inside ``theta``."""

    def __init__(self, opt, rows: slice, trials, sched: np.ndarray, torch, device):
        self.opt, self.rows = opt, rows
        k = rows.stop - rows.start
        col = lambda vals: torch.tensor(vals, dtype=torch.float32, device=device).reshape(k, 1)  # noqa: E731
        self.lr = col([t.hp["lr"] for t in trials])
        self.wd = col([t.hp.get("weight_decay", 0.0) for t in trials])
        self.alpha = col([t.hp.get("alpha", 0.0) for t in trials]) if "alpha" in _fields(opt) else None
        self.sched = torch.tensor(sched, dtype=torch.float32, device=device)  # (T, k)
        self.state = None

    def step(self, theta, grad, t: int, engine):
        if self.state is None:
            self.state = self.opt.init(theta[self.rows])
        th, g = theta[self.rows], grad[self.rows]
        over = {"lr": self.lr * self.sched[t].reshape(-1, 1), "weight_decay": self.wd}
        if self.alpha is not None:
            over["alpha"] = self.alpha
        h = self.opt.scalars(t, **over)
        old = [self.state[k] for k in self.opt.buffers]
        engine.run(self.opt, h, self.opt.named(th, g, old, [th, *old]))

    def zero_rows(self, local):
        for k in self.opt.buffers:
            self.state[k][local] = 0.0


def _fields(opt) -> set:
    import dataclasses

    return {f.name for f in dataclasses.fields(opt)}


def train_stacked(
    task, splits, trials: list, *, steps: int, evals: int, device: str = "cpu", progress=None, curve: bool = True
) -> list:
    """Train ``trials`` (:class:`Trial`) on ``task`` (a :class:`~proofs_checks.practice.task.PracticeTask`) as one
    stacked model; ``splits`` is ``task.data(split_seed)`` (moved to ``device``).

    Returns, per trial (in order), ``{"curve": {"step", "train_loss", "val_loss", "test_loss"[, "val_metric",
    "test_metric"]}, "diverged": bool, "diverged_at": step or None}`` (nothing that depends on the machine: a
    cached and a fresh result are equal).
    Curves are evaluated at ``evals + 1`` evenly spaced steps and at the task's checkpoints; the training loss on
    (at most ``task.eval_size`` examples of) the training split. ``curve=False`` (tuning runs, which are scored by
    their final values) evaluates at T only: the curve is ``{"step": [T], ...}``."""
    import torch
    from torch.func import functional_call, grad_and_value, stack_module_state, vmap

    from lptheory.fast import engine

    if not trials:
        return []
    K, T = len(trials), int(steps)
    order = sorted(range(K), key=lambda i: (trials[i].optimizer, trials[i].p or 0.0))
    trials_sorted = [trials[i] for i in order]
    models = [task.build_model(tr.seed).to(device) for tr in trials_sorted]
    base = models[0]
    params, bufs = stack_module_state(models)
    names = list(params)
    shapes = [tuple(params[n].shape[1:]) for n in names]
    sizes = [int(np.prod(s)) if s else 1 for s in shapes]
    theta = torch.cat([params[n].reshape(K, -1) for n in names], dim=1).detach().to(torch.float32).contiguous()
    offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    del models, params
    base = base.to("meta")

    def views(th):
        return {
            n: th[:, offsets[i] : offsets[i + 1]].unflatten(1, shapes[i]) if shapes[i] else th[:, offsets[i]]
            for i, n in enumerate(names)
        }

    loss_fn = task.loss_fn

    def one(p, b, x, y):
        return loss_fn(functional_call(base, (p, b), (x,)), y)

    gv = vmap(grad_and_value(one), in_dims=(0, 0, 0, 0))

    # blocks of rows per (optimizer, p, fixed hyper-parameters)
    blocks, start = [], 0
    i = 0
    while i < K:
        j = i
        while j < K and (trials_sorted[j].optimizer, trials_sorted[j].p) == (
            trials_sorted[i].optimizer,
            trials_sorted[i].p,
        ):
            j += 1
        group = trials_sorted[i:j]
        sched = np.stack([schedule(T, float(tr.hp.get("warmup", 0.0))) for tr in group], axis=1)
        opt = core_optimizer(group[0].optimizer, group[0].p, task.fixed_hp(group[0].optimizer))
        blocks.append(_Block(opt, slice(i, j), group, sched, torch, device))
        i = j
    del start

    Xtr, ytr = splits["train"]
    n = int(ytr.shape[0])
    idx_by_seed = {}
    for tr in trials_sorted:
        if tr.seed not in idx_by_seed:
            idx_by_seed[tr.seed] = batch_indices(tr.seed, n, task.batch_size, T)
    idx = torch.as_tensor(np.stack([idx_by_seed[tr.seed] for tr in trials_sorted], axis=1), device=device)  # T,K,B

    points = (eval_steps(T, evals) | set(task.checkpoint_steps(T))) if curve else {T}
    ev_sets = _eval_sets(task, splits)
    curve = {k: [[] for _ in range(K)] for k in ("train_loss", "val_loss", "test_loss")}
    has_metric = task.metric is not None
    if has_metric:
        curve["val_metric"] = [[] for _ in range(K)]
        curve["test_metric"] = [[] for _ in range(K)]
    alive = torch.ones(K, dtype=torch.bool, device=device)
    diverged_at = [None] * K

    def kill(mask, t):
        bad = torch.nonzero(mask & alive).flatten().tolist()
        for r in bad:
            diverged_at[r] = t
            theta[r] = 0.0
            for blk in blocks:
                if blk.rows.start <= r < blk.rows.stop and blk.state is not None:
                    blk.zero_rows(r - blk.rows.start)
        alive[mask] = False

    def record(t):
        fin = torch.isfinite(theta).all(dim=1)
        if not bool(fin.all()):
            kill(~fin, t)
        with torch.no_grad():
            P = views(theta)
            res = {}
            for split, (X, y) in ev_sets.items():
                out = _chunked_forward(functional_call, base, P, bufs, X, K)
                res[split] = _eval_metrics(task, out, y)
        for r in range(K):
            ok = bool(alive[r])
            for split in ("train", "val", "test"):
                curve[f"{split}_loss"][r].append(res[split][0][r] if ok else math.inf)
            if has_metric:
                worst = task.metric_worst
                curve["val_metric"][r].append(res["val"][1][r] if ok else worst)
                curve["test_metric"][r].append(res["test"][1][r] if ok else worst)

    if curve:
        record(0)
    for t in range(T):
        bi = idx[t]  # K, B
        x, y = Xtr[bi], ytr[bi]
        grads, loss = gv(views(theta), bufs, x, y)
        g = torch.cat([grads[nm].reshape(K, -1) for nm in names], dim=1)
        bad = ~torch.isfinite(loss) | ~torch.isfinite(g).all(dim=1)
        if bool(bad.any()):
            kill(bad, t + 1)
        g[~alive] = 0.0
        with torch.no_grad():
            for blk in blocks:
                blk.step(theta, g, t, engine)
            theta[~alive] = 0.0
        if t + 1 in points:
            record(t + 1)
        if progress is not None:
            progress(t + 1, T)
    out = [None] * K
    step_list = sorted(points | {0}) if curve else sorted(points)
    for r, i in enumerate(order):
        c = {"step": step_list}
        for k, v in curve.items():
            c[k] = v[r]
        out[i] = {"curve": c, "diverged": diverged_at[r] is not None, "diverged_at": diverged_at[r]}
    return out


def eval_steps(T: int, evals: int) -> set:
    """The steps at which a run's curve is evaluated: ``evals`` + 1 evenly spaced, plus T/4, T/2 and T."""
    pts = set(np.linspace(0, T, evals + 1).round().astype(int).tolist()) | {T // 4, T // 2, T}
    pts.discard(0)
    return pts


def _eval_sets(task, splits) -> dict:
    cap = task.eval_size
    out = {}
    for split in ("train", "val", "test"):
        X, y = splits[split]
        if cap is not None and int(y.shape[0]) > cap:
            X, y = X[:cap], y[:cap]
        out[split] = (X, y)
    return out


def _chunked_forward(functional_call, base, P, bufs, X, K, budget: int = 1 << 24):
    """The outputs of all K models on X (K, N, ...), in chunks of examples so no intermediate is huge."""
    import torch
    from torch.func import vmap

    f = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))
    N = int(X.shape[0])
    per = max(1, budget // max(1, K * int(np.prod(X.shape[1:])) * 64))
    if per >= N:
        return f(P, bufs, X)
    return torch.cat([f(P, bufs, X[s : s + per]) for s in range(0, N, per)], dim=1)


def _eval_metrics(task, out, y):
    """Per model: (loss, metric) as float lists; a non-finite output gives +inf loss."""
    import torch

    K = out.shape[0]
    losses, metrics = [], []
    for k in range(K):
        with torch.no_grad():
            v = float(task.loss_fn(out[k], y))
            losses.append(v if math.isfinite(v) else math.inf)
            if task.metric is not None:
                m = float(task.metric_fn(out[k], y))
                metrics.append(m if math.isfinite(m) else task.metric_worst)
    return losses, metrics
