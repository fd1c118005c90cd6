"""Matrix problems with certified constants in Schatten-p norms, and matrix noise with exact batch means.

Layout: a parameter is an (m, n) matrix stored flat, ``x`` of shape ``(..., m*n)`` (row-major), the
simulator's layout; ``problem.mat(x)`` is the ``(..., m, n)`` view and ``problem.shape`` the pair the
matrix optimizers take (``lptheory.spectral.Muon(shape=problem.shape)``). numpy arrays and torch
tensors are evaluated in their own kind.

Schatten-p smoothness (the matrix analogue of the paper's Assumption 1, p >= 2):
||grad f(X) - grad f(Y)||_{S_p*} <= L_p ||X - Y||_{S_p}. Tools used in the derivations (Bhatia,
"Matrix Analysis", 1997, Sec. IV.2): (i) Hoelder for Schatten norms, ||A D B||_{S_q} <= ||A||_{S_a}
||D||_{S_b} ||B||_{S_c} for 1/q = 1/a + 1/b + 1/c (Ex. IV.2.7), in particular ||A D B||_{S_q} <=
||A||_2 ||D||_{S_q} ||B||_2; (ii) for a matrix of rank <= k and q <= p, ||D||_{S_q} <= k^{1/q - 1/p}
||D||_{S_p} (Hoelder on the k singular values).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from lptheory import validate as _validate
from lptheory.geometry import dual_exponent
from lptheory.norms import Schatten
from lptheory.problem import Certificate

from .noise import Noise
from .problems import Problem, check_p, hoelder_r

__all__ = [
    "MatrixProblem",
    "KroneckerQuadratic",
    "SymmetricFactorization",
    "RankOneNoise",
    "RankOneRows",
    "split_shape",
]


def split_shape(d: int) -> tuple[int, int]:
    """(m, n) with m n = d and m the largest divisor of d at most sqrt(d) (for ``d=`` constructors)."""
    d = _validate.integer("d", d, lo=1)
    m = max(k for k in range(1, int(math.isqrt(d)) + 1) if d % k == 0)
    return m, d // m


class MatrixProblem(Problem):
    """Base: ``shape`` (m, n), ``d = m n``; certificates in Schatten norms (``L``: Schatten-p smoothness,
    ``grad_sup``: sup ||grad f||_{S_p*}), audited by ratios actually evaluated on random pairs.

    Note: ``smoothness(p)`` / ``certificate("L")`` here is the Schatten-p constant of the (m, n) matrix,
    not the l_p constant of the flat vector that the vector problems certify (``geometry`` says which)."""

    shape: tuple[int, int]
    geometry = "schatten"

    def mat(self, x):
        return x.reshape(tuple(x.shape[:-1]) + self.shape)

    def flat(self, x):
        return x.reshape(tuple(x.shape[:-2]) + (self.d,))

    def flat_into(self, g, out=None):
        """The gradient matrices ``g`` as flat vectors: written into ``out`` (returned) when given."""
        g = self.flat(g)
        if out is None:
            return g
        out[...] = g
        return out

    def _shape_from(self, m, n, d):
        if d is not None and (m is not None or n is not None):
            raise ValueError("give either d or (m, n), not both")
        if d is not None:
            return split_shape(d)
        m = _validate.integer("m", 4 if m is None else m, lo=1)
        n = _validate.integer("n", 6 if n is None else n, lo=1)
        return m, n

    def certificates(self) -> dict[str, Certificate]:
        certs = super().certificates()
        doc = type(self).__doc__ or ""
        certs["L"] = Certificate("L", self.smoothness, "upper", doc, audit=self._audit_L, args=("p",))
        certs["grad_sup"] = Certificate(
            "grad_sup", self.grad_sup, "upper", doc, audit=self._audit_grad_sup, args=("p",)
        )
        return certs

    def _pairs(self, seed, n=256):
        rng = np.random.default_rng(np.random.SeedSequence([seed, 2026]))
        x0 = np.asarray(self.x0(), dtype=np.float64)
        X = x0 + rng.standard_normal((n, self.d)) * rng.choice([0.01, 0.1, 1.0], size=(n, 1))
        D = rng.standard_normal((n, self.d)) * rng.choice([1e-3, 0.1, 1.0], size=(n, 1))
        return X, X + D

    def _audit_L(self, p, seed=0):
        p = check_p(p)
        X, Y = self._pairs(seed)
        return float(np.max(self._ratio(X, Y, p)))

    def _ratio(self, X, Y, p):
        q = dual_exponent(p)
        num = Schatten(q).norm(self.mat(self.grad(X) - self.grad(Y)))
        den = Schatten(p).norm(self.mat(X - Y))
        return num / den

    def _audit_grad_sup(self, p, seed=0):
        X, _ = self._pairs(seed)
        return float(np.max(Schatten(dual_exponent(check_p(p))).norm(self.mat(self.grad(X)))))

    def describe(self):
        return {**super().describe(), "shape": list(self.shape), "geometry": self.geometry}


def _spd(rng, k, profile, cond):
    """Q diag(a) Q^T with Q Haar-random and eigenvalues a: ``flat`` (all 1) or ``spread`` (log-spaced
    from 1 down to 1/cond)."""
    if profile == "flat":
        a = np.ones(k)
    elif profile == "spread":
        a = np.logspace(0.0, -math.log10(cond), k) if k > 1 else np.ones(1)
    else:
        raise ValueError(f"profile must be 'flat' or 'spread', got {profile!r}")
    q, r = np.linalg.qr(rng.standard_normal((k, k)))
    q = q * np.sign(np.diag(r))
    return (q * a) @ q.T, a


class KroneckerQuadratic(MatrixProblem):
    """f(W) = (1/2) <W - W*, A (W - W*) B>, A (m x m), B (n x n) symmetric positive definite: a convex
    quadratic whose Hessian is the Kronecker product B (x) A (acting as D -> A D B).

    grad f(W) = A (W - W*) B. Certificates (p >= 2, q = p* = p/(p-1), r = p/(p-2), k = min(m, n)):

    * f* = 0 at W = W* (exact);
    * L_p <= min(||A||_{S_r} ||B||_2, ||A||_2 ||B||_{S_r}, ||A||_2 ||B||_2 k^{1 - 2/p}): for D = X - Y,
      ||A D B||_{S_q} <= ||A||_{S_r} ||D||_{S_p} ||B||_{S_inf} by Hoelder (1/q = 1/r + 1/p), symmetrically,
      and <= ||A||_2 ||B||_2 ||D||_{S_q} <= ||A||_2 ||B||_2 k^{1/q - 1/p} ||D||_{S_p} (module docstring);
      1/q - 1/p = 1 - 2/p. At p = 2, ||A||_2 ||B||_2 exactly (the top eigenvector pair attains it);
      with A = a I, B = b I it is a b k^{1 - 2/p}, exact (D orthogonal attains it);
    * grad_sup = inf (a quadratic has unbounded gradients).
    """

    name = "kronecker-quadratic"

    def __init__(self, m=None, n=None, *, d=None, seed: int = 0, profile: str = "spread", cond: float = 10.0,
                 scale: float = 1.0, start: float = 1.0):  # fmt: skip
        self.shape = self._shape_from(m, n, d)
        m, n = self.shape
        self.d = m * n
        self.seed = seed
        scale = _validate.real("scale", scale, lo=0.0, lo_open=True)
        cond = _validate.real("cond", cond, lo=1.0)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 26]))
        self.A, self.a = _spd(rng, m, profile, cond)
        self.B, self.b = _spd(rng, n, profile, cond)
        self.A, self.a = self.A * scale, self.a * scale
        self.W_star = rng.standard_normal((m, n)) / math.sqrt(n)
        self.w_star = self.W_star.reshape(-1)
        self.start = _validate.real("start", start)
        self.f_star = 0.0
        self.profile = profile
        if self.d <= 1024:
            self.hessian_constant = np.kron(self.A, self.B)  # row-major vec(A D B) = (A (x) B) vec(D), B = B^T

    def _diff(self, x):
        return self.mat(x - self.to_backend(x, "w_star"))

    def f(self, x, t=None):
        x = self.check_point(x)
        D = self._diff(x)
        G = self.to_backend(x, "A") @ D @ self.to_backend(x, "B")
        return 0.5 * (D * G).sum(axis=(-2, -1)) if isinstance(x, np.ndarray) else 0.5 * (D * G).sum(dim=(-2, -1))

    def grad(self, x, t=None, out=None):
        x = self.check_point(x)
        return self.flat_into(self.to_backend(x, "A") @ self._diff(x) @ self.to_backend(x, "B"), out)

    def smoothness(self, p: float) -> float:
        p = check_p(p)
        r = hoelder_r(p)
        k = min(self.shape)
        a2, b2 = float(np.max(self.a)), float(np.max(self.b))
        ar = float(np.max(self.a)) if math.isinf(r) else float(np.sum(self.a**r) ** (1.0 / r))
        br = float(np.max(self.b)) if math.isinf(r) else float(np.sum(self.b**r) ** (1.0 / r))
        return min(ar * b2, a2 * br, a2 * b2 * k ** (1.0 - 2.0 / p))

    def argmin(self):
        return self.w_star

    def _x0(self):
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 27]))
        return self.w_star + self.start * rng.standard_normal(self.d)

    def _audit_L(self, p, seed=0):
        est = super()._audit_L(p, seed)
        # structured directions: D = u v^T (top eigenvectors) and D = sum_i u_i v_i^T over k pairs
        p = check_p(p)
        wa, Ua = np.linalg.eigh(self.A)
        wb, Ub = np.linalg.eigh(self.B)
        k = min(self.shape)
        cands = [np.outer(Ua[:, -1], Ub[:, -1]), Ua[:, ::-1][:, :k] @ Ub[:, ::-1][:, :k].T]
        for D in cands:
            x = self.w_star[None]
            est = max(est, float(self._ratio(x, x + D.reshape(1, -1), p)[0]))
        return est


class SymmetricFactorization(MatrixProblem):
    """f(X) = (1/4) ||X X^T - M||_F^2, X of shape (n, r), M = Y Y^T (Y: n x rank, rank <= r): nonconvex
    low-rank factorization (Burer-Monteiro), certified on the spectral ball ||X||_2 <= R.

    grad f(X) = (X X^T - M) X. Certificates on the ball (p >= 2, q = p*, k = min(n, r)):

    * f* = 0, attained at X = [Y, 0] (exact);
    * L_p(R) <= (3 R^2 + ||M||_2) k^{1 - 2/p}: the Hessian acts as H -> (X X^T - M) H + (H X^T + X H^T) X,
      so ||Hess[H]||_{S_q} <= (||X X^T - M||_2 + 2 ||X||_2^2) ||H||_{S_q} <= (3 R^2 + ||M||_2) ||H||_{S_q}
      (ideal property, module docstring (i)), and rank(H) <= k gives ||H||_{S_q} <= k^{1 - 2/p} ||H||_{S_p};
      the ball is convex, so the mean value theorem along the segment applies;
    * grad_sup(p) <= (R^2 + ||M||_2) R k^{1/q}: ||(X X^T - M) X||_{S_q} <= ||X X^T - M||_2 ||X||_{S_q}.

    The constants hold on the ball only: a check must verify that its iterates stayed inside
    (``inside(x)``). ``R`` defaults to 2 max(||Y||_2, start radius).
    """

    name = "symmetric-factorization"

    def __init__(self, n=None, r=None, *, d=None, rank: int | None = None, seed: int = 0, R: float | None = None,
                 start: float = 1.0):  # fmt: skip
        self.shape = self._shape_from(n, r, d)
        n, r = self.shape
        self.d = n * r
        self.seed = seed
        rank = r if rank is None else _validate.integer("rank", rank, lo=1)
        if rank > r:
            raise ValueError(f"rank must be <= r = {r}, got {rank}")
        rng = np.random.default_rng(np.random.SeedSequence([seed, 28]))
        Y = rng.standard_normal((n, rank)) / math.sqrt(n)
        self.Y = np.concatenate([Y, np.zeros((n, r - rank))], axis=1)
        self.M = Y @ Y.T
        self.M_norm = float(np.linalg.norm(self.M, 2))
        self.start = _validate.real("start", start, lo=0.0)
        x0 = self._x0()
        default_R = 2.0 * max(float(np.linalg.norm(self.Y, 2)), float(np.linalg.norm(x0.reshape(n, r), 2)))
        self.R = _validate.real("R", default_R if R is None else R, lo=0.0, lo_open=True)
        self.f_star = 0.0

    def _x0(self):
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 29]))
        return self.start * rng.standard_normal(self.d) / math.sqrt(self.shape[0])

    def f(self, x, t=None):
        x = self.check_point(x)
        X = self.mat(x)
        E = X @ X.mT - self.to_backend(x, "M")
        return 0.25 * (E * E).sum(axis=(-2, -1)) if isinstance(x, np.ndarray) else 0.25 * (E * E).sum(dim=(-2, -1))

    def grad(self, x, t=None, out=None):
        x = self.check_point(x)
        X = self.mat(x)
        return self.flat_into((X @ X.mT - self.to_backend(x, "M")) @ X, out)

    def smoothness(self, p: float) -> float:
        p = check_p(p)
        return (3.0 * self.R**2 + self.M_norm) * min(self.shape) ** (1.0 - 2.0 / p)

    def grad_sup(self, p: float) -> float:
        q = dual_exponent(check_p(p))
        return (self.R**2 + self.M_norm) * self.R * min(self.shape) ** (1.0 / q)

    def argmin(self):
        return self.Y.reshape(-1)

    def inside(self, x) -> np.ndarray:
        """Whether each point lies in the certificate's ball ||X||_2 <= R."""
        return np.asarray(Schatten(math.inf).norm(self.mat(np.asarray(x, dtype=np.float64)))) <= self.R

    def _pairs(self, seed, n=256):
        X, Y = super()._pairs(seed, n)
        s = Schatten(math.inf)
        for Z in (X, Y):  # scale into the ball
            nz = s.norm(self.mat(Z))[:, None]
            Z *= np.minimum(1.0, 0.999 * self.R / np.maximum(nz, 1e-300))
        return X, Y

    def describe(self):
        return {**super().describe(), "R": self.R}


