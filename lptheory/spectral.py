"""Matrix optimizers on the optimizer protocol: Muon, Scion, Schatten-p descent and Stacey in Schatten-p.

Same protocol as :mod:`lptheory.optimizers` (``init(theta) -> state``, ``step(theta, grad, state) ->
(theta, state)``, ``output``), on matrices: arrays of shape ``(..., m, n)``, leading axes independent
replicates. With ``shape=(m, n)`` the parameters are flat vectors ``(..., m*n)`` (the simulator's
layout), viewed as ``(..., m, n)`` matrices inside the step. numpy arrays and torch tensors go
through the same rule (the array namespace of the input); the ``torch.optim`` classes of
:mod:`lptheory.torch_spectral` run the same rules on each parameter in place.

Each class's ``rule(xp, h, theta, grad, b, out)`` is the update, written once: ``h`` holds the
step's scalars, ``b`` the old state buffers, ``out`` the arrays to write (``out["theta"]`` and
``out[name]`` for each buffer; they may alias the inputs: a value is read before it is overwritten).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import _kernels, _validate
from ._xp import copy_into, is_floating, namespace
from .norms import (
    MUON_COEFFICIENTS,
    Schatten,
    make_norm,
    newton_schulz,
    polar,
    rebuild,
    svd,
)
from .optimizers import (
    OPTIMIZERS,
    Optimizer,
    StaceyHyper,
    StaceyP2,
    StaceyPPHyper,
    check_fields,
    check_hyper,
    check_step,
    is_schedule,
    note_nonfinite,
)
from .rules import EXPONENT, NONNEG, UNIT, hyper

__all__ = [
    "MatrixOptimizer",
    "Muon",
    "Scion",
    "SchattenDescent",
    "StaceyP2Schatten",
    "StaceyPPSchatten",
    "MATRIX_OPTIMIZERS",
    "muon_lr_scale",
    "laid_out",
]

LR = float | Callable[[int], float]


def _axpy(xp, y, a: float, x):
    """y += a x in place (torch: one ``add_`` pass with ``alpha``), returned."""
    if xp is np:
        y += a * x
        return y
    return y.add_(x, alpha=a)


def _scale_into(xp, x, a: float, out):
    """out = a x (no copy when a == 1 and out is x)."""
    if a == 1.0:
        return copy_into(xp, out, x)
    return xp.multiply(x, a, out=out)


def muon_lr_scale(shape, adjust_lr: str | None) -> float:
    """The per-matrix learning-rate factor of ``torch.optim.Muon`` (``adjust_lr_fn``): ``"original"``
    (Jordan et al. 2024): sqrt(max(1, m/n)); ``"match_rms_adamw"`` (Liu et al. 2025, "Muon is
    scalable for LLM training"): 0.2 sqrt(max(m, n)); ``None``: 1."""
    m, n = int(shape[-2]), int(shape[-1])
    if adjust_lr == "original":
        return math.sqrt(max(1.0, m / n))
    if adjust_lr == "match_rms_adamw":
        return 0.2 * math.sqrt(max(m, n))
    return 1.0


@dataclass(frozen=True)
class MatrixOptimizer(Optimizer):
    """Base of the matrix optimizers: hyper-parameters are dataclass fields (immutable; ``lr`` may be a
    schedule ``t -> value``), state a dict of arrays plus ``step``. Subclasses define ``buffers``,
    ``limits``, ``rule`` and the field ``shape`` (None: arrays (..., m, n); (m, n): flat (..., m*n))."""

    registered: ClassVar[bool] = True  # a subclass with a public name joins lptheory.optimizers.OPTIMIZERS
    buffers: ClassVar[tuple[str, ...]] = ()
    ndim: ClassVar[int] = 2  # event dims of a parameter (a vector norm in Scion: 1)

    def __post_init__(self):
        check_fields(self)
        shape = getattr(self, "shape", None)
        if shape is not None:
            if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
                raise ValueError(f"shape must be None or a pair (m, n), got {shape!r}")
            object.__setattr__(self, "shape", tuple(_validate.integer("shape", int(v), lo=1) for v in shape))

    # -- hyper-parameters ------------------------------------------------------------------------------
    def hyper_at(self, t: int) -> dict:
        h = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if is_schedule(v):
                v = v(t)
                spec = self.limits.get(f.name)
                if spec is not None:
                    v = check_hyper(f"{f.name} (at step {t})", v, spec)
            h[f.name] = v
        h["t"] = t
        return h

    def lr_at(self, t: int) -> float:
        return self.hyper_at(t)["lr"]

    # -- layout ----------------------------------------------------------------------------------------
    def _view(self, x):
        if self.shape is None:
            if x.ndim < self.ndim:
                kind = "a matrix (..., m, n)" if self.ndim == 2 else "a vector (..., d)"
                raise ValueError(f"{type(self).__name__} needs {kind}, got shape {tuple(x.shape)}; pass shape=(m, n)")
            return x
        m, n = self.shape
        if x.shape[-1] != m * n:
            raise ValueError(f"with shape={self.shape} the last axis must have length {m * n}, got {tuple(x.shape)}")
        return x.reshape(tuple(x.shape[:-1]) + (m, n))

    def _unview(self, x, like):
        return x if self.shape is None else x.reshape(like.shape)

    def init_buffer(self, xp, name, theta):
        return xp.zeros_like(theta)

    def init(self, theta) -> dict[str, Any]:
        xp = namespace(theta)
        if not is_floating(xp, theta):
            raise TypeError(f"theta must have a floating dtype, got {theta.dtype}")
        th = self._view(theta)
        state: dict[str, Any] = {"step": 0}
        for k in self.buffers:
            state[k] = self._unview(self.init_buffer(xp, k, th), theta)
        return state

    def step(self, theta, grad, state: dict[str, Any], *, donate: bool = False):
        """One update: ``(new_theta, new_state)``; inputs are not modified unless ``donate=True``."""
        xp = namespace(theta, grad)
        t = check_step(xp, theta, grad, state)
        b = {}
        for k in self.buffers:
            if k not in state:
                raise ValueError(f"state is missing {k!r}; build it with {type(self).__name__}.init(theta)")
            a = state[k]
            if namespace(a) is not xp or tuple(a.shape) != tuple(theta.shape) or a.dtype != theta.dtype:
                raise ValueError(f"state[{k!r}] must match theta (shape {tuple(theta.shape)}, dtype {theta.dtype})")
            b[k] = self._view(a)
        th, g = self._view(theta), self._view(grad)
        h = self.hyper_at(t)
        note_nonfinite(self, xp, grad)
        ctx = xp.no_grad() if xp is not np else _Null()
        with ctx:
            if donate:
                out = {"theta": th, **b}
            else:
                out = {"theta": xp.empty_like(th), **{k: xp.empty_like(v) for k, v in b.items()}}
            self.rule(xp, h, th, g, b, out)
        new_state = {"step": t + 1}
        new_state.update({k: self._unview(out[k], theta) for k in self.buffers})
        return self._unview(out["theta"], theta), new_state

    @staticmethod
    def rule(xp, h, theta, grad, b, out) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Muon(MatrixOptimizer):
    """Muon (Jordan et al. 2024, kellerjordan.github.io/posts/muon), in the form of ``torch.optim.Muon``
    (torch 2.13, its documented pseudo-code)::

        B_t = mu B_{t-1} + g_t
        B~_t = g_t + mu B_t   (nesterov)   or   B_t
        O_t = NS_k(B~_t)      (orthogonalize="newton-schulz")   or   U V^T of B~_t   ("svd": exact)
        theta_t = theta_{t-1} (1 - lr lambda) - lr' O_t,    lr' = lr * muon_lr_scale(shape, adjust_lr)

    NS_k: :func:`lptheory.norms.newton_schulz` (quintic, (a, b, c) = (3.4445, -4.7750, 2.0315), Frobenius
    pre-normalization, ``ns_steps`` iterations). With ``orthogonalize="svd"``, momentum 0 and no
    weight decay, the step is -lr' times the unit spectral-norm steepest direction U V^T (Bernstein &
    Newhouse 2024, Sec. 3.2). ``adjust_lr``: ``"original"`` (torch's default: sqrt(max(1, m/n))),
    ``"match_rms_adamw"`` or None (no factor). Matrices (..., m, n); ``ns_dtype`` ("float32",
    "bfloat16", ...; torch only) runs the iteration in another dtype (``torch.optim.Muon``: bfloat16).
    """

    name: ClassVar[str] = "muon"
    buffers: ClassVar[tuple[str, ...]] = ("buf",)
    lr: LR = hyper(0.02, NONNEG, help="step size lr (or a schedule t -> lr_t)")
    momentum: float = hyper(0.95, UNIT, help="momentum mu of B_t = mu B_{t-1} + g_t")
    nesterov: bool = hyper(True, help="B~_t = g_t + mu B_t (True) or B_t (False)")
    weight_decay: float = hyper(0.0, NONNEG, help="decoupled weight decay lambda")
    ns_steps: int = hyper(5, flag=False, help="Newton-Schulz iterations k (an integer >= 0)")
    orthogonalize: str = hyper(
        "newton-schulz", choices=("newton-schulz", "svd"), flag=False, help="NS_k, or the exact polar factor (svd)"
    )
    ns_coefficients: tuple = hyper(MUON_COEFFICIENTS, help="the quintic's coefficients (a, b, c)")
    eps: float = hyper(1e-7, NONNEG, help="eps of Newton-Schulz's Frobenius pre-normalization")
    adjust_lr: str | None = hyper(
        "original", flag=False, help="lr factor: 'original' sqrt(max(1, m/n)), 'match_rms_adamw' or None"
    )
    ns_dtype: str | None = hyper(None, help="dtype Newton-Schulz runs in (torch only for bfloat16; None: theta's)")
    shape: tuple | None = None

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.nesterov, bool):
            raise TypeError(f"nesterov must be a bool, got {type(self.nesterov).__name__}")
        _validate.integer("ns_steps", self.ns_steps, lo=0)
        if self.adjust_lr not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"adjust_lr must be None, 'original' or 'match_rms_adamw', got {self.adjust_lr!r}")
        if self.ns_dtype not in (None, "float16", "bfloat16", "float32", "float64"):
            raise ValueError(
                f"ns_dtype must be None, 'float16', 'bfloat16', 'float32' or 'float64', got {self.ns_dtype!r}"
            )
        if len(tuple(self.ns_coefficients)) != 3:
            raise ValueError(f"ns_coefficients must be a triple (a, b, c), got {self.ns_coefficients!r}")
        object.__setattr__(self, "ns_coefficients", tuple(float(v) for v in self.ns_coefficients))

    @staticmethod
    def orthogonalized(xp, h, u):
        """O = NS_k(u) or the exact polar factor of u."""
        if h["orthogonalize"] == "svd":
            return polar(u)
        if h.get("ns_dtype"):
            if xp is np:  # numpy has no bfloat16: the other dtypes by astype
                if h["ns_dtype"] == "bfloat16":
                    raise ValueError("ns_dtype='bfloat16' needs torch tensors (numpy has no bfloat16)")
                dt = np.dtype(h["ns_dtype"])
                return newton_schulz(u.astype(dt), h["ns_steps"], h["ns_coefficients"], h["eps"]).astype(u.dtype)
            dt = getattr(xp, h["ns_dtype"])
            return newton_schulz(u.to(dt), h["ns_steps"], h["ns_coefficients"], h["eps"]).to(u.dtype)
        return newton_schulz(u, h["ns_steps"], h["ns_coefficients"], h["eps"])

    @staticmethod
    def rule(xp, h, theta, grad, b, out):
        mu = h["momentum"]
        buf = _scale_into(xp, b["buf"], mu, out["buf"])  # B_t = mu B_{t-1} + g_t
        xp.add(buf, grad, out=buf)
        if h["nesterov"]:  # B~_t = g_t + mu B_t
            u = _axpy(xp, copy_into(xp, xp.empty_like(grad), grad), mu, buf)
        else:
            u = buf
        o = Muon.orthogonalized(xp, h, u)
        _scale_into(xp, theta, 1.0 - h["lr"] * h["weight_decay"], out["theta"])  # decoupled weight decay
        _axpy(xp, out["theta"], -h["lr"] * muon_lr_scale(theta.shape, h["adjust_lr"]), o)


