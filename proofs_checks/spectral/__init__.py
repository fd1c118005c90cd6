"""The spectral pack: claims about steepest descent in matrix norms (Schatten-p, spectral, the operator
norms of LMO methods), Muon, Scion and Newton-Schulz, checked on the public API only.

``lptheory check spectral`` (installed entry point) or ``lptheory check proofs_checks.spectral:PACK``.
Checks: ``identities`` (a), ``newton-schulz`` (b), ``rate-lmo`` and ``rate-thm1`` (c). Sources:
Bernstein & Newhouse 2024 ("Old Optimizer, New Norm: An Anthology", arXiv:2409.20325); Jordan et al.
2024 (Muon, kellerjordan.github.io/posts/muon); Pethick et al. 2025 ("Training Deep Learning Models
with Norm-Constrained LMOs", Scion); the Stacey paper (ICML 2025), Theorem 1; Higham 2008.
"""

from __future__ import annotations

from proofs_checks.api import Pack, register_recheck

from . import identities, newton_schulz, rates
from .recheck import KINDS

__all__ = ["PACK"]

for _kind, _fn in KINDS.items():
    register_recheck(_kind, _fn)

PACK = Pack(
    "spectral",
    title="Beyond l_p: steepest descent in matrix norms (Muon, Scion, Schatten-p)",
    description="Exact identities of matrix steepest descent, Newton-Schulz orthogonalization against what its "
    "sources state, and rates of stochastic steepest descent under Schatten-p smoothness with negative controls.",
)


def _grid(opts):
    T = opts.get("T")
    if not (isinstance(T, (list, tuple)) and len(T) >= 3 and all(isinstance(v, int) and v >= 2 for v in T)):
        raise ValueError(f"--set T=... must list at least 3 integers >= 2, got {T!r}")
    ps = opts.get("p")
    ps = ps if isinstance(ps, (list, tuple)) else [ps]
    if not ps or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 2 for v in ps):
        raise ValueError(f"--p must list exponents p >= 2 (Schatten-p smoothness with p >= 2), got {opts.get('p')!r}")


@PACK.check(name="identities", title="Exact identities: Muon = spectral steepest descent, Schatten-p at p = 2 "
            "and inf, dual norms, Adam without averages = sign descent")  # fmt: skip
def _identities(ctx):
    """(a) exact identities, each with a false control that the same check must find violated (the control's
    record: inconclusive, "negative control 'x' fails as it must").

    Setting: random Gaussian matrices (shapes 3x5, 6x4, 8x8, 16x24 and a rank-2 6x5), float64.
    Methods: Muon (``orthogonalize="svd"``, no momentum), Scion with the Frobenius LMO, Schatten-p
    descent at p = inf, Adam with beta1 = beta2 = eps = 0; the norms of ``lptheory.norms``.
    Claims (as Bernstein & Newhouse 2024 state them): Muon's exact step is the spectral steepest
    direction; Schatten-2 is normalized SGD; Schatten-inf is the orthogonalized update (= Shampoo
    without accumulation); <G, d*> = ||G||_*, ||d*|| = 1 and ||.||_** = ||.|| for each norm; Adam without
    moving averages is sign descent. Checked: the largest relative Frobenius gap <= 1e-9; a failure is
    re-checked at 60 digits (mpmath SVD) from the witness. Returns: one record per identity, one per
    norm, one per control. Example: ``lptheory check spectral identities``."""
    return identities.run_identities(ctx)


@PACK.check(name="newton-schulz", title="Newton-Schulz orthogonalization after k iterations")
def _ns(ctx):
    """(b) Newton-Schulz orthogonalization after k iterations.

    Setting: Gaussian matrices (8x8 ... 96x96, 64x256) and the scalar map phi(x) = a x + b x^3 + c x^5.
    Method: ``lptheory.norms.newton_schulz`` (Jordan et al. 2024's quintic) and the classical cubic.
    Claims: the source states no bound; checked are the scalar-polynomial identity (exact), the
    "S'_ii ~ Uniform(0.5, 1.5)" description, which no source states as a bound (not-applicable: read as a
    bound it fails below the root s0 = 1.0670274e-3 of phi^5 = 0.5, with a 60-digit witness), the scoped
    statement on [s*, 1], s* the smallest double with phi^5(s*) >= 0.5 (proved by interval arithmetic),
    the non-convergence in k, the cubic's bound (1 - s_min^2)^(2^k) (Higham 2008, Sec. 8.3), and the
    measured error against the SVD path against the scoped statement's bound. Returns: six records.
    Example: ``lptheory check spectral newton-schulz``."""
    return newton_schulz.run_newton_schulz(ctx)


@PACK.check(name="rate-lmo", title="Normalized stochastic steepest descent under Schatten-p smoothness",
            options=("p", "T"), defaults={"p": [3.0, float("inf")], "T": [16, 32, 64, 128, 256]},
            validate=_grid)  # fmt: skip
def _rate_lmo(ctx):
    """(c) normalized stochastic steepest descent under Schatten-p smoothness.

    Setting: ``KroneckerQuadratic(4, 6)`` (certified L_p), Gaussian entry noise (std 0.5), batch n_t = T,
    eta = eta_0 / sqrt(T), 16 replicates (8 with ``--quick``), p in ``--p`` (default 3, inf).
    Method: Scion (uSCG) with alpha = 1 over the Schatten-p unit ball. Claim (derived in
    ``proofs_checks/spectral/rates.py``): (1/T) sum_t E||grad f||_{S_p*} <= (f_0 - f*)/(eta T) + L eta/2 +
    2 sigma_*/sqrt(n), hence O(N^{-1/4}). Checked: the bound per T (Student-t interval, Bonferroni over
    the grid) and the fitted exponent, which holds only with its lower end above 0.25 - 0.05 and both
    controls (lr = 0; eta = eta_0/T) failing (their records: inconclusive, "negative control 'x' fails as
    it must"). Example: ``lptheory check spectral rate-lmo --p 3``."""
    T = ctx.T if not ctx.quick else ctx.T[:4]
    return rates.run_lmo(_Ctx(ctx, T))


@PACK.check(name="rate-thm1", title="Theorem 1 in Schatten-p geometry (conjectural analogue)",
            options=("p", "T"), defaults={"p": [3.0], "T": [256, 512, 1024, 2048, 4096]},
            validate=_grid)  # fmt: skip
def _rate_thm1(ctx):
    """(c) Theorem 1 in Schatten-p geometry (conjectural analogue).

    Setting: ``SymmetricFactorization(6, 4, rank=2)`` with constants certified on the ball ||X||_2 <= 1.6
    (runs that leave it are not-applicable), rank-one noise (exact batch means), n_t = T,
    eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}). Method: ``SchattenDescent`` (Alg. 3 on singular values).
    Claim: Theorem 1's bound and its O(N^{-1/4}) rate, transplanted (no published proof). Checked as
    ``rate-lmo``, with the controls lr = 0 and eta ~ 1/T. Example:
    ``lptheory check spectral rate-thm1 --set T=256,512,1024,2048``."""
    T = ctx.T if not ctx.quick else ctx.T[:4]
    return rates.run_thm1(_Ctx(ctx, T))


class _Ctx:
    """The context with the grid chosen for this run."""

    def __init__(self, ctx, T):
        self._ctx, self.T = ctx, list(T)

    def __getattr__(self, name):
        return getattr(self._ctx, name)
