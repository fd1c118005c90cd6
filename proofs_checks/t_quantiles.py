"""Quantiles of Student's t at any precision (:func:`t_quantile`), for the ``sample-mean`` re-check.

Like :mod:`proofs_checks.recheck`, this module imports nothing from the toolkit (only ``mpmath`` and
:mod:`.witness_core`).
"""

from __future__ import annotations

import mpmath

from .witness_core import remembered

__all__ = ["t_quantile"]


_T_QUANTILES: dict = {}  # (prob, df, working precision) -> quantile: a pure function of its arguments


def t_quantile(prob, df):
    """Quantile of Student's t with ``df`` degrees of freedom (bisection on the regularized incomplete beta);
    remembered per (prob, df, precision) in this process (a report re-checks many samples of one size)."""
    return remembered(_T_QUANTILES, (prob, df, mpmath.mp.prec), lambda: _t_quantile_raw(prob, df), 1024)


def _t_quantile_raw(prob, df):
    if df > 1e6:
        return mpmath.sqrt(2) * mpmath.erfinv(2 * prob - 1)

    def cdf(t):
        xx = df / (df + t * t)
        try:
            tail = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, xx, regularized=True) / 2
        except mpmath.libmp.NoConvergence:  # far in the tail at many degrees of freedom (df >= 10^4, |t| >= 40:
            if df < 10**4 or abs(t) < 40:  # the tail is below 10^-300, far past any quantile asked for)
                raise
            tail = mpmath.mpf(0)
        return 1 - tail if t > 0 else tail

    lo, hi = mpmath.mpf(-1e6), mpmath.mpf(1e6)
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdf(mid) < prob:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
