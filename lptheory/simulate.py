"""Vectorized simulator: R replicates of an optimizer on a problem with a stochastic gradient oracle.

The one run loop of the toolkit: every check that follows an optimizer along a trajectory uses it,
with *observers* for what it measures. The simulator only needs objects of the protocols
(it never imports the higher ``synthetic`` layer): a problem (:mod:`lptheory.problem`:
``f(x, t)``, ``grad(x, t)``, ``x0(R)``, ``d``, optionally the certificate ``f_star``), an optimizer
(:mod:`lptheory.optimizers`: ``init``, ``step``, ``output``) and an oracle ``oracle(theta, t, rngs)``.
One loop over steps, none over replicates (except the per-replicate random streams the oracle draws
from). Memory O(R d) plus the recorded metrics.

Observers (:class:`Observer`) see every step (``on_step``: the point before and after the update,
the stochastic gradient, the state) and/or the recorded steps (``on_record``: named (R,) arrays that
land in ``Trace.metrics``). Ready-made: :class:`Metric` (any function of the current point),
:class:`Series` (a per-step quantity kept for every step), :class:`Regret` (online regret against a
fixed comparator) and :class:`StateNorm` (a norm of a named state array). Time-varying problems get
the step ``t`` in ``f`` and ``grad``.

Backends. ``backend="numpy"`` (default): float64 arrays, one ``numpy.random.Generator`` per replicate.
``backend="torch"``: the parameters, the optimizer state, the gradients, the noise (drawn on the device
from one seeded ``torch.Generator``, :class:`lptheory._random.TorchRandom`) and the metrics all live on
``device`` in ``dtype``; the host sees only the recorded metrics (one transfer per recorded step) and
divergence is tracked on the device (the step and replicate of the first non-finite value are reported
at the next recorded step). The update rules are the same code on both backends.
"""

from __future__ import annotations

import contextlib
import csv
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _validate
from .geometry import dual_exponent, lp_norm
from .optimizers import Optimizer, count_nonfinite, deferred_nonfinite
from .progress import StepProgress

__all__ = [
    "simulate",
    "Trace",
    "replicate_generators",
    "Observer",
    "StepView",
    "Metric",
    "Series",
    "Regret",
    "StateNorm",
    "mean_interval",
    "exact_oracle",
    "register_oracle_steps",
]


def exact_oracle(problem):
    """The deterministic oracle: the problem's own gradient, ``oracle(theta, t, rngs) = grad f_t(theta)``."""

    def oracle(theta, t, rngs):
        return problem.grad(theta, t)

    return oracle


def register_oracle_steps(oracle_type: type, planner) -> None:
    """Let the numpy simulator run several steps of oracles of exactly ``oracle_type`` in one kernel call per
    thread (the oracle's answer and the optimizer's fused update row by row, nothing in Python between
    steps), where nothing is observed between recorded steps. ``planner(oracle, theta, rngs, t0, state,
    seg, names, scalars)`` must give the bits of calling the oracle at steps t0, t0 + 1, ... and is
    described in :func:`lptheory.fast.simfused.register`; ``synthetic`` registers its ``GradientOracle``."""
    from .fast import simfused as _simfused

    _simfused.register(oracle_type, planner)


