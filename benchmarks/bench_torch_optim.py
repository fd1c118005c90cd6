"""One optimizer step on a transformer-like parameter list (float32). Default list (CPU): 16 matrices
512x512, 4 of 512x2048, 30 vectors of 512 (about 8.4M values); ``--scale K`` multiplies the matrix
count by K (K = 12 gives about 10^8 values, the GPU target). Contenders, timed interleaved in one run
(median of the repeats; on CUDA each timing is bracketed by ``torch.cuda.synchronize``):

* ``lptheory.torch.StaceyPP`` on each of its three paths: single-tensor (eager), multi-tensor
  (``foreach=True``, eager) and ``compiled=True`` (inductor; its one-time compilation is timed apart and
  printed as the warm-up cost),
* ``torch.optim.AdamW(foreach=True)`` (and ``AdamW(fused=True)`` where torch supports it),
* a faithful transcription of the authors' Stacey(p,p) loop (per-parameter tensor ops, a fresh
  allocation for z every step, eps inside the power), kept as the baseline.

Targets (issue 8): StaceyPP <= 1.0x AdamW(foreach) and <= 0.5x the authors' loop; the ratios are
printed for every StaceyPP path.

    python benchmarks/bench_torch_optim.py [--repeats 15] [--p 3] [--device cpu|cuda] [--scale 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def params(device="cpu", scale=1):
    g = torch.Generator(device=device).manual_seed(0)
    shapes = [(512, 512)] * (16 * scale) + [(512, 2048)] * (4 * scale) + [(512,)] * 30
    ps = [torch.nn.Parameter(torch.randn(s, generator=g, device=device)) for s in shapes]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g, device=device)
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
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled path")
    args = ap.parse_args(argv)
    from lptheory.torch import StaceyPP

    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    kw = dict(lr=1e-3, p=args.p, eps_mode="official")
    builders = {
        "StaceyPP single-tensor": lambda ps: StaceyPP(ps, foreach=False, **kw).step,
        "StaceyPP foreach": lambda ps: StaceyPP(ps, foreach=True, **kw).step,
    }
    if not args.no_compile:
        builders["StaceyPP compiled"] = lambda ps: StaceyPP(ps, compiled=True, **kw).step
    builders["AdamW(foreach=True)"] = lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=True).step
    if dev.type == "cuda":
        builders["AdamW(fused=True)"] = lambda ps: torch.optim.AdamW(ps, lr=1e-3, fused=True).step
    builders["authors' loop"] = lambda ps: AuthorsLoop(ps, q=args.p).step
    contenders, warm = {}, {}
    n = 0
    for name, build in builders.items():
        ps = params(dev, args.scale)
        n = sum(p.numel() for p in ps)
        f = contenders[name] = build(ps)
        sync()
        t0 = time.perf_counter()
        f()  # first step: lazy state (and compilation for the compiled path)
        sync()
        warm[name] = time.perf_counter() - t0
    times = {k: [] for k in contenders}
    for _ in range(args.repeats):
        for k, f in contenders.items():
            sync()
            t0 = time.perf_counter()
            f()
            sync()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"{n / 1e6:.1f}M float32 values, torch {torch.__version__}, {name}, p = {args.p}, {args.repeats} repeats")
    for k, v in med.items():
        print(f"{k:<24} {v:9.2f} ms   (first step {warm[k]:6.2f} s)")
    for k in med:
        if not k.startswith("StaceyPP"):
            continue
        a, b = med[k] / med["AdamW(foreach=True)"], med[k] / med["authors' loop"]
        print(
            f"{k:<24} / AdamW(foreach) = {a:5.2f}x (target <= 1.0x: {'met' if a <= 1.0 else 'NOT met'});  "
            f"/ authors' loop = {b:5.2f}x (target <= 0.5x: {'met' if b <= 0.5 else 'NOT met'})"
        )
        if "AdamW(fused=True)" in med:
            print(f"{k:<24} / AdamW(fused)   = {med[k] / med['AdamW(fused=True)']:5.2f}x")


if __name__ == "__main__":
    main()
