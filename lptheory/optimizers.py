"""Optimizers as values: ``init(theta) -> state``, ``step(theta, grad, state) -> (theta, state)``.

This module is the public place for optimizers: the paper's methods (Algorithms 1-3), its baselines,
and the mechanism that defines a new optimizer once for numpy and torch.

The protocol (:class:`Optimizer`), which every method of the toolkit follows (the accelerated methods
of :mod:`lptheory.accelerated` and the :class:`Projected` wrapper included):

* ``init(theta) -> state``: a dict of arrays plus ``state["step"]`` (an int);
* ``step(theta, grad, state, *, donate=False) -> (theta, state)``: one update;
* ``output(theta, state) -> point``: the point the method reports (``theta`` unless the method
  says otherwise, e.g. the y-sequence of an accelerated method).

Arrays have shape ``(..., d)``; leading axes are independent replicates. numpy arrays and torch
tensors (CPU or CUDA) go through the same code and come back as the caller's kind.

Defining an element-wise optimizer
----------------------------------
Subclass :class:`ElementwiseOptimizer` (a frozen dataclass whose fields are the hyper-parameters):

* ``name``: the CLI name;
* ``buffers``: names of the per-coordinate state arrays (e.g. ``("m", "v")``);
* ``limits``: allowed range of each numeric hyper-parameter (checked at construction for constants,
  and at every step for schedules; errors name the parameter and the range);
* ``derived(h, t)`` (optional): per-step scalars computed from the hyper-parameters (bias corrections);
* ``rule(xp, h, b)``: the update, written once against the array module ``xp`` (``numpy``, ``torch``,
  or the toolkit's multi-tensor and tracing namespaces) with ``out=`` calls. ``h`` holds the named
  scalars of the step (every hyper-parameter at step t, schedules evaluated, plus ``derived`` and
  ``t``); ``b`` the named buffers: ``b.theta``, ``b.grad``, ``b.<name>`` (old state),
  ``b.new_theta``, ``b.new_<name>`` (outputs, which may alias the inputs: read a value before
  overwriting it) and scratch ``b.s1``, ``b.s2``, ... (``n_scratch`` of them).

Any numeric hyper-parameter may be a schedule: a callable of the 0-based step ``t``. The numpy engine
(:mod:`lptheory.fast.engine`) runs the rule on cache-sized chunks; torch runs it on whole tensors.

Paper-exact by default: Algorithms 1-3 as their pseudo-code reads, ``eps_mode="paper"``.
``eps_mode="official"`` reproduces the authors' code.

Buffers. ``step`` never modifies ``theta``, ``grad`` or the arrays of the ``state`` it is given,
unless ``donate=True``: then it may write the new parameters into ``theta`` and the new state into
the old state's arrays (saving the allocation of fresh arrays at every step). Use ``donate=True``
only when the old values are not needed.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import _kernels, _validate, fast
from ._state import Buffers, Hyper
from ._xp import dtype_name, eps_vanishes, is_floating, namespace, reciprocal
from .fast.cache import is_schedule
from .fast.nonfinite import (
    NonFiniteGradientWarning,
    count_nonfinite,
    deferred_nonfinite,
    nonfinite_steps,
    note_nonfinite,
)
from .rules import EXPONENT, NONNEG, UNIT, combine, copy_into, ema, field_info, hyper, mirror, sign, steepest

__all__ = [
    "Optimizer",
    "ElementwiseOptimizer",
    "NonFiniteGradientWarning",
    "is_schedule",
    "check_hyper",
    "check_fields",
    "check_step",
    "flag_fields",
    "hyper",
    "nonfinite_steps",
    "note_nonfinite",
    "count_nonfinite",
    "deferred_nonfinite",
    "Hyper",
    "Buffers",
    "Projected",
    "LpDescent",
    "StaceyP2",
    "StaceyPP",
    "StaceyHyper",
    "StaceyPPHyper",
    "SGD",
    "SignSGD",
    "Adam",
    "AdamW",
    "Lion",
    "OPTIMIZERS",
    "make",
]

LR = float | Callable[[int], float]


def check_hyper(name: str, value, spec: dict):
    """``value`` of hyper-parameter ``name`` checked against its ``limits`` entry ``spec`` (``lo``, ``hi``,
    ``lo_open``, ``hi_open``; ``exponent=True`` for an exponent p): the value, or a ValueError naming
    ``name`` and the allowed range. Shared by every optimizer family (element-wise and matrix)."""
    if spec.get("exponent"):
        return _validate.exponent(
            name,
            value,
            lo=spec.get("lo", 1.0),
            lo_open=spec.get("lo_open", True),
            allow_inf=spec.get("allow_inf", True),
        )
    return _validate.real(
        name,
        value,
        lo=spec.get("lo"),
        hi=spec.get("hi"),
        lo_open=spec.get("lo_open", False),
        hi_open=spec.get("hi_open", False),
    )


def check_fields(opt) -> None:
    """Check (and normalize) the hyper-parameters of optimizer ``opt`` against its class's ``limits`` (numbers
    that are not schedules) and ``choices`` (text fields): ValueError naming the field and what it allows."""
    for name, spec in opt.limits.items():
        v = getattr(opt, name)
        if is_schedule(v):
            continue
        object.__setattr__(opt, name, check_hyper(name, v, spec))
    for name, allowed in opt.choices.items():
        _validate.choice(name, getattr(opt, name), set(allowed))


def _collect(cls) -> None:
    """``cls.limits`` and ``cls.choices`` from the :func:`~lptheory.rules.hyper` fields of ``cls`` and its bases
    (in field order; a field redefined keeps its place), then an explicit ``limits`` of the class body."""
    limits: dict = {}
    choices: dict = {}
    for klass in reversed(cls.__mro__[1:]):
        limits.update(klass.__dict__.get("limits") or {})
        for f in getattr(klass, "__dataclass_fields__", {}).values():
            info = field_info(f)
            if info:
                if info["limits"] is not None:
                    limits[f.name] = info["limits"]
                if info["choices"] is not None:
                    choices[f.name] = info["choices"]
    for name, v in cls.__dict__.items():
        info = field_info(v) if isinstance(v, dataclasses.Field) else None
        if info:
            if info["limits"] is not None:
                limits[name] = info["limits"]
            if info["choices"] is not None:
                choices[name] = info["choices"]
    limits.update(cls.__dict__.get("limits") or {})
    cls.limits = limits
    cls.choices = choices


def flag_fields() -> dict[str, dataclasses.Field]:
    """The hyper-parameters of the registered optimizers that are ``lptheory run`` flags (fields made with
    :func:`~lptheory.rules.hyper`, ``flag`` true), by name, in the order they first appear in the registry."""
    out: dict = {}
    for cls in OPTIMIZERS.values():
        for f in dataclasses.fields(cls):
            info = field_info(f)
            if info and info["flag"] and f.name not in out:
                out[f.name] = f
    return out


def check_step(xp, theta, grad, state) -> int:
    """The checks of a ``step`` call shared by the optimizer families: ``theta`` floating, ``grad`` of its
    shape and dtype, ``state`` a dict with an integer ``"step"`` >= 0 (returned); TypeError or ValueError
    naming what is wrong."""
    if not is_floating(xp, theta):
        raise TypeError(f"theta must have a floating dtype, got {theta.dtype}")
    if tuple(grad.shape) != tuple(theta.shape):
        raise ValueError(f"grad must have theta's shape {tuple(theta.shape)}, got {tuple(grad.shape)}")
    if grad.dtype != theta.dtype:
        raise TypeError(f"grad must have theta's dtype {theta.dtype}, got {grad.dtype}")
    if not isinstance(state, dict) or "step" not in state:
        raise TypeError("state must be the dict returned by init() or step()")
    return _validate.integer("state['step']", state["step"], lo=0)


OPTIMIZERS: dict = {}
"""The registry: CLI name -> optimizer class. Filled by the class definitions themselves (see
:class:`Optimizer`): the CLI (``lptheory run --optimizer``), the sweep's keys, :mod:`lptheory.torch` and the
registry tests read it."""


class Optimizer(ABC):
    """The optimizer protocol: ``init``, ``step``, ``output`` (see the module docstring).

    Registration: a subclass whose family registers (``registered = True``: the element-wise and the matrix
    optimizers), whose class name is public and whose body sets ``name`` joins :data:`OPTIMIZERS` when it is
    defined (``class X(ElementwiseOptimizer, register=False)`` keeps a public class out). A name taken by
    another class is an error; the same class defined again (a module loaded twice) replaces its entry.
    """

    name: ClassVar[str] = "optimizer"
    registered: ClassVar[bool] = False
    limits: ClassVar[dict[str, dict]] = {}
    choices: ClassVar[dict[str, tuple]] = {}

    def __init_subclass__(cls, register: bool | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.registered:
            _collect(cls)
        if register is False or not cls.registered or "name" not in cls.__dict__ or cls.__name__.startswith("_"):
            return
        old = OPTIMIZERS.get(cls.name)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise ValueError(f"optimizer name {cls.name!r} of {cls.__qualname__} is taken by {old.__qualname__}")
        OPTIMIZERS[cls.name] = cls

    @abstractmethod
    def init(self, theta) -> dict[str, Any]:
        """Initial state for parameters ``theta`` (shape ``(..., d)``)."""

    @abstractmethod
    def step(self, theta, grad, state: dict[str, Any], *, donate: bool = False):
        """One update: returns ``(new_theta, new_state)``."""

    def output(self, theta, state):
        """The point the method reports after a step (``theta`` by default)."""
        return theta


@dataclass(frozen=True)
class ElementwiseOptimizer(Optimizer):
    """Base of the element-wise optimizers: hyper-parameters are dataclass fields (immutable), any
    numeric one may be a schedule ``t -> value``; state is a dict of arrays plus ``step``."""

    registered: ClassVar[bool] = True
    buffers: ClassVar[tuple[str, ...]] = ()
    n_scratch: ClassVar[int] = 3
    # numeric fields the fused numpy kernels take as runtime scalars (like lr) instead of trace-time
    # constants: one compiled kernel serves every value (a tuning grid loads one kernel, not one per point).
    # Only fields the rule uses in arithmetic, never in a comparison that fixes its control flow.
    kernel_scalars: ClassVar[tuple[str, ...]] = ()

    # set per class (lptheory.fast reads them): the step is this class's own (routed by lptheory.fast), and
    # the step's scalars are the fields plus t (no override of derived, scalars or hyper_at)
    fast_route: ClassVar[bool] = True
    plain_scalars: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        base = ElementwiseOptimizer
        cls.fast_route = cls.step is base.step
        cls.plain_scalars = all(getattr(cls, m) is getattr(base, m) for m in ("derived", "scalars", "hyper_at"))

    def __post_init__(self):
        check_fields(self)

    # -- hooks --------------------------------------------------------------------------------------
    def derived(self, h: Hyper, t: int) -> dict:
        """Per-step scalars computed from the step's hyper-parameters (default: none)."""
        return {}

    def init_buffer(self, xp, name: str, theta):
        """Initial value of state buffer ``name`` (default zeros)."""
        return xp.zeros_like(theta)

    def upgrade_state(self, state: dict) -> dict | None:
        """``state`` of an earlier state layout of this optimizer converted to the current one, or None
        (default: there is no earlier layout). :meth:`step` calls it when a buffer is missing."""
        return None

    @staticmethod
    @abstractmethod
    def rule(xp, h: Hyper, b: Buffers) -> None:
        """The element-wise update (module docstring)."""

    # -- public API -----------------------------------------------------------------------------------
    def hyper_at(self, t: int) -> Hyper:
        """Every hyper-parameter at 0-based step ``t`` (schedules evaluated and range-checked)."""
        fixed, sched = fast.split(self)  # computed once per optimizer object
        h = Hyper(fixed)
        for name in sched:
            spec = self.limits.get(name)
            v = fixed[name](t)
            if spec is not None:
                v = check_hyper(f"{name} (at step {t})", v, spec)
            h[name] = v
        return h

    def scalars(self, t: int, **overrides) -> Hyper:
        """The named scalars of step ``t``: :meth:`hyper_at`, then ``overrides`` (e.g. a tensor ``lr``),
        then :meth:`derived`, plus ``t``."""
        h = self.hyper_at(t)
        h.update(overrides)
        h["t"] = t
        h.update(self.derived(h, t))
        return h

    def lr_at(self, t: int) -> float:
        """The step size at 0-based step ``t``."""
        return self.hyper_at(t)["lr"]

    def init(self, theta) -> dict[str, Any]:
        """Initial state for ``theta``: each buffer from :meth:`init_buffer`, and ``step = 0``."""
        xp = namespace(theta)
        self._check_float(xp, theta, "theta")
        state: dict[str, Any] = {"step": 0}
        for k in self.buffers:
            state[k] = self.init_buffer(xp, k, theta)
        return state

    def step(self, theta, grad, state: dict[str, Any], *, donate: bool = False):
        """One update: returns ``(new_theta, new_state)``.

        Raises ``ValueError`` when ``grad`` or a state array does not have ``theta``'s shape and
        ``TypeError`` for non-floating, mismatched-dtype or mixed numpy/torch inputs.

        numpy arrays of the shape and dtype of the previous call (the usual loop: the same parameters every
        step) take a short path: the checks above reduced to identity and shape comparisons with that
        call's, the in-place pattern known from ``donate``, and the non-finite gradient check counted by the
        fused kernels while they read the gradient (the fixed cost of a step on a small array, e.g. one
        replicate of 100 coordinates, is then a few microseconds plus the kernel).
        """
        if type(theta) is np.ndarray and type(grad) is np.ndarray and type(state) is dict:
            got = fast.short_step(self, theta, grad, state, donate)
            if got is not None:
                return got
        xp = namespace(theta, grad)
        t = check_step(xp, theta, grad, state)
        old = []
        if any(k not in state for k in self.buffers):
            up = self.upgrade_state(state)  # a state of an earlier layout of this optimizer, converted
            if up is not None:
                state = up
        for k in self.buffers:
            if k not in state:
                raise ValueError(f"state is missing {k!r}; build it with {type(self).__name__}.init(theta)")
            a = state[k]
            if namespace(a) is not xp or tuple(a.shape) != tuple(theta.shape) or a.dtype != theta.dtype:
                raise ValueError(
                    f"state[{k!r}] must match theta (shape {tuple(theta.shape)}, dtype {theta.dtype}), "
                    f"got shape {tuple(a.shape)}, dtype {a.dtype}"
                )
            old.append(a)
        outs = fast.apply(self, xp, self.scalars(t), theta, grad, old, donate)  # the route: lptheory.fast
        new_state = {"step": t + 1}
        new_state.update(zip(self.buffers, outs[1:]))
        return outs[0], new_state

    def named(self, theta, grad, old, new) -> dict:
        """The rule's named inputs and outputs (``theta``, ``grad``, buffers, ``new_*``), in a fixed order."""
        arrays = {"theta": theta, "grad": grad}
        arrays.update(zip(self.buffers, old))
        arrays["new_theta"] = new[0]
        arrays.update(("new_" + k, a) for k, a in zip(self.buffers, new[1:]))
        return arrays

    def static(self) -> ElementwiseOptimizer:
        """This optimizer with ``lr`` and every schedule replaced by 0.0: the configuration that fixes
        the rule's control flow (the cache key of compiled kernels; the replaced values are passed to
        the kernel at every step)."""
        return fast.static(self)

    def dynamic_fields(self) -> tuple[str, ...]:
        """Fields that may change between steps: ``lr`` and every field given as a schedule."""
        return fast.dynamic_fields(self)

    @staticmethod
    def _check_float(xp, a, name):
        if not is_floating(xp, a):
            raise TypeError(f"{name} must have a floating dtype, got {a.dtype}")


