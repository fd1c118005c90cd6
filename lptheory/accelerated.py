"""Deterministic l_p methods for the acceleration checks (paper eq. (1) and its references).

* :class:`AcceleratedLp`: linear coupling (AGD+) with the mirror map psi(x) = (1/p)||x - x_0||_p^p,
  fixed horizon T (Nemirovskii & Nesterov 1985; Allen-Zhu & Orecchia's linear coupling;
  Diakonikolas & Guzman 2024). At p = 2 it is Euclidean AGD+ (``agd-euclidean``).
* :class:`SteepestLp`: plain l_p steepest descent x - (1/L) g#, g#_i = ||g||_q^{2-q} sgn(g_i)|g_i|^{q-1}
  (Kelner, Lee, Orecchia & Sidford, SODA 2014; the deterministic Alg. 3 with eta = 1/L, i.e. Section 4.1's
  closed-form step).

Both follow the optimizer protocol of :mod:`lptheory.optimizers` (``init``, ``step``, ``output``),
where ``theta`` is the point where the gradient is queried. For :class:`AcceleratedLp` the output of the
method (the sequence y_k with the guarantee) is ``state["y"]``; :meth:`output` returns it.
Arrays have shape (..., d) (leading axes: independent replicates); numpy or torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from . import _kernels, _validate
from ._xp import namespace
from .geometry import dual_exponent, lp_norm, steepest_map, steepest_step
from .optimizers import Optimizer

__all__ = ["AcceleratedLp", "SteepestLp", "accelerated_bound"]


def accelerated_bound(L: float, R_hat: float, T: int, p: float) -> float:
    """The guarantee of linear coupling with the l_p^p mirror map (constants derived for this toolkit from
    the uniform convexity of psi, Nesterov 2018, Lemma 4.2.3):
    f(y_T) - f* <= 2^{(3p-4)/p} L R_hat^2 T^{(p-2)/p} / (T (T+1))
    (<= 8 L R_hat^2 / T^{(p+2)/p}; at p = 2 the classical 2 L R^2 / (T (T+1)))."""
    return 2.0 ** ((3 * p - 4) / p) * L * R_hat**2 * T ** ((p - 2) / p) / (T * (T + 1))


def coupling_update(theta, grad, z, y, v, x0, s, buf, a_k, k: int, p: float, rows: int | None = None) -> None:
    """Step k of :class:`AcceleratedLp` (linear coupling, Nemirovskii & Nesterov 1985; Diakonikolas & Guzman
    2024) in place on numpy float64 arrays of one shape: z += a_k grad; v = x_0 - s_p(z); y = (1 - tau_k) y +
    tau_k v; theta = (1 - tau_{k+1}) y + tau_{k+1} v, tau_k = 2/(k+1). ``s`` and ``buf`` are work arrays.
    ``a_k`` is the float c k, or a column of them (one per row: rows of different horizons stepped together,
    each with the bits of its own run). ``rows``: only the first ``rows`` rows of (R, d) arrays are stepped
    (``a_k`` then has at least that many). The one implementation of the in-place update: on 2-D C-contiguous
    arrays it runs compiled (:func:`lptheory.fast.coupling.update`: one pass, the same operations, numpy's bits),
    else through the numpy calls below."""
    from .fast import coupling as _coupling

    if _coupling.update(theta, grad, z, y, v, x0, s, buf, a_k, k, p, rows):
        return
    if rows is not None:
        theta, grad, z, y, v, x0, s, buf = (a[:rows] for a in (theta, grad, z, y, v, x0, s, buf))
        if isinstance(a_k, np.ndarray):
            a_k = a_k[:rows]
    tau = 2.0 / (k + 1)
    np.multiply(grad, a_k, out=buf)
    np.add(z, buf, out=z)  # z_k = z_{k-1} + a_k grad f(x_k)
    with np.errstate(divide="ignore"):
        s = _kernels.steepest(np, z, p, s, buf)  # s_p(z_k) = sgn(z_k)|z_k|^{1/(p-1)}
    np.subtract(x0, s, out=v)  # v_k = x_0 - s_p(z_k)
    np.multiply(y, 1.0 - tau, out=y)
    np.multiply(v, tau, out=buf)
    np.add(y, buf, out=y)  # y_k = (1 - tau_k) y_{k-1} + tau_k v_k
    tau_next = 2.0 / (k + 2)
    np.multiply(y, 1.0 - tau_next, out=theta)
    np.multiply(v, tau_next, out=buf)
    np.add(theta, buf, out=theta)  # x_{k+1} = (1 - tau_{k+1}) y_k + tau_{k+1} v_k


@dataclass(frozen=True)
class AcceleratedLp(Optimizer):
    """Linear coupling with the l_p^p mirror map (Nemirovskii & Nesterov 1985; Diakonikolas & Guzman 2024).

    Parameters
    ----------
    p : float >= 2;  L : l_p smoothness constant > 0;  T : horizon (>= 1);
    R_hat : any upper bound on ||x_0 - x*||_p (> 0);  radius : optional ball constraint
    ||x - x_0||_p <= radius (the mirror point is rescaled radially, exact for this psi).

    Per step k = 1..T (a_k = c k, tau_k = 2/(k+1), c = R_hat^{p-2} s^{2/p} / (2 L T^{(p-2)/p}), s = 2^{2-p}):
        z_k = z_{k-1} + a_k grad f(x_k);  v_k = x_0 - sgn(z_k)|z_k|^{1/(p-1)};
        y_k = (1 - tau_k) y_{k-1} + tau_k v_k;  x_{k+1} = (1 - tau_{k+1}) y_k + tau_{k+1} v_k.
    """

    name: ClassVar[str] = "accelerated-lp"
    p: float
    L: float
    T: int
    R_hat: float
    radius: float | None = None

    def __post_init__(self):
        _validate.real("p", self.p, lo=2.0)
        if math.isinf(self.p):
            raise ValueError("p must be finite (the l_p^p mirror map needs p < inf)")
        _validate.real("L", self.L, lo=0.0, lo_open=True)
        _validate.integer("T", self.T, lo=1)
        _validate.real("R_hat", self.R_hat, lo=0.0, lo_open=True)
        if self.radius is not None:
            _validate.real("radius", self.radius, lo=0.0, lo_open=True)

    @property
    def c(self) -> float:
        p = self.p
        s = 2.0 ** (2.0 - p)
        return self.R_hat ** (p - 2) * s ** (2.0 / p) / (2.0 * self.L * self.T ** ((p - 2) / p))

    def init(self, theta):
        xp = namespace(theta)
        return {"step": 0, "x0": theta * 1.0, "y": theta * 1.0, "v": theta * 1.0, "z": xp.zeros_like(theta)}

    def step(self, theta, grad, state, *, donate: bool = False):
        if donate and self.radius is None and type(theta) is np.ndarray and type(grad) is np.ndarray:
            got = self._step_numpy_inplace(theta, grad, state)
            if got is not None:
                return got
        k = state["step"] + 1
        a_k = self.c * k
        tau = 2.0 / (k + 1)
        z = state["z"] + a_k * grad
        u = -steepest_map(z, self.p)  # argmin <z, u> + (1/p)||u||_p^p = -sgn(z)|z|^{1/(p-1)}
        if self.radius is not None:
            n = lp_norm(u, self.p)
            xp = namespace(u)
            scale = xp.where(n > self.radius, self.radius / xp.where(n > 0, n, 1.0), 1.0 + 0.0 * n)
            u = u * scale[..., None]
        v = state["x0"] + u
        y = (1.0 - tau) * state["y"] + tau * v
        tau_next = 2.0 / (k + 2)
        x_next = (1.0 - tau_next) * y + tau_next * v
        return x_next, {"step": k, "x0": state["x0"], "y": y, "v": v, "z": z}

    def _step_numpy_inplace(self, theta, grad, state):
        """:meth:`step` with ``donate`` on numpy float64 arrays (no radius): the same operations in the same
        order, written into the state's and theta's arrays (the step owns them when donated) and two work
        buffers kept in the state, instead of fresh temporaries; ``v = x_0 - s_p(z)`` is ``x_0 + (-s_p(z))``
        exactly (IEEE subtraction is the addition of the negation). None: take the general path."""
        z, y, v, x0 = state.get("z"), state.get("y"), state.get("v"), state.get("x0")
        arrays = (theta, grad, z, y, v, x0)
        shape = theta.shape
        if any(type(a) is not np.ndarray or a.shape != shape or a.dtype != np.float64 for a in arrays):
            return None
        if len({id(a) for a in arrays}) < 6 or not all(a.flags.writeable for a in (theta, z, y, v)):
            return None
        work = state.get("_work")
        if work is None or work[0].shape != shape:
            work = (np.empty(shape), np.empty(shape))
        s, buf = work
        k = state["step"] + 1
        coupling_update(theta, grad, z, y, v, x0, s, buf, self.c * k, k, self.p)
        return theta, {"step": k, "x0": x0, "y": y, "v": v, "z": z, "_work": work}

    def output(self, theta, state):
        return state["y"]


@dataclass(frozen=True)
class SteepestLp(Optimizer):
    """x_{k+1} = x_k - (1/L) g#, g# = ||g||_q^{2-q} sgn(g)|g|^{q-1} (Kelner et al. 2014; Section 4.1's
    closed-form step of Alg. 3 with eta = 1/L). Guarantee: f(x_k) - f* <= 2 L R_0^2 / (k + 4)."""

    name: ClassVar[str] = "steepest-lp"
    p: float
    L: float

    def __post_init__(self):
        _validate.real("p", self.p, lo=2.0)
        _validate.real("L", self.L, lo=0.0, lo_open=True)

    def init(self, theta):
        return {"step": 0}

    def step(self, theta, grad, state, *, donate: bool = False):
        if donate and type(theta) is np.ndarray and type(grad) is np.ndarray:
            got = self._step_numpy_inplace(theta, grad, state)
            if got is not None:
                return got
        return theta + steepest_step(grad, self.p, lr=1.0 / self.L), {"step": state["step"] + 1}

    def _step_numpy_inplace(self, theta, grad, state):
        """:meth:`step` with ``donate`` on numpy float64 (R, d) arrays: the operations of
        ``theta + steepest_step(grad, p, lr)`` (:func:`lptheory.geometry.steepest_step`: the row norm n, then
        ``(-lr n) s_p(g / n)``), in the same order, written into two work buffers kept in the state and into
        ``theta`` (the step owns it when donated), without the validations and temporaries of the general
        path (measured: a steepest-lp simulator step 100 -> 84 us on 2 rows of 4096 at p = 3). None: take the
        general path."""
        shape = theta.shape
        if theta.dtype != np.float64 or grad.dtype != np.float64 or grad.shape != shape or theta.ndim != 2:
            return None
        if theta is grad or not theta.flags.writeable or np.may_share_memory(theta, grad):
            return None
        bufs = state.get("_work")
        if bufs is None or bufs[0].shape != shape:
            bufs = (np.empty(shape), np.empty(shape))
        work, tmp = bufs
        lr, p = 1.0 / self.L, self.p
        if p == 2.0:
            np.multiply(-lr, grad, out=work)  # -lr * g
        else:
            n = lp_norm(grad, dual_exponent(p), -1)[..., None]
            safe = np.where(n > 0, n, 1.0)
            np.divide(grad, safe, out=work)  # g / safe
            with np.errstate(divide="ignore"):
                s = _kernels.steepest(np, work, p, work, tmp)  # s_p(g / safe), as steepest_map
            np.multiply(-lr * n, s, out=work)  # -lr * n * s_p(...)
        np.add(theta, work, out=theta)
        return theta, {"step": state["step"] + 1, "_work": bufs}
