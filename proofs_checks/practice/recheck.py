"""Independent re-checks of the practice pack's witnesses (standard library and mpmath only; nothing of the
toolkit is imported). Registered under their kinds by the pack.

``practice-best-p``
    ``p`` (exponents), ``values`` (P rows of per-seed final metrics), ``maximize``, ``claimed`` (the paper's
    p), ``near`` (the claim's neighbourhood: |p - claimed| <= near), ``level``. The exact bootstrap
    distribution of the argmin over p is recomputed by enumerating every resample of the seeds (as ordered
    tuples, not compositions: an independent route), at ``dps`` digits; violated when the probability that
    the best p lies in the claimed neighbourhood is below 1 - level.

``practice-state``
    ``buffers`` (per-coordinate state buffers of the optimizer, counted on its state), ``claimed`` (2, the
    paper's 2d); violated when they differ.
"""

from __future__ import annotations

import itertools

import mpmath

__all__ = ["recheck_best_p", "recheck_state", "KINDS"]


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


KINDS = {"practice-best-p": recheck_best_p, "practice-state": recheck_state}