# ------------------------------------------------------------------------------------------------
# The paper's algorithms
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LpDescent(ElementwiseOptimizer):
    """Stochastic l_p descent, Algorithm 3: ``theta_{t+1} = theta_t - eta s(g~_t)``.

    ``s_i(x) = x_i / |x_i|^{(p-2)/(p-1)} = sgn(x_i)|x_i|^{1/(p-1)}`` (Alg. 3 line 2, computed in the
    second form so that s(0) = 0). p in (1, inf]; p = inf is signSGD (Bernstein et al., 2018),
    p = 2 is SGD.

    Parameters
    ----------
    p : float in (1, inf]
    lr : float >= 0 or schedule ``t -> eta_t``
    """

    name: ClassVar[str] = "lp-descent"
    n_scratch: ClassVar[int] = 1
    p: float = hyper(3.0, EXPONENT, help="l_p exponent p in (1, inf]")
    lr: LR = hyper(1e-3, NONNEG, help="step size eta (or a schedule t -> eta_t)")

    @staticmethod
    def rule(xp, h, b):
        s = steepest(xp, b.grad, h.p, b.s1, b.s1)  # Alg. 3 line 2
        xp.multiply(s, h.lr, out=b.s1)
        xp.subtract(b.theta, b.s1, out=b.new_theta)  # Alg. 3 line 3


