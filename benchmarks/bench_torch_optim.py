"""One optimizer step on a transformer-like parameter list (CPU, float32): 16 matrices 512x512,
4 of 512x2048, 30 vectors of 512 (about 8.4M values). Contenders, timed interleaved in one run
(median of the repeats):

* ``lptheory.torch.StaceyPP`` (the project's optimizer; single-tensor path over the shared rule),
* ``torch.optim.AdamW(foreach=True)``,
* a faithful transcription of the authors' Stacey(p,p) loop (per-parameter tensor ops, a fresh
  allocation for z every step, eps inside the power), kept as the baseline.

Targets (issue 8): StaceyPP <= 1.0x AdamW(foreach) and <= 0.5x the authors' loop.

    python benchmarks/bench_torch_optim.py [--repeats 15] [--p 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def params():
    g = torch.Generator().manual_seed(0)
    shapes = [(512, 512)] * 16 + [(512, 2048)] * 4 + [(512,)] * 30
    ps = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g)
    return ps


class AuthorsLoop:
    """Transcription of the published update (reference/official-code.md, items 1-4), per parameter."""

    def __init__(self, ps, lr=1e-3, alpha=1e-3, tau=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, q=3.0):
        self.ps, self.h = ps, (lr, alpha, tau, b1, b2, eps, wd, q)
        self.z = [p.detach().clone() for p in ps]
        self.m = [torch.zeros_like(p) for p in ps]

    @torch.no_grad()
    def step(self):
        lr, alpha, tau, b1, b2, eps, wd, q = self.h
        for i, p in enumerate(self.ps):
            g = p.grad
            c = b1 * self.m[i] + (1 - b1) * g
            w = torch.abs(self.z[i]) ** (q - 2) * self.z[i] - alpha * c
            self.z[i] = torch.sign(w) * torch.abs(w) ** (1 / (q - 1))  # fresh allocation
            s = c * (torch.abs(c) + eps) ** ((2 - q) / (q - 1))
            p.mul_(1 - tau - lr * wd).add_(tau * self.z[i]).sub_(lr * (1 - tau) * s)
            self.m[i] = b2 * self.m[i] + (1 - b2) * g


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--p", type=float, default=3.0)
    args = ap.parse_args(argv)
    from lptheory.torch import StaceyPP

    contenders = {}
    ps1 = params()
    o1 = StaceyPP(ps1, lr=1e-3, p=args.p, eps_mode="official")
    contenders["lptheory StaceyPP"] = o1.step
    ps2 = params()
    o2 = torch.optim.AdamW(ps2, lr=1e-3, foreach=True)
    contenders["AdamW(foreach=True)"] = o2.step
    ps3 = params()
    o3 = AuthorsLoop(ps3, q=args.p)
    contenders["authors' loop"] = o3.step
    for f in contenders.values():  # warm-up (lazy state)
        f()
    times = {k: [] for k in contenders}
    for _ in range(args.repeats):
        for k, f in contenders.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    n = sum(p.numel() for p in ps1)
    print(f"{n / 1e6:.1f}M float32 values, torch {torch.__version__}, {torch.get_num_threads()} threads, p = {args.p}")
    for k, v in med.items():
        print(f"{k:<22} {v:8.1f} ms")
    a, b = med["lptheory StaceyPP"] / med["AdamW(foreach=True)"], med["lptheory StaceyPP"] / med["authors' loop"]
    print(f"StaceyPP / AdamW(foreach)  = {a:.2f}x (target <= 1.0x: {'met' if a <= 1.0 else 'NOT met'})")
    print(f"StaceyPP / authors' loop   = {b:.2f}x (target <= 0.5x: {'met' if b <= 0.5 else 'NOT met'})")


if __name__ == "__main__":
    main()
