"""Vectorized simulator: R replicates of an optimizer on a problem with a stochastic gradient oracle.

The simulator only needs duck-typed objects (it never imports the higher ``synthetic`` layer):
``problem.f(x)``, ``problem.grad(x)``, ``problem.x0(R)``, ``problem.f_star``, ``problem.d`` and
``oracle(theta, t, rngs)``. One loop over steps, none over replicates (except the per-replicate
random streams the oracle draws from). Memory O(R d) plus the recorded metrics.

Backends. ``backend="numpy"`` (default): float64 arrays, one ``numpy.random.Generator`` per replicate.
``backend="torch"``: the parameters, the optimizer state, the gradients, the noise (drawn on the device
from one seeded ``torch.Generator``, :class:`lptheory._random.TorchRandom`) and the metrics all live on
``device`` in ``dtype``; the host sees only the recorded metrics (one transfer per recorded step) and
divergence is tracked on the device (the step and replicate of the first non-finite value are reported
at the next recorded step). The update rules are the same code on both backends.
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


def _host(a) -> np.ndarray:
    """A metric as a float64 numpy array (a device-to-host copy for torch tensors)."""
    if isinstance(a, np.ndarray):
        return a
    return a.detach().to("cpu", dtype=_torch().float64).numpy()


def _torch():
    import torch

    return torch


def _torch_dtype(dtype):
    torch = _torch()
    if dtype is None:
        return torch.float64
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be float64 or float32 on the torch backend, got {dtype!r}")
    return dtype


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
    backend: str = "numpy",
    device=None,
    dtype=None,
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
    replicate_offset : index of the first replicate's random stream (to split R across workers; on
        the numpy backend the split runs give the same numbers as one run, on the torch backend the
        offset seeds the device generator, so split runs are independent but not identical)
    theta0 : starting point, shape (d,) or (R, d) (default ``problem.x0(R)``)
    progress : draw a progress bar on stderr
    backend : ``"numpy"`` (default) or ``"torch"`` (needs torch; see the module docstring)
    device : torch device for ``backend="torch"`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default cpu)
    dtype : float64 (default) or float32 (torch backend only)
    """
    steps = _validate.integer("steps", steps, lo=1)
    replicates = _validate.integer("replicates", replicates, lo=1)
    record_every = _validate.integer("record_every", record_every, lo=1)
    _validate.choice("on_nonfinite", on_nonfinite, {"raise", "record"})
    if p_measure is None:
        p_measure = getattr(optimizer, "p", 2.0)
    p_measure = _validate.exponent("p_measure", p_measure)
    q = dual_exponent(p_measure)
    _validate.choice("backend", backend, {"numpy", "torch"})
    if theta0 is None:
        theta = np.array(problem.x0(replicates), dtype=np.float64)
    else:
        theta = np.array(np.broadcast_to(np.asarray(theta0, dtype=np.float64), (replicates, problem.d)))
    if backend == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"device is for backend='torch'; the numpy backend runs on the cpu, got {device!r}")
        if dtype is not None and np.dtype(dtype) != np.float64:
            raise ValueError(f"dtype must be float64 on the numpy backend (float32: backend='torch'), got {dtype!r}")
        rngs = replicate_generators(seed, replicates, replicate_offset)
        xp = np
    else:
        from ._random import TorchRandom, torch_seed

        torch = _torch()
        tdtype = _torch_dtype(dtype)
        try:
            dev = torch.device(device if device is not None else "cpu")
        except RuntimeError as exc:
            raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but torch.cuda.is_available() is False")
        seed = _validate.integer("seed", seed, lo=0)
        rngs = TorchRandom(torch_seed(seed, _validate.integer("replicate_offset", replicate_offset, lo=0)), dev, tdtype)
        theta = torch.as_tensor(theta, dtype=tdtype, device=dev)
        xp = torch
    state = optimizer.init(theta)
    rec = sorted(set(range(0, steps + 1, record_every)) | {steps})
    K = len(rec)
    out = {k: np.empty((K, replicates)) for k in ("f", "grad_pstar", "grad_2")}
    snaps = np.empty((K, replicates, problem.d)) if snapshots else None
    diverged = np.zeros(replicates, dtype=bool)
    f_star = float(problem.f_star)
    t0 = time.perf_counter()
    k = 0
    if xp is not np:
        # divergence on the device: the first step at which each replicate became non-finite (0: never)
        first_bad = xp.zeros(replicates, dtype=xp.int64, device=theta.device)
        zeros_buf = xp.empty_like(theta)  # reused: a fresh (R, d) temporary per step costs page faults on CPU

    def nonfinite_error(step, r):
        return FloatingPointError(
            f"non-finite parameters at step {step} in replicate {r + replicate_offset} "
            f"(optimizer {optimizer!r}); pass on_nonfinite='record' to record divergence instead"
        )

    def sync_divergence():
        """torch backend, at a recorded step: bring the device-side divergence flags to the host."""
        fb = first_bad.cpu().numpy()
        new = np.flatnonzero((fb > 0) & ~diverged)
        if new.size:
            r = int(new[np.argmin(fb[new])])
            if on_nonfinite == "raise":
                raise nonfinite_error(int(fb[r]), r)
            diverged[new] = True

    def record(t):
        nonlocal k
        if xp is not np:
            sync_divergence()
        with np.errstate(all="ignore"):
            g = problem.grad(theta)
            out["f"][k] = _host(problem.f(theta))
            out["grad_pstar"][k] = _host(lp_norm(g, q) ** q)
            out["grad_2"][k] = _host(lp_norm(g, 2.0))
        for name in out:
            out[name][k, diverged] = np.nan
        if snaps is not None:
            snaps[k] = _host(theta)
        k += 1

    for t in range(steps):
        if rec[k] == t:
            record(t)
        g = oracle(theta, t, rngs)
        theta, state = optimizer.step(theta, g, state, donate=True)
        if xp is not np:
            # sum(0 * theta) over a row is NaN exactly when the row holds a NaN/inf (finite * 0 = 0 cannot
            # overflow, inf * 0 = NaN): exact, element-wise plus one reduction, no host synchronization
            bad_now = ~xp.isfinite(xp.mul(theta, 0.0, out=zeros_buf).sum(dim=-1))
            first_bad = xp.where(bad_now & (first_bad == 0), t + 1, first_bad)
        else:
            # one pass: a row sum is non-finite whenever the row has NaN/inf (confirmed row-wise, so a
            # finite row whose sum overflows is not flagged)
            with np.errstate(over="ignore", invalid="ignore"):
                cand = ~np.isfinite(np.add.reduce(theta, axis=-1)) & ~diverged
            bad = cand
            if cand.any():
                bad = cand.copy()
                bad[cand] = ~np.isfinite(theta[cand]).all(axis=-1)
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                if on_nonfinite == "raise":
                    raise nonfinite_error(t + 1, r)
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
        "backend": backend,
    }
    if backend == "torch":
        config.update(device=str(theta.device), dtype=str(theta.dtype).replace("torch.", ""))
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
