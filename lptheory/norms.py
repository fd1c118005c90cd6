"""Norms as objects: the norm, its dual, the steepest-descent direction and the LMO over the unit ball.

Optimizers and claims that take a geometry take a :class:`Norm` instead of a bare ``p``. The l_p
family (:class:`Lp`, a wrapper of :mod:`lptheory.geometry`, which keeps the formulas) is one
implementation; the matrix norms are new: Schatten-p (:class:`Schatten`, p in [1, inf]: nuclear,
Frobenius, spectral) through the SVD, and the operator norms of the LMO methods (:class:`ColNorm`,
l1 -> l2; :class:`RowNorm`, l2 -> l_inf; :class:`SpectralRMS`, RMS -> RMS).

Conventions (Bernstein & Newhouse 2024, "Old Optimizer, New Norm: An Anthology", arXiv:2409.20325,
Sec. 2; Pethick et al. 2025, "Training Deep Learning Models with Norm-Constrained LMOs", Sec. 3):

* ``norm(x)``: ||x||; ``dual_norm(g)``: ||g||_* = max_{||d|| <= 1} <g, d>;
* ``direction(g)``: a maximizer d* of <g, d> over ||d|| <= 1 (so <g, d*> = ||g||_* and ||d*|| = 1 for
  g != 0; 0 for g = 0);
* ``lmo(g, radius)`` = argmin_{||d|| <= radius} <g, d> = -radius * direction(g) (Pethick et al., eq. (3));
* ``sharp(g)`` = ||g||_* direction(g), the duality map g^#: the steepest-descent step
  argmin_D <g, D> + (lam/2) ||D||^2 is -sharp(g)/lam (Bernstein & Newhouse, Proposition 1);
  ``steepest_step(g, lr)`` = -lr sharp(g).

Arrays: a vector norm acts on the last axis, a matrix norm on the last two (shape ``(..., m, n)``);
leading axes are batch (replicate) axes. numpy arrays and torch tensors go through the same code
(the array namespace of the input, :func:`lptheory._xp.namespace`) and come back in the caller's kind.

Newton-Schulz (:func:`newton_schulz`): the fast approximate orthogonalization of Muon (Jordan et al.
2024, "Muon: An optimizer for hidden layers in neural networks", kellerjordan.github.io/posts/muon),
quintic with the coefficients (3.4445, -4.7750, 2.0315) and Frobenius pre-normalization; its error
against the exact polar factor is :func:`ns_error` (measured) and :func:`ns_scalar` (the scalar
polynomial it applies to each normalized singular value: exact in exact arithmetic).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from . import _kernels, _validate
from ._xp import as_float_array, namespace
from .geometry import dual_exponent, lp_norm, steepest_map

__all__ = [
    "Norm",
    "Lp",
    "Schatten",
    "ColNorm",
    "RowNorm",
    "SpectralRMS",
    "Scaled",
    "svd",
    "svdvals",
    "rebuild",
    "spectral_apply",
    "polar",
    "newton_schulz",
    "ns_scalar",
    "ns_error",
    "MUON_COEFFICIENTS",
    "NORMS",
    "make_norm",
]

MUON_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _matrix(x, name="x"):
    xp, x = as_float_array(x, name)
    if x.ndim < 2:
        raise ValueError(f"{name} must be a matrix or a batch of matrices (..., m, n), got shape {tuple(x.shape)}")
    return xp, x


def _sum(xp, x, axis):
    return xp.sum(x, axis=axis)


def _max(xp, x, axis):
    return xp.max(x, axis=axis) if xp is np else xp.amax(x, dim=axis)


def _where_pos(xp, n):
    """n where n > 0, else 1 (a safe denominator)."""
    return xp.where(n > 0, n, xp.ones_like(n))


# ------------------------------------------------------------------------------------------------
# SVD helpers (one code path for numpy and torch)
# ------------------------------------------------------------------------------------------------
def _finite_matrices(xp, x):
    """(all finite?, per-matrix finiteness mask of shape x.shape[:-2])."""
    ok = xp.isfinite(x)
    ok = ok.all(axis=(-2, -1)) if xp is np else ok.all(dim=-1).all(dim=-1)
    return bool(ok.all()), ok


def _nan_where_not(xp, ok, *arrays):
    """Each array with NaN in the batch entries whose matrix was not finite."""
    out = []
    for a in arrays:
        mask = ok.reshape(tuple(ok.shape) + (1,) * (a.ndim - ok.ndim))
        out.append(xp.where(mask, a, float("nan")))
    return tuple(out)


def svd(x):
    """Thin SVD of (a batch of) matrices: ``U, s, Vh`` with ``x = U diag(s) Vh`` (numpy or torch).

    A matrix with a NaN or inf entry (a non-finite gradient) gets NaN factors instead of an error, so the
    update carries the NaN as every other rule does (the optimizers warn once and count it)."""
    xp, x = _matrix(x)
    fine, ok = _finite_matrices(xp, x)
    if fine:
        return xp.linalg.svd(x, full_matrices=False)
    safe = xp.where(ok.reshape(tuple(ok.shape) + (1, 1)), x, 0.0)
    return _nan_where_not(xp, ok, *xp.linalg.svd(safe, full_matrices=False))


def svdvals(x):
    """The singular values of (a batch of) matrices, descending (NaN for a matrix with a non-finite entry)."""
    xp, x = _matrix(x)
    fine, ok = _finite_matrices(xp, x)
    if not fine:
        x = xp.where(ok.reshape(tuple(ok.shape) + (1, 1)), x, 0.0)
    s = xp.linalg.svdvals(x) if xp is not np else np.linalg.svd(x, compute_uv=False)
    return s if fine else _nan_where_not(xp, ok, s)[0]


def rebuild(U, s, Vh):
    """U diag(s) Vh for (batches of) thin SVD factors."""
    return (U * s[..., None, :]) @ Vh


def spectral_apply(x, fn: Callable):
    """U diag(fn(s)) V^T for x = U diag(s) V^T: the spectral (unitarily invariant) function of ``fn``.

    For an odd scalar map with fn(0) = 0 this is well defined whatever SVD is chosen (Lewis 1995,
    "The convex analysis of unitarily invariant matrix functions", J. Convex Anal. 2, Thm. 3.1 gives
    the gradient of F(X) = f(sigma(X)) as U diag(grad f(sigma)) V^T). ``fn`` takes the (..., k)
    singular values in the input's array kind.
    """
    U, s, Vh = svd(x)
    return rebuild(U, fn(s), Vh)


def _rank_mask(xp, s):
    """Singular values above the numerical rank threshold max(m, n) eps(dtype) s_max (numpy's
    matrix_rank rule): the polar factor is defined on the range of x."""
    eps = float(np.finfo(s.dtype).eps) if xp is np else float(xp.finfo(s.dtype).eps)
    smax = _max(xp, s, -1)[..., None]
    return s > smax * (eps * max(1, s.shape[-1]))


def polar(x):
    """The orthogonal polar factor U V^T of x = U diag(s) V^T (on the numerical range of x; 0 for x = 0).

    The exact "orthogonalized update" of Muon (Jordan et al. 2024) and the unit spectral-norm
    steepest direction (Bernstein & Newhouse 2024, Sec. 3.2: argmax_{||D||_{S_inf} <= 1} <G, D> = U V^T).
    """
    xp, x = _matrix(x)
    U, s, Vh = svd(x)
    w = _rank_mask(xp, s).to(s.dtype) if xp is not np else _rank_mask(xp, s).astype(s.dtype)
    return rebuild(U, w, Vh)


def newton_schulz(x, steps: int = 5, coefficients=MUON_COEFFICIENTS, eps: float = 1e-7):
    """Approximate orthogonalization of (a batch of) matrices by the quintic Newton-Schulz iteration.

    Source: Jordan et al. 2024, "Muon: An optimizer for hidden layers in neural networks"
    (kellerjordan.github.io/posts/muon): X_0 = G / max(||G||_F, eps) (Frobenius pre-normalization, so
    every singular value is at most 1), then ``steps`` times X <- a X + (b A + c A^2) X with A = X X^T
    and (a, b, c) = (3.4445, -4.7750, 2.0315); wide orientation (X transposed when m > n, so A is the
    smaller Gram matrix). In exact arithmetic every singular value sigma of X_0 is mapped to
    phi^k(sigma), phi(x) = a x + b x^3 + c x^5 (:func:`ns_scalar`); the source states no error bound
    (it describes the output as U S' V^T with S'_ii "~ Uniform(0.5, 1.5)"); the pack
    ``proofs_checks.spectral`` checks what can be stated. Computed in the input's dtype.
    """
    steps = _validate.integer("steps", steps, lo=0)
    if len(coefficients) != 3:
        raise ValueError(f"coefficients must be a triple (a, b, c), got {coefficients!r}")
    a, b, c = (float(v) for v in coefficients)
    eps = _validate.real("eps", eps, lo=0.0)
    xp, x = _matrix(x)
    tall = x.shape[-2] > x.shape[-1]
    X = x.mT if tall else x
    nrm = xp.sqrt(_sum(xp, _sum(xp, X * X, -1), -1))[..., None, None]
    X = X / (np.maximum(nrm, eps) if xp is np else xp.clamp(nrm, min=eps))
    for _ in range(steps):
        X = _ns_step(xp, X, a, b, c)
    return X.mT if tall else X


def _ns_step(xp, X, a: float, b: float, c: float):
    """One quintic step X <- a X + (b A + c A^2) X, A = X X^T. torch: ``addmm``/``baddbmm`` (the products
    and the linear combinations in one call each, as ``torch.optim.Muon``); numpy: the plain formula."""
    A = X @ X.mT
    if xp is not np and X.ndim == 2:
        B = xp.addmm(A, A, A, beta=b, alpha=c)
        return xp.addmm(X, B, X, beta=a)
    if xp is not np and X.ndim == 3:
        B = xp.baddbmm(A, A, A, beta=b, alpha=c)
        return xp.baddbmm(X, B, X, beta=a)
    B = b * A + c * (A @ A)
    return a * X + B @ X


def ns_scalar(sigma, steps: int = 5, coefficients=MUON_COEFFICIENTS):
    """phi^k(sigma), phi(x) = a x + b x^3 + c x^5: what :func:`newton_schulz` does to each singular value
    of the Frobenius-normalized input (Jordan et al. 2024; exact for matrix polynomials in X X^T X)."""
    a, b, c = (float(v) for v in coefficients)
    s = np.asarray(sigma, dtype=np.float64)
    for _ in range(_validate.integer("steps", steps, lo=0)):
        s2 = s * s
        s = s * (a + s2 * (b + c * s2))
    return s


def ns_error(x, steps: int = 5, coefficients=MUON_COEFFICIENTS, eps: float = 1e-7, exact=None):
    """Measured spectral-norm error ||NS_k(x) - U V^T||_2 per matrix (the exact path: :func:`polar`, or
    ``exact``, its value computed once by the caller)."""
    xp, x = _matrix(x)
    d = newton_schulz(x, steps, coefficients, eps) - (polar(x) if exact is None else exact)
    return Schatten(math.inf).norm(d)


def _orthogonalize_args(orthogonalize, ns_steps, p):
    _validate.choice("orthogonalize", orthogonalize, {"svd", "newton-schulz"})
    if orthogonalize == "newton-schulz" and not math.isinf(p):
        raise ValueError(f"orthogonalize='newton-schulz' is for the spectral norm (p = inf), got p = {p:g}")
    return orthogonalize, _validate.integer("ns_steps", ns_steps, lo=0)


def _orthogonal(g, orthogonalize, ns_steps):
    """U V^T exactly (``"svd"``) or its Newton-Schulz approximation (the direction is then approximate:
    <g, d> = ||g||_* and ||d|| = 1 hold only up to the Newton-Schulz error, ``ns_error``)."""
    return polar(g) if orthogonalize == "svd" else newton_schulz(g, ns_steps)


# ------------------------------------------------------------------------------------------------
# The protocol
# ------------------------------------------------------------------------------------------------
class Norm(ABC):
    """A norm with its dual, its steepest-descent direction and its LMO (module docstring).

    Subclasses implement ``norm``, ``dual_norm`` and ``direction``; ``ndim`` is 1 (vectors, last axis)
    or 2 (matrices, last two axes)."""

    ndim: int = 1
    name: str = "norm"

    @abstractmethod
    def norm(self, x):
        """||x|| over the last ``ndim`` axes."""

    @abstractmethod
    def dual_norm(self, g):
        """||g||_* = max_{||d|| <= 1} <g, d> over the last ``ndim`` axes."""

    @abstractmethod
    def direction(self, g):
        """A maximizer of <g, d> over the unit ball (0 where g = 0)."""

    def lmo(self, g, radius: float = 1.0):
        """argmin_{||d|| <= radius} <g, d> = -radius direction(g) (Pethick et al. 2025, eq. (3))."""
        radius = _validate.real("radius", radius, lo=0.0)
        return -radius * self.direction(g)

    def sharp(self, g):
        """g^# = ||g||_* direction(g): -g^#/lam minimizes <g, D> + (lam/2)||D||^2 (Bernstein & Newhouse
        2024, Prop. 1); <g, g^#> = ||g||_*^2 and ||g^#|| = ||g||_*."""
        n = self.dual_norm(g)
        return self._expand(n) * self.direction(g)

    def steepest_step(self, g, lr: float = 1.0):
        """-lr g^#: the minimizer of <lr g, D> + (1/2)||D||^2 (the normalized steepest step)."""
        lr = _validate.real("lr", lr, lo=0.0)
        return -lr * self.sharp(g)

    def inner(self, g, d):
        """<g, d> summed over the last ``ndim`` axes."""
        xp = namespace(g, d)
        r = g * d
        for _ in range(self.ndim):
            r = _sum(xp, r, -1)
        return r

    def _expand(self, n):
        return n[(...,) + (None,) * self.ndim]

    def dual(self) -> Norm:
        """The dual norm as a :class:`Norm` where this implementation provides it."""
        raise NotImplementedError(f"{type(self).__name__} has no dual norm object")

    def describe(self) -> dict:
        return {"name": self.name}

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.describe().items() if k != 'name')})"


