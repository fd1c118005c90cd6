"""Statistics of the practice pack (numpy and scipy only): Student-t intervals over seeds and the exact
bootstrap distribution of the argmin over p.

The bootstrap is exact, not Monte Carlo: with S seeds, a bootstrap resample is a multiset of the seeds, i.e. a
composition (k_1, ..., k_S) of S with probability S! / (prod k_j! S^S); there are C(2S-1, S) of them (126 at
S = 5, 6,435 at S = 8, 92,378 at S = 10), all enumerated. The same distribution is recomputed independently
by the witness re-check (:mod:`proofs_checks.practice.recheck`).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

__all__ = ["t_interval", "compositions", "bootstrap_argmin", "covering_set", "paired_p", "holm", "cohen_dz"]


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the Student-t interval of the mean of ``values`` (at least 2, finite)."""
    from scipy.stats import t as student_t

    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must hold at least 2 finite numbers, got {v.tolist()}")
    m = float(v.mean())
    half = float(student_t.ppf(0.5 + level / 2, v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return m, m - half, m + half


def compositions(S: int) -> tuple[np.ndarray, np.ndarray]:
    """(K, w): every composition of S into S non-negative parts (rows of K) and its bootstrap probability
    S! / (prod k_j! S^S) (stars and bars: the bars' positions among 2S - 1 slots)."""
    if not 1 <= S <= 12:
        raise ValueError(f"S (seeds) must be in [1, 12] for the exact bootstrap, got {S}")
    rows = []
    for bars in combinations(range(2 * S - 1), S - 1):
        prev, parts = -1, []
        for b in bars:
            parts.append(b - prev - 1)
            prev = b
        parts.append(2 * S - 2 - prev)
        rows.append(parts)
    K = np.array(rows, dtype=np.int64)
    logw = math.lgamma(S + 1) - S * math.log(S) - np.array([sum(math.lgamma(k + 1) for k in r) for r in rows])
    return K, np.exp(logw)


def bootstrap_argmin(values, maximize: bool = False) -> np.ndarray:
    """The exact bootstrap distribution of the argmin (argmax when ``maximize``) over the rows of ``values``
    (P exponents x S seeds) of the mean over resampled seeds: P probabilities summing to 1 (a tie splits its
    resample's weight equally among the tied rows)."""
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2 or not np.all(np.isfinite(V)):
        raise ValueError("values must be a finite (P, S) array")
    K, w = compositions(V.shape[1])
    means = (K @ V.T) / V.shape[1]  # (resamples, P)
    if maximize:
        means = -means
    best = means.min(axis=1, keepdims=True)
    tied = np.isclose(means, best, rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(V).max())))
    share = tied / tied.sum(axis=1, keepdims=True)
    return (w[:, None] * share).sum(axis=0) / w.sum()


def covering_set(freq, ps, level: float = 0.95) -> list[float]:
    """The smallest set of exponents whose bootstrap probabilities add up to ``level`` (most probable first):
    the 95% set of the best p."""
    order = np.argsort(-np.asarray(freq), kind="stable")
    out, acc = [], 0.0
    for i in order:
        out.append(float(ps[i]))
        acc += float(freq[i])
        if acc >= level - 1e-12:
            break
    return sorted(out)


def paired_p(diff) -> tuple[float, float]:
    """One-sided paired Student-t p-values of the mean of ``diff`` (finite, >= 2 values): ``(p_below, p_above)``,
    the p-values of H1: mean < 0 and H1: mean > 0. Zero spread: 0 or 1 by the sign of the mean (0.5 each at 0)."""
    from scipy.stats import t as student_t

    v = np.asarray(diff, dtype=np.float64)
    if v.size < 2 or not np.all(np.isfinite(v)):
        raise ValueError(f"diff must hold at least 2 finite numbers, got {v.tolist()}")
    m, sd = float(v.mean()), float(v.std(ddof=1))
    if sd == 0.0:
        return (0.0, 1.0) if m < 0 else ((1.0, 0.0) if m > 0 else (0.5, 0.5))
    tstat = m / (sd / math.sqrt(v.size))
    return float(student_t.cdf(tstat, v.size - 1)), float(student_t.sf(tstat, v.size - 1))


def holm(pvals) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control, any dependence): sorted ascending,
    p_(i) (m - i + 1), made monotone, capped at 1."""
    p = np.asarray(pvals, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    run = 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, float(p[i]) * (m - rank)))
        adj[i] = run
    return adj.tolist()


def cohen_dz(diff) -> float:
    """The paired effect size d_z = mean / sd of the differences (0 when both vanish; +-inf when only sd does)."""
    v = np.asarray(diff, dtype=np.float64)
    m, sd = float(v.mean()), float(v.std(ddof=1))
    if sd == 0.0:
        return 0.0 if m == 0.0 else math.copysign(math.inf, m)
    return m / sd
