"""The Guzman-Nemirovski resisting oracle: a hard convex l_p-smooth instance built from the method's
own queries (Guzman & Nemirovski, "On lower complexity bounds for large-scale smooth convex optimization",
J. Complexity 31 (2015); constants as derived for this toolkit).

N = T + 1 pieces, delta = R N^{-1/p} / (2N), M = 8/delta, q = p/(p-1). At the t-th query x_t the oracle
reveals the piece alpha(t) = the unused coordinate with the largest |x_{t,i}|, xi_t = sign(x_{t,alpha(t)})
(+1 at 0), and answers with

    g(x) = max_{k <= K} [xi_k x_{alpha(k)} - (k-1) delta]        (1-Lipschitz in every l_p)
    f(x) = min_h g(x + h) + (M/2)||h||_p^2                           (convex, L = M (p-1) smooth in l_p)

evaluated by its dual: f(x) = max_{lambda in simplex} sum_k lambda_k c_k - ||lambda||_q^2/(2M),
c_k = xi_k x_{alpha(k)} - (k-1) delta, lambda* proportional to w = ((c - nu)_+)^{p-1} with nu the root of
M sum(w) ||w||_q^{-(p-2)/(p-1)} = 1 (bisection, vectorized over the pieces), and
grad f(x) = sum_k lambda*_k xi_k e_{alpha(k)}.

Lower bound for any deterministic first-order method (section 2):
f(x_N) - min_{||x||_p <= R} f >= R N^{-1/p} - N delta >= L R^2 / (32 (p-1) (T+1)^{(p+2)/p}).
"""

from __future__ import annotations

import math

import numpy as np

from lptheory import config, validate
from lptheory.problem import Certificate, Problem

__all__ = ["GuzmanNemirovski", "SpectralDiagonal"]