class Lp(Norm):
    """The vector l_p norm, p in [1, inf], on the last axis: the formulas of :mod:`lptheory.geometry`.

    direction(g) = s_p(g / ||g||_{p*}) (Hoelder's equality case; paper Section 4.1, the closed form of
    the argmin quoted under Algorithm 3), sign(g) for p = inf, g / ||g||_2 for p = 2; for p = 1 a
    signed unit vector at the first coordinate of largest |g_i|. dual: l_{p*}.
    """

    ndim = 1

    def __init__(self, p: float):
        self.p = _validate.exponent("p", p, lo=1.0, lo_open=False)
        self.q = math.inf if self.p == 1.0 else dual_exponent(self.p)
        self.name = f"l{self.p:g}"

    def norm(self, x):
        return lp_norm(x, self.p)

    def dual_norm(self, g):
        return lp_norm(g, self.q)

    def direction(self, g):
        xp, g = as_float_array(g, "g")
        if self.p == 1.0:
            a = xp.abs(g)
            idx = xp.argmax(a, axis=-1) if xp is np else xp.argmax(a, dim=-1)
            ar = xp.arange(g.shape[-1]) if xp is np else xp.arange(g.shape[-1], device=g.device)
            onehot = (ar == idx[..., None]).astype(g.dtype) if xp is np else (ar == idx[..., None]).to(g.dtype)
            return onehot * xp.sign(g)
        if math.isinf(self.p):
            return xp.sign(g)
        n = self.dual_norm(g)[..., None]
        return steepest_map(g / _where_pos(xp, n), self.p)

    def dual(self):
        return Lp(self.q)

    def describe(self):
        return {"name": self.name, "p": self.p}