class RankOneNoise(Noise):
    """Finite-support matrix noise that is not coordinate-independent: xi = s c_j u_j v_j^T with the atom
    j drawn with probability w_j and an independent sign s = +-1 (zero mean by symmetry).

    Parameters: ``atoms`` (k, m, n) (each a matrix; rank one is the intended use, any matrix works) and
    ``weights`` (k,). Exact: per-coordinate sigma_i^2 = sum_j w_j atoms_j[i]^2; E||xi_bar||_F^2 =
    sum_j w_j ||atoms_j||_F^2 / n for the mean of n draws; the batch mean is drawn exactly from the
    multinomial counts of the 2k signed outcomes (O(k) per row), and :meth:`batch_outcomes` enumerates
    its law (every outcome with its probability) for exact expectations. Bounded: |xi_i| <= max_j
    |atoms_j[i]|. Flat layout: samples have shape (..., m*n).
    """

    name = "rank-one-atoms"  # the registry's "rank-one" is :class:`RankOneRows`
    bounded = True

    def __init__(self, atoms, weights=None):
        a = np.asarray(atoms, dtype=np.float64)
        if a.ndim != 3 or min(a.shape) < 1:
            raise ValueError(f"atoms must have shape (k, m, n) with k, m, n >= 1, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError("atoms must be finite in every entry")
        k = a.shape[0]
        w = np.full(k, 1.0 / k) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w < 0) or abs(float(w.sum()) - 1.0) > 1e-12:
            raise ValueError(
                f"weights must be k = {k} numbers in [0, 1] summing to 1 (within 1e-12), got shape {w.shape}"
                + (f" and sum {float(w.sum())!r}" if w.shape == (k,) else "")
            )
        self.atoms, self.weights, self.shape = a, w, a.shape[1:]
        flat = a.reshape(k, -1)
        self._flat = flat
        self._signed = np.concatenate([flat, -flat], axis=0)  # 2k outcomes
        self._pw = np.concatenate([w, w]) / 2.0
        super().__init__(np.sqrt(np.sum(w[:, None] * flat * flat, axis=0)))

    @classmethod
    def random(cls, m: int, n: int, k: int = 3, sigma: float = 1.0, seed: int = 0):
        """k random rank-one atoms sigma u v^T with unit u, v (so ||xi||_{S_p} = sigma for every p)."""
        m, n, k = (_validate.integer(name, v, lo=1) for name, v in (("m", m), ("n", n), ("k", k)))
        sigma = _validate.real("sigma", sigma, lo=0.0)
        seed = _validate.integer("seed", seed, lo=0)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 30]))
        u = rng.standard_normal((k, m))
        v = rng.standard_normal((k, n))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return cls(sigma * u[:, :, None] * v[:, None, :])

    def _sample_mean(self, rng, n, shape):
        if isinstance(rng, np.random.Generator):
            counts = rng.multinomial(n, np.broadcast_to(self._pw, shape[:-1] + self._pw.shape))
            return counts @ self._signed / n
        counts = rng.multinomial(n, self._pw, size=shape[:-1])  # torch source: counts on the device
        return counts @ rng.asarray(self._signed) / n

    def bound(self):
        return np.max(np.abs(self._flat), axis=0)

    def frobenius_variance(self, n: int = 1) -> float:
        """E||mean of n draws||_F^2 = sum_j w_j ||atom_j||_F^2 / n (exact)."""
        return float(np.sum(self.weights * np.sum(self._flat**2, axis=1))) / _validate.integer("n", n, lo=1)

    def batch_outcomes(self, n: int):
        """The law of the mean of n draws: a list of (flat matrix, probability), by the multinomial formula
        over the 2k signed outcomes (exact; sizes grow like (2k)^n / n!, for small k and n)."""
        n = _validate.integer("n", n, lo=1)
        K = self._signed.shape[0]
        out = []
        for combo in itertools.combinations_with_replacement(range(K), n):
            counts = np.bincount(np.asarray(combo), minlength=K)
            prob = math.factorial(n)
            for c, w in zip(counts, self._pw):
                prob = prob / math.factorial(int(c)) * (w ** int(c))
            if prob > 0:
                out.append((counts @ self._signed / n, prob))
        return out

    def describe(self):
        return {**super().describe(), "atoms": int(self.atoms.shape[0]), "shape": list(self.shape)}


