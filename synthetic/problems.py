"""Synthetic l_p-smooth problems with certified constants.

Every problem gives ``f(x)`` and ``grad(x)`` vectorized over leading replicate axes (``x`` has shape
``(..., d)``; a numpy array, or a torch tensor on any device, evaluated there in its dtype),
``f_star`` (exact, or a certified lower bound: ``f_star_exact`` says which), a certified upper bound
``smoothness(p)`` on its l_p smoothness constant for any p >= 2 (the derivation is in each class's
docstring), ``grad_sup(p)`` = sup_x ||grad f(x)||_{p*} where finite (``inf`` otherwise),
a default starting point ``x0(R)`` and the dimension ``d``.

l_p smoothness (paper, Section 2 and Assumption 1): ||grad f(x) - grad f(y)||_{p*} <= L_p ||x - y||_p.
A common tool below (Hoelder): for a diagonal D with |D_ii| <= ell_i and p > 2,
||D v||_{p*} <= ||ell||_{p/(p-2)} ||v||_p, since 1/p* = 1/r + 1/p with r = p/(p-2) (r = inf at p = 2).
"""

from __future__ import annotations

import math
import threading
from abc import abstractmethod

import numpy as np

from lptheory import parallel as _parallel
from lptheory import validate
from lptheory.geometry import dual_exponent, lp_norm
from lptheory.problem import Problem as _Problem
from lptheory.problem import namespace

from . import _fast
from . import noise as _noise

__all__ = [
    "Problem",
    "SeparableNonconvex",
    "RidgeSum",
    "QuadraticDiagonal",
    "QuadraticDense",
    "LogisticRegression",
    "LogSumExp",
    "FlatValley",
    "curvature_profile",
    "PROBLEMS",
    "make_problem",
    "hoelder_r",
    "check_p",
]


def hoelder_r(p: float) -> float:
    """The Hoelder exponent r = p/(p-2), i.e. 1/r = 1 - 2/p (= 1/p* - 1/p).

    It is the exponent of the diagonal smoothness bound ``||h||_r`` and of the matrix problems' Kronecker
    bound: for a diagonal quadratic, ``sup_{||u||_p <= 1} sum_i h_i u_i^2 = ||h||_r`` (Hoelder).

    Parameters
    ----------
    p : float
        The norm's exponent, in [2, inf] (validate it first with :func:`check_p`).

    Returns
    -------
    float
        ``p / (p - 2)``; ``inf`` at p = 2 and 1 at p = inf.
    """
    if p == 2.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 2.0)


def check_p(p) -> float:
    """Validate the exponent ``p`` a certificate (``smoothness(p)``, ``grad_sup(p)``) is asked for.

    Parameters
    ----------
    p : float
        The l_p exponent, a real in [2, inf].

    Returns
    -------
    float
        ``p`` as a float.

    Raises
    ------
    ValueError
        Naming ``p`` and the range when ``p`` is not a real in [2, inf].
    """
    return validate.exponent("p", p, lo=2.0, lo_open=False)


def curvature_profile(
    kind: str, d: int, *, seed: int = 0, gamma: float = 1.0, n_large: int = 4, large: float = 100.0, small: float = 1.0
) -> np.ndarray:
    """Per-coordinate scales a_i: ``flat`` (all 1), ``power`` (i^{-gamma}, heavy-tailed, shuffled),
    ``spiked`` (``n_large`` coordinates of size ``large`` among ``small`` ones, positions random)."""
    d = validate.integer("d", d, lo=1)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    if kind == "flat":
        return np.ones(d)
    if kind == "power":
        validate.real("gamma", gamma, lo=0.0)
        a = np.arange(1, d + 1, dtype=float) ** (-gamma)
        return rng.permutation(a)
    if kind == "spiked":
        validate.integer("n_large", n_large, lo=0)
        a = np.full(d, float(small))
        a[rng.choice(d, size=min(n_large, d), replace=False)] = float(large)
        return a
    raise ValueError(f"profile must be one of ['flat', 'power', 'spiked'], got {kind!r}")


PROBLEMS: dict = {}
"""The registry: CLI name -> problem class, in definition order. Filled by the class definitions themselves
(see :class:`Problem`); ``lptheory run --problem``, the sweep's ``problem.name`` and :func:`make_problem`
read it."""