class Schatten(Norm):
    """The Schatten-p norm ||X||_{S_p} = ||sigma(X)||_p, p in [1, inf], on the last two axes (SVD).

    p = 1: nuclear, p = 2: Frobenius, p = inf: spectral. Closed forms through X = U diag(s) V^T (von
    Neumann's trace inequality <G, D> <= <sigma(G), sigma(D)>, with equality for a shared singular
    basis; e.g. Lewis 1995, and Bernstein & Newhouse 2024, Sec. 3.2 for p = inf):

    * dual norm: ||G||_{S_{p*}} (1/p + 1/p* = 1);
    * direction(G) = U diag(d(s)) V^T with d(s) = direction of l_p at s, i.e. s^{p*-1} / ||s||_{p*}^{p*-1}
      for 1 < p < inf, U V^T (the polar factor, on the numerical range) for p = inf, u_1 v_1^T for p = 1;
    * sharp(G) = ||G||_{S_{p*}} direction(G); at p = 2, G; at p = inf, ||G||_{S_1} U V^T.

    ``steepest_map(G)`` = U diag(s^{1/(p-1)}) V^T is the matrix analogue of the paper's unscaled map
    s_p (Alg. 3 line 2) and ``mirror_map(Z)`` = U diag(s^{p-1}) V^T = grad (1/p)||Z||_{S_p}^p.
    """

    ndim = 2

    def __init__(self, p: float, *, orthogonalize: str = "svd", ns_steps: int = 5):
        self.p = _validate.exponent("p", p, lo=1.0, lo_open=False)
        self.q = math.inf if self.p == 1.0 else dual_exponent(self.p)
        self.name = {1.0: "nuclear", 2.0: "frobenius", math.inf: "spectral"}.get(self.p, f"schatten-{self.p:g}")
        self.orthogonalize, self.ns_steps = _orthogonalize_args(orthogonalize, ns_steps, self.p)

    def singular_values(self, x):
        return svdvals(x)

    def norm(self, x):
        if self.p == 2.0:
            return Frobenius.norm(x)
        return lp_norm(self.singular_values(x), self.p)

    def dual_norm(self, g):
        if self.q == 2.0:
            return Frobenius.norm(g)
        return lp_norm(self.singular_values(g), self.q)

    def direction(self, g):
        xp, g = _matrix(g, "g")
        if self.p == 2.0:
            return g / Frobenius._safe(xp, g)
        if math.isinf(self.p):
            return _orthogonal(g, self.orthogonalize, self.ns_steps)
        U, s, Vh = svd(g)
        return rebuild(U, Lp(self.p).direction(s), Vh)

    def steepest_map(self, g):
        """U diag(s^{1/(p-1)}) V^T (p in (1, inf]; U V^T at p = inf): the unscaled matrix s_p."""
        if self.p == 1.0:
            raise ValueError("steepest_map needs p in (1, inf], got p = 1")
        if math.isinf(self.p):
            return polar(g)
        return spectral_apply(g, lambda s: steepest_map(s, self.p))

    def mirror_map(self, z):
        """grad (1/p)||Z||_{S_p}^p = U diag(s^{p-1}) V^T (p in (1, inf))."""
        if self.p == 1.0 or math.isinf(self.p):
            raise ValueError(f"mirror_map needs p in (1, inf), got p = {self.p:g}")
        xp, _ = as_float_array(z, "z")
        return spectral_apply(z, lambda s: _kernels.mirror(xp, s, self.p, xp.empty_like(s), xp.empty_like(s)))

    def dual(self):
        return Schatten(self.q)

    def describe(self):
        out = {"name": self.name, "p": self.p}
        if self.orthogonalize != "svd":
            out.update(orthogonalize=self.orthogonalize, ns_steps=self.ns_steps)
        return out


