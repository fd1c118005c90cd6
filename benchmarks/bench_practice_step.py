"""Trainings per second of the practice pack: one at a time (a plain PyTorch loop per trial, as the practice check
trained before issue 46) against many trials as one stacked model (:mod:`proofs_checks.practice.stacked`), on the
digits MLP and the charlm transformer, in one run (ratios measured side by side, blocks interleaved).

A trial: one optimizer with its hyper-parameters and seed, T steps, the curve evaluated at the task's points. The
stacked side trains K trials of the six optimizers (AdamW, Adam, SGD, Lion, Stacey(p,p), Stacey(p,2)) at once; the
one-at-a-time side trains the same number of AdamW trials with ``torch.optim.AdamW`` (the cheapest optimizer step:
the comparison favours the old path), evaluated at the same points.

    python benchmarks/bench_practice_step.py [--tasks digits charlm] [--k 32] [--blocks 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch


def plain_loop(task, splits, seed: int, T: int, evals: set):
    """One trial, the old way: a module, ``torch.optim.AdamW``, a cosine schedule, evaluation at ``evals``."""
    from proofs_checks.practice.stacked import batch_indices

    m = task.build_model(seed)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 0.5 * (1 + np.cos(np.pi * min(t, T) / T)))
    X, y = splits["train"]
    idx = torch.as_tensor(batch_indices(seed, int(y.shape[0]), task.batch_size, T))
    for t in range(T):
        opt.zero_grad(set_to_none=True)
        task.loss_fn(m(X[idx[t]]), y[idx[t]]).backward()
        opt.step()
        sched.step()
        if t + 1 in evals:
            with torch.no_grad():
                for split in ("train", "val", "test"):
                    Xs, ys = splits[split]
                    cap = task.eval_size or len(ys)
                    float(task.loss_fn(m(Xs[:cap]), ys[:cap]))


def stacked(task, splits, K: int, T: int):
    from proofs_checks.practice.stacked import Trial, train_stacked

    names = ("adamw", "adam", "sgd", "lion", "stacey-pp", "stacey-p2")
    trials = []
    for k in range(K):
        n = names[k % len(names)]
        hp = {"lr": task.paper_lr(n), "weight_decay": 1e-4, "warmup": 0.0}
        if n.startswith("stacey"):
            hp["alpha"] = 0.1
        trials.append(Trial(n, 3.0 if n.startswith("stacey") else None, hp, seed=k))
    train_stacked(task, splits, trials, steps=T, evals=task.evals)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["digits", "charlm"])
    ap.add_argument("--k", type=int, default=32, help="trials per stacked model")
    ap.add_argument("--one", type=int, default=4, help="trials trained one at a time per block")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0, help="T (default: the task's quick T)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    from proofs_checks.practice.stacked import eval_steps
    from proofs_checks.practice.tasks import BUILTIN

    print(f"load average before: {os.getloadavg()}")
    for name in a.tasks:
        task = BUILTIN[name]
        T = a.steps or task.steps_for(True)
        sp = task.splits(0)
        evals = eval_steps(T, task.evals) | set(task.checkpoint_steps(T))
        one, many = [], []
        for b in range(a.blocks + 1):  # the first block warms up (allocations, vmap tracing)
            for side in ("one", "many") if b % 2 else ("many", "one"):
                t0 = time.perf_counter()
                if side == "one":
                    for s in range(a.one):
                        plain_loop(task, sp, s, T, evals)
                    rate = a.one / (time.perf_counter() - t0)
                else:
                    stacked(task, sp, a.k, T)
                    rate = a.k / (time.perf_counter() - t0)
                if b:
                    (one if side == "one" else many).append(rate)
        r = statistics.median(m / o for m, o in zip(many, one))
        print(
            f"{name} (T={T}): one at a time {statistics.median(one):.2f} trainings/s, stacked K={a.k} "
            f"{statistics.median(many):.2f} trainings/s: {r:.2f}x (median of {a.blocks} interleaved blocks, "
            f"{a.threads} thread(s))"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
