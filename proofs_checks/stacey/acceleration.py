"""The acceleration exponent (p+2)/p of the paper's eq. (1), and where Stacey stands.

Claim (Section 1, eq. (1)): for convex f, L-smooth w.r.t. ||.||_p (p >= 2), accelerated methods reach
f(x_T) - f* = O(L ||x_0 - x*||_p^2 / T^{(p+2)/p}) (Nemirovskii & Nesterov 1985; Diakonikolas & Guzman
2024, Thm. 2), tight when T <= d (Guzman & Nemirovski 2015).

What the three records show (the claim is a worst-case rate over a function class, so no chosen instance
can establish it):

* the explicit bound at every T (``acc.upper``) on every instance run: the class-wide guarantee is the
  theorem behind the bound; the records check that the runs obey it (an instance can refute it);
* tightness on the resisting oracle (``acc.lower``, d = T + 1, so T <= d): every method's certified gap
  stays above the lower bound; this is where "tight when T <= d" is tested (the exponent records do not
  test it, and their statement does not carry it);
* ``acc.exponent``: refutation power on chosen instances, never a class-wide verdict (evidence
  ``instance``, :func:`proofs_checks.verdict.scope_to_instances`): a fit that reaches the claim is
  "consistent with the claim on these instances only" (``inconclusive``), and methods without an
  accelerated rate (plain Euclidean gradient descent, heavy-ball momentum, l_p steepest descent) are run
  through the same rule as controls: on ``spectral-quarter`` plain gradient descent decays like T^-1.27,
  faster than (p+2)/p for p >= 8, which is why a fit on instances cannot give the accelerated word.

The rule, fixed before measuring: the instances are :data:`FIXED` (d = 4096, built once whatever the
horizon); the verdict is decided on the primary grid (:func:`exponent_grid`: T = 8, 16, ..., doubling, 5
points quick, 7 full); the spread over five grids (:func:`spread_grids`: the same number of doubling points
from T0 = round(8 * 2^(k/4)), k = 0..4, i.e. T0 = 8, 10, 11, 13, 16; the first is the primary grid) is
reported in every exponent record's ``data["spread"]`` (exponent and verdict on each grid, min and max).

Records:

* ``acc.upper``: the accelerated method's gap <= 2^{(3p-4)/p} L R^2 T^{(p-2)/p} / (T (T+1)) at every T
  on every instance (the guarantee of linear coupling with the l_p^p mirror map,
  :func:`lptheory.accelerated.accelerated_bound`);
* ``acc.lower``: on the Guzman-Nemirovski resisting oracle every method's gap (certified from below
  through an explicit point of the ball) stays above R N^{-1/p} - N delta >= L R^2 / (32 (p-1) (T+1)^{(p+2)/p});
* ``acc.exponent`` (instance evidence): decay exponents measured on *fixed-L* instances (:data:`FIXED`,
  :class:`synthetic.hard_instance.SpectralDiagonal`: L, R and f* do not depend on the horizon), one record
  per (method, instance): (p+2)/p for ``accelerated-lp``, 1 for ``steepest-lp`` (Kelner et al. 2014),
  2 for ``agd-euclidean`` at p = 2; Stacey (no rate proved in the paper) and Euclidean AGD at p > 2 are
  measured and reported ``not-applicable``. Each claim is an upper-bound rate (faster decay is
  consistent), decided by precision (:func:`proofs_checks.verdict.decide_rate`: the interval's lower end
  must reach the claim minus the margin).

Why not the resisting oracle for the exponent: there delta and L = 8 (p-1)/delta are rebuilt for each
horizon, so L R^2 N^{-(p+2)/p} is also the gap of a point that never moves; every method's normalized gap
is pinned at (p+2)/p by construction (a method that does not move scored 2.000, 1.667, 1.500, 1.333 at
p = 2, 3, 4, 6). It certifies the lower bound at each T (``acc.lower``), not a method's exponent.

Negative controls (:func:`proofs_checks.verdict.gate_on_controls`): next to every exponent claim the same
rule is applied to controls that must fail it: ``static`` (a method that does not move: exponent 0) and,
for a claim faster than 1, the non-accelerated methods ``steepest-lp`` (plain l_p steepest descent),
``gd-euclidean`` (plain gradient descent, step 1/L_2) and ``heavy-ball`` (Polyak momentum, beta = 1/2,
step (1 - beta)/L_2: Ghadimi, Feyzmahdavian & Johansson 2015, O(1/T) on convex L-smooth f), whose
worst-case exponent is 1 < (p+2)/p. A
``holds`` stands only when every control fails; otherwise the record is ``inconclusive``, "the check
cannot tell <method> from <control>". Control records carry ``params.control`` and are never ``holds``.
"""

from __future__ import annotations

import math
import time

import numpy as np
import sympy as sp

from lptheory.accelerated import AcceleratedLp, SteepestLp, accelerated_bound, coupling_update
from lptheory.fast.step import bound_steps, rows_step
from lptheory.geometry import lp_norm
from lptheory.optimizers import SGD, Optimizer, StaceyP2, StaceyPP, deferred_nonfinite
from lptheory.simulate import Observer, StepView, exact_oracle, simulate

from ..api import (
    RATE_MARGIN,
    ClaimSpec,
    claim_record,
    control_verdict,
    decide_rate,
    fit_exponent,
    gate_on_controls,
    scope_to_instances,
    value_claim,
)

METHODS = ("accelerated-lp", "steepest-lp", "agd-euclidean", "stacey-p2", "stacey-pp")
SOURCE = (
    "Section 1, eq. (1); the method: linear coupling with the l_p^p mirror map (Nemirovskii & Nesterov 1985; "
    "Diakonikolas & Guzman 2024, Thm. 2); tightness: Guzman & Nemirovski (2015)"
)
EXPONENT = ClaimSpec(
    id="acc.exponent",
    source=SOURCE,
    relation="rate",
    statement="f(x_T) - f* = O(L ||x_0 - x*||_p^2 / T^{(p+2)/p}) for accelerated l_p methods (convex, L-smooth in ||.||_p); "
    "looked at on chosen instances (tightness when T <= d: acc.lower)",
    assumptions=("convex", "L-smooth w.r.t. ||.||_p"),
    show=("p", "method", "instance"),
)
UPPER = ClaimSpec(
    id="acc.upper",
    statement="f(y_T) - f* <= 2^{(3p-4)/p} L R_hat^2 T^{(p-2)/p} / (T (T+1)) (accelerated l_p method)",
    source="the guarantee of linear coupling with the l_p^p mirror map (Nemirovskii & Nesterov 1985; Diakonikolas & Guzman "
    "2024, Thm. 2), constants as derived for this toolkit (lptheory.accelerated.accelerated_bound)",
    assumptions=("convex", "L-smooth w.r.t. ||.||_p", "R_hat >= ||x_0 - x*||_p"),
    show=("p", "problem", "method"),
)
LOWER = ClaimSpec(
    id="acc.lower",
    statement="f(x_N) - min_{||x||_p <= R} f >= R N^{-1/p} - N delta >= L R^2/(32 (p-1) (T+1)^{(p+2)/p}) for every "
    "deterministic first-order method",
    source="Guzman & Nemirovski, J. Complexity 31 (2015): the resisting oracle",
    relation=">=",
    assumptions=("the resisting oracle", "d >= T + 1"),
    show=("p", "problem"),
)
DEFAULT_P = (2.0, 3.0, 4.0, 6.0)