class _Frobenius:
    """Frobenius helpers without an SVD."""

    @staticmethod
    def norm(x):
        xp, x = _matrix(x)
        m = _max(xp, _max(xp, xp.abs(x), -1), -1)[..., None, None]
        safe = _where_pos(xp, m)
        y = x / safe
        return xp.sqrt(_sum(xp, _sum(xp, y * y, -1), -1)) * m[..., 0, 0]

    @staticmethod
    def _safe(xp, g):
        return _where_pos(xp, _Frobenius.norm(g))[..., None, None]


Frobenius = _Frobenius()


class _ColumnRow(Norm):
    ndim = 2
    axis = -2  # the axis the Euclidean norm runs along (columns: over rows i)

    def __init__(self, rms: bool = False):
        if not isinstance(rms, bool):
            raise TypeError(f"rms must be a bool, got {type(rms).__name__}")
        self.rms = rms

    def _scale(self, shape):  # the norm is scale * max of the Euclidean pieces
        return 1.0

    def _pieces(self, x):
        xp, x = _matrix(x)
        return xp, x, lp_norm(x.mT if self.axis == -2 else x, 2.0)  # (..., k) Euclidean norms

    def norm(self, x):
        xp, x, r = self._pieces(x)
        return self._scale(x.shape) * _max(xp, r, -1)

    def dual_norm(self, g):
        xp, g, r = self._pieces(g)
        return _sum(xp, r, -1) / self._scale(g.shape)

    def direction(self, g):
        xp, g, r = self._pieces(g)
        r = _where_pos(xp, r)
        r = r[..., None, :] if self.axis == -2 else r[..., :, None]
        return g / r / self._scale(g.shape)

    def describe(self):
        return {"name": self.name, "rms": self.rms}


