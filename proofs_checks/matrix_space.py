"""Search spaces over matrices (:class:`MatrixSpace`) for the adversarial search: claims about an n x m matrix
``M`` (its entries the scalars ``M_i_j``), optionally symmetric, optionally with a spectral constraint
(``||M||_2 <= spectral_bound``). Every candidate meets the constraint by construction; the witness of the worst
candidate carries the constraint as conditions (``MinEig``) that the re-check encloses rigorously.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .spec import ClaimError

__all__ = ["MatrixSpace", "matrix_symbols", "matrix_search"]

# candidates' singular values (eigenvalues) are kept within (1 - 2^-40) of the bound, so that the witness's
# spectral condition (whose float entries round) is certain and can be proved, not only met up to rounding
_INSIDE = 1.0 - 2.0**-40


def matrix_symbols(n: int, m: int | None = None, name: str = "M") -> sp.ImmutableMatrix:
    """The n x m matrix of the symbols ``M_i_j`` (real) a :class:`MatrixSpace`'s candidates give values to."""
    m = n if m is None else m
    return sp.ImmutableMatrix(n, m, lambda i, j: sp.Symbol(f"{name}_{i}_{j}", real=True))


@dataclass(frozen=True)
class MatrixSpace:
    """n x m real matrices ``M`` (scalars ``M_i_j``, :func:`matrix_symbols`), searched adversarially.

    * ``symmetric=True`` (n == m): M = Q diag(lam) Q^T, Q orthogonal (the QR factor of a free matrix, signs
      fixed), so every candidate is exactly symmetric in its parametrization;
    * ``spectral_bound=B``: ||M||_2 <= B (symmetric: every eigenvalue in [-B, B]; else the singular values of
      M = U diag(s) V^T in [0, B]); without it, entries in [-entry_bound, entry_bound];
    * ``psd=True`` (symmetric): eigenvalues in [0, B] (a bound is then required).

    The witness of a candidate carries the constraint as conditions re-derived by the re-check (``MinEig`` of
    B I - M and B I + M, or of B^2 I - M^T M; ``MinEig(M) >= 0`` for psd)."""

    n: int
    m: int | None = None
    symmetric: bool = False
    spectral_bound: float | None = None
    psd: bool = False
    entry_bound: float = 1.0
    name: str = "M"

    def __post_init__(self):
        if not isinstance(self.n, int) or self.n < 1:
            raise ClaimError(f"MatrixSpace.n must be an integer >= 1, got {self.n!r}")
        if self.m is not None and (not isinstance(self.m, int) or self.m < 1):
            raise ClaimError(f"MatrixSpace.m must be an integer >= 1 or None, got {self.m!r}")
        if self.symmetric and self.cols != self.n:
            raise ClaimError(f"MatrixSpace: a symmetric matrix is square (n = {self.n}, m = {self.m})")
        for key in ("spectral_bound", "entry_bound"):
            v = getattr(self, key)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ClaimError(f"MatrixSpace.{key} must be a finite number > 0, got {v!r}")
        if self.psd and not (self.symmetric and self.spectral_bound is not None):
            raise ClaimError("MatrixSpace.psd needs symmetric=True and a spectral_bound")

    @property
    def cols(self) -> int:
        return self.n if self.m is None else self.m

    @property
    def dim(self) -> int:
        n, m = self.n, self.cols
        if self.spectral_bound is None and not self.symmetric:
            return n * m
        if self.symmetric:
            return n * n + n if self.spectral_bound is not None else n * (n + 1) // 2
        return n * n + m * m + min(n, m)

    def bounds(self):
        return [(-1.0, 1.0)] * self.dim

    def decode(self, xs) -> np.ndarray:
        """(S, dim) search coordinates -> (S, n, m) matrices meeting the space's constraints."""
        xs = np.atleast_2d(np.asarray(xs, dtype=np.float64))
        S, n, m = xs.shape[0], self.n, self.cols
        B = self.spectral_bound
        if B is None and not self.symmetric:
            return self.entry_bound * xs.reshape(S, n, m)
        if B is None:  # symmetric, entries bounded
            out = np.zeros((S, n, n))
            iu = np.triu_indices(n)
            out[:, iu[0], iu[1]] = self.entry_bound * xs
            return out + np.triu(out, 1).transpose(0, 2, 1)
        if self.symmetric:
            Q = _orthogonal(xs[:, : n * n].reshape(S, n, n))
            u = xs[:, n * n :]
            lam = B * _INSIDE * ((u + 1) / 2 if self.psd else u)
            M = np.einsum("sij,sj,skj->sik", Q, lam, Q)
            return (M + M.transpose(0, 2, 1)) / 2
        U = _orthogonal(xs[:, : n * n].reshape(S, n, n))
        V = _orthogonal(xs[:, n * n : n * n + m * m].reshape(S, m, m))
        k = min(n, m)
        s = B * _INSIDE * np.abs(xs[:, n * n + m * m :])
        return np.einsum("sik,sk,sjk->sij", U[:, :, :k], s, V[:, :, :k])

    def scalars(self, mats: np.ndarray) -> dict:
        """The scalars ``M_i_j`` of (S, n, m) matrices: name -> (S,) array."""
        return {f"{self.name}_{i}_{j}": mats[:, i, j] for i in range(self.n) for j in range(self.cols)}

    def conditions(self) -> tuple:
        """The space's constraint as witness conditions ``(name, lhs, relation, rhs)`` with ``MinEig``."""
        from .witnesses import MinEig

        M = matrix_symbols(self.n, self.cols, self.name)
        B = self.spectral_bound
        if B is None:
            return ()
        Bf = sp.Float(B)
        if self.symmetric:
            eye = sp.eye(self.n)
            out = [(f"{self.name} <= {B:g} I", MinEig(sp.ImmutableMatrix(Bf * eye - M)), ">=", sp.Integer(0))]
            lower = sp.ImmutableMatrix(M) if self.psd else sp.ImmutableMatrix(Bf * eye + M)
            out.append((f"{self.name} >= {'0' if self.psd else f'-{B:g} I'}", MinEig(lower), ">=", sp.Integer(0)))
            return tuple(out)
        gram = sp.ImmutableMatrix(Bf**2 * sp.eye(self.cols) - M.T * M)
        return ((f"||{self.name}||_2 <= {B:g}", MinEig(gram), ">=", sp.Integer(0)),)


