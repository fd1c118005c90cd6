"""Independent high-precision re-check of a Theorem 1 lemma witness.

This module deliberately imports nothing from the toolkit (only ``mpmath`` and the standard library):
a witness is a plain JSON object, and this file can be copied out and run on its own to confirm a
reported violation. Everything is recomputed from the witness's raw data at ``dps`` decimal digits:

* the distribution: per coordinate i, the support ``values`` of one stochastic-gradient sample and its
  ``weights`` (renormalised to sum to 1 exactly); coordinates independent; the stochastic gradient
  g~ is the mean of ``n`` independent samples (its distribution is enumerated over all compositions
  of n, with multinomial weights);
* the assumptions, re-derived: the true gradient g_i is the exact mean of coordinate i (Assumption 2,
  unbiasedness, holds by construction; the stored ``g`` must agree with it), the single-sample variance
  of each coordinate must be at most ``sigma_i``^2 (Assumption 3; the batch mean then has variance at
  most sigma_i^2 / n, Corollary 2), and every sample must have ||.||_{p*} <= ``G`` (Assumption 4; batch
  means are convex combinations of samples, so they satisfy it too);
* the lemma's expectation, exactly (a finite sum), and the paper's bound with the witness's sigma and G.

Witness fields: ``lemma`` (``thm1.B1``, ``thm1.B2``, ``thm1.B``, ``thm1.C``), ``p``, ``n``, ``eta``,
``L`` (for C), ``G``, ``sigma`` (list), ``coordinates`` (list of ``{"g", "values", "weights"}``),
``bound_scale`` (1 for the paper's bound; other values only for planted bounds in tests).
"""

from __future__ import annotations

import itertools
import math

import mpmath

__all__ = ["recheck"]


def _batch(values, weights, n):
    """Exact distribution of the mean of n i.i.d. draws: list of (value, probability)."""
    k = len(values)
    out = []
    for combo in itertools.combinations_with_replacement(range(k), n):
        counts = [combo.count(j) for j in range(k)]
        coef = mpmath.mpf(math.factorial(n))
        for c in counts:
            coef /= math.factorial(c)
        prob = coef
        for c, w in zip(counts, weights):
            if c:
                prob *= w**c
        if prob > 0:
            out.append((mpmath.fsum(c * v for c, v in zip(counts, values)) / n, prob))
    return out


def _pow(x, e):
    return mpmath.mpf(0) if x == 0 else abs(x) ** e


def recheck(witness: dict, dps: int = 60) -> dict:
    """Recompute a witness in high precision. Returns ``{"violated", "assumptions_ok", "empirical",
    "bound", "ratio", "checks"}`` (numbers as floats; ``checks`` lists each assumption re-derived)."""
    with mpmath.workdps(dps):
        lemma = witness["lemma"]
        p = mpmath.mpf(witness["p"])
        n = int(witness["n"])
        eta = mpmath.mpf(witness.get("eta", 1.0))
        L = mpmath.mpf(witness.get("L", 1.0))
        G = mpmath.mpf(witness["G"])
        scale = mpmath.mpf(witness.get("bound_scale", 1.0))
        sig = [mpmath.mpf(s) for s in witness["sigma"]]
        a = 1 / (p - 1)
        pstar = p / (p - 1)
        checks = []
        ok = True
        coords = []
        for i, c in enumerate(witness["coordinates"]):
            vals = [mpmath.mpf(v) for v in c["values"]]
            wts = [mpmath.mpf(w) for w in c["weights"]]
            if any(w < 0 for w in wts) or sum(wts) <= 0:
                raise ValueError(f"coordinate {i}: weights must be >= 0 with a positive sum")
            tot = mpmath.fsum(wts)
            wts = [w / tot for w in wts]
            g = mpmath.fsum(w * v for w, v in zip(wts, vals))  # the true gradient: E g~ (Assumption 2)
            var = mpmath.fsum(w * (v - g) ** 2 for w, v in zip(wts, vals))
            tol = mpmath.mpf(10) ** (-9) * (abs(g) + max(abs(v) for v in vals))
            g_ok = abs(g - mpmath.mpf(c["g"])) <= tol
            v_ok = var <= sig[i] ** 2
            checks.append({"coordinate": i, "stored_g_is_mean": bool(g_ok), "variance_le_sigma2": bool(v_ok)})
            ok = ok and g_ok and v_ok
            coords.append((g, vals, wts, _batch(vals, wts, n)))
        # Assumption 4 over every single sample (the product of the supports); batch means follow by convexity
        sup = mpmath.mpf(0)
        for combo in itertools.product(*[cd[1] for cd in coords]):
            sup = max(sup, mpmath.fsum(_pow(v, pstar) for v in combo) ** (1 / pstar))
        g_ok = sup <= G
        checks.append({"sup_norm_pstar": float(sup), "le_G": bool(g_ok)})
        ok = ok and g_ok
        s1 = mpmath.fsum(sig)
        rootn = mpmath.sqrt(n)
        if lemma == "thm1.B1":
            emp = eta * mpmath.fsum(
                abs(g)
                * mpmath.fsum(pr * (_pow(g, a) + _pow(v, a)) for v, pr in dist if mpmath.sign(v) != mpmath.sign(g))
                for g, _, _, dist in coords
            )
            bound = 2 * eta * G**a * s1 / rootn
        elif lemma == "thm1.B2":
            emp = eta * mpmath.fsum(
                abs(g)
                * mpmath.fsum(pr * abs(_pow(g, a) - _pow(v, a)) for v, pr in dist if mpmath.sign(v) == mpmath.sign(g))
                for g, _, _, dist in coords
            )
            bound = eta * G**a * s1 / ((p - 1) * rootn)
        elif lemma == "thm1.B":
            emp = eta * mpmath.fsum(
                g * (mpmath.sign(g) * _pow(g, a) - mpmath.fsum(pr * mpmath.sign(v) * _pow(v, a) for v, pr in dist))
                for g, _, _, dist in coords
            )
            bound = (2 * p - 1) / (p - 1) * eta * G**a * s1 / rootn
        elif lemma == "thm1.C":
            emp = mpmath.mpf(0)
            for combo in itertools.product(*[cd[3] for cd in coords]):
                pr = mpmath.fprod(vp[1] for vp in combo)
                emp += pr * mpmath.fsum(_pow(vp[0], pstar) for vp in combo) ** (2 / p)
            emp *= L * eta**2 / 2
            bound = L * eta**2 * G ** (2 * a) / 2
        else:
            raise ValueError(f"unknown lemma {lemma!r}")
        bound *= scale
        violated = bool(ok and emp > bound)
        return {
            "violated": violated,
            "assumptions_ok": bool(ok),
            "empirical": float(emp),
            "bound": float(bound),
            "ratio": float(emp / bound) if bound > 0 else (0.0 if emp == 0 else math.inf),
            "checks": checks,
            "dps": dps,
        }