class ColNorm(_ColumnRow):
    """The l1 -> l2 operator norm of X (shape (d_out, d_in)): max_j ||X[:, j]||_2, the largest column
    norm (Pethick et al. 2025, Table 2, "ColNorm"; Bernstein & Newhouse 2024, Sec. 3.3). Dual:
    sum_j ||G[:, j]||_2; direction: each column normalized, G[:, j] / ||G[:, j]||_2. ``rms=True``: the
    l1 -> RMS norm, max_j ||X[:, j]||_2 / sqrt(d_out) (direction scaled by sqrt(d_out))."""

    axis = -2
    name = "l1->l2"

    def _scale(self, shape):
        return 1.0 / math.sqrt(shape[-2]) if self.rms else 1.0


class RowNorm(_ColumnRow):
    """The l2 -> l_inf operator norm: max_i ||X[i, :]||_2, the largest row norm (Pethick et al. 2025,
    Table 2, "RowNorm"). Dual: sum_i ||G[i, :]||_2; direction: each row normalized. ``rms=True``: the
    RMS -> l_inf norm, sqrt(d_in) max_i ||X[i, :]||_2."""

    axis = -1
    name = "l2->linf"

    def _scale(self, shape):
        return math.sqrt(shape[-1]) if self.rms else 1.0