def mean_interval(v, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the two-sided Student-t interval of the mean of the finite values of ``v``
    (t quantile with n - 1 degrees of freedom, so small replicate counts get wide intervals); NaN
    bounds for fewer than two values."""
    from scipy.stats import t as student_t

    v = np.asarray(v, dtype=np.float64)
    v = v[np.isfinite(v)]
    n = v.size
    if n == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if n < 2:
        return m, math.nan, math.nan
    half = float(student_t.ppf(0.5 + level / 2, n - 1)) * float(v.std(ddof=1)) / math.sqrt(n)
    return m, m - half, m + half


@dataclass
class StepView:
    """What an observer sees. ``theta``: the point before the update (only when an observer sets
    ``needs_previous``; else None), ``new_theta``: after it, ``point``: the optimizer's output point,
    ``grad_tilde``: the stochastic gradient of the step, ``state``: the optimizer state after it."""

    t: int
    new_theta: Any
    point: Any
    state: dict
    problem: Any
    optimizer: Any
    xp: Any
    theta: Any = None
    grad_tilde: Any = None


class Observer:
    """Per-step hook of :func:`simulate` (subclass and override what you need).

    ``on_step(view)`` runs after every step; ``on_record(view)`` at every recorded step (t = 0, the
    record grid and T) and returns ``{name: (R,) array}``, stored in ``Trace.metrics[name]``;
    ``finish()`` returns a dict stored in ``Trace.extras[observer.name]``. Set ``needs_previous`` to
    receive the point before the update in ``view.theta`` (it costs a copy per step)."""

    name = "observer"
    needs_previous = False

    def on_step(self, view: StepView) -> None:
        return None

    def on_record(self, view: StepView) -> dict:
        return {}

    def finish(self) -> dict:
        return {}


class Metric(Observer):
    """``fn(view) -> (R,)`` evaluated at the recorded steps, stored as ``Trace.metrics[name]``."""

    def __init__(self, name: str, fn):
        self.name, self.fn = name, fn

    def on_record(self, view):
        return {self.name: _host(self.fn(view))}


class Series(Observer):
    """``fn(view) -> (R,)`` evaluated after every step; ``Trace.extras[name]["values"]`` is (T, R)."""

    needs_previous = True

    def __init__(self, name: str, fn):
        self.name, self.fn, self.rows = name, fn, []

    def on_step(self, view):
        self.rows.append(_host(self.fn(view)))

    def finish(self):
        return {"values": np.asarray(self.rows)}


class Regret(Observer):
    """Regret_t = sum_{s < t} [f_s(x_s) - f_s(u)] against a fixed comparator ``u`` (shape (d,)); without
    one, ``problem.best_fixed_point(T)`` of the problem protocol (:class:`lptheory.problem.Problem`),
    ``T`` the horizon given here. Recorded as ``Trace.metrics[name]``."""

    needs_previous = True

    def __init__(self, comparator=None, name: str = "regret", *, T: int | None = None):
        self.name, self.u, self.total, self.T = name, comparator, None, T

    def on_step(self, view):
        if self.u is None:
            fixed = getattr(view.problem, "best_fixed_point", None)
            if fixed is None or self.T is None:
                raise ValueError("Regret needs a comparator, or T= and a problem with best_fixed_point(T)")
            self.u = fixed(self.T)
        loss = _host(view.problem.f(view.theta, view.t))
        ref = float(np.asarray(_host(view.problem.f(np.asarray(self.u, dtype=np.float64), view.t))))
        self.total = (0.0 if self.total is None else self.total) + (loss - ref)

    def on_record(self, view):
        R = np.shape(_host(view.problem.f(view.point, view.t)))
        return {self.name: np.zeros(R) if self.total is None else np.array(self.total, dtype=np.float64)}


class StateNorm(Observer):
    """||state[key]||_p at the recorded steps, as ``Trace.metrics["|key|_p"]`` (or ``name``)."""

    def __init__(self, key: str, p: float = 2.0, name: str | None = None):
        self.key, self.p = key, _validate.exponent("p", p, lo=1.0, lo_open=False)
        self.name = name or f"|{key}|_{p:g}"

    def on_record(self, view):
        if self.key not in view.state:
            raise ValueError(f"StateNorm: the optimizer's state has no {self.key!r} (it has {sorted(view.state)})")
        return {self.name: _host(lp_norm(view.state[self.key], self.p))}


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
    (||grad f||_{p*}^{p*} for the measuring p), ``grad_2`` (||grad f||_2); ``metrics`` (name -> (K, R))
    from the observers; ``extras`` (observer name -> dict); optional ``snapshots`` (K, R, d);
    ``diverged`` (R,) bool and ``diverged_at`` (R,) int (the first step with a non-finite parameter or
    objective value, -1 if none); ``config``."""

    steps: np.ndarray
    f: np.ndarray
    gap: np.ndarray
    grad_pstar: np.ndarray
    grad_2: np.ndarray
    diverged: np.ndarray
    config: dict = field(default_factory=dict)
    snapshots: np.ndarray | None = None
    metrics: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    diverged_at: np.ndarray | None = None

    def summary(self, level: float = 0.95) -> dict:
        """Final-step mean and Student-t interval of each metric over the replicates that did not
        diverge (:func:`mean_interval`), and the number of diverged replicates."""
        ok = ~self.diverged
        out = {}
        names = {"gap": self.gap, "grad_pstar": self.grad_pstar, "grad_2": self.grad_2, **self.metrics}
        for name, arr in names.items():
            v = np.asarray(arr)[-1, ok]
            m, lo, hi = mean_interval(v, level)
            out[name] = {"mean": m, "lo": lo, "hi": hi, "n": int(np.isfinite(v).sum())}
        out["diverged"] = int(self.diverged.sum())
        return out

    def rows(self):
        """One row per (recorded step, replicate)."""
        extra = list(self.metrics)
        for k, t in enumerate(self.steps):
            for r in range(self.f.shape[1]):
                row = {
                    "step": int(t),
                    "replicate": r,
                    "f": self.f[k, r],
                    "gap": self.gap[k, r],
                    "grad_pstar": self.grad_pstar[k, r],
                    "grad_2": self.grad_2[k, r],
                }
                row.update((m, self.metrics[m][k, r]) for m in extra)
                yield row

    def to_csv(self, path, extra: dict | None = None, header: bool = True, mode: str = "w") -> None:
        extra = extra or {}
        cols = [*extra, "step", "replicate", "f", "gap", "grad_pstar", "grad_2", *self.metrics]
        with open(path, mode, newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            if header:
                w.writeheader()
            for row in self.rows():
                w.writerow(
                    {
                        **extra,
                        **{k: (repr(float(v)) if isinstance(v, float | np.floating) else v) for k, v in row.items()},
                    }
                )


def _host(a) -> np.ndarray:
    """A metric as a float64 numpy array (a device-to-host copy for torch tensors)."""
    if not hasattr(a, "detach"):
        return np.asarray(a, dtype=np.float64)
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
    progress: bool | Any = False,
    backend: str = "numpy",
    device=None,
    dtype=None,
    observers=(),
    default_metrics: bool = True,
    record_at=None,
) -> Trace:
    """Run ``optimizer`` for ``steps`` steps on ``replicates`` independent replicates.

    Parameters
    ----------
    optimizer : an optimizer of the :mod:`lptheory.optimizers` protocol
    problem, oracle : a problem of the :mod:`lptheory.problem` protocol and a gradient oracle
        ``oracle(theta, t, rngs)``
    steps : T >= 1;  replicates : R >= 1;  seed : int >= 0 (same seed, same bits)
    record_every : metrics are recorded at t = 0, record_every, 2 record_every, ... and at t = T
    p_measure : the p of ||grad f||_{p*}^{p*} (default: the optimizer's p, else 2)
    snapshots : also record the parameters at recorded steps (memory K R d)
    on_nonfinite : ``"raise"`` (default: FloatingPointError naming step and replicate) or ``"record"``
        (mark the replicate diverged, keep going; its metrics become NaN). A replicate diverges when a
        parameter or its objective value is not finite.
    replicate_offset : index of the first replicate's random stream (to split R across workers; on
        the numpy backend the split runs give the same numbers as one run, on the torch backend the
        offset seeds the device generator, so split runs are independent but not identical)
    theta0 : starting point, shape (d,) or (R, d) (default ``problem.x0(R)``)
    progress : True draws the progress on stderr (:class:`lptheory.progress.StepProgress`: one line
        rewritten in place on a terminal, plain lines at tenths in a pipe or file, a summary line at the
        end or where it stopped); a callable ``progress(t, steps)`` is called instead
    backend : ``"numpy"`` (default) or ``"torch"`` (needs torch; see the module docstring)
    device : torch device for ``backend="torch"`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default cpu)
    dtype : float64 (default) or float32 (torch backend only)
    observers : :class:`Observer` instances (user metrics, per-step hooks). The recorded steps include
        t = T, so a time-varying problem must define f_t for t = 0, ..., T
    default_metrics : record f, f - f*, ||grad f||_{p*}^{p*} and ||grad f||_2 (the gradient metrics are
        skipped for stateful problems, whose answers depend on the queries)
    record_at : the steps to record (integers in [0, T]; t = 0 and T are always recorded), instead of the
        multiples of ``record_every`` (which must then be left at 1): for a few irregular horizons (every
        step recorded costs a record's work)
    """
    steps = _validate.integer("steps", steps, lo=1)
    replicates = _validate.integer("replicates", replicates, lo=1)
    record_every = _validate.integer("record_every", record_every, lo=1)
    if record_at is not None:
        if record_every != 1:
            raise ValueError("record_at and record_every: give one of them (record_every must stay 1)")
        record_at = sorted({_validate.integer("record_at", t, lo=0) for t in record_at})
        if record_at and record_at[-1] > steps:
            raise ValueError(f"record_at: steps in [0, {steps}], got {record_at[-1]}")
    _validate.choice("on_nonfinite", on_nonfinite, {"raise", "record"})
    p_measure = _p_measure(optimizer, p_measure)
    _validate.choice("backend", backend, {"numpy", "torch"})
    observers = list(observers)
    for ob in observers:
        if not isinstance(ob, Observer):
            raise TypeError(f"observers must be lptheory.simulate.Observer instances, got {type(ob).__name__}")
    _check_layout(optimizer, problem, replicates)
    theta = _start_point(problem, replicates, theta0)
    theta, rngs, seed = _on_backend(theta, backend, device, dtype, seed, replicates, replicate_offset)
    # a progress=True run draws its progress (arguments checked above: bad input draws nothing); the line is
    # closed however the run ends
    drawn = progress and not callable(progress)
    name = str(getattr(optimizer, "name", type(optimizer).__name__))
    with StepProgress(name, steps) if drawn else contextlib.nullcontext(progress) as tick:
        run = _Run(
            optimizer,
            problem,
            oracle,
            theta,
            rngs,
            steps=steps,
            record_every=record_every,
            p_measure=p_measure,
            snapshots=snapshots,
            on_nonfinite=on_nonfinite,
            replicate_offset=replicate_offset,
            tick=tick if callable(tick) else None,
            observers=observers,
            default_metrics=default_metrics,
            record_at=record_at,
        )
        run.loop()
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
        if record_at is not None:
            config["record_at"] = record_at
        if backend == "torch":
            config.update(device=str(run.theta.device), dtype=str(run.theta.dtype).replace("torch.", ""))
        return run.trace(config)


def _observes_steps(ob) -> bool:
    """Whether ``ob.on_step`` is not :class:`Observer`'s own (which does nothing)."""
    return getattr(ob.on_step, "__func__", None) is not Observer.on_step


def _p_measure(optimizer, p_measure) -> float:
    """The p of the gradient metric: ``p_measure``, else the optimizer's numeric ``p``, else 2 (checked)."""
    if p_measure is None:
        p_measure = getattr(optimizer, "p", 2.0)
        p_measure = 2.0 if not isinstance(p_measure, (int, float)) else p_measure
    return _validate.exponent("p_measure", p_measure)


def _check_layout(optimizer, problem, replicates: int) -> None:
    """ValueError where the run cannot lay out its iterates: a matrix optimizer without a shape of d
    elements, a stateful problem with several replicates."""
    from .spectral import MatrixOptimizer

    if isinstance(optimizer, MatrixOptimizer) and optimizer.ndim == 2:
        # the iterates are (R, d): without a layout a matrix optimizer would take the R replicates as the rows
        # of one matrix and couple them (orthogonalizing across replicates)
        if optimizer.shape is None:
            raise ValueError(
                f"{type(optimizer).__name__} needs shape=(m, n) with m * n = d = {problem.d} to run in simulate "
                "(each replicate's iterate is a flat row of length d); e.g. the problem's own shape, or (1, d): "
                "lptheory.spectral.laid_out(optimizer, problem.d, problem_shape)"
            )
        if optimizer.shape[0] * optimizer.shape[1] != problem.d:
            raise ValueError(f"{type(optimizer).__name__}: shape={optimizer.shape}: m * n must equal d = {problem.d}")
    if getattr(problem, "stateful", False) and replicates != 1:
        raise ValueError(f"problem {getattr(problem, 'name', problem)!r} is a stateful oracle: replicates must be 1")


def _start_point(problem, replicates: int, theta0) -> np.ndarray:
    """The (R, d) float64 starting point: ``theta0`` broadcast, else ``problem.x0(R)``."""
    if theta0 is None:
        return np.array(problem.x0(replicates), dtype=np.float64)
    return np.array(np.broadcast_to(np.asarray(theta0, dtype=np.float64), (replicates, problem.d)))


def _on_backend(theta, backend: str, device, dtype, seed, replicates: int, replicate_offset):
    """(theta on the backend, the replicates' random streams, seed) after checking ``device`` and ``dtype``:
    numpy generators per replicate, or one seeded device generator for the torch backend."""
    if backend == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"device is for backend='torch'; the numpy backend runs on the cpu, got {device!r}")
        if dtype is not None and np.dtype(dtype) != np.float64:
            raise ValueError(f"dtype must be float64 on the numpy backend (float32: backend='torch'), got {dtype!r}")
        return theta, replicate_generators(seed, replicates, replicate_offset), seed
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
    return torch.as_tensor(theta, dtype=tdtype, device=dev), rngs, seed


