"""Optimizer steps at 1e6-1e9 parameters on a GPU (issue 46, its GPU part): the time of one step and the fraction
of the HBM bandwidth it reaches, under a hard time budget.

Contenders, each on its own parameter set (float32, one flat vector of d values and its gradient; Muon: square
matrices of side ``min(4096, isqrt(d))``, as many as make about d values):

* ``torch.optim.AdamW(fused=True)``, the reference of the element-wise optimizers;
* ``lptheory.torch.StaceyPP`` and ``StaceyP2`` (p = 3, the paper's LLM hyper-parameters), ``LpDescent`` (p = 3) and
  ``Lion``, all ``fused=True`` (on CUDA one ``torch.compile``-d pass per bucket; on CPU the numba kernel), and
  StaceyPP with ``foreach=True`` (the default path on CUDA: ``torch._foreach_*`` calls, no compilation);
* ``torch.optim.Muon`` (if this torch has it) against ``lptheory.torch_spectral.Muon`` with the same
  hyper-parameters and Newton-Schulz in bfloat16 (``ns_dtype="bfloat16"``, torch's choice).

Timing: on CUDA, CUDA events around each step after warm-up steps (the first step, compilation included, is timed
apart with ``perf_counter``), the median (and the 10th/90th percentiles) of the repeats; on CPU, ``perf_counter``.

Bytes moved per parameter (float32), derived from each optimizer's buffers: reads of theta, the gradient and
every per-coordinate state buffer, writes of theta and every buffer, 4 bytes each: ``4 (2 + k) + 4 (1 + k)`` for
``k`` buffers (AdamW, StaceyPP, StaceyP2: k = 2, 28 bytes; Lion: k = 1, 20; LpDescent: k = 0, 12; Muon's
element-wise part: k = 1, 20, plus its Newton-Schulz matrix products, reported as TFLOP/s). The fraction of HBM
bandwidth is ``bytes * d / time / peak``; the peak is an assumption, 4.8 TB/s for the H200 (NVIDIA's data sheet,
HBM3e; ``--peak-tbs`` to change), stated in the output. Buffers are counted on the optimizer's state after the
first step (tensors the size of the parameter), so a path that keeps extra state shows it.

Sizes run largest first (the bandwidth-bound ones; a budget cut drops the small, launch-bound ones; the first
compiled step of each lptheory contender, its compilation, falls on the largest size). Budget: ``--budget-s``
(default 300) bounds the whole run: a contender is skipped (and listed with the reason) when
its estimated time (a compilation reserve for a first compiled step; else the previous size's step scaled by d)
does not fit in what is left, and an alarm 5 s before the budget stops whatever runs; the results so far are
written after every measurement. Progress lines go to stdout (flushed).

    python benchmarks/bench_gpu_steps.py [--device cuda] [--sizes 1e6 1e7 1e8 1e9] [--budget-s 300]
        [--quick] [--out DIR] [--repeats 20] [--peak-tbs 4.8] [--threads N]
    python benchmarks/bench_gpu_steps.py --device cpu --sizes 1e4 1e5 --quick --threads 1   # the CPU smoke run

Output: ``DIR/gpu_steps.json`` and ``DIR/gpu_steps.md`` (``--out``; default ``$OUT`` if set, else ./bench_out).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

PAPER = {  # the paper's LLM table (proofs_checks.practice.efficiency.PAPER_LLM), p = 3 for both Stacey variants
    "stacey-pp": {
        "lr": 0.01,
        "p": 3.0,
        "alpha": 0.1,
        "tau": 0.001,
        "betas": (0.9, 0.99),
        "eps": 1e-8,
        "weight_decay": 0.01,
    },
    "stacey-p2": {
        "lr": 0.01,
        "p": 3.0,
        "alpha": 0.1,
        "tau": 0.001,
        "betas": (0.9, 0.99),
        "eps": 1e-8,
        "weight_decay": 0.0005,
    },
    "adamw": {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.05},
    "lion": {"lr": 0.05, "betas": (0.9, 0.999), "weight_decay": 0.01},
    "lp-descent": {"lr": 0.01, "p": 3.0},
    "muon": {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True, "ns_steps": 5},
}
COMPILE_RESERVE_S = 75.0  # a first compiled step (torch.compile on CUDA) is not started with less time left
FINAL_RESERVE_S = 8.0  # kept for writing the results


class BudgetExceeded(Exception):
    pass


def _alarm(signum, frame):
    raise BudgetExceeded("the time budget ran out")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -----------------------------------------------------------------------------------------------------------
# contenders


def vector(d: int, device, seed: int = 0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    p = torch.nn.Parameter(torch.randn(d, generator=g, device=device, dtype=torch.float32).mul_(0.1))
    p.grad = torch.randn(d, generator=g, device=device, dtype=torch.float32).mul_(0.01)
    return [p]


def matrices(d: int, device, seed: int = 0):
    import torch

    m = max(2, min(4096, math.isqrt(d)))
    n = max(1, round(d / (m * m)))
    g = torch.Generator(device=device).manual_seed(seed)
    ps = []
    for _ in range(n):
        p = torch.nn.Parameter(torch.randn(m, m, generator=g, device=device).mul_(0.02))
        p.grad = torch.randn(m, m, generator=g, device=device).mul_(0.01)
        ps.append(p)
    return ps


def elementwise() -> dict:
    """name -> (kind, build(params) -> optimizer, first-step compiles on CUDA)."""
    import torch

    from lptheory import torch as lpt

    h = PAPER
    out = {
        "AdamW(fused=True)": (lambda ps: torch.optim.AdamW(ps, **h["adamw"], fused=True), False),
        "StaceyPP fused": (lambda ps: lpt.StaceyPP(ps, **h["stacey-pp"], fused=True), True),
        "StaceyP2 fused": (lambda ps: lpt.StaceyP2(ps, **h["stacey-p2"], fused=True), True),
        "LpDescent fused": (lambda ps: lpt.LpDescent(ps, **h["lp-descent"], fused=True), True),
        "Lion fused": (lambda ps: lpt.Lion(ps, **h["lion"], fused=True), True),
        "StaceyPP foreach": (lambda ps: lpt.StaceyPP(ps, **h["stacey-pp"], foreach=True), False),
    }
    return out


def muons() -> dict:
    import torch

    from lptheory.torch_spectral import Muon

    out = {}
    if hasattr(torch.optim, "Muon"):
        out["torch.optim.Muon"] = (lambda ps: torch.optim.Muon(ps, **PAPER["muon"]), False)
    out["lptheory Muon (ns bf16)"] = (lambda ps: Muon(ps, ns_dtype="bfloat16", **PAPER["muon"]), False)
    return out


def per_coordinate_buffers(opt, ps) -> int:
    import torch

    k = 0
    for v in opt.state.get(ps[0], {}).values():
        if torch.is_tensor(v) and v.numel() == ps[0].numel():
            k += 1
    return k


def ns_flops(ps, steps: int = 5) -> float:
    """Multiply-add flops (2 per multiply-add) of ``steps`` quintic Newton-Schulz iterations on each matrix (m <= n):
    A = X X^T (2 m^2 n), A A (2 m^3), B X (2 m^2 n)."""
    tot = 0.0
    for p in ps:
        m, n = sorted(p.shape[-2:])
        tot += steps * (4.0 * m * m * n + 2.0 * m**3)
    return tot


# -----------------------------------------------------------------------------------------------------------
# timing


class Timer:
    def __init__(self, device):
        import torch

        self.cuda = device.type == "cuda"
        self.torch = torch

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def repeats(self, fn, n: int) -> list:
        """Seconds of each of ``n`` calls of ``fn``."""
        if self.cuda:
            ev = [
                (self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)) for _ in range(n)
            ]
            for a, b in ev:
                a.record()
                fn()
                b.record()
            self.torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in ev]
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out


def fits(d: int, k_total: float, device) -> tuple:
    """(fits, why): whether ``k_total`` float32 arrays of d values fit in the device's free memory (CUDA) or in the
    machine's available memory (CPU, from /proc/meminfo), with 10% kept free."""
    import torch

    need = 4.0 * d * k_total
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
    else:
        free = None
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        free = int(line.split()[1]) * 1024
        except OSError:
            pass
        if free is None:
            return True, "unknown free memory"
    ok = need <= 0.9 * free
    return ok, f"needs about {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"