@dataclass(frozen=True)
class StaceyHyper:
    """The hyper-parameters of Algorithms 1 and 2 (fields, ranges, help), defined once: the l_p methods
    (:class:`StaceyP2`, :class:`StaceyPP`) and their Schatten-p variants (:mod:`lptheory.spectral`) take
    them from here. Not an optimizer by itself."""

    p: float = hyper(3.0, {"exponent": True, "lo": 2.0, "lo_open": False}, help="l_p exponent p in [2, inf]")
    lr: LR = hyper(1e-3, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    alpha: float = hyper(1e-3, NONNEG, help="mirror step size alpha (line 6)")
    tau: float = hyper(1e-3, {"lo": 0.0, "hi": 1.0}, help="coupling tau in [0, 1] (line 7)")
    beta1: float = hyper(0.9, UNIT, help="EMA coefficient of c (line 3)")
    beta2: float = hyper(0.999, UNIT, help="EMA coefficient of m (line 8)")
    eps: float = hyper(1e-8, NONNEG, help="eps of the regularized steepest map (line 4)")
    weight_decay: float = hyper(0.0, NONNEG, help="weight decay lambda (line 7)")
    eps_mode: str = hyper("paper", choices=("paper", "official"), help="Stacey's eps form")
    z_init: str = hyper("params", choices=("params", "zero"), flag=False, help="z_0: theta_0 (params) or 0")


@dataclass(frozen=True)
class _Stacey(StaceyHyper, ElementwiseOptimizer):
    buffers: ClassVar[tuple[str, ...]] = ("z", "m")
    kernel_scalars: ClassVar[tuple[str, ...]] = ("alpha", "tau", "beta1", "beta2")

    def init_buffer(self, xp, name, theta):
        # "initialize theta_0, z_0, m_0 <- 0" (Alg. 1/2): m_0 = 0. For z_0 the line is ambiguous
        # (theta_0 is certainly not 0); the authors' code and linear coupling start z_0 at theta_0,
        # and z_0 = 0 would make tau z_t pull theta towards the origin like extra weight decay.
        # z_init="zero" gives the literal reading.
        if name == "z" and self.z_init == "params":
            return xp.asarray(theta).copy() if xp is np else theta.detach().clone()
        return xp.zeros_like(theta)

    def z_of(self, state):
        """The mirror iterate ``z_t`` of a state (StaceyP2 keeps it as ``state["z"]``)."""
        return state["z"]

    @staticmethod
    def moments_and_primal(xp, h, b):
        """Lines 3-5 and 8 of Alg. 1/2 and the primal half of line 7; returns c (in ``b.s2``)."""
        # line 3: c_{t+1} = beta1 m_t + (1 - beta1) g~_t
        c = ema(xp, b.m, h.beta1, b.grad, b.s2, b.s1)
        # line 8: m_{t+1} = beta2 m_t + (1 - beta2) g~_t   (last read of m)
        ema(xp, b.m, h.beta2, b.grad, b.new_m, b.s1)
        # lines 4-5: y_{t+1} = theta_t - eta s^eps(c_{t+1});
        # line 7 (primal part): (1 - tau) y_{t+1} - eta lambda theta_t   (last read of theta)
        _kernels.steepest_eps_step(
            xp,
            b.theta,
            1.0 - h.tau - h.lr * h.weight_decay,
            c,
            h.lr * (1.0 - h.tau),
            h.p,
            h.eps,
            h.eps_mode,
            b.new_theta,
            b.s3,
        )
        return c


@dataclass(frozen=True)
class StaceyP2(_Stacey):
    """Stacey(p,2), Algorithm 1: l_p steepest step coupled with a Euclidean mirror (gradient) step.

    Per step (Alg. 1 lines 3-8)::

        c = beta1 m + (1 - beta1) g~
        y = theta - eta s^eps(c)                    s^eps_i(x) = x_i / (|x_i|^{(p-2)/(p-1)} + eps)
        z = z - alpha c
        theta = tau z + (1 - tau) y - eta lambda theta
        m = beta2 m + (1 - beta2) g~

    Parameters
    ----------
    p : float in [2, inf]
    lr : eta, float >= 0 or schedule;  alpha : float >= 0;  tau : float in [0, 1]
    beta1, beta2 : float in [0, 1);  eps : float >= 0;  weight_decay : lambda >= 0
    eps_mode : "paper" (line 4 as printed) or "official" (eps inside the power, as the authors' code)
    z_init : "params" (z_0 = theta_0, the authors' code; default) or "zero" (z_0 = 0)
    """

    name: ClassVar[str] = "stacey-p2"

    @staticmethod
    def rule(xp, h, b):
        c = _Stacey.moments_and_primal(xp, h, b)
        # line 6: z_{t+1} = z_t - alpha c_{t+1}
        combine(xp, b.z, None, c, h.alpha, b.new_z, b.s3, sub=True)
        # line 7 (dual part): + tau z_{t+1}
        combine(xp, b.new_theta, None, b.new_z, h.tau, b.new_theta, b.s3)


@dataclass(frozen=True)
class StaceyPPHyper(StaceyHyper):
    """The hyper-parameters of Algorithm 2: those of Algorithm 1 with p finite (the mirror map needs it);
    shared by :class:`StaceyPP` and its Schatten-p variant."""

    p: float = hyper(
        3.0, {"exponent": True, "lo": 2.0, "lo_open": False, "allow_inf": False}, help="l_p exponent p in [2, inf)"
    )


@dataclass(frozen=True)
class StaceyPP(StaceyPPHyper, _Stacey):
    """Stacey(p,p), Algorithm 2: l_p steepest step coupled with an l_p^p mirror step.

    As :class:`StaceyP2` except line 6, the mirror step of psi = (1/p)||.||_p^p::

        v = |z_t|^{p-2} z_t - alpha c
        z_{t+1} = v / (|v|^{(p-2)/(p-1)} + eps)     (eps_mode="paper", Alg. 2 line 6)
        z_{t+1} = sgn(v) |v|^{1/(p-1)}              (eps_mode="official": no eps in this step)

    State in dual coordinates (state layout 2): the state keeps ``w_t = grad psi(z_t) = |z_t|^{p-2} z_t``
    (buffer ``"w"``) instead of ``z_t``, so line 6 reads it directly, ``v = w_t - alpha c``, and the step
    computes ``w_{t+1} = grad psi(z_{t+1})`` from ``v`` (official mode, or eps vanishing: ``w_{t+1} = v``
    exactly; paper mode: ``v (1 - y)^{p-1}`` with ``y = eps / (|v|^{(p-2)/(p-1)} + eps)``, see
    :func:`lptheory._kernels.mirror_of_steepest_eps`). The same iterates in exact arithmetic, one fractional
    power fewer per element at fractional p (two instead of three, the one of line 4 and the one of
    line 6). :meth:`z_of` gives ``z_t`` back. A state of layout 1 (buffer ``"z"``, the primal iterate:
    this class before the change) is converted at the next :meth:`step` (``w = |z|^{p-2} z``, Alg. 2
    line 6's own first term).

    Where the two divisions of lines 4 and 6 can share one reciprocal without overflow or underflow (paper
    mode, p <= 3, eps >= 2^-60, float32 or float64), they do: ``r = 1 / (d_c d_v)``, ``1/d_c = r d_v``,
    ``1/d_v = r d_c`` (a few ulp from the two quotients).

    p must be finite (the mirror map needs it): p in [2, inf).
    """

    name: ClassVar[str] = "stacey-pp"
    buffers: ClassVar[tuple[str, ...]] = ("w", "m")
    n_scratch: ClassVar[int] = 5
    state_layout: ClassVar[int] = 2
    legacy_buffers: ClassVar[tuple[str, ...]] = ("z", "m")  # layout 1: the primal iterate z

    def init_buffer(self, xp, name, theta):
        # z_0 as in StaceyP2 (theta_0, or 0 with z_init="zero"); the state holds w_0 = |z_0|^{p-2} z_0
        if name == "w":
            if self.z_init == "zero":
                return xp.zeros_like(theta)
            z0 = xp.asarray(theta) if xp is np else theta.detach()
            return self.dual_of(xp, z0)
        return super().init_buffer(xp, name, theta)

    def dual_of(self, xp, z):
        """``w = |z|^{p-2} z`` (grad psi, the first term of Alg. 2 line 6): the dual variable of a primal
        iterate ``z`` (a fresh array). ``p`` must be a number here (not a schedule)."""
        p = self._fixed_p()
        tmp = xp.empty_like(z)
        with np.errstate(all="ignore"):
            return mirror(xp, z, p, tmp, tmp)

    def z_of(self, state):
        """The primal iterate ``z_t = (grad psi)^{-1}(w_t) = sgn(w_t) |w_t|^{1/(p-1)}`` of a state (a fresh
        array; exact inverse of :meth:`dual_of` up to rounding)."""
        w = state["w"] if "w" in state else None
        if w is None:
            return state["z"]
        xp = namespace(w)
        tmp = xp.empty_like(w)
        with np.errstate(all="ignore"):
            return steepest(xp, w, self._fixed_p(), tmp, tmp)

    def _fixed_p(self) -> float:
        if is_schedule(self.p):
            return float(self.hyper_at(0)["p"])
        return self.p

    def upgrade_state(self, state: dict) -> dict | None:
        """A state of layout 1 (``{"step", "z", "m"}``: the primal iterate, before the dual state) as a
        state of this layout (``w = |z|^{p-2} z``, with ``p`` at the state's step); None when ``state``
        is not of layout 1."""
        if not isinstance(state, dict) or "w" in state or "z" not in state or "m" not in state:
            return None
        z = state["z"]
        xp = namespace(z)
        t = state.get("step", 0)
        p = self.hyper_at(t)["p"] if is_schedule(self.p) else self.p
        tmp = xp.empty_like(z)
        with np.errstate(all="ignore"):
            w = mirror(xp, z, p, tmp, tmp)
        new = {k: v for k, v in state.items() if k != "z"}
        new["w"] = w
        return new

    @staticmethod
    def rule(xp, h, b):
        """Alg. 2 lines 3-8 with the dual state ``w`` (class docstring)."""
        p, eps, mode = h.p, h.eps, h.eps_mode
        k1 = 1.0 - h.tau - h.lr * h.weight_decay  # line 7: (1 - tau) theta_t - eta lambda theta_t ...
        k2 = h.lr * (1.0 - h.tau)  # ... - (1 - tau) eta s^eps(c)   (line 5 inside line 7)
        # line 3: c_{t+1} = beta1 m_t + (1 - beta1) g~_t
        c = ema(xp, b.m, h.beta1, b.grad, b.s2, b.s1)
        # line 8: m_{t+1} = beta2 m_t + (1 - beta2) g~_t   (last read of m)
        ema(xp, b.m, h.beta2, b.grad, b.new_m, b.s1)
        # line 6, numerator: v = |z_t|^{p-2} z_t - alpha c_{t+1} = w_t - alpha c_{t+1}   (last read of w)
        v = combine(xp, b.w, None, c, h.alpha, b.s1, b.s3, sub=True)
        if mode != "paper" or eps_vanishes(xp, eps, b.grad.dtype):
            # lines 4-5 and 7 (primal part): (1 - tau) y_{t+1} - eta lambda theta_t   (last read of theta)
            _kernels.steepest_eps_step(xp, b.theta, k1, c, k2, p, eps, mode, b.new_theta, b.s3)
            # line 6 without eps: z_{t+1} = s_p(v), so grad psi(z_{t+1}) = v
            z = steepest(xp, v, p, b.s2, b.s3)
            combine(xp, b.new_theta, None, z, h.tau, b.new_theta, b.s3)  # line 7 (dual part): + tau z_{t+1}
            copy_into(xp, b.new_w, v)
            return
        dc = _kernels.eps_denominator(xp, c, p, eps, "paper", b.s3)  # line 4: |c|^a + eps
        dv = _kernels.eps_denominator(xp, v, p, eps, "paper", b.s4)  # line 6: |v|^a + eps
        if p <= 3.0 and eps >= 2.0**-60 and dtype_name(b.grad) in ("float32", "float64"):
            # one division for the two quotients: r = 1 / (d_c d_v) (d_c, d_v in [eps, sqrt(max)]: no
            # overflow for p <= 3, no underflow for eps >= 2^-60)
            r = xp.multiply(dc, dv, out=b.s5)
            r = reciprocal(xp, r, b.s5)
            ic = xp.multiply(r, dv, out=b.s4)  # 1 / d_c
            iv = xp.multiply(r, dc, out=b.s3)  # 1 / d_v
            sc = xp.multiply(c, ic, out=b.s4)  # line 4: s^eps(c_{t+1})
        else:
            sc = xp.divide(c, dc, out=b.s3)  # line 4: s^eps(c_{t+1})
            iv = reciprocal(xp, dv, b.s4)  # 1 / d_v
        # lines 5 and 7 (primal part): theta_{t+1} = (1 - tau - eta lambda) theta_t - (1 - tau) eta s^eps(c)
        combine(xp, b.theta, k1, sc, k2, b.new_theta, b.s2, sub=True)
        z = xp.multiply(v, iv, out=b.s5)  # line 6: z_{t+1} = v / d_v
        y = xp.multiply(iv, eps, out=iv)  # y = eps / d_v
        combine(xp, b.new_theta, None, z, h.tau, b.new_theta, b.s2)  # line 7 (dual part): + tau z_{t+1}
        # the next step's w_{t+1} = grad psi(z_{t+1}) = |z_{t+1}|^{p-2} z_{t+1}
        _kernels.mirror_of_steepest_eps(xp, v, z, y, p, b.new_w, b.s2)


# ------------------------------------------------------------------------------------------------
# Baselines of the paper's experiments (Section 5), as in their original papers
# ------------------------------------------------------------------------------------------------
def _is_zero(x) -> bool:
    """True when the step scalar ``x`` is the number 0 (a rule then skips its term). An array of per-replicate
    values (a (K, 1) tensor broadcast over K stacked trainings, :mod:`proofs_checks.practice.stacked`) is never
    skipped: its zero entries contribute exact zeros."""
    return isinstance(x, (int, float)) and x == 0.0


@dataclass(frozen=True)
class SGD(ElementwiseOptimizer):
    """SGD with (heavy-ball) momentum, in PyTorch's form (the paper's "SGD w/ Momentum").

    ``g' = g + lambda theta``; ``b = mu b + g'``; ``theta -= eta b`` (or ``eta (g' + mu b)`` with
    Nesterov). With constant eta this is Polyak's heavy ball (1964) with velocity ``-eta b``.
    """

    name: ClassVar[str] = "sgd"
    buffers: ClassVar[tuple[str, ...]] = ("buf",)
    lr: LR = hyper(1e-2, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    momentum: float = hyper(0.9, UNIT, help="momentum mu")
    weight_decay: float = hyper(0.0, NONNEG, help="L2 weight decay lambda (g + lambda theta)")
    nesterov: bool = False

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.nesterov, bool):
            raise TypeError(f"nesterov must be a bool, got {type(self.nesterov).__name__}")

    @staticmethod
    def rule(xp, h, b):
        gg = b.grad
        if not _is_zero(h.weight_decay):
            gg = xp.multiply(b.theta, h.weight_decay, out=b.s1)
            xp.add(gg, b.grad, out=gg)
        xp.multiply(b.buf, h.momentum, out=b.new_buf)
        xp.add(b.new_buf, gg, out=b.new_buf)
        upd = b.new_buf
        if h.nesterov:
            upd = xp.multiply(b.new_buf, h.momentum, out=b.s2)
            xp.add(upd, gg, out=upd)
        xp.multiply(upd, h.lr, out=b.s3)
        xp.subtract(b.theta, b.s3, out=b.new_theta)


@dataclass(frozen=True)
class SignSGD(ElementwiseOptimizer):
    """signSGD (Bernstein et al., 2018): ``theta -= eta sign(g)``; with ``momentum > 0``, Signum:
    ``m = beta m + (1 - beta) g``, ``theta -= eta sign(m)``. sign(0) = 0."""

    name: ClassVar[str] = "signsgd"
    buffers: ClassVar[tuple[str, ...]] = ("m",)
    lr: LR = hyper(1e-3, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    momentum: float = hyper(0.0, UNIT, help="Signum's EMA coefficient beta (0: signSGD)")

    @staticmethod
    def rule(xp, h, b):
        beta = h.momentum
        ema(xp, b.m, beta, b.grad, b.new_m, b.s1, lerp=False)  # m = beta m + (1 - beta) g
        direction = b.new_m if beta != 0.0 else b.grad
        sign(xp, direction, b.s1)
        xp.multiply(b.s1, h.lr, out=b.s1)
        xp.subtract(b.theta, b.s1, out=b.new_theta)


@dataclass(frozen=True)
class _AdamFamily(ElementwiseOptimizer):
    """The update shared by :class:`Adam` and :class:`AdamW` (``decoupled`` tells them apart)."""

    decoupled: ClassVar[bool] = True
    buffers: ClassVar[tuple[str, ...]] = ("m", "v")
    lr: LR = hyper(1e-3, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    beta1: float = hyper(0.9, UNIT, help="EMA coefficient of the first moment")
    beta2: float = hyper(0.999, UNIT, help="EMA coefficient of the second moment")
    eps: float = hyper(1e-8, NONNEG, help="eps added to sqrt(v^)")
    weight_decay: float = hyper(1e-2, NONNEG, help="weight decay lambda")
    bias_correction: bool = True

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.bias_correction, bool):
            raise TypeError(f"bias_correction must be a bool, got {type(self.bias_correction).__name__}")

    def derived(self, h, t):
        bc1 = 1.0 - h.beta1 ** (t + 1) if h.bias_correction else 1.0
        bc2 = 1.0 - h.beta2 ** (t + 1) if h.bias_correction else 1.0
        return {"bc1": bc1, "rsqrt_bc2": 1.0 / math.sqrt(bc2), "decoupled": self.decoupled}

    @staticmethod
    def rule(xp, h, b):
        b1, b2 = h.beta1, h.beta2
        gg = b.grad
        if not h.decoupled and not _is_zero(h.weight_decay):  # Adam's L2 regularization: g + lambda theta
            gg = xp.multiply(b.theta, h.weight_decay, out=b.s1)
            xp.add(gg, b.grad, out=gg)
        ema(xp, b.m, b1, gg, b.new_m, b.s2, lerp=False)  # m = b1 m + (1 - b1) g
        sq = xp.multiply(gg, gg, out=b.s2)
        ema(xp, b.v, b2, sq, b.new_v, sq, lerp=False)  # v = b2 v + (1 - b2) g^2
        den = xp.sqrt(b.new_v, out=b.s2)
        xp.multiply(den, h.rsqrt_bc2, out=den)
        xp.add(den, h.eps, out=den)
        upd = xp.divide(b.new_m, den, out=b.s2)
        xp.multiply(upd, h.lr / h.bc1, out=upd)
        xp.multiply(b.theta, 1.0 - h.lr * h.weight_decay if h.decoupled else 1.0, out=b.new_theta)
        xp.subtract(b.new_theta, upd, out=b.new_theta)


@dataclass(frozen=True)
class Adam(_AdamFamily):
    """Adam (Kingma & Ba, 2015), with optional L2 regularization ``g + lambda theta`` (coupled, as
    ``torch.optim.Adam``'s ``weight_decay``). Same update as :class:`AdamW` otherwise."""

    name: ClassVar[str] = "adam"
    weight_decay: float = hyper(0.0, NONNEG, help="L2 weight decay lambda (g + lambda theta)")
    decoupled: ClassVar[bool] = False


@dataclass(frozen=True)
class AdamW(_AdamFamily):
    """AdamW (Loshchilov & Hutter, 2019): Adam with decoupled weight decay.

    ``m = b1 m + (1-b1) g``; ``v = b2 v + (1-b2) g^2``; ``m^ = m/(1-b1^t)``; ``v^ = v/(1-b2^t)``;
    ``theta = theta (1 - eta lambda) - eta m^ / (sqrt(v^) + eps)`` (PyTorch's scaling of the decay by
    eta, as in the paper's hyper-parameter tables). ``bias_correction=False`` drops the two
    corrections (``m^ = m``, ``v^ = v``), the form of several analyses.
    """

    name: ClassVar[str] = "adamw"
    decoupled: ClassVar[bool] = True


@dataclass(frozen=True)
class Lion(ElementwiseOptimizer):
    """Lion (Chen et al., 2023): ``c = b1 m + (1-b1) g``; ``theta -= eta (sign(c) + lambda theta)``;
    ``m = b2 m + (1-b2) g``."""

    name: ClassVar[str] = "lion"
    buffers: ClassVar[tuple[str, ...]] = ("m",)
    lr: LR = hyper(1e-4, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    beta1: float = hyper(0.9, UNIT, help="interpolation coefficient of the update direction")
    beta2: float = hyper(0.99, UNIT, help="EMA coefficient of the momentum")
    weight_decay: float = hyper(0.0, NONNEG, help="decoupled weight decay lambda")

    @staticmethod
    def rule(xp, h, b):
        c = ema(xp, b.m, h.beta1, b.grad, b.s2, b.s1, lerp=False)  # c = b1 m + (1 - b1) g
        sign(xp, c, c)
        ema(xp, b.m, h.beta2, b.grad, b.new_m, b.s1, lerp=False)  # m = b2 m + (1 - b2) g
        xp.multiply(b.theta, 1.0 - h.lr * h.weight_decay, out=b.new_theta)
        xp.multiply(c, h.lr, out=c)
        xp.subtract(b.new_theta, c, out=b.new_theta)


# ------------------------------------------------------------------------------------------------
# Wrappers
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Projected(Optimizer):
    """``inner`` followed by the projection onto ``domain`` (a :mod:`lptheory.domains` set) after every
    step: projected (stochastic) methods, ``theta_{t+1} = Pi_D(inner step)``. ``init`` projects the
    starting point. Works for any optimizer of the protocol, on numpy and torch."""

    inner: Optimizer
    domain: Any

    def __post_init__(self):
        if not isinstance(self.inner, Optimizer):
            raise TypeError(f"inner must be an lptheory optimizer, got {type(self.inner).__name__}")
        if not callable(getattr(self.domain, "project", None)):
            raise TypeError("domain must have a project(x) method (see lptheory.domains)")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"projected-{self.inner.name}"

    def __getattr__(self, key):  # hyper-parameters of the inner method (p, lr, ...) read through
        if key in ("inner", "domain"):
            raise AttributeError(key)
        return getattr(self.inner, key)

    def init(self, theta):
        return self.inner.init(self.domain.project(theta))

    def step(self, theta, grad, state, *, donate: bool = False):
        new, st = self.inner.step(theta, grad, state, donate=donate)
        return self.domain.project(new), st

    def output(self, theta, state):
        return self.domain.project(self.inner.output(theta, state))


def make(name: str, **hyper) -> ElementwiseOptimizer:
    """Build an optimizer from its CLI name (``lp-descent``, ``stacey-p2``, ``stacey-pp``, ``sgd``,
    ``signsgd``, ``adam``, ``adamw``, ``lion``) and keyword hyper-parameters."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    return OPTIMIZERS[name](**hyper)


def hyper_names(cls: type) -> tuple[str, ...]:
    """The hyper-parameter names of an optimizer class (its dataclass fields)."""
    return tuple(f.name for f in dataclasses.fields(cls))
