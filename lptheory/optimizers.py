"""The paper's optimizers and its baselines, as values: ``init(theta) -> state``,
``step(theta, grad, state) -> (theta, state)``.

Arrays have shape ``(..., d)``; leading axes are independent replicates. Every optimizer works on
numpy arrays and on torch tensors (CPU or CUDA) through the same rule: each class holds one
element-wise update rule written against the array module's ``out=`` functions
(:mod:`lptheory._kernels`), which :mod:`lptheory._engine` runs chunked and threaded on numpy and
directly on torch.

Paper-exact by default: Algorithms 1-3 as their pseudo-code reads, ``eps_mode="paper"``.
``eps_mode="official"`` reproduces the authors' code (``shared/reference/official-code.md``).

Buffers. ``step`` never modifies ``theta``, ``grad`` or the arrays of the ``state`` it is given,
unless ``donate=True``: then it may write the new parameters into ``theta`` and the new state into
the old state's arrays (saving the allocation of fresh arrays at every step, which on large arrays
costs as much as a pass of the update). Use ``donate=True`` only when the old values are not needed.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import _engine, _kernels, _validate
from ._xp import is_floating, namespace

__all__ = [
    "Optimizer",
    "LpDescent",
    "StaceyP2",
    "StaceyPP",
    "SGD",
    "SignSGD",
    "Adam",
    "AdamW",
    "Lion",
    "OPTIMIZERS",
    "make",
]

LR = float | Callable[[int], float]


def _check_lr(lr) -> None:
    if callable(lr):
        return
    _validate.real("lr", lr, lo=0.0)


@dataclass(frozen=True)
class Optimizer(ABC):
    """Base class: hyper-parameters are fields (immutable); state is a dict of arrays plus ``step``."""

    name: ClassVar[str] = "optimizer"
    n_scratch: ClassVar[int] = 3

    def state_keys(self) -> tuple[str, ...]:
        """Names of the per-coordinate state arrays."""
        return ()

    # -- public API -------------------------------------------------------------------------------
    def lr_at(self, t: int) -> float:
        """The step size at 0-based step ``t`` (``lr`` itself or ``lr(t)`` for a schedule)."""
        lr = self.lr  # type: ignore[attr-defined]
        v = lr(t) if callable(lr) else lr
        return _validate.real(f"lr (at step {t})", v, lo=0.0)

    def init(self, theta) -> dict[str, Any]:
        """Initial state for parameters ``theta`` (shape ``(..., d)``): zeros, and ``step = 0``."""
        xp = namespace(theta)
        self._check_float(xp, theta, "theta")
        state: dict[str, Any] = {"step": 0}
        for k in self.state_keys():
            state[k] = self._init_array(xp, k, theta)
        return state

    def step(self, theta, grad, state: dict[str, Any], *, donate: bool = False):
        """One update: returns ``(new_theta, new_state)``.

        Raises ``ValueError`` when ``grad`` or a state array does not have ``theta``'s shape and
        ``TypeError`` for non-floating, mismatched-dtype or mixed numpy/torch inputs.
        """
        xp = namespace(theta, grad)
        self._check_float(xp, theta, "theta")
        if tuple(grad.shape) != tuple(theta.shape):
            raise ValueError(f"grad must have theta's shape {tuple(theta.shape)}, got {tuple(grad.shape)}")
        if grad.dtype != theta.dtype:
            raise TypeError(f"grad must have theta's dtype {theta.dtype}, got {grad.dtype}")
        if not isinstance(state, dict) or "step" not in state:
            raise TypeError("state must be the dict returned by init() or step()")
        t = _validate.integer("state['step']", state["step"], lo=0)
        old = []
        for k in self.state_keys():
            if k not in state:
                raise ValueError(f"state is missing {k!r}; build it with {type(self).__name__}.init(theta)")
            a = state[k]
            if namespace(a) is not xp or tuple(a.shape) != tuple(theta.shape) or a.dtype != theta.dtype:
                raise ValueError(
                    f"state[{k!r}] must match theta (shape {tuple(theta.shape)}, dtype {theta.dtype}), "
                    f"got shape {tuple(a.shape)}, dtype {a.dtype}"
                )
            old.append(a)
        h = self._scalars(t, self.lr_at(t))
        if xp is np:
            theta_in = np.ascontiguousarray(theta)
            grad = np.ascontiguousarray(grad)
            old = [np.ascontiguousarray(a) for a in old]
            outs = [
                a if donate and a.flags.c_contiguous and a.flags.writeable else np.empty(a.shape, a.dtype)
                for a in [theta, *old]
            ]
            _engine.apply(self._rule, np, h, [theta_in, grad, *old, *outs], self.n_scratch)
        else:
            with xp.no_grad():
                outs = [a if donate else xp.empty_like(a) for a in [theta, *old]]
                _engine.apply(self._rule, xp, h, [theta, grad, *old, *outs], self.n_scratch)
        new_state = {"step": t + 1}
        new_state.update(zip(self.state_keys(), outs[1:]))
        return outs[0], new_state

    # -- hooks for subclasses -----------------------------------------------------------------------
    def _init_array(self, xp, key, theta):
        return xp.zeros_like(theta)

    @abstractmethod
    def _scalars(self, t: int, lr: float) -> tuple:
        """Per-step scalar constants handed to ``_rule`` (computed on the host, once per step)."""

    @staticmethod
    @abstractmethod
    def _rule(xp, h, *arrays):
        """The element-wise update, reading inputs and writing outputs with ``out=`` calls."""

    @staticmethod
    def _check_float(xp, a, name):
        if not is_floating(xp, a):
            raise TypeError(f"{name} must have a floating dtype, got {a.dtype}")


# ------------------------------------------------------------------------------------------------
# The paper's algorithms
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LpDescent(Optimizer):
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
    p: float = 3.0
    lr: LR = 1e-3

    def __post_init__(self):
        object.__setattr__(self, "p", _validate.exponent("p", self.p))
        _check_lr(self.lr)

    def _scalars(self, t, lr):
        return (self.p, lr)

    @staticmethod
    def _rule(xp, h, th, g, th_out, s1):
        p, lr = h
        s = _kernels.steepest(xp, g, p, s1, s1)  # Alg. 3 line 2
        xp.multiply(s, lr, out=s1)
        xp.subtract(th, s1, out=th_out)  # Alg. 3 line 3


@dataclass(frozen=True)
class _Stacey(Optimizer):
    p: float = 3.0
    lr: LR = 1e-3
    alpha: float = 1e-3
    tau: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    eps_mode: str = "paper"
    z_init: str = "params"

    _p_inf_ok: ClassVar[bool] = True

    def __post_init__(self):
        p = _validate.exponent("p", self.p, lo=2.0, lo_open=False, allow_inf=self._p_inf_ok)
        object.__setattr__(self, "p", p)
        _check_lr(self.lr)
        object.__setattr__(self, "alpha", _validate.real("alpha", self.alpha, lo=0.0))
        object.__setattr__(self, "tau", _validate.real("tau", self.tau, lo=0.0, hi=1.0))
        object.__setattr__(self, "beta1", _validate.real("beta1", self.beta1, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "beta2", _validate.real("beta2", self.beta2, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "eps", _validate.real("eps", self.eps, lo=0.0))
        object.__setattr__(self, "weight_decay", _validate.real("weight_decay", self.weight_decay, lo=0.0))
        _validate.choice("eps_mode", self.eps_mode, {"paper", "official"})
        _validate.choice("z_init", self.z_init, {"params", "zero"})

    def state_keys(self):
        return ("z", "m")

    def _init_array(self, xp, key, theta):
        # "initialize theta_0, z_0, m_0 <- 0" (Alg. 1/2): m_0 = 0. For z_0 the line is ambiguous
        # (theta_0 is certainly not 0); the authors' code and linear coupling start z_0 at theta_0,
        # and z_0 = 0 would make tau z_t pull theta towards the origin like extra weight decay.
        # z_init="zero" gives the literal reading.
        if key == "z" and self.z_init == "params":
            return xp.asarray(theta).copy() if xp is np else theta.detach().clone()
        return xp.zeros_like(theta)

    def _scalars(self, t, lr):
        return (
            self.p,
            lr,
            self.alpha,
            self.tau,
            self.beta1,
            self.beta2,
            self.eps,
            self.weight_decay,
            self.eps_mode,
        )

    @staticmethod
    def _moments_and_primal(xp, h, th, g, m, th_out, m_out, s1, s2, s3):
        """Lines 3-5 and 8 of Alg. 1/2 and the primal half of line 7; returns c (in s2)."""
        p, lr, alpha, tau, b1, b2, eps, wd, mode = h
        # line 3: c_{t+1} = beta1 m_t + (1 - beta1) g~_t
        c = xp.multiply(m, b1, out=s2)
        xp.multiply(g, 1.0 - b1, out=s1)
        xp.add(c, s1, out=c)
        # line 8: m_{t+1} = beta2 m_t + (1 - beta2) g~_t   (last read of m)
        xp.multiply(g, 1.0 - b2, out=s1)
        xp.multiply(m, b2, out=m_out)
        xp.add(m_out, s1, out=m_out)
        # lines 4-5: y_{t+1} = theta_t - eta s^eps(c_{t+1});
        # line 7 (primal part): (1 - tau) y_{t+1} - eta lambda theta_t
        s = _kernels.steepest_eps(xp, c, p, eps, mode, s3, s3)
        xp.multiply(th, 1.0 - tau - lr * wd, out=th_out)  # last read of theta
        xp.multiply(s, lr * (1.0 - tau), out=s3)
        xp.subtract(th_out, s3, out=th_out)
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
    def _rule(xp, h, th, g, z, m, th_out, z_out, m_out, s1, s2, s3):
        alpha, tau = h[2], h[3]
        c = _Stacey._moments_and_primal(xp, h, th, g, m, th_out, m_out, s1, s2, s3)
        # line 6: z_{t+1} = z_t - alpha c_{t+1}
        xp.multiply(c, alpha, out=s3)
        xp.subtract(z, s3, out=z_out)
        # line 7 (dual part): + tau z_{t+1}
        xp.multiply(z_out, tau, out=s3)
        xp.add(th_out, s3, out=th_out)


@dataclass(frozen=True)
class StaceyPP(_Stacey):
    """Stacey(p,p), Algorithm 2: l_p steepest step coupled with an l_p^p mirror step.

    As :class:`StaceyP2` except line 6, the mirror step of psi = (1/p)||.||_p^p::

        w = |z|^{p-2} z - alpha c
        z = w / (|w|^{(p-2)/(p-1)} + eps)           (eps_mode="paper", Alg. 2 line 6)
        z = sgn(w) |w|^{1/(p-1)}                    (eps_mode="official": no eps in this step)

    p must be finite (the mirror map needs it): p in [2, inf).
    """

    name: ClassVar[str] = "stacey-pp"
    _p_inf_ok: ClassVar[bool] = False

    @staticmethod
    def _rule(xp, h, th, g, z, m, th_out, z_out, m_out, s1, s2, s3):
        p, alpha, tau, eps, mode = h[0], h[2], h[3], h[6], h[8]
        c = _Stacey._moments_and_primal(xp, h, th, g, m, th_out, m_out, s1, s2, s3)
        # line 6: w = grad psi(z_t) - alpha c_{t+1};  z_{t+1} = s^eps(w)   (last read of z)
        u = _kernels.mirror(xp, z, p, s1, s1)
        xp.multiply(c, alpha, out=s3)
        w = xp.subtract(u, s3, out=s1)
        if mode == "paper":
            _kernels.steepest_eps(xp, w, p, eps, "paper", z_out, s3)
        else:
            _kernels.steepest(xp, w, p, z_out, s3)
        # line 7 (dual part): + tau z_{t+1}
        xp.multiply(z_out, tau, out=s3)
        xp.add(th_out, s3, out=th_out)


# ------------------------------------------------------------------------------------------------
# Baselines of the paper's experiments (Section 5), as in their original papers
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SGD(Optimizer):
    """SGD with (heavy-ball) momentum, in PyTorch's form (the paper's "SGD w/ Momentum").

    ``g' = g + lambda theta``; ``b = mu b + g'``; ``theta -= eta b`` (or ``eta (g' + mu b)`` with
    Nesterov). With constant eta this is Polyak's heavy ball (1964) with velocity ``-eta b``.
    """

    name: ClassVar[str] = "sgd"
    lr: LR = 1e-2
    momentum: float = 0.9
    weight_decay: float = 0.0
    nesterov: bool = False

    def __post_init__(self):
        _check_lr(self.lr)
        object.__setattr__(self, "momentum", _validate.real("momentum", self.momentum, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "weight_decay", _validate.real("weight_decay", self.weight_decay, lo=0.0))
        if not isinstance(self.nesterov, bool):
            raise TypeError(f"nesterov must be a bool, got {type(self.nesterov).__name__}")

    def state_keys(self):
        return ("buf",)

    def _scalars(self, t, lr):
        return (lr, self.momentum, self.weight_decay, self.nesterov)

    @staticmethod
    def _rule(xp, h, th, g, buf, th_out, buf_out, s1, s2, s3):
        lr, mu, wd, nesterov = h
        gg = g
        if wd != 0.0:
            gg = xp.multiply(th, wd, out=s1)
            xp.add(gg, g, out=gg)
        xp.multiply(buf, mu, out=buf_out)
        xp.add(buf_out, gg, out=buf_out)
        upd = buf_out
        if nesterov:
            upd = xp.multiply(buf_out, mu, out=s2)
            xp.add(upd, gg, out=upd)
        xp.multiply(upd, lr, out=s3)
        xp.subtract(th, s3, out=th_out)


@dataclass(frozen=True)
class SignSGD(Optimizer):
    """signSGD (Bernstein et al., 2018): ``theta -= eta sign(g)``; with ``momentum > 0``, Signum:
    ``m = beta m + (1 - beta) g``, ``theta -= eta sign(m)``. sign(0) = 0."""

    name: ClassVar[str] = "signsgd"
    lr: LR = 1e-3
    momentum: float = 0.0

    def __post_init__(self):
        _check_lr(self.lr)
        object.__setattr__(self, "momentum", _validate.real("momentum", self.momentum, lo=0.0, hi=1.0, hi_open=True))

    def state_keys(self):
        return ("m",)

    def _scalars(self, t, lr):
        return (lr, self.momentum)

    @staticmethod
    def _rule(xp, h, th, g, m, th_out, m_out, s1, s2, s3):
        lr, beta = h
        xp.multiply(m, beta, out=m_out)
        xp.multiply(g, 1.0 - beta, out=s1)
        xp.add(m_out, s1, out=m_out)
        direction = m_out if beta != 0.0 else g
        xp.sign(direction, out=s1)
        xp.multiply(s1, lr, out=s1)
        xp.subtract(th, s1, out=th_out)


@dataclass(frozen=True)
class AdamW(Optimizer):
    """AdamW (Loshchilov & Hutter, 2019): Adam with decoupled weight decay.

    ``m = b1 m + (1-b1) g``; ``v = b2 v + (1-b2) g^2``; ``m^ = m/(1-b1^t)``; ``v^ = v/(1-b2^t)``;
    ``theta = theta (1 - eta lambda) - eta m^ / (sqrt(v^) + eps)`` (PyTorch's scaling of the decay by
    eta, as in the paper's hyper-parameter tables).
    """

    name: ClassVar[str] = "adamw"
    lr: LR = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 1e-2
    _decoupled: ClassVar[bool] = True

    def __post_init__(self):
        _check_lr(self.lr)
        object.__setattr__(self, "beta1", _validate.real("beta1", self.beta1, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "beta2", _validate.real("beta2", self.beta2, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "eps", _validate.real("eps", self.eps, lo=0.0))
        object.__setattr__(self, "weight_decay", _validate.real("weight_decay", self.weight_decay, lo=0.0))

    def state_keys(self):
        return ("m", "v")

    def _scalars(self, t, lr):
        bc1 = 1.0 - self.beta1 ** (t + 1)
        bc2 = 1.0 - self.beta2 ** (t + 1)
        return (lr, self.beta1, self.beta2, self.eps, self.weight_decay, self._decoupled, bc1, bc2)

    @staticmethod
    def _rule(xp, h, th, g, m, v, th_out, m_out, v_out, s1, s2, s3):
        lr, b1, b2, eps, wd, decoupled, bc1, bc2 = h
        gg = g
        if wd != 0.0 and not decoupled:  # Adam's L2 regularization: g + lambda theta
            gg = xp.multiply(th, wd, out=s1)
            xp.add(gg, g, out=gg)
        xp.multiply(m, b1, out=m_out)
        xp.multiply(gg, 1.0 - b1, out=s2)
        xp.add(m_out, s2, out=m_out)
        xp.multiply(gg, gg, out=s2)
        xp.multiply(s2, 1.0 - b2, out=s2)
        xp.multiply(v, b2, out=v_out)
        xp.add(v_out, s2, out=v_out)
        den = xp.sqrt(v_out, out=s2)
        xp.multiply(den, 1.0 / math.sqrt(bc2), out=den)
        xp.add(den, eps, out=den)
        upd = xp.divide(m_out, den, out=s2)
        xp.multiply(upd, lr / bc1, out=upd)
        xp.multiply(th, 1.0 - lr * wd if decoupled else 1.0, out=th_out)
        xp.subtract(th_out, upd, out=th_out)


@dataclass(frozen=True)
class Adam(AdamW):
    """Adam (Kingma & Ba, 2015), with optional L2 regularization ``g + lambda theta`` (coupled, as
    ``torch.optim.Adam``'s ``weight_decay``). Same update as :class:`AdamW` otherwise."""

    name: ClassVar[str] = "adam"
    weight_decay: float = 0.0
    _decoupled: ClassVar[bool] = False


@dataclass(frozen=True)
class Lion(Optimizer):
    """Lion (Chen et al., 2023): ``c = b1 m + (1-b1) g``; ``theta -= eta (sign(c) + lambda theta)``;
    ``m = b2 m + (1-b2) g``."""

    name: ClassVar[str] = "lion"
    lr: LR = 1e-4
    beta1: float = 0.9
    beta2: float = 0.99
    weight_decay: float = 0.0

    def __post_init__(self):
        _check_lr(self.lr)
        object.__setattr__(self, "beta1", _validate.real("beta1", self.beta1, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "beta2", _validate.real("beta2", self.beta2, lo=0.0, hi=1.0, hi_open=True))
        object.__setattr__(self, "weight_decay", _validate.real("weight_decay", self.weight_decay, lo=0.0))

    def state_keys(self):
        return ("m",)

    def _scalars(self, t, lr):
        return (lr, self.beta1, self.beta2, self.weight_decay)

    @staticmethod
    def _rule(xp, h, th, g, m, th_out, m_out, s1, s2, s3):
        lr, b1, b2, wd = h
        c = xp.multiply(m, b1, out=s2)
        xp.multiply(g, 1.0 - b1, out=s1)
        xp.add(c, s1, out=c)
        xp.sign(c, out=c)
        xp.multiply(g, 1.0 - b2, out=s1)
        xp.multiply(m, b2, out=m_out)
        xp.add(m_out, s1, out=m_out)
        xp.multiply(th, 1.0 - lr * wd, out=th_out)
        xp.multiply(c, lr, out=c)
        xp.subtract(th_out, c, out=th_out)


OPTIMIZERS: dict[str, type[Optimizer]] = {
    cls.name: cls for cls in (LpDescent, StaceyP2, StaceyPP, SGD, SignSGD, Adam, AdamW, Lion)
}


def make(name: str, **hyper) -> Optimizer:
    """Build an optimizer from its CLI name (``lp-descent``, ``stacey-p2``, ``stacey-pp``, ``sgd``,
    ``signsgd``, ``adam``, ``adamw``, ``lion``) and keyword hyper-parameters."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    return OPTIMIZERS[name](**hyper)