@dataclass(frozen=True)
class Scion(MatrixOptimizer):
    """Scion (Pethick et al. 2025, "Training Deep Learning Models with Norm-Constrained LMOs"): stochastic
    (unconstrained) conditional gradient with momentum over a norm ball of radius rho.

    Their Algorithms 1 (uSCG) and 2 (SCG), with d_{-1} = 0::

        d_t = (1 - alpha) d_{t-1} + alpha g_t
        uSCG (constrained=False):  theta_{t+1} = theta_t + gamma lmo(d_t)
        SCG  (constrained=True):   theta_{t+1} = (1 - gamma) theta_t + gamma lmo(d_t)

    lmo(d) = argmin_{||x|| <= rho} <d, x> = -rho direction(d) (:meth:`lptheory.norms.Norm.lmo`).
    ``norm``: a :class:`lptheory.norms.Norm` or a name (default ``"rms->rms"``, the spectral layer
    norm); vector norms act on (..., d). ``lr`` is gamma (in [0, 1] for SCG), ``alpha`` in (0, 1]
    (1: no momentum), ``radius`` rho > 0.
    """

    name: ClassVar[str] = "scion"
    buffers: ClassVar[tuple[str, ...]] = ("d",)
    lr: LR = hyper(0.1, NONNEG, help="step size gamma (or a schedule t -> gamma_t; in [0, 1] when constrained)")
    alpha: float = hyper(0.1, {"lo": 0.0, "hi": 1.0, "lo_open": True}, help="momentum alpha in (0, 1] (1: none)")
    radius: float = hyper(1.0, NONNEG, flag=False, help="radius rho of the norm ball")
    norm: Any = hyper("rms->rms", help="the norm of the LMO (a lptheory.norms.Norm or its name)")
    constrained: bool = hyper(False, help="SCG (True) or uSCG (False)")
    shape: tuple | None = None

    def __post_init__(self):
        object.__setattr__(self, "norm", make_norm(self.norm))
        super().__post_init__()
        if not isinstance(self.constrained, bool):
            raise TypeError(f"constrained must be a bool, got {type(self.constrained).__name__}")
        if self.norm.ndim == 1 and self.shape is not None:
            raise ValueError(f"shape is for matrix norms; norm {self.norm!r} acts on vectors (..., d)")
        if self.constrained and not is_schedule(self.lr) and self.lr > 1.0:
            raise ValueError(f"lr (gamma) must be in [0, 1] for the constrained form, got {self.lr}")

    @property
    def ndim(self):  # type: ignore[override]
        return self.norm.ndim

    @staticmethod
    def rule(xp, h, theta, grad, b, out):
        a = h["alpha"]
        d = _scale_into(xp, b["d"], 1.0 - a, out["d"])  # d_t = (1 - alpha) d_{t-1} + alpha g_t
        _axpy(xp, d, a, grad)
        lmo = h["norm"].lmo(d, h["radius"])
        gamma = h["lr"]
        _scale_into(xp, theta, (1.0 - gamma) if h["constrained"] else 1.0, out["theta"])
        _axpy(xp, out["theta"], gamma, lmo)