class _FinalGap(Observer):
    """At the last step: the normalized gap (f(output) - f*) / (L R^2) of the instance."""

    name = "final-gap"

    def __init__(self, steps, inst):
        self.steps, self.inst, self.gap = steps, inst, math.inf

    def on_record(self, v):
        if v.t != self.steps:
            return {}
        y = np.asarray(v.point, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            self.gap = math.inf
            return {}
        inst = self.inst
        gap = inst["final"](y[0]) if inst["final"] else float(inst["problem"].f(y[0])) - inst["f_star"]
        self.gap = float(gap) / (inst["L"] * inst["R"] ** 2)
        return {}


def _from_problem(pr, p, f_star, x_star):
    return {
        "problem": pr,
        "x0": pr.x0(),
        "f_star": f_star,
        "x_star": x_star,
        "R": float(lp_norm(pr.x0() - x_star, p)),
        "L": pr.certificate("L")(p),
        "L2": pr.certificate("L")(2.0),
        "final": None,
    }


def _quad_diag(p, T, seed):
    from synthetic.problems import QuadraticDiagonal

    pr = QuadraticDiagonal(d=64, profile="power", seed=seed)
    return _from_problem(pr, p, 0.0, pr.c)


def _quad_dense(p, T, seed):
    from synthetic.problems import QuadraticDense

    pr = QuadraticDense(d=32, cond=100.0, seed=seed)
    return _from_problem(pr, p, 0.0, pr.c)


_LSE_CACHE: dict = {}


def _lse(p, T, seed):
    from scipy.optimize import minimize

    from synthetic.problems import LogSumExp

    pr = LogSumExp(d=32, m=16, mu=0.5, seed=seed)
    if seed not in _LSE_CACHE:
        res = minimize(
            lambda z: float(pr.f(z)),
            np.zeros(pr.d),
            jac=lambda z: pr.grad(z),
            method="L-BFGS-B",
            options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000},
        )
        _LSE_CACHE[seed] = (float(res.fun), res.x)
    return _from_problem(pr, p, *_LSE_CACHE[seed])


def _gn(p, T, seed):
    from synthetic.hard_instance import GuzmanNemirovski

    o = GuzmanNemirovski(d=T + 1, T=T, p=p, R=1.0)

    def final(y):  # the output counts as the N-th query; the gap is certified from below via the ball point
        fy, _ = o.query(y)
        fb, _ = o.evaluate(o.ball_point())
        return fy - fb

    return {
        "problem": o,
        "x0": np.zeros(o.d),
        "f_star": None,
        "x_star": None,
        "L": o.L,
        "L2": o.M,
        "R": 1.0,
        "ball": 1.0,
        "final": final,
        "oracle": o,
    }


def _spectral(alpha, beta):
    def build(p, T, seed):
        from synthetic.hard_instance import SpectralDiagonal

        pr = SpectralDiagonal(d=_FIXED_D, alpha=alpha, beta=beta)
        return _from_problem(pr, p, 0.0, pr.c)

    return build


_FIXED_D = 4096  # >= 8 T_max of the primary grids (4 T_max of the spread grids of the full run)
FIXED = {  # fixed-L instances for the exponent (built once, whatever the horizon)
    "spectral-flat": _spectral(2.0, 0.5),  # flat spectral measure near 0 (GD ~ T^-1, AGD ~ T^-2 at p = 2)
    "spectral-quarter": _spectral(2.0, 0.25),
}
INSTANCES = {
    "quadratic-diagonal": _quad_diag,
    "quadratic-dense": _quad_dense,
    "logsumexp": _lse,
    "guzman-nemirovski": _gn,
    **FIXED,
}
PINNED = {"guzman-nemirovski"}  # the lower-bound instance pins the exponent (never used for acc.exponent)
CONTROLS = ("static", "steepest-lp", "gd-euclidean", "heavy-ball")
CONTROL_WHAT = {
    "static": "a method that does not move (its gap stays f(x_0) - f*: decay exponent 0)",
    "steepest-lp": "plain l_p steepest descent on the same instance (known decay exponent 1, slower than the claim)",
    "gd-euclidean": "plain Euclidean gradient descent, step 1/L_2, on the same instance (not accelerated: worst-case "
    "exponent 1, slower than the claim)",
    "heavy-ball": "heavy-ball momentum (beta = 1/2, step (1 - beta)/L_2; Ghadimi et al. 2015) on the same instance "
    "(not accelerated: worst-case exponent 1, slower than the claim)",
}
HEAVY_BALL_BETA = 0.5
"""Heavy-ball control's momentum; its step is (1 - beta)/L_2, the range of Ghadimi, Feyzmahdavian & Johansson
(2015) for O(1/T) on convex L-smooth functions."""
CLASS_WIDE = (
    "the class-wide evidence is acc.upper (the explicit bound at every T) and acc.lower (the resisting oracle, "
    "tightness when T <= d)"
)
"""Where an ``acc.exponent`` record points for the worst case (its own evidence is ``instance``)."""
"""What each negative control of ``acc.exponent`` is, in the words its record gives."""


def _make(method, p, inst, T, hyper=None):
    if method == "accelerated-lp":
        return AcceleratedLp(p=p, L=inst["L"], T=T, R_hat=inst["R"], radius=inst.get("ball"))
    if method == "agd-euclidean":
        R2 = (
            float(lp_norm(inst["x0"] - inst["x_star"], 2))
            if inst.get("x_star") is not None
            else math.sqrt(inst["x0"].size)
        )
        return AcceleratedLp(p=2.0, L=inst["L2"], T=T, R_hat=R2)
    if method == "steepest-lp":
        return SteepestLp(p=p, L=inst["L"])
    if method == "gd-euclidean":
        return SGD(lr=1.0 / inst["L2"], momentum=0.0)
    if method == "heavy-ball":
        return SGD(lr=(1.0 - HEAVY_BALL_BETA) / inst["L2"], momentum=HEAVY_BALL_BETA)
    cls = StaceyP2 if method == "stacey-p2" else StaceyPP
    return cls(p=p, eps=0.0, weight_decay=0.0, **dict(hyper or {}))


def run_method(method, p, instance, T, seed=0, hyper=None) -> float:
    """Normalized gap (f(output) - f*) / (L_p R_p^2) after T gradient queries (one simulator run);
    ``static`` (the negative control that does not move) is the gap of x_0."""
    inst = INSTANCES[instance](p, T, seed)
    if method == "static":
        if inst["final"]:
            raise ValueError("the static control is measured on fixed instances only")
        return (float(inst["problem"].f(inst["x0"])) - inst["f_star"]) / (inst["L"] * inst["R"] ** 2)
    opt = _make(method, p, inst, T, hyper)
    pr = inst["problem"]
    obs = _FinalGap(T, inst)
    simulate(
        opt,
        pr,
        exact_oracle(pr),
        T,
        1,
        seed,
        record_every=T,
        theta0=inst["x0"],
        observers=[obs],
        default_metrics=False,
        on_nonfinite="record",
    )
    return obs.gap