class _Run:
    """One run of :func:`simulate` after its arguments are checked: the loop over steps (:meth:`loop`), the
    records of the metrics and observers (:meth:`record`), divergence (:meth:`mark`), the trace."""

    def __init__(
        self,
        optimizer,
        problem,
        oracle,
        theta,
        rngs,
        *,
        steps,
        record_every,
        p_measure,
        snapshots,
        on_nonfinite,
        replicate_offset,
        tick,
        observers,
        default_metrics,
        record_at=None,
    ):
        self.optimizer, self.problem, self.oracle, self.rngs = optimizer, problem, oracle, rngs
        self.steps, self.on_nonfinite, self.replicate_offset = steps, on_nonfinite, replicate_offset
        self.tick, self.observers, self.default_metrics = tick, observers, default_metrics
        self.q = dual_exponent(p_measure)
        self.xp = xp = np if isinstance(theta, np.ndarray) else _torch()
        replicates = theta.shape[0]
        self.theta = theta
        self.state = optimizer.init(theta)
        grid = range(0, steps + 1, record_every) if record_at is None else record_at
        self.rec = rec = sorted(set(grid) | {0, steps})
        K = len(rec)
        self.out = {k: np.full((K, replicates), np.nan) for k in ("f", "grad_pstar", "grad_2")}
        self.metrics: dict[str, np.ndarray] = {}
        self.snaps = np.empty((K, replicates, problem.d)) if snapshots else None
        self.diverged = np.zeros(replicates, dtype=bool)
        self.diverged_at = np.full(replicates, -1, dtype=np.int64)
        self.f_star = _f_star(problem)
        self.stateful = bool(getattr(problem, "stateful", False))
        self.keep_prev = any(ob.needs_previous for ob in observers)
        # the observers with an on_step of their own (the base class's does nothing): a step builds its view
        # only for them (or for needs_previous, which asks for the previous point)
        self.step_observers = [ob for ob in observers if ob.needs_previous or _observes_steps(ob)]
        self.k = 0
        self.bad_buf = None  # the rows' non-finite flags of a step (numpy), reused
        from .fast.simkernels import nonfinite_rows

        self.nonfinite_rows = nonfinite_rows
        if xp is not np:
            # divergence on the device: the first step at which each replicate became non-finite (0: never)
            self.first_bad = xp.zeros(replicates, dtype=xp.int64, device=theta.device)
            self.zeros_buf = xp.empty_like(theta)  # reused: a fresh (R, d) temporary per step costs page faults
        self.mbuf = np.empty_like(theta) if (xp is np and default_metrics) else None
        self.use_out = xp is np and getattr(oracle, "accepts_out", False)
        # reused: no fresh (R, d) array (page faults) per step
        self.gbuf = np.empty_like(theta) if self.use_out else None
        self.prev = (np.empty_like(theta) if xp is np else xp.empty_like(theta)) if self.keep_prev else None
        use_split = self.use_out and not self.stateful
        self.split = _RowSplit.plan(optimizer, oracle, theta, self.state, rngs) if use_split else None
        self.split_metrics = (
            self.split is not None and self.mbuf is not None and bool(getattr(problem, "rows_independent", False))
        )
        # the metrics of a recorded step computed by the parts of that step, before their oracle (no pool round
        # trip of their own), where nothing else reads theta_t at the record: no observers, no snapshots, and
        # the optimizer's reported point is theta
        self.merged = (
            self.split_metrics and not observers and self.snaps is None and type(optimizer).output is Optimizer.output
        )

    # -- divergence --------------------------------------------------------------------------------------
    def nonfinite_error(self, step, r, what="parameters"):
        return FloatingPointError(
            f"non-finite {what} at step {step} in replicate {r + self.replicate_offset} "
            f"(optimizer {self.optimizer!r}); pass on_nonfinite='record' to record divergence instead"
        )

    def mark(self, bad_rows, step, what="parameters"):
        new = np.flatnonzero(bad_rows & ~self.diverged)
        if new.size:
            if self.on_nonfinite == "raise":
                raise self.nonfinite_error(step, int(new[0]), what)
            self.diverged[new] = True
            self.diverged_at[new] = step

    def sync_divergence(self):
        """torch backend, at a recorded step: bring the device-side divergence flags to the host."""
        fb = self.first_bad.cpu().numpy()
        new = np.flatnonzero((fb > 0) & ~self.diverged)
        if new.size:
            r = int(new[np.argmin(fb[new])])
            if self.on_nonfinite == "raise":
                raise self.nonfinite_error(int(fb[r]), r)
            self.diverged[new] = True
            self.diverged_at[new] = fb[new]

    # -- records -----------------------------------------------------------------------------------------
    def view(self, t, prev=None, gt=None):
        return StepView(
            t=t,
            new_theta=self.theta,
            point=self.optimizer.output(self.theta, self.state),
            state=self.state,
            problem=self.problem,
            optimizer=self.optimizer,
            xp=self.xp,
            theta=prev,
            grad_tilde=gt,
        )

    def record(self, t, pre=None):
        """Record step ``t`` (the next row of the trace); ``pre``: its default metrics computed by the parts
        of step t (at theta_t)."""
        k, out, problem = self.k, self.out, self.problem
        if self.xp is not np:
            self.sync_divergence()
        v = self.view(t)
        if pre is not None or (
            self.default_metrics
            and self.split_metrics
            and isinstance(v.point, np.ndarray)
            and v.point.shape == self.theta.shape
        ):
            # by rows over the threads, same bits
            fv, gp, g2 = self.split.metrics(problem, v.point, t, self.q, self.mbuf) if pre is None else pre
            out["f"][k] = fv
            self.mark(~np.isfinite(fv), t, "objective value")
            out["grad_pstar"][k] = gp
            out["grad_2"][k] = g2
        elif self.default_metrics:
            self._default_metrics(v, t, k)
        for ob in self.observers:
            for name, val in ob.on_record(v).items():
                arr = self.metrics.setdefault(name, np.full(self.out["f"].shape, np.nan))
                arr[k] = val
        for arr in (*out.values(), *self.metrics.values()):
            arr[k, self.diverged] = np.nan
        if self.snaps is not None:
            self.snaps[k] = _host(self.theta)
        self.k = k + 1

    def _default_metrics(self, v, t, k):
        """f, ||grad f||_{p*}^{p*} and ||grad f||_2 at the reported point (whole arrays, one thread)."""
        out, problem, q = self.out, self.problem, self.q
        with np.errstate(all="ignore"):
            fv = _host(problem.f(v.point, t))
            out["f"][k] = fv
            self.mark(~np.isfinite(fv), t, "objective value")
            if not self.stateful:
                if self.xp is np and hasattr(problem, "grad_into") and isinstance(v.point, np.ndarray):
                    g = problem.grad_into(v.point, t, self.mbuf)  # a reused buffer, the in-place kernels
                else:
                    g = problem.grad(v.point, t)
                out["grad_pstar"][k] = _host(lp_norm(g, q) ** q)
                out["grad_2"][k] = _host(lp_norm(g, 2.0))

    def after_step(self, t, g):
        if self.step_observers:
            v = self.view(t, self.prev, g)
            for ob in self.step_observers:
                ob.on_step(v)
        if self.tick is not None:
            self.tick(t + 1, self.steps)

    # -- the loop ----------------------------------------------------------------------------------------
    def loop(self):
        """Every step, then the record of step T."""
        t_done = self._merged_steps() if self.merged else 0
        for t in range(t_done, self.steps):
            if self.split is not None:
                self._split_step(t)
            else:
                self._plain_step(t)
        self.record(self.steps)

    def _merged_steps(self) -> int:
        """Nothing is observed between two records: each thread runs its rows through every step from one
        record to the next in one task (one pool submission per thread and record interval, no round trip per
        step); the steps' non-finite gradient counts, divergence marks and progress calls are replayed here in
        step order, so the trace, the counts, the warnings, the errors and the calls of ``progress`` are those
        of the step-by-step loop. Returns the steps done (all of them)."""
        split, rec, t_done = self.split, self.rec, 0
        while t_done < self.steps:  # t_done is the record step rec[k]
            t1 = rec[self.k + 1]
            self.theta, self.state, nonfinite, bad, pre, err = split.step(
                t_done, self.theta, self.state, self.gbuf, None, (self.problem, self.q, self.mbuf), t1
            )
            for t in range(t_done, t1 if err is None else err[0]):
                if t == t_done:
                    self.record(t, pre)  # its checks and errors come first, as when it runs before the step
                split.count(t in nonfinite)
                if t in bad:
                    self.mark(bad[t] & ~self.diverged, t + 1)
                self.after_step(t, None)  # no observers here: the progress call of step t
            if err is not None:
                raise err[1]
            t_done = t1
        return t_done

    def _split_step(self, t):
        """Step ``t`` split by rows: one pool submission per thread, each running the oracle, the update and
        the finiteness check of its rows (same bits)."""
        in_step = self.merged and self.rec[self.k] == t
        if self.rec[self.k] == t and not in_step:
            self.record(t)
        self.theta, self.state, bad_rows, nonfinite, pre = self.split.step(
            t, self.theta, self.state, self.gbuf, self.prev, (self.problem, self.q, self.mbuf) if in_step else None
        )
        if in_step:
            self.record(t, pre)  # its checks and errors come first, as when it runs before the step
        self.split.count(nonfinite)
        if bad_rows is not None:
            self.mark(bad_rows & ~self.diverged, t + 1)
        self.after_step(t, self.gbuf)

    def _plain_step(self, t):
        """Step ``t`` on the whole arrays: record, oracle, update, divergence check."""
        xp, theta = self.xp, self.theta
        if self.rec[self.k] == t:
            self.record(t)
        g = self.oracle(theta, t, self.rngs, out=self.gbuf) if self.use_out else self.oracle(theta, t, self.rngs)
        if self.keep_prev:
            if xp is np:
                np.copyto(self.prev, theta)
            else:
                self.prev.copy_(theta)
        theta, self.state = self.optimizer.step(theta, g, self.state, donate=True)
        self.theta = theta
        if xp is not np:
            # sum(0 * theta) over a row is NaN exactly when the row holds a NaN/inf (finite * 0 = 0 cannot
            # overflow, inf * 0 = NaN): exact, element-wise plus one reduction, no host synchronization
            bad_now = ~xp.isfinite(xp.mul(theta, 0.0, out=self.zeros_buf).sum(dim=-1))
            self.first_bad = xp.where(bad_now & (self.first_bad == 0), t + 1, self.first_bad)
        elif type(theta) is np.ndarray and theta.ndim == 2 and theta.dtype == np.float64 and theta.flags.c_contiguous:
            # the rows holding a NaN or an infinity, in one compiled read of their bit patterns
            # (lptheory.fast.simkernels.nonfinite_rows: the answer of ~isfinite(theta).all(-1); 3-7 us a step
            # for 1-10 rows of 4096 where the row sums below took 5-15 us)
            bad = self.bad_buf
            if bad is None or bad.shape[0] != theta.shape[0]:
                bad = self.bad_buf = np.empty(theta.shape[0], dtype=bool)
            if np.count_nonzero(self.nonfinite_rows(theta, bad)):  # (not .any(): its Python wrapper costs more)
                self.mark(bad, t + 1)
        else:
            # one pass: a row sum is non-finite whenever the row has NaN/inf (confirmed row-wise, so a
            # finite row whose sum overflows is not flagged)
            with np.errstate(over="ignore", invalid="ignore"):
                cand = ~np.isfinite(np.add.reduce(theta, axis=-1)) & ~self.diverged
            if cand.any():
                bad = cand.copy()
                bad[cand] = ~np.isfinite(theta[cand]).all(axis=-1)
                self.mark(bad, t + 1)
        self.after_step(t, g)

    # -- the result --------------------------------------------------------------------------------------
    def trace(self, config: dict) -> Trace:
        extras = {}
        for ob in self.observers:
            extra = ob.finish()
            if extra:
                extras[ob.name] = extra
        out = self.out
        return Trace(
            steps=np.asarray(self.rec),
            f=out["f"],
            gap=out["f"] - self.f_star,
            grad_pstar=out["grad_pstar"],
            grad_2=out["grad_2"],
            diverged=self.diverged,
            config=config,
            snapshots=self.snaps,
            metrics=self.metrics,
            extras=extras,
            diverged_at=self.diverged_at,
        )


