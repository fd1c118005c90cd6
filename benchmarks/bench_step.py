"""One optimizer step on a (64, 100000) float64 batch: StaceyPP against the project's AdamW and
against a straight numpy transcription of Alg. 2 (the baseline, kept here).

Ratios are measured in one run, interleaving the contenders, and the median of the repeats is used.
Targets (issue "Foundation"): StaceyPP at least 2x faster than the transcription at p = 2.7 and 3;
at most 2.0x the AdamW step at p = 2.7 and 1.2x at p = 3.

    python benchmarks/bench_step.py [--repeats 15] [--shape 64 100000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def transcription_step(theta, g, z, m, *, p, eta, alpha, tau, beta1, beta2, eps, lam):
    """Alg. 2 lines 3-8, as plainly as numpy allows (fresh arrays, numpy.power)."""
    c = beta1 * m + (1 - beta1) * g
    y = theta - eta * (c / (np.abs(c) ** ((p - 2) / (p - 1)) + eps))
    w = np.abs(z) ** (p - 2) * z - alpha * c
    z = w / (np.abs(w) ** ((p - 2) / (p - 1)) + eps)
    theta = tau * z + (1 - tau) * y - eta * lam * theta
    m = beta2 * m + (1 - beta2) * g
    return theta, z, m


def plain_adamw_step(theta, g, m, v, t, *, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=1e-2):
    """AdamW as a plain whole-array numpy step (context only: the targets use the project's AdamW)."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    theta = theta * (1 - lr * wd) - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return theta, m, v


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--shape", type=int, nargs=2, default=[64, 100_000])
    ap.add_argument("--threads", type=int, default=None, help="LPTHEORY_THREADS for the engine")
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["LPTHEORY_THREADS"] = str(args.threads)
    from lptheory import _engine
    from lptheory.optimizers import AdamW, StaceyPP

    rng = np.random.default_rng(np.random.SeedSequence(0))
    shape = tuple(args.shape)
    theta0 = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    hp = dict(lr=1e-3, alpha=1e-3, tau=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)
    print(f"shape {shape} float64, engine threads {_engine.threads()}, repeats {args.repeats}")
    print(
        f"{'p':>5} {'stacey ms':>10} {'adamw ms':>9} {'transcr ms':>11} {'vs adamw':>9} {'speedup':>8} "
        f"{'plain-adamw ms':>15}  targets"
    )
    targets = {2.7: 2.0, 3.0: 1.2}
    ok = True
    for p, tgt in targets.items():
        st = StaceyPP(p=p, **hp)
        ad = AdamW(lr=1e-3, weight_decay=1e-2)
        ts, ta, tt = [], [], []
        th_s, s_s = theta0.copy(), st.init(theta0)
        th_a, s_a = theta0.copy(), ad.init(theta0)
        tr = (theta0.copy(), theta0.copy(), np.zeros(shape))
        pa = (theta0.copy(), np.zeros(shape), np.zeros(shape))
        tp = []
        for r in range(args.repeats + 2):
            t0 = time.perf_counter()
            th_s, s_s = st.step(th_s, g, s_s, donate=True)
            t1 = time.perf_counter()
            th_a, s_a = ad.step(th_a, g, s_a, donate=True)
            t2 = time.perf_counter()
            tr = transcription_step(
                *tr[:1], g, *tr[1:], p=p, eta=1e-3, alpha=1e-3, tau=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, lam=1e-2
            )
            t3 = time.perf_counter()
            pa = plain_adamw_step(pa[0], g, pa[1], pa[2], r + 1)
            t4 = time.perf_counter()
            if r >= 2:  # warm-up
                tp.append(t4 - t3)
                ts.append(t1 - t0)
                ta.append(t2 - t1)
                tt.append(t3 - t2)
        ms, ma, mt, mp = (1e3 * statistics.median(x) for x in (ts, ta, tt, tp))
        ra, sp = ms / ma, mt / ms
        good = ra <= tgt and sp >= 2.0
        ok &= good
        print(
            f"{p:>5} {ms:>10.1f} {ma:>9.1f} {mt:>11.1f} {ra:>8.2f}x {sp:>7.2f}x {mp:>15.1f}  "
            f"<= {tgt}x AdamW, >= 2x transcription: {'met' if good else 'NOT met'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