def _tune_grid(inst) -> list:
    """The tuning grid of Stacey's hyper-parameters for an instance: (lr, alpha, tau) x (no momentum, momentum),
    lr and alpha in units of 1/L."""
    base = 1.0 / inst["L"]
    return [
        {"lr": lr, "alpha": alpha, "tau": tau, "beta1": b1, "beta2": b2}
        for lr in (0.3 * base, base, 3 * base)
        for alpha in (base, 10 * base)
        for tau in (0.05, 0.3)
        for b1, b2 in ((0.0, 0.0), (0.9, 0.99))
    ]


def _tune(method, p, instance, T, seed, runs=None):
    """Grid over (lr, alpha, tau) x (no momentum, momentum), best normalized gap at the largest T.
    ``runs`` (optional): a dict memoizing :func:`run_method` (the tuned run is then not repeated; on an
    instance with its own oracle per run, the resisting oracle, the grid's runs are made as the rows of one
    run first: :func:`_oracle_configs`)."""
    inst = INSTANCES[instance](p, T, seed)
    grid = _tune_grid(inst)
    if runs is not None and inst["final"] and method in HORIZON_FREE:
        _oracle_configs(runs, method, p, instance, T, seed, grid)
    best, arg = math.inf, grid[0]
    for h in grid:
        gp = _memo_run(runs, method, p, instance, T, seed, h)
        if gp < best:
            best, arg = gp, h
    return arg, len(grid)


def _memo_run(runs, method, p, instance, T, seed, hyper=None) -> float:
    """:func:`run_method` memoized in ``runs`` (None: not memoized); a run is deterministic in its arguments."""
    if runs is None:
        return run_method(method, p, instance, T, seed, hyper)
    key = (method, p, instance, T, seed, tuple(sorted((hyper or {}).items())))
    if key not in runs:
        runs[key] = run_method(method, p, instance, T, seed, hyper)
    return runs[key]