@dataclass(frozen=True)
class SchattenDescent(MatrixOptimizer):
    """Stochastic Schatten-p descent: theta <- theta - eta S_p(g~), the matrix analogue of Algorithm 3.

    S_p(G) = U diag(sigma^{1/(p-1)}) V^T for G = U diag(sigma) V^T (:meth:`lptheory.norms.Schatten.steepest_map`):
    the paper's s_p (Alg. 3 line 2) applied to the singular values. Derivation: by von Neumann's trace
    inequality the minimizer of <eta G, D> + (1/2)||D||_{S_p}^2 shares G's singular vectors, and on the
    singular values it is the vector problem of Section 4.1, so D* = -eta ||G||_{S_p*}^{(p-2)/(p-1)}
    S_p(G); the unscaled form drops the norm factor as Alg. 3 does. p = 2: SGD; p = inf: the
    orthogonalized update U V^T (Muon without momentum, exact). p in (1, inf].
    """

    name: ClassVar[str] = "schatten-descent"
    p: float = hyper(3.0, EXPONENT, help="Schatten exponent p in (1, inf]")
    lr: LR = hyper(1e-3, NONNEG, help="step size eta (or a schedule t -> eta_t)")
    shape: tuple | None = None

    @staticmethod
    def rule(xp, h, theta, grad, b, out):
        s = Schatten(h["p"]).steepest_map(grad)  # Alg. 3 line 2, on the singular values
        copy_into(xp, out["theta"], theta)
        _axpy(xp, out["theta"], -h["lr"], s)  # Alg. 3 line 3


