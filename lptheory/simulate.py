"""Vectorized simulator: R replicates of an optimizer on a problem with a stochastic gradient oracle.

The simulator only needs duck-typed objects (it never imports the higher ``synthetic`` layer):
``problem.f(x)``, ``problem.grad(x)``, ``problem.x0(R)``, ``problem.f_star``, ``problem.d`` and
``oracle(theta, t, rngs)``. One loop over steps, none over replicates (except the per-replicate
random streams the oracle draws from). Memory O(R d) plus the recorded metrics.
"""

from __future__ import annotations

import csv
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import _validate
from .geometry import dual_exponent, lp_norm

__all__ = ["simulate", "Trace", "replicate_generators"]


def replicate_generators(seed: int, replicates: int, offset: int = 0) -> list[np.random.Generator]:
    """One independent stream per replicate: replicate r uses ``SeedSequence(seed).spawn(...)[r]``, i.e.
    ``SeedSequence(seed, spawn_key=(r,))``, so replicates r..r+k-1 get the same numbers whether they run
    in one call or are split across calls (``offset``)."""
    seed = _validate.integer("seed", seed, lo=0)
    return [
        np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(offset + r,))))
        for r in range(replicates)
    ]


@dataclass
class Trace:
    """Recorded metrics: ``steps`` (K,), and (K, R) arrays ``f``, ``gap`` (f - f*), ``grad_pstar``
    (||grad f||_{p*}^{p*} for the measuring p), ``grad_2`` (||grad f||_2); optional ``snapshots``
    (K, R, d); ``diverged`` (R,) bool; ``config``."""

    steps: np.ndarray
    f: np.ndarray
    gap: np.ndarray
    grad_pstar: np.ndarray
    grad_2: np.ndarray
    diverged: np.ndarray
    config: dict = field(default_factory=dict)
    snapshots: np.ndarray | None = None

    def summary(self) -> dict:
        """Final-step mean and 95% normal interval of each metric over replicates (diverged ones excluded)."""
        ok = ~self.diverged
        out = {}
        for name in ("gap", "grad_pstar", "grad_2"):
            v = getattr(self, name)[-1, ok]
            n = v.size
            m = float(v.mean()) if n else math.nan
            half = float(1.96 * v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            out[name] = {"mean": m, "lo": m - half, "hi": m + half, "n": int(n)}
        out["diverged"] = int(self.diverged.sum())
        return out

    def rows(self):
        """One row per (recorded step, replicate)."""
        for k, t in enumerate(self.steps):
            for r in range(self.f.shape[1]):
                yield {
                    "step": int(t),
                    "replicate": r,
                    "f": self.f[k, r],
                    "gap": self.gap[k, r],
                    "grad_pstar": self.grad_pstar[k, r],
                    "grad_2": self.grad_2[k, r],
                }

    def to_csv(self, path, extra: dict | None = None) -> None:
        extra = extra or {}
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=[*extra, "step", "replicate", "f", "gap", "grad_pstar", "grad_2"])
            w.writeheader()
            for row in self.rows():
                w.writerow(
                    {
                        **extra,
                        **{k: (repr(float(v)) if isinstance(v, float | np.floating) else v) for k, v in row.items()},
                    }
                )


def _progress(t, steps, t0, stream):
    frac = t / steps
    bar = "#" * int(30 * frac)
    el = time.perf_counter() - t0
    eta = el / frac * (1 - frac) if frac > 0 else float("nan")
    stream.write(f"\r[{bar:<30}] {t}/{steps} steps  {el:6.1f}s elapsed  ~{eta:5.1f}s left")
    stream.flush()