# -----------------------------------------------------------------------------------------------------------
# the run


def write(out_dir: str, res: dict) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "gpu_steps.json"), "w") as f:
        json.dump(res, f, indent=1)
    lines = [
        f"# Optimizer steps on {res['meta']['device_name']}",
        "",
        f"torch {res['meta']['torch']}, device {res['meta']['device']}, float32; peak bandwidth assumed "
        f"{res['meta']['peak_tbs']:g} TB/s ({res['meta']['peak_source']}); timing: {res['meta']['timing']}; "
        f"budget {res['meta']['budget_s']:g} s, used {res['meta'].get('elapsed_s', 0):.0f} s"
        + (" (stopped by the budget)" if res["meta"].get("stopped") else ""),
        "",
        "| d | optimizer | median ms | p10-p90 ms | first step s | bytes/param | TB/s | fraction of peak "
        "| x reference | TFLOP/s (NS) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["results"]:
        lines.append(
            f"| {r['d']:.0e} | {r['name']} | {r['median_ms']:.3f} | {r['p10_ms']:.3f}-{r['p90_ms']:.3f} | "
            f"{r['first_step_s']:.2f} | {r['bytes_per_param']} | {r['tbs']:.3f} | {r['fraction_of_peak']:.1%} | "
            f"{'-' if r['ratio_to_reference'] is None else format(r['ratio_to_reference'], '.2f')} | "
            f"{'' if r.get('ns_tflops') is None else format(r['ns_tflops'], '.1f')} |"
        )
    if res["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- d = {s['d']:.0e}, {s['name']}: {s['why']}" for s in res["skipped"]]
    if res.get("errors"):
        lines += ["", "Errors:", ""] + [f"- d = {s['d']:.0e}, {s['name']}: {s['error']}" for s in res["errors"]]
    with open(os.path.join(out_dir, "gpu_steps.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run(args) -> dict:
    import torch

    t_start = time.monotonic()
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["LPTHEORY_THREADS"] = str(args.threads)
    deadline = t_start + args.budget_s

    def left():
        return deadline - time.monotonic()

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    res = {
        "meta": {
            "device": str(device),
            "device_name": name,
            "torch": torch.__version__,
            "peak_tbs": args.peak_tbs,
            "peak_source": "assumed: NVIDIA H200 data sheet, 4.8 TB/s HBM3e" if args.peak_tbs == 4.8 else "--peak-tbs",
            "timing": "CUDA events, median of the repeats after warm-up" if device.type == "cuda" else "perf_counter",
            "budget_s": args.budget_s,
            "sizes": [int(s) for s in args.sizes],
            "repeats": args.repeats,
            "warmup": args.warmup,
            "quick": args.quick,
            "threads": torch.get_num_threads(),
        },
        "results": [],
        "skipped": [],
        "errors": [],
    }
    _LAST["res"] = res
    log(f"device {name} ({device}), torch {torch.__version__}, budget {args.budget_s:g} s, sizes {args.sizes}")
    groups = [("elementwise", elementwise(), vector), ("muon", muons(), matrices)]
    compiled_done: set = set()
    last_step: dict = {}  # name -> (d, seconds per step)
    ref_ms: dict = {}
    for d in sorted((int(s) for s in args.sizes), reverse=True):  # largest first: a budget cut drops small ones
        for group, contenders, make in groups:
            for cname, (build, compiles) in contenders.items():
                if left() < FINAL_RESERVE_S:
                    res["skipped"].append({"d": d, "name": cname, "why": "budget exhausted"})
                    continue
                k_total = 2 + 2 + 4  # parameter, gradient, up to two buffers, scratch and flat copies
                ok, why = fits(d, k_total, device)
                if not ok:
                    res["skipped"].append({"d": d, "name": cname, "why": f"does not fit: {why}"})
                    log(f"skip d = {d:.0e} {cname}: does not fit ({why})")
                    continue
                reps = args.repeats if group == "elementwise" else max(3, args.repeats // 4)
                if device.type == "cuda" and compiles and cname not in compiled_done:
                    est = COMPILE_RESERVE_S
                elif cname in last_step:
                    d0, s0 = last_step[cname]
                    est = 2.0 + (reps + args.warmup + 1) * s0 * d / d0
                else:
                    est = 2.0 + (reps + args.warmup + 1) * 28.0 * d / (0.2e12 if device.type == "cuda" else 2e9)
                if est > left() - FINAL_RESERVE_S:
                    res["skipped"].append(
                        {"d": d, "name": cname, "why": f"estimated {est:.0f} s, {left():.0f} s left in the budget"}
                    )
                    log(f"skip d = {d:.0e} {cname}: estimated {est:.0f} s, {left():.0f} s left")
                    continue
                ps = opt = None
                try:
                    ps = make(d, device)
                    n = sum(p.numel() for p in ps)
                    opt = build(ps)
                    timer = Timer(device)
                    timer.sync()
                    t0 = time.perf_counter()
                    opt.step()
                    timer.sync()
                    first = time.perf_counter() - t0
                    if compiles:
                        compiled_done.add(cname)
                    k = per_coordinate_buffers(opt, ps)
                    flops = ns_flops(ps, PAPER["muon"]["ns_steps"]) if group == "muon" else None
                    for _ in range(args.warmup):
                        opt.step()
                    times = timer.repeats(opt.step, reps)
                    if not all(bool(torch.isfinite(p).all()) for p in ps):
                        raise RuntimeError("the parameters went non-finite")
                except BudgetExceeded:
                    raise
                except Exception as exc:  # a contender that fails is recorded, the others still run
                    res["errors"].append({"d": d, "name": cname, "error": f"{type(exc).__name__}: {exc}"[:500]})
                    log(f"error d = {d:.0e} {cname}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                finally:
                    del opt, ps
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
                med = statistics.median(times)
                q = sorted(times)
                bpp = 4 * (2 + k) + 4 * (1 + k)
                row = {
                    "d": n,
                    "size": d,
                    "group": group,
                    "name": cname,
                    "median_ms": 1e3 * med,
                    "p10_ms": 1e3 * q[max(0, int(0.1 * (len(q) - 1)))],
                    "p90_ms": 1e3 * q[int(0.9 * (len(q) - 1))],
                    "repeats": reps,
                    "first_step_s": first,
                    "buffers": k,
                    "bytes_per_param": bpp,
                    "tbs": bpp * n / med / 1e12,
                    "fraction_of_peak": bpp * n / med / (args.peak_tbs * 1e12),
                    "ratio_to_reference": None,
                    "reference": "AdamW(fused=True)" if group == "elementwise" else "torch.optim.Muon",
                }
                if flops is not None:
                    row["ns_tflops"] = flops / med / 1e12
                ref_key = (d, row["reference"])
                if cname == row["reference"]:
                    ref_ms[ref_key] = row["median_ms"]
                if ref_key in ref_ms:
                    row["ratio_to_reference"] = row["median_ms"] / ref_ms[ref_key]
                res["results"].append(row)
                last_step[cname] = (d, med + first / max(1, reps))
                log(
                    f"d = {n:.2e} {cname:26s} median {row['median_ms']:9.3f} ms  first {first:6.2f} s  "
                    f"{row['tbs']:.3f} TB/s ({row['fraction_of_peak']:.1%} of {args.peak_tbs:g})"
                    + (f"  {row['ratio_to_reference']:.2f}x ref" if row["ratio_to_reference"] else "")
                )
                res["meta"]["elapsed_s"] = time.monotonic() - t_start
                write(args.out, res)
    res["meta"]["elapsed_s"] = time.monotonic() - t_start
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8, 1e9])
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-tbs", type=float, default=4.8)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats (7) and warm-up steps (1)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.getcwd(), "bench_out"))
    args = ap.parse_args(argv)
    if args.budget_s <= FINAL_RESERVE_S + 2:
        ap.error(f"--budget-s must exceed {FINAL_RESERVE_S + 2:g}")
    if args.repeats < 1 or args.warmup < 0:
        ap.error("--repeats must be >= 1 and --warmup >= 0")
    if args.quick:
        args.repeats = min(args.repeats, 7)
        args.warmup = min(args.warmup, 1)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(args.budget_s - 5)))
    res = None
    try:
        res = run(args)
    except BudgetExceeded:
        log("stopped by the budget alarm")
        res = _LAST.get("res")
        if res is not None:
            res["meta"]["stopped"] = True
    finally:
        signal.alarm(0)
    if res is None:
        return 1
    write(args.out, res)
    log(f"wrote {os.path.join(args.out, 'gpu_steps.json')} and gpu_steps.md ({len(res['results'])} rows)")
    return 0


_LAST: dict = {}

if __name__ == "__main__":
    sys.exit(main())