class Problem(_Problem):
    """Base of the synthetic families: the one protocol, :class:`lptheory.problem.Problem`, whose
    certificates come from what each family declares (``f_star``, ``grad_sup(p)``, ``smoothness(p)``),
    with the smoothness bound required here and audited:

    * ``L`` (argument p): ``smoothness(p)``, an upper bound on the l_p smoothness constant, audited by
      :func:`synthetic.smoothness.estimate_smoothness` (ratios actually evaluated);
    * ``f_star``: exact (audited by f at the known minimizer) or a lower bound (audited by the smallest
      f found at random points);
    * ``grad_sup`` (argument p): an upper bound on sup_x ||grad f(x)||_{p*} (``inf`` when unbounded),
      audited by the largest dual norm found at random points.

    The derivations are in each class's docstring.

    Registration: a subclass whose body sets ``name`` (the CLI name) and whose class name is public joins
    :data:`PROBLEMS` when it is defined (``class X(Problem, register=False)`` keeps it out); a base class
    that sets no ``name`` does not register. A name taken by another class is a ``ValueError`` naming both;
    the same class defined again (a module loaded twice) replaces its entry.

    To add a problem, in one file: subclass this class, set ``name``, implement ``f`` and ``grad`` (call
    :meth:`~lptheory.problem.Problem.check_point` on ``x`` first and read constant arrays through
    :meth:`~lptheory.problem.Problem.to_backend` so torch tensors work) and the certificates ``f_star``,
    ``smoothness(p)`` and ``grad_sup(p)`` (validate ``p`` with :func:`check_p`; :func:`hoelder_r` gives the
    diagonal bound's exponent), then import the module.
    """

    def __init_subclass__(cls, register: bool | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if register is False or "name" not in cls.__dict__ or cls.__name__.startswith("_"):
            return
        old = PROBLEMS.get(cls.name)
        if old is not None and old.__qualname__ != cls.__qualname__:
            raise ValueError(f"problem name {cls.name!r} of {cls.__qualname__} is taken by {old.__qualname__}")
        PROBLEMS[cls.name] = cls

    f_star: float
    minimizer_attr: str | None = None  # the attribute holding a closed-form minimizer (argmin; start 2 above it)
    described: tuple[str, ...] = ()  # the attributes describe() adds to the protocol's description

    def start(self):
        """2 above the closed-form minimizer (``minimizer_attr``) in every coordinate, else the protocol's start."""
        return super().start() if self.minimizer_attr is None else getattr(self, self.minimizer_attr) + 2.0

    def argmin(self):
        """The closed-form minimizer (the attribute ``minimizer_attr``), else the protocol's (None)."""
        return super().argmin() if self.minimizer_attr is None else getattr(self, self.minimizer_attr)

    def describe(self):
        """The protocol's description with the attributes named in ``described``."""
        return {**super().describe(), **{k: getattr(self, k) for k in self.described}}

    @abstractmethod
    def smoothness(self, p: float) -> float:
        """See the class docstring."""

    def grad_sup(self, p: float) -> float:
        """sup_x ||grad f||_{p*}; ``inf`` when unbounded."""
        return math.inf

    def audit_smoothness(self, p, seed=0):
        """A lower estimate of the l_p smoothness constant (ratios evaluated at explicit pairs)."""
        from .smoothness import estimate_smoothness

        return estimate_smoothness(self, check_p(p), seed=seed)


# ------------------------------------------------------------------------------------------------
_FUSED_NOISES = (_noise.Rademacher,)  # noises with a kernel fused with the separable gradient (exact types)
_BLOCK = 1 << 15  # elements per block of the in-place gradients (two scratch rows stay in cache)
_scratch_tls = threading.local()  # per thread: the simulator may evaluate row blocks on several threads


def _scratch(k: int, n: int):
    cache = getattr(_scratch_tls, "cache", None)
    if cache is None:
        cache = _scratch_tls.cache = {}
    key = (k, n)
    got = cache.get(key)
    if got is None:
        got = cache[key] = [np.empty(n) for _ in range(k)]
    return got


def _copy_out(out, g):
    if isinstance(out, np.ndarray):
        np.copyto(out, g)
    else:
        out.copy_(g)
    return out


def _phi_log(xp, u):
    return xp.log1p(u * u)


def _dphi_log(xp, u):
    return 2.0 * u / (1.0 + u * u)


def _softplus(xp, u):
    return xp.logaddexp(xp.zeros_like(u), u)


def _dsoftplus(xp, u):
    return 0.5 * (1.0 + xp.tanh(0.5 * u))


class SeparableNonconvex(Problem):
    """f(x) = sum_i a_i phi(x_i - b_i), phi(u) = log(1 + u^2) (nonconvex, bounded phi' and phi'').

    Certificates (a_i > 0):
      * phi >= 0 with phi(0) = 0, so f* = 0, attained at x = b (exact).
      * phi'(u) = 2u/(1+u^2) in [-1, 1] (|phi'| = 1 at u = +-1); so
        sup ||grad f||_{p*} = ||a||_{p*} exactly (each coordinate reaches a_i independently).
      * phi''(u) = 2(1-u^2)/(1+u^2)^2 in [-1/4, 2]: |phi''| <= 2, so the curvature bounds are
        ell_i = 2 a_i. grad f(x) - grad f(y) = D (x - y) with D diagonal, |D_ii| <= ell_i (mean value
        theorem per coordinate), hence L_p <= ||ell||_{p/(p-2)} (Hoelder, module docstring); at p = 2,
        max_i ell_i.
    """

    name = "separable"
    minimizer_attr = "b"
    described = ("profile", "seed")
    # row r of grad(x) (and of f(x)) depends only on row r of x, with the same bits whatever the rows
    # around it: the simulator may split a step by rows (lptheory.simulate)
    rows_independent = True

    def __init__(self, d: int = 100, profile: str = "power", seed: int = 0, scale: float = 1.0, **profile_kw):
        self.d = validate.integer("d", d, lo=1)
        self.profile = profile
        self.seed = seed
        self.a = validate.real("scale", scale, lo=0.0, lo_open=True) * curvature_profile(
            profile, d, seed=seed, **profile_kw
        )
        rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
        self.b = rng.uniform(-1.0, 1.0, size=d)
        self.f_star = 0.0
        self.ell = 2.0 * self.a

    def f(self, x, t=None):
        x = self.check_point(x)
        xp = namespace(x)
        if xp is np and x.ndim == 2 and x.flags.c_contiguous and x.dtype == np.float64:
            # the same operations, row blocks in cache (no (R, d) temporaries): sum(a log1p(u^2)), u = x - b
            rows = max(1, _BLOCK // self.d)
            u, w = _scratch(2, rows * self.d)
            out = np.empty(x.shape[0])
            for r0 in range(0, x.shape[0], rows):
                r1 = min(x.shape[0], r0 + rows)
                uu, ww = u[: (r1 - r0) * self.d].reshape(-1, self.d), w[: (r1 - r0) * self.d].reshape(-1, self.d)
                np.subtract(x[r0:r1], self.b, out=uu)
                np.multiply(uu, uu, out=ww)
                np.log1p(ww, out=ww)
                np.multiply(self.a, ww, out=ww)
                np.sum(ww, axis=-1, out=out[r0:r1])
            return out
        return xp.sum(self.to_backend(x, "a") * _phi_log(xp, x - self.to_backend(x, "b")), axis=-1)

    def grad(self, x, t=None, out=None):
        x = self.check_point(x)
        if out is None or not isinstance(x, np.ndarray):
            g = self.to_backend(x, "a") * _dphi_log(None, x - self.to_backend(x, "b"))
            return g if out is None else _copy_out(out, g)
        xs, os_ = x.reshape(-1, self.d), out.reshape(-1, self.d)
        from . import _fast

        if _fast.enabled() and x.dtype == np.float64 and xs.flags.c_contiguous and os_.flags.c_contiguous:
            _fast.separable_grad(xs, self.a, self.b, os_)  # one pass, the same operations (same bits)
            return out
        # the same operations as above, in place over row blocks that stay in cache (no (R, d) temporaries)
        rows = max(1, _BLOCK // self.d)
        u, w = _scratch(2, rows * self.d)
        for r0 in range(0, xs.shape[0], rows):
            r1 = min(xs.shape[0], r0 + rows)
            uu, ww = u[: (r1 - r0) * self.d].reshape(-1, self.d), w[: (r1 - r0) * self.d].reshape(-1, self.d)
            np.subtract(xs[r0:r1], self.b, out=uu)
            np.multiply(uu, uu, out=ww)
            np.add(ww, 1.0, out=ww)  # 1 + u^2
            np.multiply(uu, 2.0, out=uu)  # 2 u
            np.divide(uu, ww, out=uu)
            np.multiply(uu, self.a, out=os_[r0:r1])
        return out

    def grad_noise_into(self, x, t, noise, rngs, n, out) -> bool:
        """``out = grad f(x)`` plus ``noise.add_means_into(rngs, n, out)`` in one pass per row, the same
        bits (:func:`synthetic._fast.separable_grad_rademacher_streams`), where it applies: Rademacher
        noise with n = 1 on PCG64 streams, float64 rows, d a multiple of 8, on one thread (inside a part
        of the simulator's split step, ``LPTHEORY_THREADS=1``, or arrays below the threaded size: else
        the threaded passes are faster). False, nothing drawn or written, otherwise."""
        if not self.fused_noise_applies(noise, n, x, out):
            return False
        return _fast.separable_grad_rademacher_streams(x, self.a, self.b, rngs, noise.sigma, out)

    def fused_noise_applies(self, noise, n, x, out) -> bool:
        """Whether :meth:`grad_noise_into` takes its one-pass kernel for these arguments (``out`` None: the
        gradient is not written to memory, :mod:`synthetic._fused_oracle`), before the streams' own checks."""
        if n != 1 or self.d % 8 or type(noise) not in _FUSED_NOISES:
            return False
        if type(self).grad is not SeparableNonconvex.grad:
            return False
        if not (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 2 and x.flags.c_contiguous):
            return False
        if out is not None:
            if not (type(out) is np.ndarray and out.dtype == np.float64 and out.shape == x.shape):
                return False
            if not out.flags.c_contiguous or np.may_share_memory(x, out):
                return False
        if x.size >= (1 << 17) and _parallel.threads(fused=True) != 1:
            return False
        return _fast.enabled()

    def smoothness(self, p):
        p = check_p(p)
        return float(lp_norm(self.ell, hoelder_r(p)))

    def grad_sup(self, p):
        p = check_p(p)
        return float(lp_norm(self.a, dual_exponent(p)))


class FlatValley(SeparableNonconvex):
    """Many flat directions in large d: ``n_large`` stiff coordinates (a_i = ``large``) among d
    nearly flat ones (a_i = ``small``). The family where l_p geometry with p > 2 should pay off: L_2
    is set by the stiff coordinates, while the flat ones barely move under an l_2 step of size 1/L_2.
    Whether p > 2 actually helps is for the simulator to show, not for this docstring to assume.
    Certificates: those of :class:`SeparableNonconvex`."""

    name = "flat-valley"

    def __init__(self, d: int = 10_000, n_large: int = 4, large: float = 100.0, small: float = 0.01, seed: int = 0):
        super().__init__(d=d, profile="spiked", seed=seed, n_large=n_large, large=large, small=small)


class RidgeSum(Problem):
    """f(x) = sum_j w_j phi(a_j^T x - b_j), w_j > 0, with phi one of ``log1p-square`` (nonconvex,
    phi(u) = log(1+u^2)) or ``softplus`` (convex, phi(u) = log(1+e^u)).

    Certificates (the Hessian is sum_j w_j phi''(a_j^T x - b_j) a_j a_j^T):
      * f* >= 0 since phi >= 0 (a certified lower bound, ``f_star_exact = False``).
      * For each j, ||a_j a_j^T v||_{p*} = |a_j^T v| ||a_j||_{p*} <= ||a_j||_{p*}^2 ||v||_p (Hoelder), so
        by the mean value theorem along the segment, L_p <= sum_j w_j c2 ||a_j||_{p*}^2 with
        c2 = sup|phi''| (2 for log1p-square, 1/4 for softplus).
      * ||grad f||_{p*} <= sum_j w_j c1 ||a_j||_{p*}, c1 = sup|phi'| (1 for both).
    ``sparsity`` in (0, 1] keeps that fraction of the entries of each a_j (dense when 1).
    """

    name = "ridge"
    _PHI = {
        "log1p-square": (_phi_log, _dphi_log, 1.0, 2.0),
        "softplus": (_softplus, _dsoftplus, 1.0, 0.25),
    }

    def __init__(self, d: int = 100, m: int = 50, phi: str = "log1p-square", sparsity: float = 1.0, seed: int = 0):
        self.d = validate.integer("d", d, lo=1)
        self.m = validate.integer("m", m, lo=1)
        validate.choice("phi", phi, set(self._PHI))
        sparsity = validate.real("sparsity", sparsity, lo=0.0, hi=1.0, lo_open=True)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
        A = rng.standard_normal((m, d)) / math.sqrt(d)
        if sparsity < 1.0:
            A *= rng.random((m, d)) < sparsity
        self.A = A
        self.bvec = rng.uniform(-1.0, 1.0, size=m)
        self.w = np.full(m, 1.0 / m)
        self.phi_name, self.seed, self.sparsity = phi, seed, sparsity
        self._phi, self._dphi, self._c1, self._c2 = self._PHI[phi]
        self.f_star = 0.0
        self.f_star_exact = False

    def f(self, x, t=None):
        x = self.check_point(x)
        A, b, w = self.to_backend(x, "A"), self.to_backend(x, "bvec"), self.to_backend(x, "w")
        return self._phi(namespace(x), x @ A.T - b) @ w

    def grad(self, x, t=None):
        x = self.check_point(x)
        A, b, w = self.to_backend(x, "A"), self.to_backend(x, "bvec"), self.to_backend(x, "w")
        return (self._dphi(namespace(x), x @ A.T - b) * w) @ A

    def smoothness(self, p):
        p = check_p(p)
        q = dual_exponent(p)
        return float(self._c2 * np.sum(self.w * lp_norm(self.A, q) ** 2))

    def grad_sup(self, p):
        p = check_p(p)
        return float(self._c1 * np.sum(self.w * lp_norm(self.A, dual_exponent(p))))

    def start(self):
        return np.full(self.d, 1.0)

    def describe(self):
        return {**super().describe(), "m": self.m, "phi": self.phi_name, "sparsity": self.sparsity, "seed": self.seed}


class LogisticRegression(RidgeSum):
    """(1/m) sum_j log(1 + exp(-y_j a_j^T x)): the softplus ridge sum with signs folded into a_j.
    Convex; certificates of :class:`RidgeSum` with c2 = 1/4, f* >= 0."""

    name = "logistic"

    def __init__(self, d: int = 100, m: int = 200, seed: int = 0):
        super().__init__(d=d, m=m, phi="softplus", seed=seed)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
        y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
        self.A = -y[:, None] * self.A
        self.bvec = np.zeros(m)


class QuadraticDiagonal(Problem):
    """f(x) = (1/2) sum_i h_i (x_i - c_i)^2, h_i >= 0 (convex).

    Certificates: f* = 0 at x = c (exact). grad f(x) - grad f(y) = diag(h)(x - y), and for diagonal
    operators ||diag(h)||_{p -> p*} = ||h||_{p/(p-2)} exactly (Hoelder is tight for
    v_i proportional to h_i^{r/p}), so ``smoothness(p)`` is the exact L_p. Gradient unbounded.
    """

    name = "quadratic-diagonal"
    minimizer_attr = "c"
    described = ("profile", "seed")
    rows_independent = True  # element-wise gradient (see SeparableNonconvex)

    def __init__(self, d: int = 100, profile: str = "power", seed: int = 0, **profile_kw):
        self.d = validate.integer("d", d, lo=1)
        self.h = curvature_profile(profile, d, seed=seed, **profile_kw)
        self.c = np.random.default_rng(np.random.SeedSequence([seed, 4])).uniform(-1, 1, size=d)
        self.f_star = 0.0
        self.hessian_constant = self.h
        self.profile, self.seed = profile, seed

    def f(self, x, t=None):
        x = self.check_point(x)
        return 0.5 * namespace(x).sum(self.to_backend(x, "h") * (x - self.to_backend(x, "c")) ** 2, axis=-1)

    def grad(self, x, t=None):
        x = self.check_point(x)
        return self.to_backend(x, "h") * (x - self.to_backend(x, "c"))

    def smoothness(self, p):
        return float(lp_norm(self.h, hoelder_r(check_p(p))))


class QuadraticDense(Problem):
    """f(x) = (1/2)(x - c)^T H (x - c) with H = Q diag(lam) Q^T PSD, Q a random rotation (convex).

    Certificates: f* = 0 (exact). L_p = ||H||_{p -> p*} <= min(B1, B2) with
      B1 = lam_max d^{1 - 2/p}  (||v||_2 <= d^{1/2-1/p} ||v||_p and ||w||_{p*} <= d^{1/2-1/p} ||w||_2), and
      B2 = || (||H_{i,:}||_{p*})_i ||_{p*}  (Hoelder row by row: |(Hv)_i| <= ||H_{i,:}||_{p*} ||v||_p).
    """

    name = "quadratic-dense"
    minimizer_attr = "c"
    described = ("cond", "seed")

    def __init__(self, d: int = 50, cond: float = 100.0, seed: int = 0):
        self.d = validate.integer("d", d, lo=1)
        cond = validate.real("cond", cond, lo=1.0)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 5]))
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        lam = np.logspace(0, -math.log10(cond), d)
        self.H = (Q * lam) @ Q.T
        self.H = 0.5 * (self.H + self.H.T)
        self.lam_max = float(lam.max())
        self.c = rng.uniform(-1, 1, size=d)
        self.f_star = 0.0
        self.hessian_constant = self.H
        self.cond, self.seed = cond, seed

    def f(self, x, t=None):
        x = self.check_point(x)
        y = x - self.to_backend(x, "c")
        return 0.5 * namespace(x).sum(y * (y @ self.to_backend(x, "H")), axis=-1)

    def grad(self, x, t=None):
        x = self.check_point(x)
        return (x - self.to_backend(x, "c")) @ self.to_backend(x, "H")

    def smoothness(self, p):
        p = check_p(p)
        b1 = self.lam_max * self.d ** (1.0 - 2.0 / p if not math.isinf(p) else 1.0)
        q = dual_exponent(p)
        b2 = float(lp_norm(lp_norm(self.H, q), q))
        return min(b1, b2)


