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
    """(a) exact identities, each with a false control that must be found violated."""
    return identities.run_identities(ctx)


@PACK.check(name="newton-schulz", title="Newton-Schulz orthogonalization after k iterations")
def _ns(ctx):
    """(b) the quintic's scalar polynomial, its interval description read as a bound, the cubic's bound."""
    return newton_schulz.run_newton_schulz(ctx)


@PACK.check(name="rate-lmo", title="Normalized stochastic steepest descent under Schatten-p smoothness",
            options=("p", "T"), defaults={"p": [3.0, float("inf")], "T": [16, 32, 64, 128, 256]},
            validate=_grid)  # fmt: skip
def _rate_lmo(ctx):
    """(c) the bound per T and the N^{-1/4} rate, with a still and a slow control."""
    T = ctx.T if not ctx.quick else ctx.T[:4]
    return rates.run_lmo(_Ctx(ctx, T))


@PACK.check(name="rate-thm1", title="Theorem 1 in Schatten-p geometry (conjectural analogue)",
            options=("p", "T"), defaults={"p": [3.0], "T": [256, 512, 1024, 2048, 4096]},
            validate=_grid)  # fmt: skip
def _rate_thm1(ctx):
    """(c) the unscaled Schatten-p descent's rate along runs, with a still and a slow control."""
    T = ctx.T if not ctx.quick else ctx.T[:4]
    return rates.run_thm1(_Ctx(ctx, T))


class _Ctx:
    """The context with the grid chosen for this run."""

    def __init__(self, ctx, T):
        self._ctx, self.T = ctx, list(T)

    def __getattr__(self, name):
        return getattr(self._ctx, name)