def _spectral_kernel(xp, x, fn):
    U, s, Vh = svd(x)  # NaN factors for a non-finite matrix (the step carries it; the optimizer warns)
    return rebuild(U, fn(s), Vh)


def _s_eps(xp, h, x, mode):
    """S^eps(X) = U diag(s^eps(sigma)) V^T: Alg. 1/2 line 4's map on the singular values."""
    p, eps = h["p"], h["eps"]

    def fn(s):
        out, tmp = xp.empty_like(s), xp.empty_like(s)
        return _kernels.steepest_eps(xp, s, p, eps, mode, out, tmp)

    return _spectral_kernel(xp, x, fn)


@dataclass(frozen=True)
class _StaceySchatten(StaceyHyper, MatrixOptimizer):
    # the hyper-parameters and ranges of Algorithms 1 and 2 (lptheory.optimizers.StaceyHyper), plus the layout
    shape: tuple | None = None

    buffers: ClassVar[tuple[str, ...]] = StaceyP2.buffers

    def init_buffer(self, xp, name, theta):
        return StaceyP2.init_buffer(self, xp, name, theta)  # z_0 = theta_0 (or 0), m_0 = 0, as StaceyP2

    @staticmethod
    def primal(xp, h, theta, grad, b, out):
        """Lines 3-5 and 8 of Alg. 1/2 and the primal part of line 7 (into ``out["theta"]``); returns c."""
        c = b["m"] * h["beta1"] + grad * (1.0 - h["beta1"])  # line 3
        se = _s_eps(xp, h, c, h["eps_mode"])  # lines 4-5 on the singular values
        # line 7 (primal part): (1 - tau) y_{t+1} - eta lambda theta_t, y_{t+1} = theta_t - eta S^eps(c)
        _scale_into(xp, theta, 1.0 - h["tau"] - h["lr"] * h["weight_decay"], out["theta"])
        _axpy(xp, out["theta"], -h["lr"] * (1.0 - h["tau"]), se)
        _scale_into(xp, b["m"], h["beta2"], out["m"])  # line 8 (after the last read of m)
        _axpy(xp, out["m"], 1.0 - h["beta2"], grad)
        return c


