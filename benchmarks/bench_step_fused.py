"""The speed of our fused optimizer step on CPU against torch's fused AdamW/Adam (issue 42, item 5: the kernel's
speed, apart from the paper's claim, which the practice pack decides on operation counts).

One parameter vector of d float32 values and its gradient; contenders stepped in interleaved blocks (the order
rotated every block), CPU time per step (``time.process_time``: every thread of the process) and wall time,
medians over blocks, at each d:

* ``torch.optim.AdamW(fused=True)`` (the reference) and ``torch.optim.Adam(fused=True)``;
* ``lptheory.torch.StaceyPP`` and ``StaceyP2`` with ``fused=True`` at p = 3 (the paper's LLM hyper-parameters,
  ``proofs_checks.practice.efficiency.PAPER_LLM``), StaceyP2 at the paper's p = 2.8 (a fractional power), and
  StaceyPP on its default path (``fused=False``: the numba kernel per parameter);
* ``floor``: a numba loop with AdamW's memory traffic (read theta, grad, m, v; write theta, m, v: 28 bytes per
  parameter) and a few multiply-adds, the memory-bound floor of any two-buffer step.

    python benchmarks/bench_step_fused.py [--sizes 1e5 1e6 1e7] [--blocks 11] [--threads 1] [--json FILE]

Results: ``benchmarks/RESULTS_step_fused.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def floor_kernel():
    import numba

    @numba.njit(nogil=True, cache=True)
    def floor(theta, grad, m, v, a, b, c):
        for i in range(theta.shape[0]):
            g = grad[i]
            mi = a * m[i] + b * g
            vi = a * v[i] + b * g * g
            m[i] = mi
            v[i] = vi
            theta[i] = theta[i] - c * (mi + vi)

    return floor


class Floor:
    """The floor contender: a ``step()`` running :func:`floor_kernel` on numpy views of the tensors."""

    def __init__(self, p):
        import torch

        self.k = floor_kernel()
        self.th = p.detach().numpy()
        self.g = p.grad.numpy()
        self.m = torch.zeros_like(p).numpy()
        self.v = torch.zeros_like(p).numpy()

    def step(self):
        self.k(self.th, self.g, self.m, self.v, 0.9, 0.1, 1e-6)


def contenders(d: int):
    import torch

    from lptheory import torch as lpt
    from proofs_checks.practice.efficiency import PAPER_LLM, _vector

    def vec():
        return _vector(d, 0)

    def stacey(cls, name, fused, **over):
        h = {**PAPER_LLM[name], **over}
        p = vec()
        return cls(
            [p],
            lr=h["lr"],
            p=h["p"],
            alpha=h["alpha"],
            tau=h["tau"],
            betas=(h["beta1"], h["beta2"]),
            eps=h["eps"],
            weight_decay=h["weight_decay"],
            fused=fused,
        )

    def adam(cls, name):
        h = PAPER_LLM[name]
        return cls(
            [vec()],
            lr=h["lr"],
            betas=(h["beta1"], h["beta2"]),
            eps=h["eps"],
            weight_decay=h["weight_decay"],
            fused=True,
        )

    return {
        "AdamW(fused=True)": adam(torch.optim.AdamW, "adamw"),
        "Adam(fused=True)": adam(torch.optim.Adam, "adam"),
        "StaceyPP p=3 fused": stacey(lpt.StaceyPP, "stacey-pp", True),
        "StaceyP2 p=3 fused": stacey(lpt.StaceyP2, "stacey-p2", True),
        "StaceyP2 p=2.8 fused": stacey(lpt.StaceyP2, "stacey-p2", True, p=2.8),
        "StaceyPP p=3 default": stacey(lpt.StaceyPP, "stacey-pp", False),
        "floor (28 B/param)": Floor(vec()),
    }


def run(sizes, blocks: int, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    os.environ["LPTHEORY_THREADS"] = str(threads)
    out = {"threads": threads, "blocks": blocks, "torch": torch.__version__, "sizes": {}}
    for d in sizes:
        opts = contenders(d)
        for o in opts.values():
            o.step()
        t0 = time.process_time()
        for _ in range(10):
            opts["AdamW(fused=True)"].step()
        steps = max(3, int(0.02 / max((time.process_time() - t0) / 10, 1e-7)))
        names = list(opts)
        rows = {n: {"cpu": [], "wall": []} for n in names}
        for b in range(blocks + 1):
            names = names[1:] + names[:1]
            for n in names:
                o = opts[n]
                c0, w0 = time.process_time(), time.perf_counter()
                for _ in range(steps):
                    o.step()
                c1, w1 = time.process_time(), time.perf_counter()
                if b:
                    rows[n]["cpu"].append((c1 - c0) / steps)
                    rows[n]["wall"].append((w1 - w0) / steps)
        ref = statistics.median(rows["AdamW(fused=True)"]["cpu"])
        res = {}
        for n, r in rows.items():
            med = statistics.median(r["cpu"])
            res[n] = {"cpu_ms": 1e3 * med, "wall_ms": 1e3 * statistics.median(r["wall"]), "ratio": med / ref}
        out["sizes"][str(d)] = {"steps_per_block": steps, "rows": res}
        print(f"d = {d:.0e} ({steps} steps per block, {threads} thread(s))", flush=True)
        for n, r in res.items():
            print(
                f"  {n:24s} {r['cpu_ms']:9.3f} ms CPU  {r['wall_ms']:9.3f} ms wall  {r['ratio']:.2f}x AdamW", flush=True
            )
        del opts
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    ap.add_argument("--blocks", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}", flush=True)
    res = run([int(s) for s in a.sizes], a.blocks, a.threads)
    res["load_after"] = os.getloadavg()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