def _orthogonal(A: np.ndarray) -> np.ndarray:
    """The Q factor of each matrix of A (S, n, n), columns' signs fixed by R's diagonal (a continuous choice)."""
    Q, R = np.linalg.qr(A + 1e-12 * np.eye(A.shape[-1]))
    sgn = np.sign(np.diagonal(R, axis1=1, axis2=2))
    sgn[sgn == 0] = 1.0
    return Q * sgn[:, None, :]


def matrix_search(spec, space: MatrixSpace, params: dict, *, scalars=None, seed, budget=None, scale: float = 1.0):
    """The worst ratio term / bound (bound / term for ``>=``) of ``spec`` over the matrices of ``space``
    (differential evolution and a Nelder-Mead polish, :func:`proofs_checks.search.maximize`, within ``budget``),
    recorded by :func:`proofs_checks.expectation.value_claim` with the worst matrix's witness: ``holds``
    (evidence ``searched``) when no candidate breaks the claim, ``violated`` when the worst one does and its
    witness re-checks (the spectral constraint re-derived as ``MinEig`` conditions). ``scale`` multiplies the
    bound (planted false bounds)."""
    from . import expressions as X
    from .expectation import value_claim
    from .search import maximize
    from .witnesses import Point
    from .worst_case import SearchBudget

    budget = budget or SearchBudget()
    sc0 = {k: float(v) for k, v in (scalars or {}).items()}
    ge = spec.relation == ">="

    def sides(mats):
        env = X.Env(scalars={**sc0, **space.scalars(mats)}, S=mats.shape[0])
        return X.evaluate(spec.term, env), scale * X.evaluate(spec.bound, env)

    def objective(xs):
        with np.errstate(all="ignore"):
            term, bound = sides(space.decode(np.clip(xs, -1.0, 1.0)))
            r = bound / term if ge else term / bound
        return np.where(np.isfinite(r), r, 0.0)

    x, val, nfev = maximize(objective, space.bounds(), seed=seed, maxiter=budget.maxiter, popsize=budget.popsize)
    mats = space.decode(np.clip(np.asarray(x)[None], -1.0, 1.0))
    term, bound = (float(v[0]) for v in sides(mats))
    sc = {**sc0, **{k: float(v[0]) for k, v in space.scalars(mats).items()}}
    rhs = spec.bound if scale == 1.0 else sp.Float(scale) * spec.bound
    at = Point(sc, lhs=spec.term, rhs=rhs, conditions=space.conditions())
    txt = f"{nfev} candidates of {space!r} (differential evolution, maxiter {budget.maxiter}, popsize {budget.popsize})"
    return value_claim(
        spec, term, bound, {**params, "space": repr(space)}, method="adversarial-search", at=at, budget=txt
    )
