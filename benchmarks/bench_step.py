"""One optimizer step on a (64, 100000) float64 batch, every contender timed in the same run,
interleaved, minimum of the repeats (>= 9):

* the memory floor: a fused numba kernel that reads 4 arrays and writes 3 (theta, grad and two state
  arrays: the traffic of an AdamW or a StaceyPP step), threaded like the fused engine;
* the project's AdamW and StaceyPP (p = 3 and p = 2.7) on the fused engine (the default when numba is
  installed) and on the reference numpy engine (``lptheory.fast.engine.apply``: ~20 chunked passes);
* a plain numpy transcription of Alg. 2 (fresh arrays, the baseline kept from the first issue);
* p = 2.7 on the fused engine's numpy.power path (numpy.power between fused loops on chunks), and the floor
  of the one-pass kernel: the fractional powers that remain (two since StaceyPP keeps its dual state:
  |c|^a of line 4 and |v|^a of line 6; the third, |z|^{p-2}, only where the series of the dual update does
  not apply) as SVML powers (numpy's ``__svml_pow8_ha``) on blocks in L1, plus the memory floor (issue 25's
  target: the p = 2.7 step <= 1.2x that floor);
* small arrays (one replicate, d = 129, as in ``check acceleration``): the time of a whole
  ``step(..., donate=True)`` against the time of its fused kernel alone (the fixed cost per step).

Targets (issue "Fused CPU kernels"): AdamW <= 1.3x the floor; StaceyPP p = 3 <= 1.1x AdamW; StaceyPP
p = 2.7 <= 3.0x AdamW and <= 0.55x the reference engine; issue 25: p = 2.7 <= 1.2x its pow floor.

    python benchmarks/bench_step.py [--repeats 11] [--shape 64 100000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
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


def _floor_kernel():
    import numba

    @numba.njit(nogil=True)
    def k(a, b, c, d):  # in place, as an optimizer step with donated buffers: read a, b, c, d; write a, c, d
        for i in range(a.size):
            y = b[i]
            a[i] = a[i] - 1e-3 * y
            c[i] = 0.9 * c[i] + 0.1 * y
            d[i] = 0.99 * d[i] + 0.01 * y

    return k


def _power_floor(flats, nthreads, pool, chunk=16384):
    """Three numpy.power calls per element (StaceyPP p = 2.7 needs three fractional powers; the fused engine
    runs numpy's on cache-sized chunks), threaded like the engine: the p = 2.7 step's arithmetic floor."""
    src = flats[1]
    n = src.size
    per = -(-n // nthreads)

    def work(lo, hi):
        buf = np.empty(chunk)
        a = np.abs(src[lo:hi])
        for s in range(0, hi - lo, chunk):
            m = min(chunk, hi - lo - s)
            for e in (0.7 / 1.7, 0.7, 0.7 / 1.7):
                np.power(a[s : s + m], e, out=buf[:m])

    def run():
        if pool is None:
            work(0, n)
            return
        for f in [pool.submit(work, lo, min(n, lo + per)) for lo in range(0, n, per)]:
            f.result()

    return run


def _split(nthreads, pool, kernel, arrays, *extra):
    """``kernel(*arrays, *extra)`` as a callable run, the arrays split into ``nthreads`` equal ranges on ``pool``
    (threaded like the engine; one call without a pool)."""
    n = arrays[0].size
    per = -(-n // nthreads)

    def run():
        if pool is None:
            kernel(*arrays, *extra)
            return
        for f in [pool.submit(kernel, *[x[lo : lo + per] for x in arrays], *extra) for lo in range(0, n, per)]:
            f.result()

    return run


def _svml_floor(flats, nthreads, pool, es=(0.7 / 1.7, 0.7, 1.0 / 1.7)):
    """Accurate powers per element (one per exponent of ``es``) with nothing else: numpy's SVML power
    (``__svml_pow8_ha``, what numpy.power runs here) on 512-element blocks of |g| held in L1, threaded like
    the engine. With the memory floor, the p = 2.7 step's floor (the fused kernel computes its powers the
    same way). None where the SVML route is not available."""
    from lptheory.fast import svml as _svml

    if not _svml.available():
        return None
    import numba

    pow_block = _svml._kernels()["float64"]

    @numba.njit(nogil=True)
    def k(src, es):
        buf = np.empty(512)
        out = np.empty(512)
        pad = np.empty(16)
        n = src.size
        for b in range(0, n, 512):
            m = min(512, n - b)
            for i in range(m):
                buf[i] = abs(src[b + i])
            for e in es:
                pow_block(buf, 0, e, out, m, pad)
                buf, out = out, buf

    return _split(nthreads, pool, k, [flats[1]], np.array(es))


def _divider_floor(flats, nthreads, pool, sqrts):
    """The divider's work per element and nothing else: ``sqrts`` correctly rounded square roots and one
    division per element of the step's size, on one 512-element block held in L1 (no memory traffic),
    threaded like the engine. AdamW takes one
    square root and one division per element (``m / (sqrt(v) + eps)``); StaceyPP at p = 3 in paper mode two
    and one (``|c|^{1/2}`` of Alg. 2 line 4, ``|v|^{1/2}`` of line 6, one reciprocal shared by the two
    quotients). On processors whose square roots and divisions share one unit, the ratio of the two floors
    is the smallest p = 3 / AdamW ratio that correctly rounded arithmetic allows once memory is fast."""
    import numba

    @numba.njit(nogil=True, error_model="numpy")  # as the engine's kernels: no ZeroDivisionError branch
    def k(a, b, sqrts):
        x = np.abs(a[:512]) + 0.5  # one block of each input, held in L1 for the whole run
        y = np.abs(b[:512]) + 0.5
        buf = np.empty(512)
        acc = 0.0
        for _ in range(a.size // 512):
            if sqrts == 1:
                for i in range(512):
                    buf[i] = x[i] / (np.sqrt(y[i]) + 1e-8)
            else:
                for i in range(512):
                    buf[i] = 1.0 / ((np.sqrt(x[i]) + 1e-8) * (np.sqrt(y[i]) + 1e-8))
            acc += buf[511]  # keeps each block's work observable
        return acc

    return _split(nthreads, pool, k, flats[:2], sqrts)


def small_arrays(repeats: int, d: int = 129, steps: int = 2000) -> dict:
    """Microseconds per ``step(..., donate=True)`` on a (1, d) float64 array (one replicate, as the
    acceleration check's runs), and per call of the step's fused kernel alone on the same arrays: their
    difference is the step's fixed cost (validation, dispatch, the non-finite check). Thread CPU time,
    min over ``repeats`` runs of ``steps`` steps, interleaved."""
    from lptheory.fast import fused as _fused
    from lptheory.optimizers import AdamW, StaceyPP

    rng = np.random.default_rng(np.random.SeedSequence(1))
    theta0 = rng.standard_normal((1, d))
    g = 1e-3 * rng.standard_normal((1, d))
    opts = {
        "small StaceyPP p=3 eps=0": StaceyPP(p=3.0, eps=0.0, lr=1e-3),
        "small StaceyPP p=2.7": StaceyPP(p=2.7, lr=1e-3),
        "small AdamW": AdamW(lr=1e-3),
    }
    runs = {}
    for name, o in opts.items():
        th, st = theta0.copy(), o.init(theta0)
        for _ in range(3):
            th, st = o.step(th, g, st, donate=True)
        h = o.scalars(st["step"])
        arrays = o.named(th, g, [st[k] for k in o.buffers], [th, *[st[k] for k in o.buffers]])
        flat = {k: a.reshape(-1) for k, a in arrays.items()}
        k = _fused._kernel(o, h, flat, th.dtype)
        scal = [float(h[x]) for x in k.dyn_names]

        def kernel_only(k=k, flat=flat, scal=scal):
            for _ in range(steps):
                _fused._run_range(k, flat, scal, 0, d, _fused.CHUNK)

        box = [th, st]

        def whole(o=o, box=box):
            t, s = box
            for _ in range(steps):
                t, s = o.step(t, g, s, donate=True)
            box[:] = [t, s]

        runs[name] = whole
        runs[name + " (kernel only)"] = kernel_only
    best = {k: float("inf") for k in runs}
    for _ in range(repeats):
        for k, f in runs.items():
            t0 = time.thread_time()
            f()
            best[k] = min(best[k], (time.thread_time() - t0) / steps * 1e6)
    return best


class _OldPath:
    """StaceyPP with numpy.power called between fused loops on 65536-element chunks (the engine before
    the SVML route), for comparison in the same run."""

    def __init__(self, opt):
        self.opt = opt
        self.buffers = opt.buffers

    def init(self, theta):
        return self.opt.init(theta)

    def step(self, th, g, st, donate=False):
        from lptheory.fast import fused as _fused

        _fused.USE_SVML = False
        try:
            return self.opt.step(th, g, st, donate=donate)
        finally:
            _fused.USE_SVML = True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--shape", type=int, nargs=2, default=[64, 100_000])
    ap.add_argument("--threads", type=int, default=None, help="LPTHEORY_THREADS (default: every core)")
    args = ap.parse_args(argv)
    if args.repeats < 9:
        raise SystemExit("--repeats must be >= 9 (min of >= 9 interleaved repeats)")
    if args.threads:
        os.environ["LPTHEORY_THREADS"] = str(args.threads)
    from lptheory import parallel
    from lptheory.fast import engine as _engine
    from lptheory.optimizers import AdamW, StaceyPP

    nthreads = parallel.threads(fused=True)
    rng = np.random.default_rng(np.random.SeedSequence(0))
    shape = tuple(args.shape)
    theta0 = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    hp = dict(lr=1e-3, alpha=1e-3, tau=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)
    contenders = {
        "adamw": AdamW(lr=1e-3, weight_decay=1e-2),
        "stacey p=3": StaceyPP(p=3.0, **hp),
        "stacey p=2.7": StaceyPP(p=2.7, **hp),
        "p=2.7 numpy.power path": _OldPath(StaceyPP(p=2.7, **hp)),
    }
    states = {k: (theta0.copy(), o.init(theta0)) for k, o in contenders.items()}
    ref_states = {
        k: (theta0.copy(), o.init(theta0), [np.empty(shape) for _ in range(1 + len(o.buffers))])
        for k, o in contenders.items()
        if not isinstance(o, _OldPath)
    }
    fa = [theta0.copy(), g, theta0.copy(), theta0.copy()]
    flats = [a.reshape(-1) for a in fa]
    pool = parallel.get_pool(nthreads) if nthreads > 1 else None

    floors = {"floor": _split(nthreads, pool, _floor_kernel(), flats)}
    floors["3 numpy.power"] = _power_floor(flats, nthreads, pool)
    floors["1 sqrt + 1 div (L1)"] = _divider_floor(flats, nthreads, pool, 1)
    floors["2 sqrt + 1 div (L1)"] = _divider_floor(flats, nthreads, pool, 2)
    svml = _svml_floor(flats, nthreads, pool, es=(0.7 / 1.7, 0.7 / 1.7))
    if svml is not None:
        floors["2 SVML powers (L1)"] = svml
        floors["3 SVML powers (L1)"] = _svml_floor(flats, nthreads, pool)
    times = {k: [] for k in [*floors, *contenders, *[f"ref {k}" for k in ref_states], "transcription p=2.7"]}
    tr = (theta0.copy(), theta0.copy(), np.zeros(shape))
    for _ in range(args.repeats + 2):
        for k, run in floors.items():
            t0 = time.perf_counter()
            run()
            times[k].append(time.perf_counter() - t0)
        for k, o in contenders.items():
            th, st = states[k]
            t0 = time.perf_counter()
            th, st = o.step(th, g, st, donate=True)
            times[k].append(time.perf_counter() - t0)
            states[k] = (th, st)
            if isinstance(o, _OldPath):
                continue
            th, st, outs = ref_states[k]
            h = o.scalars(st["step"])
            arrays = o.named(th, g, [st[b] for b in o.buffers], outs)
            t0 = time.perf_counter()
            _engine.apply(type(o).rule, np, h, arrays, o.n_scratch)
            times[f"ref {k}"].append(time.perf_counter() - t0)
            ref_states[k] = (
                outs[0],
                {"step": st["step"] + 1, **dict(zip(o.buffers, outs[1:]))},
                [th, *[st[b] for b in o.buffers]],
            )
        t0 = time.perf_counter()
        tr = transcription_step(
            tr[0], g, tr[1], tr[2], p=2.7, eta=1e-3, alpha=1e-3, tau=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, lam=1e-2
        )
        times["transcription p=2.7"].append(time.perf_counter() - t0)
    best = {k: 1e3 * min(v[2:]) for k, v in times.items()}  # the first two repeats warm up (compilation)
    load = os.getloadavg()
    print(
        f"shape {shape} float64; engine {_engine.engine()}, {nthreads} thread(s); reference engine 1 thread; "
        f"min of {args.repeats} interleaved repeats; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    for k, v in best.items():
        print(f"  {k:<22} {v:8.2f} ms")
    rows = [
        ("AdamW / floor", best["adamw"] / best["floor"], 1.3),
        ("StaceyPP p=3 / AdamW", best["stacey p=3"] / best["adamw"], 1.1),
        ("StaceyPP p=2.7 / AdamW", best["stacey p=2.7"] / best["adamw"], 3.0),
        ("StaceyPP p=2.7 / reference engine", best["stacey p=2.7"] / best["ref stacey p=2.7"], 0.55),
    ]
    ok = True
    for name, val, tgt in rows:
        good = val <= tgt
        ok &= good
        print(f"  {name:<36} {val:6.2f}x   target <= {tgt}x: {'met' if good else 'NOT met'}")
    d1, d2, fl = best["1 sqrt + 1 div (L1)"], best["2 sqrt + 1 div (L1)"], best["floor"]
    print("  what stands in the way at p = 3 (the divider's work per element, same run):")
    print(f"  {'(2 sqrt + 1 div) / (1 sqrt + 1 div)':<48} {d2 / d1:6.2f}x   (the arithmetic floors' ratio)")
    print(f"  {'StaceyPP p=3 / max(floor, 2 sqrt + 1 div)':<48} {best['stacey p=3'] / max(fl, d2):6.2f}x")
    print(f"  {'AdamW / max(floor, 1 sqrt + 1 div)':<48} {best['adamw'] / max(fl, d1):6.2f}x")
    print(
        f"  {'max(floor, 2 sqrt + 1 div) / max(floor, 1 sqrt + 1 div)':<48} {max(fl, d2) / max(fl, d1):6.2f}x   "
        "(p = 3 / AdamW with both at their floors)"
    )
    r = d2 / best["adamw"]
    print(
        f"  {'(2 sqrt + 1 div) / AdamW':<48} {r:6.2f}x   (p = 3's divider work alone against AdamW's whole step: "
        + (
            "over 1.1x: the divider alone keeps p = 3 above its target in this run)"
            if r > 1.1
            else "the p = 3 target is within reach of the arithmetic in this run)"
        )
    )
    print("  what stands in the way at p = 2.7 (its arithmetic floor, same run):")
    print(
        f"  {'StaceyPP p=2.7 / (3 numpy.power + floor)':<48} "
        f"{best['stacey p=2.7'] / (best['3 numpy.power'] + best['floor']):6.2f}x"
    )
    print(f"  {'(3 numpy.power + floor) / AdamW':<48} {(best['3 numpy.power'] + best['floor']) / best['adamw']:6.2f}x")
    if "2 SVML powers (L1)" in best:
        pf = best["2 SVML powers (L1)"] + best["floor"]
        r = best["stacey p=2.7"] / pf
        ok &= r <= 1.2
        print(
            f"  {'StaceyPP p=2.7 / (2 SVML powers + floor)':<48} {r:6.2f}x   "
            f"target <= 1.2x: {'met' if r <= 1.2 else 'NOT met'}   (the powers that remain with the dual state)"
        )
        print(
            f"  {'StaceyPP p=2.7 / (3 SVML powers + floor)':<48} "
            f"{best['stacey p=2.7'] / (best['3 SVML powers (L1)'] + best['floor']):6.2f}x   (the primal state's)"
        )
        print(f"  {'(2 SVML powers + floor) / AdamW':<48} {pf / best['adamw']:6.2f}x")
    print(
        f"  {'p=2.7 SVML one pass / numpy.power path':<48} "
        f"{best['stacey p=2.7'] / best['p=2.7 numpy.power path']:6.2f}x"
    )
    small = small_arrays(max(5, args.repeats // 2))
    load = os.getloadavg()
    print(f"small arrays (1, 129) float64, donate=True, us per step (thread CPU, min); load {load[0]:.2f}")
    for k, v in small.items():
        print(f"  {k:<40} {v:8.2f} us")
    for k in [k for k in small if not k.endswith("(kernel only)")]:
        print(f"  {k + ': fixed cost':<40} {small[k] - small[k + ' (kernel only)']:8.2f} us per step")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
