"""One Muon step on the transformer-like parameter list of ``bench_torch_optim.py`` (CPU, float32): its 20
matrices (16 of 512x512, 2 of 512x2048, 2 of 2048x512; ``torch.optim.Muon`` takes only matrices),
``lptheory.torch.Muon`` against ``torch.optim.Muon`` with the same hyper-parameters and the same
Newton-Schulz steps (5 quintic steps, (3.4445, -4.7750, 2.0315)), timed interleaved in one run,
minimum of the repeats (>= 9). ``torch.optim.Muon`` runs Newton-Schulz in bfloat16; the matching
contender is ``lptheory Muon (ns bf16)`` (``ns_dtype="bfloat16"``); ``lptheory Muon (ns fp32)``, the
toolkit's default (the parameter's dtype), is reported too.

Target (issue 26): lptheory Muon (same Newton-Schulz steps and dtype) <= 1.2x torch.optim.Muon.

    python benchmarks/bench_muon.py [--repeats 9] [--threads N] [--scale K]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch_bench


def params(scale=1):
    g = torch.Generator().manual_seed(0)
    shapes = [(512, 512)] * (16 * scale) + [(512, 2048)] * (2 * scale) + [(2048, 512)] * (2 * scale)
    ps = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g)
    return ps


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--scale", type=int, default=1)
    args = torch_bench.parse(ap, argv, "repeats", 9)
    from lptheory.torch import Muon

    kw = dict(lr=0.02, weight_decay=0.1, momentum=0.95, nesterov=True, ns_steps=5)
    builders = {
        "torch.optim.Muon": lambda ps: torch.optim.Muon(ps, **kw).step,
        "lptheory Muon (ns bf16)": lambda ps: Muon(ps, ns_dtype="bfloat16", **kw).step,
        "lptheory Muon (ns fp32)": lambda ps: Muon(ps, **kw).step,
    }
    steps, warm, n = {}, {}, 0
    for name, build in builders.items():
        ps = params(args.scale)
        n = sum(p.numel() for p in ps)
        f = steps[name] = build(ps)
        t0 = time.perf_counter()
        f()
        warm[name] = time.perf_counter() - t0
    times = {k: [] for k in steps}
    for _ in range(args.repeats):
        for k, f in steps.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    best = {k: min(v) * 1e3 for k, v in times.items()}
    # paired ratios: each repeat times the contenders back to back, so a drift in the machine's load
    # (a shared machine) cancels in the ratio of the same repeat; the median of those is reported too
    paired = {k: sorted(a / b for a, b in zip(v, times["torch.optim.Muon"])) for k, v in times.items()}
    med = {k: v[len(v) // 2] for k, v in paired.items()}
    torch_bench.print_best(
        f"{n / 1e6:.1f}M float32 values in {len(params(args.scale))} matrices, torch {torch.__version__}, cpu, "
        f"{torch.get_num_threads()} torch threads, min of {args.repeats} interleaved repeats",
        best,
        warm,
        26,
        1,
    )
    ref = best["torch.optim.Muon"]
    r_bf = best["lptheory Muon (ns bf16)"] / ref
    r_fp = best["lptheory Muon (ns fp32)"] / ref
    m_bf, m_fp = med["lptheory Muon (ns bf16)"], med["lptheory Muon (ns fp32)"]
    ok = "met" if r_bf <= 1.2 else "NOT met"
    print(f"  ratio (ns bf16) / torch.optim.Muon = {r_bf:.3f} (of minima), {m_bf:.3f} (median of paired)   "
          f"target <= 1.2: {ok}")  # fmt: skip
    print(f"  ratio (ns fp32) / torch.optim.Muon = {r_fp:.3f} (of minima), {m_fp:.3f} (median of paired)   "
          "(reported; a different Newton-Schulz dtype)")  # fmt: skip


if __name__ == "__main__":
    main()