class GuzmanNemirovski(Problem):
    """Resisting oracle for horizon T in dimension d >= T + 1, ball radius R, exponent p >= 2.

    ``query(x) -> (f, grad)`` reveals one more piece (up to N = T + 1) and answers with the pieces
    revealed so far; ``evaluate(x, K)`` answers with the first K pieces without revealing any.
    As a problem of the protocol (:class:`lptheory.problem.Problem`, ``stateful``): ``grad(x, t)``
    is a query (it reveals), ``f(x, t)`` evaluates with the pieces revealed so far; one replicate.
    """

    name = "guzman-nemirovski"
    stateful = True

    def __init__(self, d: int, T: int, p: float, R: float = 1.0, bisection_iters: int = 200):
        self.T = validate.integer("T", T, lo=1)
        self.d = validate.integer("d", d, lo=self.T + 1)
        self.p = validate.real("p", p, lo=2.0)
        if math.isinf(self.p):
            raise ValueError("p must be finite")
        self.R = validate.real("R", R, lo=0.0, lo_open=True)
        self.N = self.T + 1
        self.delta = self.R * self.N ** (-1.0 / self.p) / (2 * self.N)
        self.M = 8.0 / self.delta
        self.q = self.p / (self.p - 1.0)
        self.L = self.M * (self.p - 1.0)
        self.alpha: list[int] = []
        self.xi: list[float] = []
        self.iters = bisection_iters
        # the revealed pieces as arrays too (the compiled answer reads them without conversions)
        self._idx = np.zeros(self.N, dtype=np.int64)
        self._xiv = np.zeros(self.N, dtype=np.float64)
        self._used = np.zeros(self.d, dtype=np.bool_)

    def f(self, x, t=None):
        return self._rows(x, lambda r: self.evaluate(r)[0])

    def grad(self, x, t=None):
        return self._rows(x, lambda r: self.query(r)[1])

    def _rows(self, x, fn):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            return fn(x)
        if x.shape[0] != 1:
            raise ValueError("the resisting oracle answers one sequence of queries: one replicate only")
        out = fn(x[0])
        return np.asarray(out)[None, ...] if np.ndim(out) else np.array([out])

    def start(self):
        return np.zeros(self.d)

    def certificates(self):
        return {
            "L": Certificate(
                "L",
                self.L,
                "upper",
                "f is the l_p Moreau envelope of the 1-Lipschitz max of pieces with (M/2)||h||_p^2: its "
                "gradient is (p-1) M Lipschitz in l_p (Guzman & Nemirovski 2015)",
            ),
            "lower_bound": Certificate(
                "lower_bound",
                self.lower_bound,
                "lower",
                "f(x_N) - min_{||x||_p <= R} f >= R N^{-1/p} - N delta for every deterministic first-order "
                "method (Guzman & Nemirovski 2015)",
            ),
        }

    def lower_bound(self) -> float:
        """R N^{-1/p} - N delta (the first form of the lower bound)."""
        return self.R * self.N ** (-1.0 / self.p) - self.N * self.delta

    def lower_bound_closed(self) -> float:
        """L R^2 / (32 (p-1) (T+1)^{(p+2)/p})."""
        return self.L * self.R**2 / (32 * (self.p - 1) * (self.T + 1) ** ((self.p + 2) / self.p))

    def _reveal(self, x):
        K = len(self.alpha)
        if K >= self.N:
            return
        k = _kernel(self.p, self.q)
        if k is not None and x.dtype == np.float64 and x.ndim == 1 and x.size == self.d:
            i = int(k[0].reveal(x, self._used))  # the argmax below in one compiled call
        else:
            ax = np.abs(x).astype(float)
            ax[self.alpha] = -1.0
            i = int(np.argmax(ax))
        s = 1.0 if x[i] >= 0 else -1.0
        self.alpha.append(i)
        self.xi.append(s)
        self._idx[K], self._xiv[K], self._used[i] = i, s, True

    def query(self, x):
        x = np.asarray(x, dtype=np.float64)
        self._reveal(x)
        return self.evaluate(x, len(self.alpha))

    def evaluate(self, x, K: int | None = None):
        """(f(x), grad f(x)) with the first K revealed pieces (default all revealed so far)."""
        K = len(self.alpha) if K is None else K
        if K < 1:
            raise ValueError("no piece revealed yet: query first")
        x = np.asarray(x, dtype=np.float64)
        if K > len(self.alpha):
            raise ValueError(f"K must be at most the {len(self.alpha)} pieces revealed, got {K}")
        idx, xi = self._idx[:K], self._xiv[:K]
        q, M = self.q, self.M
        k = _kernel(self.p, self.q)
        if k is not None and x.ndim == 1 and x.size == self.d:
            # one compiled call: the pieces c, the root, lam and the gradient (NaN: a piece is not finite)
            mod, sq1, sq2 = k
            c, w, w2, pad, grad = np.empty(K), np.empty(K), np.empty(K), np.empty(16), np.zeros(self.d)
            pm1, qq = self.p - 1, (q - 2) / q
            t = mod.answer(x, idx, xi, self.delta, M, pm1, sq1, q, sq2, qq, self.iters, c, w, w2, pad, grad)
            if t == t:
                return float(w @ c - t / (2 * M)), grad  # (the dot product stays numpy's)
        c = xi * x[idx] - np.arange(K) * self.delta
        lo = self._root_numpy(c)
        w = self._phi_numpy(c, lo)[1]
        lam = w / w.sum()
        fval = float(lam @ c - np.sum(lam**q) ** (2.0 / q) / (2 * M))
        grad = np.zeros(self.d)
        np.add.at(grad, idx, lam * xi)
        return fval, grad

    def _phi_numpy(self, c, nu):
        """(phi(nu), w): phi(nu) = M sum(w) ||w||_q^{q-2}, w = ((c - nu)_+)^{p-1}; decreasing in nu, 0 at
        nu = max c (the dual optimality condition M sum(w) ||w||_q^{-(p-2)/(p-1)} = 1 of the module docstring,
        written with ||w||_q^{q-2} = ||w||_q^{-(p-2)/(p-1)})."""
        add = np.add.reduce  # (ufunc reductions: the bits of .sum(), less overhead)
        w = np.maximum(c - nu, 0.0) ** (self.p - 1)
        s = add(w)
        if s == 0:
            return 0.0, w
        return self.M * s * add(w**self.q) ** ((self.q - 2) / self.q), w

    def _root_numpy(self, c) -> float:
        """The root nu of phi(nu) = 1 by bisection (vectorized over the pieces): the lower end of the final
        bracket (phi(lo) >= 1)."""
        phi = self._phi_numpy
        hi = float(c.max())
        step = 1.0 / self.M + 1e-300
        lo = hi - step
        while phi(c, lo)[0] < 1.0:
            step *= 2.0
            lo = hi - step
        for _ in range(self.iters):
            mid = 0.5 * (lo + hi)
            if phi(c, mid)[0] >= 1.0:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-16 * max(1.0, abs(hi)):
                break
        return lo

    def _root(self, c) -> float:
        """:meth:`_root_numpy`'s result, from one compiled call where numba can reproduce numpy's bits
        (:mod:`synthetic._gn_kernel`; numpy otherwise, or for non-finite pieces)."""
        k = _kernel(self.p, self.q)
        if k is None or not np.isfinite(c).all():
            return self._root_numpy(c)
        K = c.size
        mod, sq1, sq2 = k
        pm1, q = self.p - 1, self.q
        c = np.ascontiguousarray(c, dtype=np.float64)
        w, w2, pad = np.empty(K), np.empty(K), np.empty(16)
        return float(mod.root(c, self.M, pm1, sq1, q, sq2, (q - 2) / q, self.iters, w, w2, pad))

    def ball_point(self) -> np.ndarray:
        """x_bar = -R N^{-1/p} sum_k xi_k e_{alpha(k)} (norm R): f(x_bar) <= g(x_bar) = -R N^{-1/p}
        certifies min_{||x||_p <= R} f <= f(x_bar)."""
        xb = np.zeros(self.d)
        xb[np.asarray(self.alpha)] = -self.R * self.N ** (-1.0 / self.p) * np.asarray(self.xi)
        return xb