class _OracleRows:
    """Independent stateful problems (each run's own resisting oracle) as the rows of one problem: row r is
    queried by problem r alone, with the row as its one replicate, in the order of its own run (one query
    per step), so every oracle sees the queries of its own run and answers with its bits."""

    name = "oracle-rows"
    stateful = False  # each row's oracle keeps its own state; the rows do not share one

    def __init__(self, problems):
        self.problems = list(problems)
        self.d = self.problems[0].d
        self._buf = None
        if any(pr.d != self.d for pr in self.problems):
            raise ValueError("_OracleRows: problems of one dimension")

    def grad(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        # into a buffer reused across steps (the simulator reads it before the next call and keeps nothing of
        # it): the same gradient array at every step keeps each configuration's kernel bound to its rows
        if self._buf is None or self._buf.shape != x.shape:
            self._buf = np.empty(x.shape)
        for r, pr in enumerate(self.problems):
            self._buf[r] = pr.grad(x[r : r + 1], t)[0]
        return self._buf

    def f(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        return np.concatenate([np.atleast_1d(pr.f(x[r : r + 1], t)) for r, pr in enumerate(self.problems)])


class _FinalRows(Observer):
    """:class:`_FinalGap` of every row (row r: instance r) at the last step."""

    name = "final-rows"

    def __init__(self, steps, insts):
        self.finals = [_FinalGap(steps, inst) for inst in insts]

    def on_record(self, v):
        if v.t != self.finals[0].steps:
            return {}
        y = np.asarray(v.point, dtype=np.float64)
        for r, ob in enumerate(self.finals):
            ob.on_record(
                StepView(t=v.t, new_theta=None, point=y[r : r + 1], state={}, problem=None, optimizer=None, xp=np)
            )
        return {}


def _oracle_configs(runs, method, p, instance, T, seed, hypers) -> None:
    """``runs[key] = run_method(method, p, instance, T, seed, h)`` for every configuration ``h`` of ``hypers``
    not memoized yet (a horizon-free method on an instance whose runs each build their own oracle), from one
    simulator run over one row per configuration (:class:`_ConfigRows` with one row each,
    :class:`_OracleRows`): the bits of the separate runs, one simulator loop instead of one per configuration
    (the resisting oracle's tuning: 48 runs of 128 steps per p; measured, CPU of a full check: 1.8-2.1 s as
    separate runs, 0.9-1.2 s as rows)."""
    todo = [h for h in hypers if (method, p, instance, T, seed, tuple(sorted(h.items()))) not in runs]
    if not todo:
        return
    insts = [INSTANCES[instance](p, T, seed) for _ in todo]  # a fresh oracle per run, as run_method builds
    opt = _ConfigRows([_make(method, p, i, T, h) for i, h in zip(insts, todo)], 1)
    pr = _OracleRows([i["problem"] for i in insts])
    obs = _FinalRows(T, insts)
    simulate(
        opt,
        pr,
        exact_oracle(pr),
        T,
        len(todo),
        seed,
        record_every=T,
        theta0=np.stack([np.asarray(i["x0"], dtype=np.float64) for i in insts]),
        observers=[obs],
        default_metrics=False,
        on_nonfinite="record",
    )
    for h, ob in zip(todo, obs.finals):
        runs[(method, p, instance, T, seed, tuple(sorted(h.items())))] = ob.gap


HORIZON_FREE = ("stacey-p2", "stacey-pp", "steepest-lp", "gd-euclidean", "heavy-ball")
"""Methods whose iterates do not depend on the horizon T (no T in their hyper-parameters): one run to the
largest T gives the gap at every T of a grid, bit for bit the gaps of separate runs."""


class _RowStack:
    """Instances of one dimension as the rows of one problem (row r: instance r's gradient and value), so
    that one optimizer runs them all in one call per step (an element-wise or row-wise method gives each
    row the bits of its own run)."""

    name = "row-stack"
    stateful = False

    def __init__(self, problems):
        self.problems = list(problems)
        self.d = self.problems[0].d
        if any(pr.d != self.d or getattr(pr, "stateful", False) for pr in self.problems):
            raise ValueError("_RowStack: instances of one dimension, not stateful")
        # diagonal quadratics sharing their spectrum (SpectralDiagonal: grad = h (x - c)): one product for all
        # rows, the same element-wise operations as each instance's own gradient
        from synthetic.hard_instance import SpectralDiagonal

        self._hc, self._buf = None, None
        pr0 = self.problems[0]
        if all(type(pr) is SpectralDiagonal and np.array_equal(pr.h, pr0.h) for pr in self.problems):
            self._hc = (pr0.h, np.stack([pr.c for pr in self.problems]))

    def grad(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        if self._hc is not None:
            h, C = self._hc
            if self._buf is None or self._buf.shape != x.shape:
                self._buf = np.empty(np.broadcast_shapes(x.shape, C.shape))
            # h * (x - c) row by row, into a buffer reused across steps (the simulator reads it before the
            # next call and keeps nothing of it)
            k = _scaled_shift_kernel() if x.shape == C.shape and x.flags.c_contiguous else None
            if k is not None:
                k(x, C, h, self._buf)
                return self._buf
            np.subtract(x, C, out=self._buf)
            return np.multiply(h, self._buf, out=self._buf)
        return np.stack([pr.grad(x[r], t) for r, pr in enumerate(self.problems)])

    def f(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        return np.array([float(pr.f(x[r], t)) for r, pr in enumerate(self.problems)])


_KERNEL: dict = {}


def _scaled_shift_kernel():
    """out[r] = h * (x[r] - c[r]) in one compiled pass (numba; None without the fused engine): the operations of
    :meth:`_RowStack.grad`'s two numpy calls, element by element (a subtraction, then a product: the same
    bits), without writing and reading the difference back."""
    if "k" not in _KERNEL:
        from lptheory import parallel

        k = None
        if parallel.fused_available():
            import numba

            from lptheory.fast import numba_cache

            numba_cache.install(__file__)  # a stale disk-cache entry is recompiled, not a crash or old code

            @numba.njit(nogil=True, error_model="numpy", cache=True)
            def k(x, C, h, out):
                rows, d = x.shape
                for r in range(rows):
                    xr, cr, orow = x[r], C[r], out[r]
                    for i in range(d):
                        orow[i] = h[i] * (xr[i] - cr[i])

        _KERNEL["k"] = k
    return _KERNEL["k"]


class _GridGaps(Observer):
    """At each horizon T of ``grid``: the normalized gap (f(output) - f*) / (L R^2) of every row (instance),
    computed exactly as :class:`_FinalGap` computes it at the last step of a run of T steps."""

    name = "grid-gaps"

    def __init__(self, grid, insts):
        self.grid, self.insts = set(grid), insts
        self.gaps = [{} for _ in insts]
        self.raw = [{} for _ in insts]  # f(output) - f* before the normalization (None: a non-finite output)

    def on_record(self, v):
        if v.t not in self.grid:
            return {}
        y = np.asarray(v.point, dtype=np.float64)
        for r, inst in enumerate(self.insts):
            row = y[r]
            if not np.all(np.isfinite(row)):
                self.gaps[r][v.t], self.raw[r][v.t] = math.inf, None
                continue
            gap = float(inst["problem"].f(row)) - inst["f_star"]
            self.raw[r][v.t] = gap
            self.gaps[r][v.t] = _normalize(gap, inst)
        return {}


def _normalize(gap, inst) -> float:
    """The normalized gap of :class:`_GridGaps` from f(output) - f* (None: a non-finite output, inf)."""
    return math.inf if gap is None else float(gap) / (inst["L"] * inst["R"] ** 2)


def run_rows(method, p, insts, grid, seed=0, hyper=None) -> list[list[float]]:
    """The normalized gaps at every T of ``grid`` of a horizon-free method (:data:`HORIZON_FREE`) on several
    fixed instances (built dicts, one optimizer for all: same dimension and the same configuration), from
    one run of max(grid) steps over one row per instance: ``[[gap at T for T in grid] per instance]``, the
    bits of :func:`run_method` at each (instance, T)."""
    if method not in HORIZON_FREE:
        raise ValueError(f"run_rows: {method!r} depends on the horizon; horizon-free methods: {HORIZON_FREE}")
    return _gaps_of_rows(_shared_optimizer("run_rows", method, p, insts, max(grid), hyper), insts, grid, seed)


def _shared_optimizer(caller, method, p, insts, T, hyper):
    """The one optimizer of ``method`` for every instance of ``insts`` (they must need the same one)."""
    opt = _make(method, p, insts[0], T, hyper)
    if any(_make(method, p, i, T, hyper) != opt for i in insts[1:]):
        raise ValueError(f"{caller}: the instances need different optimizers (different L)")
    return opt


def _gaps_of_rows(opt, rows, grid, seed, oracle=None, raw=None, start=None, last=None) -> list[list[float]]:
    """One simulator run of ``opt`` over one row per instance of ``rows`` for max(grid) steps: the normalized
    gaps at every T of ``grid``, per row. ``oracle``: the simulator's oracle (default: the rows' exact
    gradients); ``raw`` (a list): receives each row's {T: f(output) - f*} before the normalization.
    ``start``: ``(theta, state, t0)``, the run continued from step t0 (the parameters and the optimizer's state
    there, as a run from x_0 left them: the steps t0 + 1, ..., max(grid) of that run, the same calls on the
    same values); ``last`` (an observer's list): receives ``(theta, state)`` after the last step, copied."""
    pr = _RowStack([i["problem"] for i in rows])
    t0 = 0 if start is None else start[2]
    obs = _GridGaps([T - t0 for T in grid], rows)
    observers = [obs] if last is None else [obs, _LastState(max(grid) - t0, last)]
    simulate(
        opt if start is None else _Resumed(opt, start[1]),
        pr,
        oracle or exact_oracle(pr),
        max(grid) - t0,
        len(rows),
        seed,
        record_at=[T - t0 for T in grid],  # the horizons only (the spread grids' union has gcd 1)
        theta0=np.stack([np.asarray(i["x0"], dtype=np.float64) for i in rows]) if start is None else start[0],
        observers=observers,
        default_metrics=False,
        on_nonfinite="record",
    )
    if raw is not None:
        raw.extend({T + t0: g for T, g in r.items()} for r in obs.raw)
    return [[g[T - t0] for T in grid] for g in obs.gaps]


def _copy_state(state):
    """A copy of an optimizer state (nested dicts and lists of arrays and numbers)."""
    if isinstance(state, dict):
        return {k: _copy_state(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_copy_state(v) for v in state)
    return state.copy() if isinstance(state, np.ndarray) else state


class _LastState(Observer):
    """At step ``steps``: a copy of the parameters and of the optimizer's state, appended to ``out``."""

    name = "last-state"

    def __init__(self, steps, out):
        self.steps, self.out = steps, out

    def on_record(self, v):
        if v.t == self.steps:
            self.out.append((np.array(v.new_theta, dtype=np.float64), _copy_state(v.state)))
        return {}


class _Resumed(Optimizer):
    """``opt`` started from a saved state (its ``init`` returns ``state``; steps and output are ``opt``'s)."""

    name = "resumed"

    def __init__(self, opt, state):
        self.opt, self.state = opt, state

    def init(self, theta):
        return self.state

    def step(self, theta, grad, state, *, donate: bool = False):
        return self.opt.step(theta, grad, state, donate=donate)

    def output(self, theta, state):
        return self.opt.output(theta, state)


class _ConfigRows(Optimizer):
    """Several configurations of one horizon-free method side by side: configuration i steps rows
    ``[i k, (i + 1) k)`` of the parameters with its own optimizer and state (in place, ``donate``), so that
    one simulator run holds every configuration of a tuning grid (one gradient call and one loop step for
    all of them). Each block gets exactly the calls of its own run: the same bits. Configurations of one
    class keep their buffers as the rows of one array per buffer (:meth:`init`), so that once their kernels
    are bound the step is one compiled call for all of them (:func:`lptheory.fast.step.rows_step`), else
    one call per configuration (:func:`lptheory.fast.step.bound_steps`, then each optimizer's ``step``)."""

    name = "config-rows"

    def __init__(self, optimizers, k):
        self.optimizers, self.k = list(optimizers), int(k)
        # (theta, grad, [(theta block, grad block) per configuration], the 2-D stacks of rows_step or None) of
        # the last step
        self._views = None
        self._stacks = None  # each buffer of every configuration as the rows of one array (see init)
        self._memo: dict = {}  # rows_step's checked plan

    def init(self, theta):
        k = self.k
        parts = [o.init(theta[i * k : (i + 1) * k]) for i, o in enumerate(self.optimizers)]
        # the configurations' buffers moved (the same values) into one array per buffer, configuration i its
        # row i, so that lptheory.fast.step.rows_step steps every configuration in one compiled call
        self._stacks = None
        o0 = self.optimizers[0]
        names = getattr(o0, "buffers", None)
        block = theta[:k].shape if k else None
        if (
            names
            and all(type(o) is type(o0) for o in self.optimizers)
            and all(
                type(st.get(nm)) is np.ndarray and st[nm].shape == block and st[nm].dtype == theta.dtype
                for st in parts
                for nm in names
            )
        ):
            stacks = []
            for nm in names:
                big = np.empty((len(parts), math.prod(block)), dtype=theta.dtype)
                for i, st in enumerate(parts):
                    big[i] = st[nm].reshape(-1)
                    st[nm] = big[i].reshape(block)
                stacks.append(big)
            self._stacks = stacks
        return {"step": 0, "parts": parts}

    def step(self, theta, grad, state, *, donate: bool = False):
        if not donate:
            theta = theta.copy()
        views = self._views
        if views is None or views[0] is not theta or views[1] is not grad:
            # the blocks as views kept across steps while the simulator passes the same arrays: each
            # optimizer then steps the same array objects (its kernel bound to them, see
            # ElementwiseOptimizer.step)
            k, nb = self.k, len(self.optimizers)
            blocks = [(theta[i * k : (i + 1) * k], grad[i * k : (i + 1) * k]) for i in range(nb)]
            stacks = None
            if self._stacks is not None and theta.flags.c_contiguous and grad.flags.c_contiguous:
                stacks = [theta.reshape(nb, -1), grad.reshape(nb, -1), *self._stacks]
            views = self._views = (theta, grad, blocks, stacks)
        if views[3] is not None:
            # every configuration's bound kernel in one compiled call (rows_step: the same calls, the same bits;
            # the non-finite gradient counts dropped, as below)
            got = rows_step(self.optimizers, views[3], state["parts"], self._memo)
            if got is not None:
                return theta, {"step": state["step"] + 1, "parts": got[0]}
        parts = []
        blocks = views[2]
        # the configurations whose kernels are bound to their blocks (every step after the first two): their
        # steps in one call (lptheory.fast.step.bound_steps: the same kernels, arrays and scalars, without
        # each optimizer's step() around them); the non-finite gradient counts are dropped, as the tally of
        # deferred_nonfinite below is
        fast = bound_steps(self.optimizers, [b[0] for b in blocks], [b[1] for b in blocks], state["parts"])
        for o, st, (view, gview), got in zip(self.optimizers, state["parts"], blocks, fast):
            if got is not None:
                parts.append(got[0])
                continue
            # a tuning configuration that diverges is recorded (its gap inf, on_nonfinite="record"), the
            # expected outcome of a grid's too-large steps: its non-finite gradients are tallied, not warned about
            with deferred_nonfinite(o):
                new, st = o.step(view, gview, st, donate=True)
            if new is not view:  # an optimizer that did not update in place
                view[...] = new
            parts.append(st)
        return theta, {"step": state["step"] + 1, "parts": parts}


def run_configs(method, p, insts, grid, seed, hypers, states=None) -> list[list[list[float]]]:
    """:func:`run_rows` of every configuration in ``hypers`` (a horizon-free method, one optimizer per
    configuration) in one simulator run over ``len(hypers) x len(insts)`` rows (:class:`_ConfigRows`):
    ``[run_rows(method, p, insts, grid, seed, h) for h in hypers]``, bit for bit. ``states`` (a list):
    receives each configuration's ``(theta, state)`` after the last step (copies), from which
    :func:`_gaps_of_rows` continues its run."""
    if method not in HORIZON_FREE:
        raise ValueError(f"run_configs: {method!r} depends on the horizon; horizon-free methods: {HORIZON_FREE}")
    T, k = max(grid), len(insts)
    opts = [_shared_optimizer("run_configs", method, p, insts, T, h) for h in hypers]
    last: list | None = [] if states is not None else None
    gaps = _gaps_of_rows(_ConfigRows(opts, k), [i for _ in hypers for i in insts], grid, seed, last=last)
    if states is not None:
        theta, state = last[0]
        states.extend((theta[j * k : (j + 1) * k], state["parts"][j]) for j in range(len(hypers)))
    return [gaps[j * k : (j + 1) * k] for j in range(len(hypers))]


class _HorizonRows(Optimizer):
    """Runs of a horizon-dependent :class:`AcceleratedLp` at several horizons as the rows of one run: row r
    is the run of horizon T_r (rows ordered by non-increasing T), stepped with its own c while k <= T_r and
    left untouched after, so that at the last step every row holds its own run's output y_{T_r}. Each
    running row gets the operations of its own run (:func:`lptheory.accelerated.coupling_update` on the
    prefix of rows still running, a_k = c_r k per row): the same bits."""

    name = "horizon-rows"

    def __init__(self, optimizers):
        self.optimizers = list(optimizers)
        if any(not isinstance(o, AcceleratedLp) or o.radius is not None for o in self.optimizers):
            raise ValueError("_HorizonRows: AcceleratedLp rows without a radius")
        Ts = [o.T for o in self.optimizers]
        if len({o.p for o in self.optimizers}) != 1 or Ts != sorted(Ts, reverse=True):
            raise ValueError("_HorizonRows: one p, rows in non-increasing horizon")
        self.p = self.optimizers[0].p
        self.Ts = np.asarray(Ts, dtype=np.int64)
        self.cs = np.asarray([o.c for o in self.optimizers], dtype=np.float64)
        # how many rows take step k, for k = 0..T_0 + 1 (counted once: the oracle and the step both ask)
        ks = np.arange(int(self.Ts[0]) + 2 if Ts else 1)
        self._running = np.count_nonzero(self.Ts[None, :] >= ks[:, None], axis=1).tolist()

    def running(self, k: int) -> int:
        """How many rows take step k (the first ones: those with T_r >= k)."""
        return self._running[k] if 0 <= k < len(self._running) else int(np.count_nonzero(self.Ts >= k))

    def init(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        return {
            "step": 0,
            "x0": theta * 1.0,
            "y": theta * 1.0,
            "v": theta * 1.0,
            "z": np.zeros_like(theta),
            "_work": (np.empty_like(theta), np.empty_like(theta)),
        }

    def step(self, theta, grad, state, *, donate: bool = False):
        if not donate:
            theta = theta.copy()
        k = state["step"] + 1
        n = self.running(k)
        if n:
            st, (s, buf) = state, state["_work"]
            a_k = (self.cs[:n] * k)[:, None]  # each row's float c * k, as AcceleratedLp.step computes it
            # the whole arrays with the count of running rows (the same array objects at every step: the
            # compiled update checks them once)
            coupling_update(theta, grad, st["z"], st["y"], st["v"], st["x0"], s, buf, a_k, k, self.p, rows=n)
        return theta, {**state, "step": k}

    def output(self, theta, state):
        return state["y"]


def _horizon_run(method, p, insts, rows, seed, final, memo=None):
    """One simulator run of :func:`_horizon_gaps` over ``rows`` ((T, instance), non-increasing T): the
    normalized gap of each row's run at its own last step into ``final[(instance, T)]`` (a row stopped at
    its T keeps its output: its gap at the run's last step, as :class:`_GridGaps` computes it). ``memo``
    (optional): f(output) - f* of the runs made, by their optimizers, reused by a run of equal optimizers on
    the same fixed instances and normalized by this p's L_p R_p^2 (``agd-euclidean`` is the same
    AcceleratedLp at every p, set by L_2 and R_2, and ``accelerated-lp``'s at p = 2; the run is
    deterministic in its optimizers, instances and seed)."""
    opts = [_make(method, p, insts[n], T) for T, n in rows]
    key = ("horizon", tuple(opts), tuple(rows), seed)
    got = memo.get(key) if memo is not None else None
    if got is None:
        opt = _HorizonRows(opts)
        H = np.stack([insts[n]["problem"].h for _, n in rows])
        C = np.stack([insts[n]["problem"].c for _, n in rows])
        gbuf = np.zeros_like(C)
        # one spectrum for every row (the fixed instances share it): the compiled h * (x - c) of _RowStack.grad
        k = _scaled_shift_kernel() if all(np.array_equal(h, H[0]) for h in H) else None

        def oracle(theta, t, rngs):  # step t + 1: the running rows' gradients h * (x - c) (SpectralDiagonal.grad)
            n = opt.running(t + 1)
            if k is not None and theta.flags.c_contiguous:
                k(theta[:n], C[:n], H[0], gbuf[:n])
                return gbuf
            np.subtract(theta[:n], C[:n], out=gbuf[:n])
            np.multiply(H[:n], gbuf[:n], out=gbuf[:n])
            return gbuf

        T_max = rows[0][0]
        raw: list = []
        _gaps_of_rows(opt, [insts[n] for _, n in rows], [T_max], seed, oracle=oracle, raw=raw)
        got = {(n, T): r[T_max] for (T, n), r in zip(rows, raw)}
        if memo is not None:
            memo[key] = got
    for (n, T), r in got.items():
        final[(n, T)] = _normalize(r, insts[n])


def _horizon_gaps(method, p, names, grid, seed, memo=None):
    """{instance: [run_method(method, p, instance, T, seed) for T in grid]} for a horizon-dependent method
    (``accelerated-lp``, ``agd-euclidean``) on fixed diagonal instances (:class:`SpectralDiagonal`), from one
    simulator run over one row per (instance, T) (:class:`_HorizonRows`): the bits of the separate runs.
    None when the instances are not of that kind (the caller then runs them one by one)."""
    from synthetic.hard_instance import SpectralDiagonal

    insts = {n: INSTANCES[n](p, grid[-1], seed) for n in names}
    if any(type(i["problem"]) is not SpectralDiagonal or i["final"] or i.get("ball") for i in insts.values()):
        return None
    final = {}
    # one run per doubling band of horizons (T in (2^(j-1), 2^j]): the rows that have stopped stay in the
    # simulator's per-step checks until the run ends, at most half of them
    bands: dict = {}
    for T in sorted(set(grid), reverse=True):
        bands.setdefault((T - 1).bit_length(), []).extend((T, n) for n in names)
    for rows in bands.values():
        _horizon_run(method, p, insts, rows, seed, final, memo)
    return {n: [final[(n, T)] for T in grid] for n in names}


CONFIG_BLOCK = 4
"""Configurations per run in :func:`_fixed_gaps` (:func:`run_configs`): 4 x 2 rows of 4096 keep a step's
arrays near the L2 cache; all 16 in one run (32 rows) measured slower on a loaded machine (CPU of the fixed
part, load 5.5-5.8: one per run 7.5-7.8 s, 16 per run 7.5-8.3 s, 4 per run 6.7-6.8 s, 2 per run 6.7-7.0 s)."""


P_FREE = ("gd-euclidean", "heavy-ball")
"""Controls whose optimizer does not depend on p (their steps are set by L_2): on the fixed instances (built
the same at every p but for the normalization L_p R_p^2) one run serves every p."""


def _fixed_gaps(p, names, grid, seed, tune_at=None, shared=None):
    """For the fixed instances ``names``: {instance: (gaps by method, tuned Stacey configurations, gaps of the
    horizon-free controls)}, as ``run_method`` at every T and ``_tune`` at ``tune_at`` (default: the largest
    T) give them. Instances that share an optimizer
    (same dimension and L: the same tuning grid) run as rows of one run; the horizon-free methods run once
    to the largest T; the tuned configuration's series is the tuning run's own. ``shared`` (optional, one
    dict across the p of a check): the runs of :data:`P_FREE` and the horizon runs of ``agd-euclidean``
    (p-free too), made at the first p and normalized at each."""
    insts = {n: INSTANCES[n](p, grid[-1], seed) for n in names}
    at = grid.index(tune_at) if tune_at is not None else len(grid) - 1
    groups: dict = {}
    for n in names:
        groups.setdefault((insts[n]["problem"].d, insts[n]["L"]), []).append(n)
    series = {n: {} for n in names}
    tuned = {n: {} for n in names}
    for grp in groups.values():
        batch = [insts[n] for n in grp]
        for m in ("stacey-p2", "stacey-pp"):
            configs = _tune_grid(batch[0])
            best = {n: (math.inf, 0) for n in grp}
            runs, states = [], []
            # the tuning runs stop at the tuning horizon (a horizon-free method's gaps up to it are the bits
            # of a longer run); the chosen configuration alone then continues its run to the largest T
            for i in range(0, len(configs), CONFIG_BLOCK):
                runs += run_configs(m, p, batch, grid[: at + 1], seed, configs[i : i + CONFIG_BLOCK], states)
            for c, rows in enumerate(runs):
                for n, gs in zip(grp, rows):
                    if gs[at] < best[n][0]:  # ties keep the first (no configuration beat inf: the first, as _tune)
                        best[n] = (gs[at], c)
            by_config: dict = {}
            for n in grp:
                by_config.setdefault(best[n][1], []).append(n)
            for c, members in by_config.items():
                idx = [grp.index(n) for n in members]
                heads = [runs[c][r][: at + 1] for r in idx]  # the tuning run's gaps up to the tuning horizon
                tails = [[] for _ in members]
                if at + 1 < len(grid):  # its steps after the tuning horizon: run_rows' from there on
                    theta, state = states[c]
                    rows_state = {
                        key: (v[idx] if isinstance(v, np.ndarray) and v.shape == theta.shape else v)
                        for key, v in state.items()
                    }
                    opt = _shared_optimizer("run_rows", m, p, [insts[n] for n in members], grid[-1], configs[c])
                    start = (theta[idx], rows_state, grid[at])
                    tails = _gaps_of_rows(opt, [insts[n] for n in members], grid[at + 1 :], seed, start=start)
                for n, head, tail in zip(members, heads, tails):
                    tuned[n][m] = (configs[c], len(configs))
                    series[n][m] = head + tail
        for m in ("steepest-lp", "gd-euclidean", "heavy-ball"):
            if shared is not None and m in P_FREE:
                opt = _shared_optimizer("run_rows", m, p, batch, max(grid), None)
                key = (m, opt, tuple(grp), tuple(grid), seed)
                if key not in shared:  # f(output) - f* per row and T: the same whatever p (run_rows' run)
                    shared[key] = []
                    _gaps_of_rows(opt, batch, grid, seed, raw=shared[key])
                rows = [[_normalize(raw[T], inst) for T in grid] for raw, inst in zip(shared[key], batch)]
            else:
                rows = run_rows(m, p, batch, grid, seed)
            for n, gs in zip(grp, rows):
                series[n][m] = gs
    # runs of equal optimizers shared by the horizon-dependent methods (agd-euclidean at every p, accelerated-lp
    # at p = 2)
    horizon_runs: dict = shared if shared is not None else {}
    for m in METHODS:  # the horizon-dependent methods: one run over every (instance, T)
        if m not in series[names[0]]:
            got = _horizon_gaps(m, p, names, grid, seed, horizon_runs)
            for n in names if got is not None else ():
                series[n][m] = got[n]
    out = {}
    for n in names:
        gaps = {}
        for m in METHODS:
            gaps[m] = series[n][m] if m in series[n] else [run_method(m, p, n, T, seed) for T in grid]
        ctrl = {m: series[n][m] for m in ("gd-euclidean", "heavy-ball")}
        out[n] = (gaps, tuned[n], ctrl)
    return out


def _claimed(label: str, p: float):
    """The exponent a method of this name claims, or None (with why) when it claims none."""
    if label == "accelerated-lp":
        return (p + 2) / p, None
    if label == "steepest-lp":
        return 1.0, None
    if label == "agd-euclidean":
        return (
            (2.0, None)
            if p == 2.0
            else (None, "Euclidean AGD's guarantee is in l_2 constants (the p = 2 row is its claim)")
        )
    return None, "the paper proves no rate for Stacey; measured for comparison"


def _controls_for(theory: float) -> tuple:
    """The controls that must fail a claimed exponent: the static method always; the non-accelerated methods
    (plain l_p steepest descent, plain Euclidean gradient descent, heavy-ball momentum: worst-case exponent 1)
    for a claim faster than 1 by more than the margin."""
    return CONTROLS if theory > 1.0 + RATE_MARGIN else ("static",)


def _rate_record(params, exponent, ci, theory, verdict, data, show, scope=None):
    """An ``acc.exponent`` record: a rate fitted on chosen instances (evidence ``instance`` unless the verdict
    sets one; :func:`proofs_checks.witnesses.claim_record`)."""
    return claim_record(
        EXPONENT,
        verdict,
        params=params,
        method="exact",
        empirical=exponent,
        bound=theory,
        ci=ci,
        data=data,
        relation="rate",
        show=show,
        scope=scope,
        evidence=verdict.evidence or "instance",
    )


def spread_grids(quick: bool) -> list:
    """The five grids of the spread (fixed before measuring): as many doubling horizons as
    :func:`exponent_grid`, from T0 = round(8 * 2^(k/4)), k = 0..4 (T0 = 8, 10, 11, 13, 16); the first is the
    primary grid the verdict is decided on."""
    n = len(exponent_grid(quick))
    return [[round(8 * 2 ** (k / 4)) * 2**j for j in range(n)] for k in range(5)]


def _instance_scope(instance, grid) -> str:
    what = f"instance {instance}" + (f" (d = {_FIXED_D})" if instance in FIXED else "")
    return f"{what}, T = {', '.join(str(t) for t in grid)}"


def _spread(series, grids, theory, applicable) -> dict | None:
    """The exponent and the rule's verdict on each grid of ``grids`` (``series``: {T: gap}), with min and max."""
    if series is None or not grids:
        return None
    exps, verdicts = [], []
    for g in grids:
        e, lo, hi = fit_exponent([T + 1 for T in g], [series[T] for T in g])
        exps.append(float(e))
        verdicts.append(decide_rate(e, (lo, hi), theory, applicable=applicable, why="-").status)
    return {"T0": [g[0] for g in grids], "exponent": exps, "min": min(exps), "max": max(exps), "verdict": verdicts}


def _spread_text(sp_) -> str:
    if not sp_:
        return ""
    same = len(set(sp_["verdict"])) == 1
    return (
        f"; over the {len(sp_['T0'])} grids T0 = {', '.join(map(str, sp_['T0']))} the exponent spans "
        f"[{sp_['min']:.3f}, {sp_['max']:.3f}] and the rule says "
        + (f"{sp_['verdict'][0]} on every grid" if same else ", ".join(sp_["verdict"]))
    )


def exponent_records(p, instance, grid, gaps, labels, tuned=None, controls=None, spread=None) -> list:
    """acc.exponent for every method on one fixed-L instance: one rule (decide_rate, an upper-bound rate
    decided by precision) whatever the method is called; the reference of a method is the fastest other
    method claiming the same exponent; every claim is gated on its negative controls (``controls``:
    name -> gaps; ``static``, ``steepest-lp``, ``gd-euclidean`` and ``heavy-ball`` by default, taken from
    ``gaps`` when present, else run on the instance when it is one of :data:`FIXED`), and one record per (claimed exponent, control) says whether the control fails as
    it must. A control is run even when it is the method itself under another name (plain gradient descent
    fed in as the accelerated method gets the same verdict as its control, so it cannot get the word).

    Every record is instance evidence (:func:`proofs_checks.verdict.scope_to_instances`): a fit that reaches
    the claim says "consistent with the claim on these instances only" (``inconclusive``), never ``holds``.
    ``spread`` (optional): ``{"grids": [...], "series": {name: {T: gap}}}``; each record's ``data["spread"]``
    then holds the exponent and the verdict on every grid (:func:`_spread`)."""
    if instance in PINNED:
        raise ValueError(f"{instance!r} pins every method's exponent by construction: measure exponents on FIXED")
    out = []
    N = [T + 1 for T in grid]
    ctrl_gaps = dict(controls or {})
    if "static" not in ctrl_gaps:
        ctrl_gaps["static"] = [run_method("static", p, instance, T) for T in grid]
    for c in CONTROLS:
        if c not in ctrl_gaps and c in gaps:
            ctrl_gaps[c] = gaps[c]
        elif c not in ctrl_gaps and instance in FIXED:  # the control run on the same instance and grid
            ctrl_gaps[c] = [run_method(c, p, instance, T) for T in grid]
    fits = {m: fit_exponent(N, gaps[m]) for m in gaps}
    cfits = {c: fit_exponent(N, g) for c, g in ctrl_gaps.items()}
    grids = (spread or {}).get("grids")
    series = (spread or {}).get("series") or {}
    scope = _instance_scope(instance, grid)
    show = ("p", "method", "instance", "control")
    cshow = (*show, "control_for")  # a control shows which claim it controls
    claimed_seen = {}
    for m in gaps:
        label = labels.get(m, m)
        th, why = _claimed(label, p)
        peers = [o for o in gaps if o != m and _claimed(labels.get(o, o), p)[0] == th and th is not None]
        ref = max(peers, key=lambda o: fits[o][0]) if peers else None
        params = {"p": p, "method": label, "instance": instance, "problem": instance, "T": grid}
        if tuned and m in tuned:
            params["hyper"], params["tuning_budget"] = tuned[m][0], f"{tuned[m][1]} configurations at T = {grid[-1]}"
        e, lo, hi = fits[m]
        theory = th if th is not None else (p + 2) / p
        w = {
            "kind": "rate-fit",
            "claim": EXPONENT.id,
            "x": [float(v) for v in N],
            "y": [float(v) for v in gaps[m]],
            "theory": float(theory),
            "margin": RATE_MARGIN,
            "pinned": False,
        }
        if ref is not None:
            w["reference"] = {"x": [float(v) for v in N], "y": [float(v) for v in gaps[ref]], "label": ref}
        v = decide_rate(
            e,
            (lo, hi),
            theory,
            reference=fits[ref][0] if ref else None,
            witness=w,
            applicable=th is not None,
            why=None if th is not None else f"{why}; (p+2)/p = {(p + 2) / p:.3f}, steepest descent's 1",
        )
        if th is not None:
            names = [c for c in _controls_for(th) if c in ctrl_gaps]
            raw = {c: decide_rate(cfits[c][0], cfits[c][1:], th) for c in names}
            v = gate_on_controls(label, v, raw)
            params["controls"] = names
            claimed_seen.setdefault(th, (label, raw))
        sp_ = _spread(series.get(m), grids, theory, th is not None)
        v = scope_to_instances(v, scope + _spread_text(sp_), CLASS_WIDE)
        data = {"T": grid, "gap": gaps[m]}
        if sp_:
            data["spread"] = sp_
        out.append(_rate_record(params, e, (lo, hi), theory, v, data, show, scope))
    for th, (label, raw) in claimed_seen.items():
        for c, cv in raw.items():
            e, lo, hi = cfits[c]
            params = {"p": p, "method": c, "control": c, "control_for": label, "instance": instance, "T": grid}
            data = {"T": grid, "gap": ctrl_gaps[c]} if c not in gaps else {}
            sp_ = _spread(series.get(c), grids, th, True)
            if sp_:
                data["spread"] = sp_
            cv2 = control_verdict(c, cv, CONTROL_WHAT[c])
            cv2 = scope_to_instances(cv2, scope + _spread_text(sp_), CLASS_WIDE)
            out.append(_rate_record(params, e, (lo, hi), th, cv2, data or None, cshow, scope))
    return out


def _upper_record(p, instance, grid, gaps_acc):
    Tsym, psym, gsym = sp.symbols("T p gap", positive=True)
    bound_expr = 2 ** ((3 * psym - 4) / psym) * Tsym ** ((psym - 2) / psym) / (Tsym * (Tsym + 1))
    bnd = [accelerated_bound(1.0, 1.0, T, p) for T in grid]
    ratio = [gp / b for gp, b in zip(gaps_acc, bnd)]
    w = int(np.argmax(ratio))
    witness = {
        "kind": "expression",
        "claim": "acc.upper",
        "relation": "<=",
        "lhs": sp.srepr(gsym),
        "rhs": sp.srepr(bound_expr),
        "scalars": {"gap": gaps_acc[w], "T": grid[w], "p": p},
        "note": "gap: the measured normalized gap (f(y_T) - f*)/(L R^2) of the run; the re-check verifies the "
        "bound and the comparison, the run is reproduced by the command",
    }
    return value_claim(
        UPPER,
        gaps_acc[w],
        bnd[w],
        {"p": p, "problem": instance, "T": grid, "method": "accelerated-lp"},
        witness=witness,
        data={"T": grid, "gap": gaps_acc, "bound": bnd},
        note=f"gap / bound at most {ratio[w]:.3g} over T = {grid}",
    )


def _lower_record(p, instance, grid, gaps, seed):
    worst_r, who = math.inf, None
    lbs = []
    for T in grid:
        o = INSTANCES[instance](p, T, seed)["oracle"]
        lbs.append((o.lower_bound(), o.L))
    for m in gaps:
        for T, gp, (lb, L) in zip(grid, gaps[m], lbs):
            r = gp * L / lb  # gaps are normalized by L R^2 with R = 1
            if r < worst_r:
                worst_r, who = r, (m, T)
    rs = sp.Symbol("ratio", positive=True)
    witness = {
        "kind": "expression",
        "claim": "acc.lower",
        "relation": ">=",
        "lhs": sp.srepr(rs),
        "rhs": sp.srepr(sp.Integer(1)),
        "scalars": {"ratio": worst_r},
        "method": who[0],
        "T": who[1],
    }
    return value_claim(
        LOWER,
        worst_r,
        1.0,
        {"p": p, "problem": instance, "T": grid, "methods": list(gaps)},
        witness=witness,
        tolerance=5e-10,
        note=f"smallest (certified) gap / lower bound over all methods and T: {worst_r:.3g} ({who[0]}, T = {who[1]})",
    )


def exponent_grid(quick: bool) -> list:
    """Horizons of the exponent fit, doubling: 5 points (quick) or 7 (enough for intervals that decide;
    the largest stays <= d/8 on the fixed instances)."""
    return [8, 16, 32, 64, 128] if quick else [8, 16, 32, 64, 128, 256, 512]


def run_acceleration(ctx, *, relabel=None):
    """``lptheory check acceleration``. ``relabel`` (tests only) maps a method name to the name its
    records claim, e.g. {"steepest-lp": "accelerated-lp"} plants a slower method labeled accelerated."""
    p_list = [float(p) for p in ctx.get("p") or DEFAULT_P]
    for p in p_list:
        if not (2.0 <= p < math.inf):
            raise ValueError(f"--p must be in [2, inf) for the acceleration checks, got {p:g}")
    grid = [8, 16, 32, 64] if ctx.quick else [8, 16, 32, 64, 128]
    egrid = exponent_grid(ctx.quick)
    grids = spread_grids(ctx.quick)
    union = sorted({T for g in grids for T in g})
    labels = dict(relabel or {})
    out = []
    t0 = time.perf_counter()
    p_free: dict = {}  # the P_FREE controls' runs on the fixed instances, shared by every p
    for p in p_list:
        fixed = None
        runs: dict = {}  # run_method memoized for this p (the tuned run is not repeated)
        for instance in INSTANCES:
            if instance in FIXED:
                if fixed is None:
                    fixed = _fixed_gaps(
                        p, [n for n in INSTANCES if n in FIXED], union, ctx.seed, tune_at=egrid[-1], shared=p_free
                    )
                gaps_u, tuned, ctrl_u = fixed[instance]
                at = [union.index(T) for T in egrid]
                gaps = {m: [g[i] for i in at] for m, g in gaps_u.items()}
                ctrl = {c: [g[i] for i in at] for c, g in ctrl_u.items()}
                static_u = [run_method("static", p, instance, T, ctx.seed) for T in union]
                series = {m: dict(zip(union, g)) for m, g in {**gaps_u, **ctrl_u, "static": static_u}.items()}
                out.append(_upper_record(p, instance, egrid, gaps["accelerated-lp"]))
                out += exponent_records(
                    p, instance, egrid, gaps, labels, tuned, ctrl, spread={"grids": grids, "series": series}
                )
            elif instance in PINNED:
                tuned = {m: _tune(m, p, instance, grid[-1], ctx.seed, runs) for m in ("stacey-p2", "stacey-pp")}
                gaps = {
                    m: [_memo_run(runs, m, p, instance, T, ctx.seed, tuned[m][0] if m in tuned else None) for T in grid]
                    for m in METHODS
                }
                out.append(_upper_record(p, instance, grid, gaps["accelerated-lp"]))
                out.append(_lower_record(p, instance, grid, gaps, ctx.seed))
            else:
                gaps_acc = [run_method("accelerated-lp", p, instance, T, ctx.seed) for T in grid]
                out.append(_upper_record(p, instance, grid, gaps_acc))
            ctx.say(f"acceleration p={p:g} {instance} done ({time.perf_counter() - t0:.1f}s)")
    return out