class _RowSplit:
    """The numpy step split by replicate rows over the engine's threads: each part runs the oracle on its
    rows (``oracle(theta[a:b], t, rngs[a:b], out=gbuf[a:b])``), the optimizer's own ``step`` on those
    rows, and the finiteness check of the new rows, as one pool submission per thread (the calling
    thread runs the first part; nested engine calls inside a part run in its thread, see
    :func:`lptheory.fast.pool.inline`). The same bits as the whole-array step: the optimizer is element-wise
    (:class:`lptheory.optimizers.ElementwiseOptimizer`, whose engines already split arrays at any
    point), and the oracle declares ``rows_independent`` (row r of its answer depends only on row r of
    theta and on ``rngs[r]``). Each part's ``step`` runs inside
    :func:`lptheory.optimizers.deferred_nonfinite`: a part whose gradient holds a NaN or inf (counted by
    the optimizer's kernels while they read it) adds to its own tally, and the step is counted once on the
    optimizer afterwards, as for one call on the whole array (``nonfinite_steps``, the one warning).

    Where nothing is observed between recorded steps (no observers or snapshots), a part runs
    its rows through every step from one record to the next in one task (:meth:`steps`: the rows are
    independent across steps too), and where the oracle's type has a registered multi-step kernel
    (:func:`register_oracle_steps`) and the optimizer's step is one fused loop, through all of them in one
    kernel call (:mod:`lptheory.fast.simfused`); the simulator replays the steps' counts and divergence marks
    in step order."""

    MIN_SIZE = 1 << 17  # below this one thread is as fast (the engines' threshold)

    def __init__(self, optimizer, oracle, rngs, bounds, nthreads, shape):
        self.optimizer, self.oracle, self.rngs, self.bounds, self.nt = optimizer, oracle, rngs, bounds, nthreads
        self.tbad = np.zeros(shape[0], dtype=bool)
        # each part's generators as one list object for the whole run (the stream kernels cache their
        # state addresses by the list)
        self.part_rngs = {r0: rngs[r0:r1] for r0, r1 in bounds}
        from .fast import simfused as _simfused

        self.multi = _simfused.has_planner(oracle)  # several steps per kernel call (see _steps_part)

    @classmethod
    def plan(cls, optimizer, oracle, theta, state, rngs):
        from .fast.pool import threads
        from .optimizers import ElementwiseOptimizer

        if not (isinstance(optimizer, ElementwiseOptimizer) and getattr(oracle, "rows_independent", False)):
            return None
        if not isinstance(rngs, list) or not isinstance(theta, np.ndarray) or theta.ndim != 2:
            return None
        R = theta.shape[0]
        nt = min(threads(fused=True), R)
        if nt < 2 or theta.size < cls.MIN_SIZE or not theta.flags.c_contiguous or len(rngs) != R:
            return None
        for v in state.values():
            if isinstance(v, np.ndarray) and (v.shape != theta.shape or not v.flags.c_contiguous):
                return None
        per = -(-R // nt)
        bounds = [(r0, min(R, r0 + per)) for r0 in range(0, R, per)]
        return cls(optimizer, oracle, rngs, bounds, len(bounds), theta.shape)

    @staticmethod
    def _rows(state, theta, index):
        return {
            key: (v[index] if isinstance(v, np.ndarray) and v.shape == theta.shape else v) for key, v in state.items()
        }

    def _part(self, r0, r1, t, theta, state, gbuf, prev, metrics):
        from .fast import fused as _fused
        from .fast import simkernels as _simkernels

        th, gb = theta[r0:r1], gbuf[r0:r1]
        if metrics is not None:
            self._metrics_rows(r0, r1, theta, t, *metrics)
        g = self.oracle(th, t, self.part_rngs[r0], out=gb)
        if g is not gb:
            np.copyto(gb, g)
        if prev is not None:
            np.copyto(prev[r0:r1], th)
        given = self._rows(state, theta, slice(r0, r1))
        # a non-finite gradient is counted by the step (its kernels, while they read it) into this part's
        # tally, not on the optimizer: step() below counts the logical step once; the fused kernel also
        # counts the non-finite new parameters it stores, so the rows are checked only when there are some
        # (or when no such kernel ran: watched[0] is None)
        with deferred_nonfinite(self.optimizer) as nonfinite, _fused.watch_new_theta() as watched:
            new_th, new_st = self.optimizer.step(th, gb, given, donate=True)
        if watched[0] == 0 and new_th is th:
            self.tbad[r0:r1] = False
            bad = False
        else:
            bad = bool(_simkernels.nonfinite_rows(np.ascontiguousarray(new_th), self.tbad[r0:r1]).any())
        return new_th, new_st, {"theta": th, **given}, nonfinite[0], bad

    def _steps_part(self, r0, r1, t0, t1, theta, state, gbuf, metrics):
        """Steps t0..t1-1 of rows r0:r1 (:meth:`steps`), each as in :meth:`_part`; the first step's metrics
        first when ``metrics`` asks for them. Returns (theta rows, state rows, the rows given, the steps whose
        gradient had a NaN/inf, {step: rows whose new parameters are not all finite}, None or (the step
        that raised, its exception))."""
        from .fast import fused as _fused
        from .fast import simfused as _simfused
        from .fast import simkernels as _simkernels

        th, gb = theta[r0:r1], gbuf[r0:r1]
        given = self._rows(state, theta, slice(r0, r1))
        st, rngs, opt, oracle = given, self.part_rngs[r0], self.optimizer, self.oracle
        nonfinite_steps, bad = set(), {}
        flags = np.zeros(r1 - r0, dtype=bool)
        t = t0
        try:
            if metrics is not None:
                self._metrics_rows(r0, r1, theta, t0, *metrics)
            # the steps in one kernel call where the oracle and the optimizer have one (the same bits); the
            # steps it leaves (a batch size, a schedule, a rule's branch) one by one below
            got = _simfused.run_steps(opt, oracle, th, st, rngs, t0, t1) if self.multi else None
            if got is not None:
                done, st, nonfinite_steps, bad = got
                t0 += done
            for t in range(t0, t1):
                g = oracle(th, t, rngs, out=gb)
                if g is not gb:
                    np.copyto(gb, g)
                with deferred_nonfinite(opt) as nonfinite, _fused.watch_new_theta() as watched:
                    new_th, st = opt.step(th, gb, st, donate=True)
                if nonfinite[0]:
                    nonfinite_steps.add(t)
                if new_th is not th or watched[0] != 0:  # else the kernel counted no non-finite parameter
                    if new_th is not th:
                        np.copyto(th, new_th)  # the next step's oracle reads these rows
                    if _simkernels.nonfinite_rows(th, flags).any():
                        bad[t] = flags.copy()
        except Exception as exc:
            return th, st, {"theta": th, **given}, nonfinite_steps, bad, (t, exc)
        return th, st, {"theta": th, **given}, nonfinite_steps, bad, None

    def steps(self, t0, t1, theta, state, gbuf, metrics):
        """Steps t0..t1-1 with one task per thread (each part runs its rows through all of them: the rows
        are independent), the metrics at theta_t0 first (``metrics`` = (problem, q, mbuf)). Returns (theta,
        state, the steps at which a part's gradient had a NaN/inf, {step: (R,) rows whose new parameters are
        not all finite}, the metrics at theta_t0, None or (the first step that raised, its exception): the
        caller replays the steps before it and raises it; at the same step the first part's)."""
        R = theta.shape[0]
        pre = (np.empty(R), np.empty(R), np.empty(R))
        results = self._run(self._steps_part, t0, t1, theta, state, gbuf, (*metrics, pre))
        nonfinite, bad, err = set(), {}, None
        for (r0, r1), res in zip(self.bounds, results):
            nonfinite |= res[3]
            for t, flags in res[4].items():
                if t not in bad:
                    bad[t] = np.zeros(R, dtype=bool)
                bad[t][r0:r1] = flags
            if res[5] is not None and (err is None or res[5][0] < err[0]):
                err = res[5]
        if err is None:
            parts = [(slice(r0, r1), res[:3]) for (r0, r1), res in zip(self.bounds, results)]
            theta, state = self._assemble(theta, state, parts)
        return theta, state, nonfinite, bad, pre, err

    def _run(self, fn, *args):
        """``[fn(r0, r1, *args) for each part]``: the first part on this thread, the others on the pool (one
        submission each, in a copy of this thread's context: numpy's error state travels with them); every
        part finishes before an error is raised."""
        import contextvars

        from .fast import pool as _pool

        pool = _pool.get_pool(self.nt)
        futs = []
        first, err = None, None
        try:
            for r0, r1 in self.bounds[1:]:
                futs.append(pool.submit(contextvars.copy_context().run, fn, r0, r1, *args))
            with _pool.inline():
                first = fn(*self.bounds[0], *args)
        except BaseException as exc:
            err = exc
        results = [first]
        for f in futs:
            try:
                results.append(f.result())
            except BaseException as exc:
                err = err or exc
        if err is not None:
            raise err
        return results

    def step(self, t, theta, state, gbuf, prev, metrics=None, until=None):
        """One step; returns (theta, state, rows whose new parameters are not all finite or None when every
        row is finite, whether a part's gradient had a NaN/inf: pass it to :meth:`count`, the default
        metrics at theta_t when ``metrics`` = (problem, q, mbuf) asks for them, else None). With ``until``:
        steps t..until-1 at once, see :meth:`steps` (``prev`` must be None)."""
        if until is not None:
            return self.steps(t, until, theta, state, gbuf, metrics)
        pre = None
        if metrics is not None:
            R = theta.shape[0]
            pre = (np.empty(R), np.empty(R), np.empty(R))
            metrics = (*metrics, pre)
        results = self._run(self._part, t, theta, state, gbuf, prev, metrics)
        parts = [(slice(r0, r1), res[:3]) for (r0, r1), res in zip(self.bounds, results)]
        theta, state = self._assemble(theta, state, parts)
        bad = self.tbad if any(res[4] for res in results) else None
        return theta, state, bad, any(res[3] for res in results), pre

    def count(self, nonfinite: bool) -> None:
        """Count the step once on the optimizer when a part's gradient had a NaN or inf (the one warning)."""
        if nonfinite:
            count_nonfinite(self.optimizer, 1)

    @staticmethod
    def _metrics_rows(r0, r1, point, t, problem, q, mbuf, out):
        """The default metrics of rows r0:r1 of ``point`` into ``out`` = (f, ||grad f||_q^q, ||grad f||_2)."""
        from .fast import simkernels as _simkernels

        fv, gp, g2 = out
        with np.errstate(all="ignore"):
            x = point[r0:r1]
            fv[r0:r1] = _host(problem.f(x, t))
            g = problem.grad_into(x, t, mbuf[r0:r1]) if hasattr(problem, "grad_into") else problem.grad(x, t)
            both = _simkernels.dual_and_l2(g, q) if isinstance(g, np.ndarray) else None  # one kernel
            if both is None:
                both = (lp_norm(g, q) ** q, lp_norm(g, 2.0))
            gp[r0:r1], g2[r0:r1] = _host(both[0]), _host(both[1])

    def metrics(self, problem, point, t, q, mbuf):
        """The default metrics of a recorded step (f, ||grad f||_q^q, ||grad f||_2 at ``point``), each part
        on its rows (problems with ``rows_independent``: the same bits as on all rows)."""
        R = point.shape[0]
        out = (np.empty(R), np.empty(R), np.empty(R))
        self._run(self._metrics_rows, point, t, problem, q, mbuf, out)
        return out

    def _assemble(self, theta, state, parts):
        """The whole-array (theta, state) from the parts' results: in place already where the optimizer
        wrote into the row views it was given (``donate=True``), else copied in."""
        for index, (new_th, _, given) in parts:
            if new_th is not given.get("theta"):
                theta[index] = new_th
        ref = parts[0][1][1]
        new_state = {}
        for key, v in ref.items():
            if isinstance(v, np.ndarray) and v.ndim == theta.ndim and v.shape[1:] == theta.shape[1:]:
                full = state.get(key)
                if not (isinstance(full, np.ndarray) and full.shape == theta.shape and full.flags.writeable):
                    full = np.empty(theta.shape, dtype=v.dtype)
                for index, (_, st, given) in parts:
                    if st[key] is not given.get(key) or full is not state.get(key):
                        full[index] = st[key]
                new_state[key] = full
            else:
                new_state[key] = v
        return theta, new_state


def _f_star(problem) -> float:
    """f* from the problem's certificate (or its ``f_star`` attribute); NaN when it has none."""
    certs = getattr(problem, "certificates", None)
    if certs is not None:
        c = certs().get("f_star")
        if c is not None:
            return float(c())
    v = getattr(problem, "f_star", None)
    return math.nan if v is None else float(v)
