"""A training step of the practice pack's models with ``lptheory.torch.StaceyPP`` (p = 3) against
``torch.optim.AdamW`` on the same model in the same run (issue 36, target <= 1.2x), and the geometry probe's
cost as a fraction of the training time.

Models: the charlm transformer (2 layers, d_model 48, context 48, batch 16) and the digits MLP (64-64-10,
batch 32). Each contender trains a copy of the same model on the same batches; blocks of ``--steps`` steps are
interleaved (the order alternating) and the median over ``--blocks`` blocks is reported, for the whole
training step (forward, backward, optimizer) and for the optimizer step alone. StaceyPP is timed on its
default path and with ``fused=True``. The probe: one probe point (per-sample gradients of the probe set by
``torch.func.vmap(grad)``, sigma_i, G_p and ||grad f||_{p*} for five p) against one training step, and the
probe's share of a quick charlm run (five probe points over its 80 steps), as :func:`probe_run` measures it.

    python benchmarks/bench_practice_step.py [--blocks 15] [--steps 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch


def _contenders(model):
    from lptheory import torch as lpt

    kw = dict(lr=1e-2, p=3.0, alpha=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
    return {
        "AdamW": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.05),
        "StaceyPP p=3": lambda m: lpt.StaceyPP(m.parameters(), **kw),
        "StaceyPP p=3 fused": lambda m: lpt.StaceyPP(m.parameters(), fused=True, **kw),
    }


def bench(name, model, batches, blocks, steps):
    from proofs_checks.practice.efficiency import timed_blocks

    makers = _contenders(model)
    models = {k: copy.deepcopy(model) for k in makers}
    opts = {k: makers[k](models[k]) for k in makers}
    # per block, the seconds of the block's steps (proofs_checks.practice.efficiency.timed_blocks), per step
    blocked = timed_blocks(models, opts, [batches[s] for s in range(steps)], blocks)
    times = {k: {part: [v / steps for v in t[part]] for part in ("step", "opt")} for k, t in blocked.items()}
    ref = times["AdamW"]
    print(f"\n{name}: median over {blocks} interleaved blocks of {steps} steps")
    print(f"  {'contender':22s} {'step ms':>9s} {'ratio':>7s} {'opt ms':>9s} {'ratio':>7s}")
    for k, t in times.items():
        st, op = statistics.median(t["step"]), statistics.median(t["opt"])
        r_st = statistics.median(a / b for a, b in zip(t["step"], ref["step"]))
        r_op = statistics.median(a / b for a, b in zip(t["opt"], ref["opt"]))
        print(f"  {k:22s} {1e3 * st:9.3f} {r_st:7.3f} {1e3 * op:9.3f} {r_op:7.3f}")
    return times


def probe_cost(blocks):
    from proofs_checks.practice.probe import batch_grad_bound, dual, loss_of, lp_norm, noise_profile, per_sample_grads
    from proofs_checks.practice.tasks import make_task

    task = make_task("charlm", "quick", 0)
    model = task.model(0)
    opt = _contenders(model)["StaceyPP p=3"](model)
    xs, ys = task.probe_set()
    ps = [2.0, 2.5, 3.0, 4.0, 6.0]
    import numpy as np

    rng = np.random.default_rng(0)
    step_t, probe_t = [], []
    for _ in range(blocks):
        x, y = task.batch(rng)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        task.loss(model, x, y).backward()
        opt.step()
        step_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        g, _ = per_sample_grads(model, loss_of, xs, ys)
        full = g.mean(axis=0)
        noise_profile(g)
        batch_grad_bound(g, task.scale.batch, ps)
        [lp_norm(full, dual(p)) for p in ps]
        probe_t.append(time.perf_counter() - t0)
    st, pr = statistics.median(step_t), statistics.median(probe_t)
    T, points = task.scale.steps, task.scale.evals + 1
    print(f"\nprobe (charlm quick, {xs.shape[0]} samples, d = {g.shape[1]:,}): one probe point {1e3 * pr:.1f} ms, "
          f"one training step {1e3 * st:.2f} ms: one point = {pr / st:.1f} steps; over a run of {T} steps with "
          f"{points} probe points: {points * pr / (T * st):.0%} of the training steps' time")  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from proofs_checks.practice.tasks import MLP, TinyGPT

    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    tok = torch.randint(0, 96, (args.steps, 16, 49), generator=g)
    bench("charlm transformer (d 48, ctx 48, batch 16)", TinyGPT(96, 48, 48),
          [(t[:, :-1], t[:, 1:]) for t in tok], args.blocks, args.steps)  # fmt: skip
    xs = torch.rand(args.steps, 32, 64, generator=g)
    ys = torch.randint(0, 10, (args.steps, 32), generator=g)
    bench("digits MLP (64-64-10, batch 32)", MLP(64), list(zip(xs, ys)), args.blocks, args.steps)
    probe_cost(args.blocks)


if __name__ == "__main__":
    main()