class RankOneRows(RankOneNoise):
    """The registry's ``rank-one`` noise (``make_noise("rank-one", sigma, shape=)``, ``lptheory run --noise
    rank-one``): rank-one matrix noise with exactly the per-coordinate stds ``sigma`` of the other models.

    The flat ``sigma`` (d,) laid out as an (m, n) matrix S (``shape``; by default :func:`split_shape` of d); the
    atoms are the rows of S scaled by sqrt(m): atom j = sqrt(m) e_j S[j, :], each with probability 1/m, times
    an independent sign (a :class:`RankOneNoise` with k = m). So every draw is a rank-one matrix (one non-zero
    row), E xi = 0 (Assumption 2), and each coordinate's variance is (1/m) m S[j, c]^2 = sigma_i^2 exactly
    (Assumption 3 with equality, as for the coordinate-wise models; sigma_i^2 / n for a batch mean:
    Var(K+_j - K-_j) = n / m for the multinomial counts of atom j's two signs). The coordinates are not
    independent (a row moves together, the others stay put): the model that separates Assumption 3's
    per-coordinate variances from the noise's joint law. Bounded: |xi_i| <= sqrt(m) sigma_i.

    The atoms are never stored (m d numbers): a batch mean is (c_j sqrt(m) S[j, :])_j from the 2m counts,
    c_j = (K+_j - K-_j) / n, O(m + d) per row; ``atoms`` and :meth:`batch_outcomes` build them when asked."""

    name = "rank-one"
    takes_layout = True

    def __init__(self, sigma, shape=None):
        sig = np.asarray(sigma, dtype=np.float64)
        Noise.__init__(self, sig)  # sigma: a non-empty finite vector >= 0
        d = self.d
        if shape is None:
            shape = split_shape(d)
        try:
            m, n = (int(v) for v in shape)
            numeric = not isinstance(shape, (str, bytes)) and not any(isinstance(v, (str, bytes, bool)) for v in shape)
            ok = numeric and all(float(v) == int(v) for v in shape) and m >= 1 and n >= 1 and m * n == d
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"shape must be two integers (m, n) >= 1 with m * n = d = {d}, got {shape!r}")
        self.shape = (m, n)
        self.weights = np.full(m, 1.0 / m)
        self._pw = np.full(2 * m, 0.5 / m)  # outcome j: +atom j, outcome m + j: -atom j
        self._rows = math.sqrt(m) * self.sigma.reshape(m, n)  # atom j = e_j (x) _rows[j]

    @property
    def atoms(self) -> np.ndarray:
        """The m atoms as (m, m, n) matrices (built on demand: m d numbers)."""
        m, n = self.shape
        a = np.zeros((m, m, n))
        a[np.arange(m), np.arange(m)] = self._rows
        return a

    @property
    def _flat(self):
        return self.atoms.reshape(self.shape[0], -1)

    @property
    def _signed(self):
        flat = self._flat
        return np.concatenate([flat, -flat], axis=0)

    def _sample_mean(self, rng, n, shape):
        m = self.shape[0]
        if isinstance(rng, np.random.Generator):
            counts = rng.multinomial(n, np.broadcast_to(self._pw, shape[:-1] + self._pw.shape))
            c = (counts[..., :m] - counts[..., m:]) / n
            return (c[..., :, None] * self._rows).reshape(shape)
        counts = rng.multinomial(n, self._pw, size=shape[:-1])  # torch source: counts on the device
        c = (counts[..., :m] - counts[..., m:]) / n
        return (c[..., :, None] * rng.asarray(self._rows)).reshape(shape)

    def bound(self):
        return self._rows.reshape(-1).copy()

    def frobenius_variance(self, n: int = 1) -> float:
        """E||mean of n draws||_F^2 = ||sigma||_2^2 / n (exact: the per-coordinate variances summed)."""
        return float(np.sum(self.sigma**2)) / _validate.integer("n", n, lo=1)

    def describe(self):
        return {**Noise.describe(self), "atoms": int(self.shape[0]), "shape": list(self.shape)}


def _register():
    from .noise import NOISES

    NOISES[RankOneRows.name] = RankOneRows


_register()