@dataclass(frozen=True)
class StaceyP2Schatten(_StaceySchatten):
    """Stacey(p,2) in Schatten-p geometry: Algorithm 1 with the l_p maps replaced by their spectral
    (singular-value) versions.

    Per step (Alg. 1 lines 3-8, matrices C, Z, theta)::

        C = beta1 M + (1 - beta1) G~
        Y = theta - eta S^eps(C)              S^eps(C) = U diag(sigma / (sigma^{(p-2)/(p-1)} + eps)) V^T
        Z = Z - alpha C                       (the Euclidean = Frobenius mirror step, unchanged)
        theta = tau Z + (1 - tau) Y - eta lambda theta
        M = beta2 M + (1 - beta2) G~

    Derivation: the l_p steepest map s_p is the gradient of (1/p*)||.||_{p*}^{p*} (the conjugate of
    (1/p)||.||_p^p up to the power); its Schatten analogue is the gradient of the spectral function
    (1/p*)||sigma(.)||_{p*}^{p*}, which is U diag(s_p(sigma)) V^T (Lewis 1995, Thm. 3.1); the
    eps-regularization of line 4 is applied to the singular values the same way (``eps_mode`` as in
    :class:`lptheory.optimizers.StaceyP2`). For diagonal matrices this is Alg. 1 on the diagonal
    (up to signs, which the odd map carries). p in [2, inf].
    """

    name: ClassVar[str] = "stacey-p2-schatten"

    @staticmethod
    def rule(xp, h, theta, grad, b, out):
        c = _StaceySchatten.primal(xp, h, theta, grad, b, out)
        _scale_into(xp, b["z"], 1.0, out["z"])  # line 6: Z = Z - alpha C
        _axpy(xp, out["z"], -h["alpha"], c)
        _axpy(xp, out["theta"], h["tau"], out["z"])  # line 7 (dual part)