_KERNEL_OFF = config.kernel_off("LPTHEORY_GN_KERNEL")


def _pow_route(y: float):
    """How numba reproduces numpy's ``array ** y``: "square" (numpy's x * x at y = 2), "svml" (numpy's own
    power, checked at y), or None (no route with numpy's bits: the numpy bisection is used)."""
    if y == 2.0:
        return "square"
    from lptheory.numpy_power import agrees

    return "svml" if agrees(y) else None


def _kernel(p: float, q: float):
    """(module, square at p - 1, square at q) for the compiled bisection, or None (numba, numpy's SVML power or
    a route with numpy's bits at these exponents missing; ``LPTHEORY_GN_KERNEL=0``)."""
    if _KERNEL_OFF:
        return None
    key = (p, q)
    if key not in _KERNELS:
        got = None
        try:
            from . import _gn_kernel as mod
        except ImportError:
            mod = None
        if mod is not None:
            r1, r2 = _pow_route(p - 1), _pow_route(q)
            if r1 is not None and r2 is not None:
                got = (mod, r1 == "square", r2 == "square")
        if len(_KERNELS) > 256:
            _KERNELS.clear()
        _KERNELS[key] = got
    return _KERNELS[key]


_KERNELS: dict = {}


class SpectralDiagonal(Problem):
    """A fixed-L instance for measuring decay exponents: f(x) = (1/2) sum_j lam_j (x_j - c_j)^2 with
    lam_j = (j/d)^alpha, c_j = j^(-beta) (j = 1..d), started at x_0 = 0.

    Unlike the resisting oracle (whose smoothness constant is rebuilt for every horizon, which pins every
    method's normalized gap at the lower bound's exponent), this instance is built once: L, R and f* do
    not depend on the horizon, so a method that does not move keeps a constant gap (exponent 0) and the
    exponent fitted across horizons is the method's own. With alpha = 2, beta = 1/2 the spectral measure
    sum_j lam_j c_j^2 delta_{lam_j} is flat near 0 (mass 1/2 per unit of lam in the continuum limit), the
    classical example on which gradient descent's gap decays like T^-1 and Nesterov's like T^-2
    (Nesterov, *Lectures on Convex Optimization* (2018), Sec. 2.1.2; the l_2 case).

    Certificates: f* = 0 at x* = c (exact); L_p = ||lam||_{p/(p-2)} exactly (diagonal operators: Hoelder is
    tight, as for :class:`synthetic.problems.QuadraticDiagonal`), lam_max at p = 2.
    """

    name = "spectral-diagonal"

    def __init__(self, d: int = 4096, alpha: float = 2.0, beta: float = 0.5):
        self.d = validate.integer("d", d, lo=1)
        self.alpha = validate.real("alpha", alpha, lo=0.0, lo_open=True)
        self.beta = validate.real("beta", beta, lo=0.0)
        j = np.arange(1, self.d + 1, dtype=np.float64)
        self.h = (j / self.d) ** self.alpha
        self.c = j ** (-self.beta)
        self.f_star = 0.0

    def f(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore"):  # a diverged iterate has f = inf: a result the callers count
            return 0.5 * np.sum(self.h * (x - self.c) ** 2, axis=-1)

    def grad(self, x, t=None):
        x = np.asarray(x, dtype=np.float64)
        return self.h * (x - self.c)

    def smoothness(self, p: float) -> float:
        """L_p = ||lam||_{p/(p-2)} (lam_max at p = 2), exact for a diagonal quadratic."""
        p = validate.real("p", p, lo=2.0)
        if p == 2.0:
            return float(self.h.max())
        if math.isinf(p):
            return float(self.h.sum())
        r = p / (p - 2.0)
        return float(np.sum(self.h**r) ** (1.0 / r))

    def start(self):
        return np.zeros(self.d)

    def argmin(self):
        return self.c

    def certificates(self):
        return {
            "L": Certificate(
                "L",
                self.smoothness,
                "exact",
                "diagonal quadratic: ||diag(lam)||_{p -> p*} = ||lam||_{p/(p-2)} (Hoelder, tight)",
                args=("p",),
            ),
            "f_star": Certificate("f_star", 0.0, "exact", "f >= 0 with f(c) = 0"),
        }

    def describe(self):
        return {"name": self.name, "d": self.d, "alpha": self.alpha, "beta": self.beta}