class LogSumExp(Problem):
    """f(x) = mu log sum_j exp((a_j^T x - b_j)/mu) (convex); the rows a_j sum to zero.

    Certificates:
      * f* >= mu log m - mean(b) (certified lower bound): by Jensen, log of the mean of exp(z_j) is at
        least the mean of z_j, so f(x) >= mu log m + mean_j (a_j^T x - b_j) = mu log m - mean(b).
      * The Hessian H = (1/mu) A^T (diag(pi) - pi pi^T) A is PSD with v^T H v <= (1/mu) sum_j pi_j (a_j^T v)^2
        <= (1/mu) max_j ||a_j||_{p*}^2 ||v||_p^2. For PSD H, sup_{||u||_p, ||v||_p <= 1} u^T H v =
        sup_{||v||_p <= 1} v^T H v (Cauchy-Schwarz in the H semi-inner product), so
        L_p <= max_j ||a_j||_{p*}^2 / mu (mean value theorem along the segment).
      * The gradient pi^T A is a convex combination of rows: sup ||grad f||_{p*} <= max_j ||a_j||_{p*}.
    """

    name = "logsumexp"

    def __init__(self, d: int = 50, m: int = 20, mu: float = 1.0, seed: int = 0):
        self.d = validate.integer("d", d, lo=1)
        self.m = validate.integer("m", m, lo=2)
        self.mu = validate.real("mu", mu, lo=0.0, lo_open=True)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
        A = rng.standard_normal((m, d)) / math.sqrt(d)
        A[0] = -A[1:].sum(axis=0)  # 0 is in the convex hull of the rows: f is bounded below
        self.A = A
        self.bvec = rng.uniform(0.0, 1.0, size=m)
        self.f_star = float(-self.bvec.mean() + self.mu * math.log(m))
        self.f_star_exact = False
        self.seed = seed

    def f(self, x, t=None):
        x = self.check_point(x)
        xp = namespace(x)
        z = (x @ self.to_backend(x, "A").T - self.to_backend(x, "bvec")) / self.mu
        zmax = xp.amax(z, axis=-1, keepdims=True)
        return self.mu * (xp.log(xp.exp(z - zmax).sum(axis=-1)) + zmax[..., 0])

    def grad(self, x, t=None):
        x = self.check_point(x)
        xp = namespace(x)
        A = self.to_backend(x, "A")
        z = (x @ A.T - self.to_backend(x, "bvec")) / self.mu
        z = z - xp.amax(z, axis=-1, keepdims=True)
        pi = xp.exp(z)
        pi /= pi.sum(axis=-1, keepdims=True)
        return pi @ A

    def smoothness(self, p):
        p = check_p(p)
        return float(np.max(lp_norm(self.A, dual_exponent(p))) ** 2 / self.mu)

    def grad_sup(self, p):
        p = check_p(p)
        return float(np.max(lp_norm(self.A, dual_exponent(p))))

    def start(self):
        return np.full(self.d, 1.0)


def make_problem(name: str, **kw) -> Problem:
    """Build a problem by name: one of ``PROBLEMS``."""
    if name not in PROBLEMS:
        raise ValueError(f"problem must be one of {sorted(PROBLEMS)}, got {name!r}")
    return PROBLEMS[name](**kw)
