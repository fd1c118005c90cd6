"""The optimizer step inside a training loop (CPU): an MLP 1024-2048-2048-10 (6.3M float32 parameters), a batch
of 128, ``zero_grad()``, forward, cross-entropy, ``backward()``, then the step. Unlike
``bench_torch_optim.py`` (steps back to back on fixed gradients), each step here comes right after a
backward pass, as in training: torch's OpenMP threads are awake (busy-waiting) when it starts, and the new
gradients are partly in cache.

Contenders, interleaved (one iteration of each per round, same model and data, ``--rounds`` rounds, the first
dropped), median step time and median iteration time:

* ``lptheory.torch.StaceyPP(fused=True)``, p = 3, its split ranges on torch's OpenMP team (the default);
* the same with ``LPTHEORY_OMP=0`` (lptheory's own thread pool);
* ``torch.optim.AdamW(fused=True)``.

    python benchmarks/bench_torch_loop.py [--rounds 40] [--threads N] [--p 3] [--keep-grads]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch_bench


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 2048),
        torch.nn.ReLU(),
        torch.nn.Linear(2048, 2048),
        torch.nn.ReLU(),
        torch.nn.Linear(2048, 10),
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--p", type=float, default=3.0)
    ap.add_argument("--keep-grads", action="store_true", help="zero_grad(set_to_none=False): the same grad tensors")
    args = torch_bench.parse(ap, argv, "rounds", 5)
    from lptheory.torch import StaceyPP

    kw = dict(lr=1e-3, p=args.p, fused=True)
    models = {name: model() for name in ("StaceyPP fused", "fused, own pool", "AdamW(fused=True)")}
    opts = {
        "StaceyPP fused": StaceyPP(models["StaceyPP fused"].parameters(), **kw),
        "fused, own pool": StaceyPP(models["fused, own pool"].parameters(), **kw),
        "AdamW(fused=True)": torch.optim.AdamW(models["AdamW(fused=True)"].parameters(), lr=1e-3, fused=True),
    }
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(128, 1024, generator=g), torch.randint(0, 10, (128,), generator=g)
    step = {k: [] for k in models}
    whole = {k: [] for k in models}
    before = os.environ.get("LPTHEORY_OMP")
    try:
        for r in range(args.rounds):
            for k, m in models.items():
                os.environ["LPTHEORY_OMP"] = "0" if k == "fused, own pool" else "1"
                opt = opts[k]
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=not args.keep_grads)
                torch.nn.functional.cross_entropy(m(x), y).backward()
                t1 = time.perf_counter()
                opt.step()
                t2 = time.perf_counter()
                if r:
                    step[k].append(t2 - t1)
                    whole[k].append(t2 - t0)
    finally:
        if before is None:
            os.environ.pop("LPTHEORY_OMP", None)
        else:
            os.environ["LPTHEORY_OMP"] = before
    n = sum(p.numel() for p in models["StaceyPP fused"].parameters())
    print(
        f"{n / 1e6:.1f}M float32 parameters, torch {torch.__version__}, {torch.get_num_threads()} torch threads, "
        f"p = {args.p}, {'same' if args.keep_grads else 'new'} gradient tensors, median of {args.rounds - 1} "
        f"interleaved rounds, load average {torch_bench.load_average()}"
    )
    med = {k: statistics.median(v) for k, v in step.items()}
    for k in models:
        print(f"  {k:<20} step {med[k] * 1e3:7.2f} ms   iteration {statistics.median(whole[k]) * 1e3:7.2f} ms")
    base = med["AdamW(fused=True)"]
    for k in ("StaceyPP fused", "fused, own pool"):
        r = sorted(a / b for a, b in zip(step[k], step["AdamW(fused=True)"]))
        print(f"  {k} / AdamW(fused): {med[k] / base:.2f}x (per round median {r[len(r) // 2]:.2f}x)")


if __name__ == "__main__":
    main()