class SpectralRMS(Norm):
    """The RMS -> RMS operator norm of X (d_out, d_in): sqrt(d_in / d_out) ||X||_{S_inf} (Bernstein &
    Newhouse 2024, Sec. 3.2 "the modular norm"; Pethick et al. 2025, Table 2, "Spectral"). Dual:
    sqrt(d_out / d_in) ||G||_{S_1}; direction: sqrt(d_out / d_in) U V^T (``orthogonalize="newton-schulz"``:
    with :func:`newton_schulz` in place of U V^T, the approximate LMO Scion's implementation uses)."""

    ndim = 2
    name = "rms->rms"

    def __init__(self, *, orthogonalize: str = "svd", ns_steps: int = 5):
        self.orthogonalize, self.ns_steps = _orthogonalize_args(orthogonalize, ns_steps, math.inf)

    def describe(self):
        if self.orthogonalize == "svd":
            return {"name": self.name}
        return {"name": self.name, "orthogonalize": self.orthogonalize, "ns_steps": self.ns_steps}

    @staticmethod
    def _c(shape):
        return math.sqrt(shape[-1] / shape[-2])

    def norm(self, x):
        xp, x = _matrix(x)
        return self._c(x.shape) * Schatten(math.inf).norm(x)

    def dual_norm(self, g):
        xp, g = _matrix(g, "g")
        return Schatten(1.0).norm(g) / self._c(g.shape)

    def direction(self, g):
        xp, g = _matrix(g, "g")
        return _orthogonal(g, self.orthogonalize, self.ns_steps) / self._c(g.shape)


class Scaled(Norm):
    """c ||x|| for a norm ``base`` and c > 0 (a number or a function of the shape): dual ||g||_* / c,
    direction base.direction(g) / c."""

    def __init__(self, base: Norm, scale):
        if not isinstance(base, Norm):
            raise TypeError(f"base must be a Norm, got {type(base).__name__}")
        if not callable(scale):
            scale = _validate.real("scale", scale, lo=0.0, lo_open=True)
        self.base, self.scale = base, scale
        self.ndim = base.ndim
        self.name = f"scaled-{base.name}"

    def _c(self, x):
        return float(self.scale(tuple(x.shape))) if callable(self.scale) else self.scale

    def norm(self, x):
        return self._c(x) * self.base.norm(x)

    def dual_norm(self, g):
        return self.base.dual_norm(g) / self._c(g)

    def direction(self, g):
        return self.base.direction(g) / self._c(g)

    def describe(self):
        return {"name": self.name, "base": self.base.describe(), "scale": self.scale}


NORMS = {
    "l1": lambda: Lp(1.0),
    "l2": lambda: Lp(2.0),
    "linf": lambda: Lp(math.inf),
    "nuclear": lambda: Schatten(1.0),
    "frobenius": lambda: Schatten(2.0),
    "spectral": lambda: Schatten(math.inf),
    "colnorm": ColNorm,
    "rownorm": RowNorm,
    "rms->rms": SpectralRMS,
}


def make_norm(spec) -> Norm:
    """A norm from a :class:`Norm`, a name of ``NORMS``, ``"lp:P"`` or ``"schatten:P"``."""
    if isinstance(spec, Norm):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"norm must be a Norm or a name, got {type(spec).__name__}")
    if spec in NORMS:
        return NORMS[spec]()
    kind, _, p = spec.partition(":")
    if kind in ("lp", "schatten") and p:
        v = math.inf if p in ("inf", "infinity") else float(p)
        return Lp(v) if kind == "lp" else Schatten(v)
    raise ValueError(f"norm must be one of {sorted(NORMS)}, 'lp:P' or 'schatten:P', got {spec!r}")