def simulate(
    optimizer,
    problem,
    oracle,
    steps: int,
    replicates: int = 8,
    seed: int = 0,
    *,
    record_every: int = 1,
    p_measure: float | None = None,
    snapshots: bool = False,
    on_nonfinite: str = "raise",
    replicate_offset: int = 0,
    theta0=None,
    progress: bool = False,
) -> Trace:
    """Run ``optimizer`` for ``steps`` steps on ``replicates`` independent replicates.

    Parameters
    ----------
    optimizer : an :mod:`lptheory.optimizers` optimizer
    problem, oracle : a problem (``f``, ``grad``, ``x0``, ``f_star``, ``d``) and a gradient oracle
        ``oracle(theta, t, rngs)``
    steps : T >= 1;  replicates : R >= 1;  seed : int >= 0 (same seed, same bits)
    record_every : metrics are recorded at t = 0, record_every, 2 record_every, ... and at t = T
    p_measure : the p of ||grad f||_{p*}^{p*} (default: the optimizer's p, else 2)
    snapshots : also record the parameters at recorded steps (memory K R d)
    on_nonfinite : ``"raise"`` (default: FloatingPointError naming step and replicate) or ``"record"``
        (mark the replicate diverged, keep going; its metrics become NaN)
    replicate_offset : index of the first replicate's random stream (to split R across workers)
    theta0 : starting point, shape (d,) or (R, d) (default ``problem.x0(R)``)
    progress : draw a progress bar on stderr
    """
    steps = _validate.integer("steps", steps, lo=1)
    replicates = _validate.integer("replicates", replicates, lo=1)
    record_every = _validate.integer("record_every", record_every, lo=1)
    _validate.choice("on_nonfinite", on_nonfinite, {"raise", "record"})
    if p_measure is None:
        p_measure = getattr(optimizer, "p", 2.0)
    p_measure = _validate.exponent("p_measure", p_measure)
    q = dual_exponent(p_measure)
    rngs = replicate_generators(seed, replicates, replicate_offset)
    if theta0 is None:
        theta = np.array(problem.x0(replicates), dtype=np.float64)
    else:
        theta = np.array(np.broadcast_to(np.asarray(theta0, dtype=np.float64), (replicates, problem.d)))
    state = optimizer.init(theta)
    rec = sorted(set(range(0, steps + 1, record_every)) | {steps})
    K = len(rec)
    out = {k: np.empty((K, replicates)) for k in ("f", "grad_pstar", "grad_2")}
    snaps = np.empty((K, replicates, problem.d)) if snapshots else None
    diverged = np.zeros(replicates, dtype=bool)
    f_star = float(problem.f_star)
    t0 = time.perf_counter()
    k = 0

    def record(t):
        nonlocal k
        with np.errstate(all="ignore"):
            g = problem.grad(theta)
            out["f"][k] = problem.f(theta)
            out["grad_pstar"][k] = lp_norm(g, q) ** q
            out["grad_2"][k] = lp_norm(g, 2.0)
        for name in out:
            out[name][k, diverged] = np.nan
        if snaps is not None:
            snaps[k] = theta
        k += 1

    for t in range(steps):
        if rec[k] == t:
            record(t)
        g = oracle(theta, t, rngs)
        theta, state = optimizer.step(theta, g, state, donate=True)
        # one pass: a row sum is non-finite whenever the row has NaN/inf (confirmed row-wise, so a finite
        # row whose sum overflows is not flagged)
        with np.errstate(over="ignore", invalid="ignore"):
            cand = ~np.isfinite(np.add.reduce(theta, axis=-1)) & ~diverged
        bad = cand
        if cand.any():
            bad = cand.copy()
            bad[cand] = ~np.isfinite(theta[cand]).all(axis=-1)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            if on_nonfinite == "raise":
                raise FloatingPointError(
                    f"non-finite parameters at step {t + 1} in replicate {r + replicate_offset} "
                    f"(optimizer {optimizer!r}); pass on_nonfinite='record' to record divergence instead"
                )
            diverged |= bad
        if progress and (t % max(1, steps // 100) == 0 or t == steps - 1):
            _progress(t + 1, steps, t0, sys.stderr)
    if progress:
        sys.stderr.write("\n")
    record(steps)
    config = {
        "optimizer": repr(optimizer),
        "problem": getattr(problem, "describe", lambda: {})(),
        "oracle": getattr(oracle, "describe", lambda: {})(),
        "steps": steps,
        "replicates": replicates,
        "seed": seed,
        "replicate_offset": replicate_offset,
        "p_measure": p_measure,
        "record_every": record_every,
    }
    return Trace(
        steps=np.asarray(rec),
        f=out["f"],
        gap=out["f"] - f_star,
        grad_pstar=out["grad_pstar"],
        grad_2=out["grad_2"],
        diverged=diverged,
        config=config,
        snapshots=snaps,
    )
