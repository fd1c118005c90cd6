"""Independent re-checks of the practice pack's witnesses (standard library and mpmath only; nothing of the
toolkit is imported). Registered under their kinds by the pack.

``practice-best-p``
    ``p`` (exponents), ``values`` (P rows of per-seed final metrics), ``maximize``, ``claimed`` (the paper's
    p), ``near`` (the claim's neighbourhood: |p - claimed| <= near), ``level``. The exact bootstrap
    distribution of the argmin over p is recomputed by enumerating every resample of the seeds (as ordered
    tuples, not compositions: an independent route), at ``dps`` digits; violated when the probability that
    the best p lies in the claimed neighbourhood is below 1 - level.

``practice-paired-holm``
    ``differences`` (one list of per-seed paired differences per comparison of the family, oriented so that a
    positive mean favours the claim's opponent), ``index`` (the comparison re-checked), ``alpha``. Each
    one-sided paired t p-value (H1: mean > 0) is recomputed from the Student-t distribution function written
    as mpmath's regularized incomplete beta, Holm's step-down adjustment over the family is redone; violated
    when the adjusted p-value of ``index`` is below ``alpha``.

``practice-state``
    ``buffers`` (per-coordinate state buffers of the optimizer, counted on its state), ``claimed`` (2, the
    paper's 2d); violated when they differ.
"""

from __future__ import annotations

import itertools

import mpmath

__all__ = ["recheck_best_p", "recheck_state", "recheck_paired_holm", "KINDS"]


def recheck_best_p(w: dict, dps: int = 30) -> dict:
    with mpmath.workdps(dps):
        ps = [float(p) for p in w["p"]]
        V = [[mpmath.mpf(float(v)) for v in row] for row in w["values"]]
        S = len(V[0])
        if S > 7:
            raise ValueError(f"the ordered-tuple re-check enumerates S^S resamples: S = {S} > 7 is too many")
        sign = -1 if w.get("maximize") else 1
        prob = [mpmath.mpf(0)] * len(ps)
        unit = mpmath.mpf(1) / mpmath.mpf(S) ** S
        for tup in itertools.product(range(S), repeat=S):
            means = [sign * mpmath.fsum(row[j] for j in tup) for row in V]
            best = min(means)
            scale = max(mpmath.mpf(1), max(abs(v) for row in V for v in row) * S)
            tied = [i for i, m in enumerate(means) if abs(m - best) <= mpmath.mpf(1e-12) * scale]
            for i in tied:
                prob[i] += unit / len(tied)
        near = float(w.get("near", 0.5))
        mass = mpmath.fsum(prob[i] for i, p in enumerate(ps) if abs(p - float(w["claimed"])) <= near)
        level = mpmath.mpf(w.get("level", 0.95))
        violated = mass < 1 - level
        return {
            "violated": bool(violated),
            "assumptions_ok": True,
            "empirical": float(mass),
            "bound": float(1 - level),
            "ratio": None,
            "checks": [{"p": ps, "probability": [float(v) for v in prob]}],
            "dps": dps,
        }


def recheck_state(w: dict, dps: int = 30) -> dict:
    k, claimed = int(w["buffers"]), int(w["claimed"])
    return {
        "violated": k != claimed,
        "assumptions_ok": True,
        "empirical": float(k),
        "bound": float(claimed),
        "ratio": None,
        "checks": [{"buffers": k, "claimed": claimed}],
        "dps": dps,
    }


def _p_above(diff, dps):
    """P(T_{n-1} >= t) for the paired t statistic of ``diff`` (H1: mean > 0), at ``dps`` digits."""
    with mpmath.workdps(dps):
        v = [mpmath.mpf(float(x)) for x in diff]
        n = len(v)
        m = mpmath.fsum(v) / n
        var = mpmath.fsum((x - m) ** 2 for x in v) / (n - 1)
        if var == 0:
            return mpmath.mpf(0) if m > 0 else (mpmath.mpf(1) if m < 0 else mpmath.mpf("0.5"))
        t = m / mpmath.sqrt(var / n)
        nu = mpmath.mpf(n - 1)
        x = nu / (nu + t * t)
        tail = mpmath.betainc(nu / 2, mpmath.mpf("0.5"), 0, x, regularized=True) / 2  # P(|T| >= |t|) / 2
        return tail if t > 0 else 1 - tail


def recheck_paired_holm(w: dict, dps: int = 30) -> dict:
    fam = w["differences"]
    if not isinstance(fam, list) or not fam or not all(isinstance(d, list) and len(d) >= 2 for d in fam):
        raise ValueError("differences must be a non-empty list of lists of at least 2 numbers")
    idx = int(w["index"])
    if not 0 <= idx < len(fam):
        raise ValueError(f"index must be in [0, {len(fam) - 1}], got {idx}")
    alpha = float(w.get("alpha", 0.05))
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    with mpmath.workdps(dps):
        ps = [_p_above(d, dps) for d in fam]
        order = sorted(range(len(ps)), key=lambda i: ps[i])
        adj, run = [mpmath.mpf(0)] * len(ps), mpmath.mpf(0)
        for rank, i in enumerate(order):
            run = max(run, min(mpmath.mpf(1), ps[i] * (len(ps) - rank)))
            adj[i] = run
        return {
            "violated": bool(adj[idx] < alpha),
            "assumptions_ok": True,
            "empirical": float(adj[idx]),
            "bound": alpha,
            "ratio": None,
            "checks": [{"p": [float(x) for x in ps], "holm": [float(x) for x in adj]}],
            "dps": dps,
        }


KINDS = {
    "practice-best-p": recheck_best_p,
    "practice-state": recheck_state,
    "practice-paired-holm": recheck_paired_holm,
}