@dataclass(frozen=True)
class StaceyPPSchatten(StaceyPPHyper, _StaceySchatten):
    """Stacey(p,p) in Schatten-p geometry: Algorithm 2 with the mirror step of psi(Z) = (1/p)||Z||_{S_p}^p.

    As :class:`StaceyP2Schatten` except line 6::

        W = grad psi(Z) - alpha C             grad psi(Z) = U_Z diag(sigma_Z^{p-1}) V_Z^T
        Z = S^eps(W)                          (eps_mode="paper";  "official": S_p(W), no eps)

    Derivation: psi is the spectral function of (1/p)||.||_p^p, so grad psi(Z) = U diag(sigma^{p-1}) V^T
    (Lewis 1995, Thm. 3.1) and its inverse is U diag(sigma^{1/(p-1)}) V^T = S_p; Alg. 2 line 6 is the
    mirror step z = (grad psi)^{-1}(grad psi(z) - alpha c) with the eps of line 4 on the singular
    values. p in [2, inf).
    """

    name: ClassVar[str] = "stacey-pp-schatten"

    @staticmethod
    def rule(xp, h, theta, grad, b, out):
        c = _StaceySchatten.primal(xp, h, theta, grad, b, out)
        p = h["p"]

        def mirror(s):
            return _kernels.mirror(xp, s, p, xp.empty_like(s), xp.empty_like(s))

        w = _spectral_kernel(xp, b["z"], mirror)  # grad psi(Z_t)
        _axpy(xp, w, -h["alpha"], c)
        if h["eps_mode"] == "paper":
            z = _s_eps(xp, h, w, "paper")
        else:
            z = Schatten(p).steepest_map(w)
        copy_into(xp, out["z"], z)
        _axpy(xp, out["theta"], h["tau"], out["z"])  # line 7 (dual part)


# the matrix optimizers registered in lptheory.optimizers.OPTIMIZERS by their definitions above
MATRIX_OPTIMIZERS: dict[str, type[MatrixOptimizer]] = {
    n: c for n, c in OPTIMIZERS.items() if isinstance(c, type) and issubclass(c, MatrixOptimizer)
}


def laid_out(optimizer, d: int, own=None, shape=None):
    """``optimizer`` ready for flat iterates of length ``d`` (the simulator's (R, d) rows, one per replicate):
    a matrix optimizer whose parameters are matrices (``ndim == 2``) and that has no ``shape`` gets
    ``shape`` if given, else ``own`` (a problem's own matrix shape) when its product is ``d``, else ``(1, d)``
    (the iterate as one row); anything else is returned as is. Without a layout the replicates would be the
    rows of one matrix (coupled). ``shape`` (or the optimizer's own) must multiply to ``d``: ValueError."""
    if not isinstance(optimizer, MatrixOptimizer) or optimizer.ndim != 2:
        return optimizer
    if optimizer.shape is None:
        if shape is None:
            mine = tuple(int(v) for v in own) if isinstance(own, (tuple, list)) and len(own) == 2 else None
            shape = mine if mine is not None and mine[0] * mine[1] == d else (1, d)
        optimizer = dataclasses.replace(optimizer, shape=tuple(shape))
    m, n = optimizer.shape
    if m * n != d:
        raise ValueError(f"shape={optimizer.shape}: m * n must equal d = {d}")
    return optimizer
