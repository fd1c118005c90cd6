"""End-to-end throughput of ``simulate``: StaceyPP at p = 3 on a separable problem with Rademacher
noise, R = 64, d = 10^4, T = 1000, metrics every 10 steps (issue 15's target: >= 1.2e8 coordinate-steps per
second on the 2-core machine; the first issue's 3e7 is printed too), best of ``--repeats`` runs after a
warm-up, against the floor kernel (issue 25: >= 25% of it, measured in the same run; the best runs and the
median of the interleaved pairs, in wall and in CPU time), with the pool submissions per step and a breakdown
of one thread's part (the multi-step kernel, the recorded metrics; the step-by-step oracle and optimizer
step for comparison), measured in the same run.

    python benchmarks/bench_simulate.py [--steps 1000] [--replicates 64] [--d 10000] [--repeats 3]

``--backend torch [--device cuda] [--dtype float32]`` runs the same simulation on the torch backend
(problem, noise, optimizer and metrics on the device) and prints its throughput beside the numpy
backend's, measured in the same run (``--no-numpy`` skips numpy, e.g. at R d = 10^8 on a GPU:
``--backend torch --device cuda --replicates 10000 --d 10000 --steps 200 --no-numpy``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _floor(R, d, nthreads):
    """The step's memory traffic with nothing else, for the same R and d: one fused numba pass per step
    per thread (a single thread-pool submission each) that reads theta, the gradient buffer and the two
    state arrays and writes theta, the gradient buffer and the state (the reads and writes a simulator step
    must make at least: gradient into its buffer, noise added, optimizer update), with arithmetic kept
    trivial. Returns ``run(T) -> seconds`` for T steps (issue 25's floor)."""
    import numba

    from lptheory import parallel

    @numba.njit(nogil=True)
    def k(th, g, z, m):
        for i in range(th.size):
            gi = 2.0 * th[i] + g[i] * 1e-3
            mi = 0.9 * m[i] + 0.1 * gi
            zi = z[i] - 1e-3 * mi
            th[i] = 0.999 * th[i] + 1e-3 * zi
            g[i] = gi
            z[i] = zi
            m[i] = mi

    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(R * d) * 1e-3 for _ in range(4)]
    per = -(-R * d // nthreads)
    pool = parallel.get_pool(nthreads) if nthreads > 1 else None
    parts = [[a[lo : lo + per] for a in arrs] for lo in range(0, R * d, per)]
    k(*[a[:16] for a in arrs])

    def run(T):
        t0 = time.perf_counter()
        for _t in range(T):
            if pool is None:
                k(*arrs)
            else:
                for f in [pool.submit(k, *pa) for pa in parts]:
                    f.result()
        return time.perf_counter() - t0

    return run


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--replicates", type=int, default=64)
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--record-every", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3, help="runs of the simulation; the best is reported")
    ap.add_argument("--backend", default="numpy", choices=["numpy", "torch"])
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtype", default=None, choices=["float64", "float32"])
    ap.add_argument("--no-numpy", action="store_true", help="with --backend torch: skip the numpy run")
    args = ap.parse_args(argv)
    from lptheory.optimizers import StaceyPP
    from lptheory.simulate import replicate_generators, simulate
    from synthetic.noise import Rademacher
    from synthetic.oracle import GradientOracle
    from synthetic.problems import SeparableNonconvex

    R, d, T = args.replicates, args.d, args.steps
    pr = SeparableNonconvex(d=d)
    noise = Rademacher(np.full(d, 0.1))
    orc = GradientOracle(pr, noise, batch=1)
    opt = StaceyPP(p=3.0, lr=1e-3)
    if args.backend == "torch":
        import torch

        dev = torch.device(args.device or "cpu")
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        simulate(opt, pr, orc, 2, R, seed=0, backend="torch", device=dev, dtype=args.dtype)  # warm-up
        sync()
        t0 = time.perf_counter()
        simulate(
            opt, pr, orc, T, R, seed=0, record_every=args.record_every, backend="torch", device=dev, dtype=args.dtype
        )
        sync()
        trate = R * d * T / (time.perf_counter() - t0)
        where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
        print(f"simulate torch ({where}, {args.dtype or 'float64'}): R={R} d={d} T={T}: {trate:.3g} coordinate-steps/s")
        if args.no_numpy:
            return 0
    from lptheory.parallel import threads

    simulate(opt, pr, orc, 3, R, seed=0, record_every=1)  # warm-up: kernels loaded (or compiled) once
    floor_run = _floor(R, d, threads(fused=True))
    floor_run(10)
    # interleaved: each simulation beside a floor run of as many steps, so that both see the same load
    runs, floors, cpus = [], [], []  # cpus: (simulate, floor) process CPU seconds, both threads
    for _ in range(max(1, args.repeats)):
        c0 = time.process_time()
        t0 = time.perf_counter()
        simulate(opt, pr, orc, T, R, seed=0, record_every=args.record_every)
        runs.append(time.perf_counter() - t0)
        c1 = time.process_time()
        floors.append(floor_run(T))
        cpus.append((c1 - c0, time.process_time() - c1))
    total = min(runs)
    rate = R * d * T / total
    if args.backend == "torch":
        print(f"simulate numpy: {rate:.3g} coordinate-steps/s; torch / numpy throughput = {trate / rate:.2f}x")
    # breakdown: one part of the split step (the first thread's rows) on this thread, thread CPU time per
    # step, over a tenth of the steps in record intervals: the multi-step kernel (oracle and the optimizer's
    # fused update, row by row and step after step: lptheory.fast.simfused.run_steps), and the metrics of a
    # recorded step (f, gradient, the two norms) divided by the record interval; then, for comparison, the
    # step-by-step path of the same part: the oracle (gradient and noise in one pass) and the optimizer's
    # step (its kernel counts the non-finite gradient and new parameter entries)
    from lptheory.fast import fused as _fused
    from lptheory.fast import pool as _pool
    from lptheory.fast import simfused as _simfused
    from lptheory.fast import simkernels as _sk
    from lptheory.optimizers import deferred_nonfinite

    every = args.record_every
    k = max(every, (T // 10) // every * every)
    theta = pr.x0(R)
    state = opt.init(theta)
    rngs = replicate_generators(0, R)
    gbuf, mbuf = np.empty_like(theta), np.empty_like(theta)
    rows = -(-R // threads(fused=True))
    part_rngs = rngs[:rows]
    parts = {"oracle + update, fused (per step)": 0.0, f"metrics / {every}": 0.0}
    apart = {"oracle (gradient + noise)": 0.0, "optimizer step (+ checks)": 0.0}
    tt = time.thread_time
    th, gb = theta[:rows], gbuf[:rows]
    sub = {key: (v[:rows] if isinstance(v, np.ndarray) else v) for key, v in state.items()}
    with _pool.inline():
        orc(th[:, :16].copy(), 0, replicate_generators(1, rows), out=np.empty((rows, 16)))  # compiled before timing
        t = 0
        while t < k:
            a = tt()
            pr.f(th, t)
            _sk.dual_and_l2(pr.grad_into(th, t, mbuf[:rows]), 1.5)
            b = tt()
            got = _simfused.run_steps(opt, orc, th, sub, part_rngs, t, t + every)
            c = tt()
            if got is None:
                raise SystemExit("the multi-step kernel does not apply here")
            done, sub = got[0], got[1]
            parts["oracle + update, fused (per step)"] += (c - b) / k
            parts[f"metrics / {every}"] += (b - a) / k
            t += done
        for t in range(k, 2 * k):
            a = tt()
            orc(th, t, part_rngs, out=gb)
            b = tt()
            with deferred_nonfinite(opt), _fused.watch_new_theta():
                _, sub = opt.step(th, gb, sub, donate=True)
            c = tt()
            apart["oracle (gradient + noise)"] += (b - a) / k
            apart["optimizer step (+ checks)"] += (c - b) / k
    import os

    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    print(
        f"simulate: R={R} d={d} T={T}, record every {args.record_every}, {threads(fused=True)} engine thread(s), load "
        f"{' '.join(f'{x:.2f}' for x in load)}: best of {len(runs)} runs {total:.2f} s "
        f"({', '.join(f'{r:.2f}' for r in runs)}), {rate:.3g} coordinate-steps/s"
    )
    print(
        f"  target >= 1.2e8 (issue 15): {'met' if rate >= 1.2e8 else 'NOT met'}; >= 3e7 (first issue): "
        f"{'met' if rate >= 3e7 else 'NOT met'}"
    )
    floor = R * d * T / min(floors)
    pairs = sorted(f / r for r, f in zip(runs, floors))
    verdict = "met" if rate >= 0.25 * floor else "NOT met"
    print(
        f"  floor kernel (the step's reads and writes, one fused pass; runs interleaved with the simulations): "
        f"{floor:.3g} coordinate-steps/s, best of {len(floors)} ({', '.join(f'{x:.2f}' for x in floors)} s); "
        f"simulate / floor = {rate / floor:.1%} (issue 25's target >= 25%: {verdict}); per interleaved pair "
        f"{', '.join(f'{x:.1%}' for x in pairs)} (median {float(np.median(pairs)):.1%})"
    )
    # the same ratio in process CPU time (both threads' work, less sensitive than wall time to other
    # processes taking the cores; a step waiting for a descheduled thread costs wall time, not CPU)
    cpu_pairs = sorted(f / s for s, f in cpus)
    print(
        f"  in CPU time: simulate {1e3 * min(s for s, _ in cpus) / T:.2f} ms/step, floor "
        f"{1e3 * min(f for _, f in cpus) / T:.2f} ms/step (best of each): floor / simulate = "
        f"{min(f for _, f in cpus) / min(s for s, _ in cpus):.1%}; per pair {', '.join(f'{x:.1%}' for x in cpu_pairs)} "
        f"(median {float(np.median(cpu_pairs)):.1%})"
    )
    # thread-pool submissions per step (issue 25 counted 6.6): the split step makes one per extra thread and
    # record interval
    pool = _pool.get_pool(threads(fused=True))
    count = [0]
    real_submit = pool.submit

    def counting_submit(*a, **kw):
        count[0] += 1
        return real_submit(*a, **kw)

    pool.submit = counting_submit
    try:
        tc = max(10, T // 10)
        c0 = time.process_time()
        t0 = time.perf_counter()
        simulate(opt, pr, orc, tc, R, seed=0, record_every=args.record_every)
        wall_c, cpu_c = time.perf_counter() - t0, time.process_time() - c0
    finally:
        del pool.submit
    print(
        f"  {count[0] / tc:.2f} pool submissions per step ({tc} steps, metrics every {args.record_every}); CPU "
        f"{1e3 * cpu_c / tc:.2f} ms/step over {1e3 * wall_c / tc:.2f} ms/step wall in that run"
    )
    per_step = total / T * 1e3
    print(f"  {'whole step (measured run)':<34} {per_step:7.2f} ms/step wall")
    print(f"  one part ({rows} rows, one thread), thread CPU time:")
    for name, v in parts.items():
        print(f"    {name:<34} {1e3 * v:7.3f} ms/step")
    print(f"    {'sum':<34} {1e3 * sum(parts.values()):7.3f} ms/step")
    print("  the same part step by step (the path of oracles and optimizers without a multi-step kernel):")
    for name, v in apart.items():
        print(f"    {name:<34} {1e3 * v:7.3f} ms/step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
