"""Theorem 1's per-step terms (Appendix A) at a fixed theta: exact expectations, Monte Carlo, and an
adversarial search for counterexamples to each lemma.

Setting (paper, Section 4.1 and Appendix A). One step of stochastic l_p descent (Alg. 3) from theta_t
with true gradient g = g_t and stochastic gradient g~ = g~_t, s(x)_i = sgn(x_i)|x_i|^{1/(p-1)} (Alg. 3
line 2), a = 1/(p-1). The proof of Theorem 1 splits f(theta_{t+1}) - f(theta_t) into

    A  = eta <g, s(g)> = eta ||g||_{p*}^{p*}
    B  = eta <g, s(g) - s(g~)>            <= B1 + B2
    B1 = eta sum_i |g_i| (|g_i|^a + |g~_i|^a) 1[sgn g_i != sgn g~_i]
    B2 = eta sum_i |g_i| | |g_i|^a - |g~_i|^a | 1[sgn g_i == sgn g~_i]
    C  = (L eta^2 / 2) ||s(g~)||_p^2 = (L eta^2 / 2) ||g~||_{p*}^{2/(p-1)}

and claims (Lemmas B1 and B2, the "Therefore" line, the bound on C), with n = n_t:

    E[B1] <= 2 eta G^a ||sigma||_1 / sqrt(n)
    E[B2] <= eta G^a ||sigma||_1 / ((p-1) sqrt(n))
    E[B]  <= (2p-1)/(p-1) eta G^a ||sigma||_1 / sqrt(n)
    C     <= L eta^2 G^{2a} / 2

under Assumption 2 (E g~ = g), Assumption 3 (E|g~_i - g_i|^2 <= sigma_i^2 per sample, so sigma_i^2 / n
for an n-sample batch mean, Corollary 2) and Assumption 4 (||g~||_{p*} <= G).

Finite-support distributions are represented per coordinate by the support ``values`` (d, k) of one
sample and its ``weights`` (d, k), coordinates independent; the stochastic gradient is the mean of n
samples, whose exact distribution is enumerated (all compositions of n into k parts). Expectations
over it are finite sums, computed exactly (float64 here; mpmath in :mod:`proofs_checks.witness`).
"""

from __future__ import annotations

import math
import sys
import time
from functools import lru_cache

import numpy as np
from scipy.optimize import differential_evolution, minimize

from lptheory.geometry import dual_exponent, lp_norm, steepest_map

from .records import Claim
from .witness import recheck as _recheck

__all__ = [
    "LEMMAS",
    "STATEMENTS",
    "batch_distribution",
    "expected_terms",
    "lemma_bound",
    "ratios",
    "search",
    "check_identity_A",
    "check_identity_C",
    "measured_records",
    "search_records",
    "run_lemmas",
]

LEMMAS = ("thm1.B1", "thm1.B2", "thm1.B", "thm1.C")

ASSUMPTIONS = [
    "Assumption 2 (unbiased: E[g~] = g)",
    "Assumption 3 (bounded variance: E|g~_i - g_i|^2 <= sigma_i^2 per sample; sigma_i^2/n_t for a batch, Corollary 2)",
    "Assumption 4 (bounded gradient: ||g~||_{p*} <= G; hence |g~_i|, |g_i| <= G, Corollary 3(b))",
]

STATEMENTS = {
    "thm1.A": (
        "A = eta <g_t, s(g_t)> = eta ||g_t||_{p*}^{p*}, i.e. sum_i g_t^(i) g_t^(i)/|g_t^(i)|^{(p-2)/(p-1)} "
        "= sum_i |g_t^(i)|^{p/(p-1)} = ||g_t||_{p*}^{p*}",
        "Section 4.1 (proof sketch of Theorem 1) and Appendix A.1, term A",
    ),
    "thm1.B1": (
        "E[eta sum_i |g_t^(i)| (|g_t^(i)|^{1/(p-1)} + |g~_t^(i)|^{1/(p-1)}) 1[sgn(g_t^(i)) != sgn(g~_t^(i))]] "
        "<= 2 eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t)",
        "Appendix A.1, Lemma 1 (lem:B1)",
    ),
    "thm1.B2": (
        "E[eta sum_i |g_t^(i)| | |g_t^(i)|^{1/(p-1)} - |g~_t^(i)|^{1/(p-1)} | 1[sgn(g_t^(i)) = sgn(g~_t^(i))]] "
        "<= eta G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t))",
        "Appendix A.1, Lemma 2 (lem:B2), both cases",
    ),
    "thm1.B": (
        "E[B] = E[eta <g_t, s(g_t) - s(g~_t)>] <= eta (2p-1) G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t)) "
        "(B <= B1 + B2 with Lemmas 1 and 2 combined)",
        "Appendix A.1, proof of Theorem 1 (the 'Therefore' line); Section 4.1",
    ),
    "thm1.C": (
        "C = (L eta^2/2) ||s(g~_t)||_p^2 = (L eta^2/2) ||g_t||_{p*}^{2/(p-1)} <= L eta^2 G^{2/(p-1)} / 2",
        "Appendix A.1, term C; Section 4.1",
    ),
}


def _a(p: float) -> float:
    return 1.0 / (p - 1.0)


# ---------------------------------------------------------------------------------------------------
# exact distributions and expectations (vectorized over leading axes)


@lru_cache(maxsize=64)
def _compositions(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """All count vectors c in N^k with sum n, shape (M, k), and their log multinomial coefficients."""
    rows = []

    def rec(prefix, left, slots):
        if slots == 1:
            rows.append(prefix + [left])
            return
        for c in range(left, -1, -1):
            rec(prefix + [c], left - c, slots - 1)

    rec([], n, k)
    counts = np.array(rows, dtype=np.int64)
    logc = math.lgamma(n + 1) - np.sum([[math.lgamma(c + 1) for c in r] for r in rows], axis=1)
    return counts, np.asarray(logc, dtype=np.float64)


def batch_distribution(values, weights, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of the mean of ``n`` i.i.d. samples, per coordinate.

    ``values``, ``weights``: (..., d, k) single-sample support and probabilities (rows sum to 1).
    Returns (..., d, M) batch-mean values and probabilities, M = C(n + k - 1, k - 1) (Corollary 2's
    n-sample mini-batch estimate, enumerated exactly).
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if n == 1:
        return values, weights
    k = values.shape[-1]
    counts, logc = _compositions(k, n)
    vals = values @ counts.T.astype(np.float64) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.log(weights)[..., :, None] * counts.T  # (..., d, k, M)
    lw = np.where(counts.T == 0, 0.0, logw)  # a zero count contributes w^0 = 1, also for w = 0
    probs = np.exp(logc + lw.sum(axis=-2))
    return vals, probs


def expected_terms(g, vals, probs, p: float, eta: float = 1.0, L: float = 1.0, with_C: bool = True, only=None) -> dict:
    """Exact E[B1], E[B2], E[B], E[C] (and A) for g~ with the given per-coordinate distribution.

    ``g``: (..., d) true gradient; ``vals``, ``probs``: (..., d, M) distribution of g~ per coordinate
    (independent coordinates). Terms as in Appendix A.1 (module docstring). E[C] enumerates the product
    support (M^d points); pass ``with_C=False`` to skip it. ``only`` (a term name) computes just that
    term (the search's inner loop).
    """
    g = np.asarray(g, dtype=np.float64)
    a = _a(p)
    ag = np.abs(g)
    aga = ag**a
    want = {only} if only else {"A", "B1", "B2", "B"} | ({"C"} if with_C else set())
    out = {}
    if "A" in want:
        out["A"] = eta * np.sum(ag ** dual_exponent(p), axis=-1)
    if want & {"B1", "B2", "B"}:
        av = np.abs(vals) ** a
        same = np.sign(vals) == np.sign(g)[..., None]
    if "B1" in want:
        out["B1"] = eta * np.sum(ag * np.sum(probs * (aga[..., None] + av) * ~same, axis=-1), axis=-1)
    if "B2" in want:
        out["B2"] = eta * np.sum(ag * np.sum(probs * np.abs(aga[..., None] - av) * same, axis=-1), axis=-1)
    if "B" in want:
        out["B"] = eta * np.sum(g * (np.sign(g) * aga - np.sum(probs * np.sign(vals) * av, axis=-1)), axis=-1)
    if "C" in want:
        out["C"] = L * eta**2 / 2 * _expected_norm_power(vals, probs, p)
    return out


def _expected_norm_power(vals, probs, p):
    """E[ (sum_i |g~_i|^{p*})^{2/p} ] = E ||g~||_{p*}^{2/(p-1)} over the product of the coordinates."""
    ps = dual_exponent(p)
    d = vals.shape[-2]
    acc = np.abs(vals[..., 0, :]) ** ps
    pr = probs[..., 0, :]
    for i in range(1, d):
        acc = (acc[..., :, None] + np.abs(vals[..., i, None, :]) ** ps).reshape(acc.shape[:-1] + (-1,))
        pr = (pr[..., :, None] * probs[..., i, None, :]).reshape(pr.shape[:-1] + (-1,))
    return np.sum(pr * acc ** (2.0 / p), axis=-1)


def lemma_bound(lemma: str, p: float, G, sigma_l1, n: int, eta: float = 1.0, L: float = 1.0):
    """The paper's right-hand side for ``lemma`` (module docstring)."""
    a = _a(p)
    if lemma == "thm1.B1":
        return 2 * eta * G**a * sigma_l1 / math.sqrt(n)
    if lemma == "thm1.B2":
        return eta * G**a * sigma_l1 / ((p - 1) * math.sqrt(n))
    if lemma == "thm1.B":
        return (2 * p - 1) / (p - 1) * eta * G**a * sigma_l1 / math.sqrt(n)
    if lemma == "thm1.C":
        return L * eta**2 * G ** (2 * a) / 2
    raise ValueError(f"lemma must be one of {LEMMAS}, got {lemma!r}")


def _stats(values, weights):
    """True gradient (mean), per-coordinate single-sample std, and the smallest G meeting Assumption 4
    for independent coordinates: G = ||(max_j |v_ij|)_i||_{p*} (p enters later)."""
    g = np.sum(values * weights, axis=-1)
    var = np.sum(weights * (values - g[..., None]) ** 2, axis=-1)
    return g, np.sqrt(np.maximum(var, 0.0)), np.max(np.abs(values), axis=-1)


def ratios(lemma: str, values, weights, n: int, p: float, scale: float = 1.0) -> np.ndarray:
    """empirical / (scale * bound) for populations of distributions ``values``, ``weights`` (S, d, k)
    with the tightest constants (sigma_i the exact std, G the smallest admissible). Degenerate
    candidates (no noise) get ratio 0."""
    g, sig, vmax = _stats(values, weights)
    G = lp_norm(vmax, dual_exponent(p))
    s1 = sig.sum(axis=-1)
    vals, probs = batch_distribution(values, weights, n)
    key = lemma.split(".")[1]
    emp = expected_terms(g, vals, probs, p, only=key)[key]
    bound = scale * lemma_bound(lemma, p, G, s1, n)
    ok = (G > 0) & np.isfinite(emp)
    if lemma != "thm1.C":  # no noise means no B terms: skip (near-)degenerate candidates
        ok &= s1 > 1e-6 * G
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ok, emp / np.where(ok, bound, 1.0), 0.0)
    return r


# ---------------------------------------------------------------------------------------------------
# the adversarial search

_POWER = 3  # values = u^3: DE's uniform u in [-1, 1] also explores magnitudes down to ~1e-6


def _decode(x, d, k):
    x = np.atleast_2d(x)
    u = x[:, : d * k].reshape(-1, d, k)
    om = np.abs(x[:, d * k :]).reshape(-1, d, k)
    tot = om.sum(axis=-1, keepdims=True)
    w = np.where(tot > 0, om / np.where(tot > 0, tot, 1.0), 1.0 / k)
    return u**_POWER, w


def make_witness(lemma, p, n, values, weights, scale=1.0):
    """A witness (plain JSON) with constants rounded up so the recomputed bound is never smaller."""
    g, sig, vmax = _stats(values, weights)
    G = float(lp_norm(vmax, dual_exponent(p)))
    up = lambda x: float(np.nextafter(np.nextafter(float(x), np.inf), np.inf))  # noqa: E731
    return {
        "lemma": lemma,
        "p": float(p),
        "n": int(n),
        "eta": 1.0,
        "L": 1.0,
        "G": up(G * (1 + 1e-15)),
        "sigma": [up(s * (1 + 1e-15)) for s in sig],
        "coordinates": [
            {"g": float(g[i]), "values": [float(v) for v in values[i]], "weights": [float(w) for w in weights[i]]}
            for i in range(values.shape[0])
        ],
        "coupling": "independent coordinates; g~ is the mean of n i.i.d. samples",
        "bound_scale": float(scale),
    }


SEARCH_CONFIGS = {
    # (d, k, n): coordinates, support points per coordinate, batch size
    "full": [
        (1, 2, 1),
        (1, 3, 1),
        (1, 4, 1),
        (1, 5, 1),
        (2, 2, 1),
        (2, 3, 1),
        (3, 2, 1),
        (1, 2, 4),
        (1, 3, 3),
        (1, 4, 2),
        (2, 2, 2),
        (2, 3, 2),
    ],
    "quick": [(1, 2, 1), (1, 3, 1), (2, 2, 1), (1, 2, 3)],
}
SEARCH_BUDGET = {"full": {"maxiter": 120, "popsize": 12}, "quick": {"maxiter": 40, "popsize": 10}}


def search(
    lemma: str,
    p: float,
    *,
    seed: int = 0,
    mode: str = "full",
    scale: float = 1.0,
    configs: list | None = None,
    maxiter: int | None = None,
    popsize: int | None = None,
) -> dict:
    """Maximize E[term] / (scale * bound) over finite-support distributions meeting the assumptions.

    Global stage: scipy's differential evolution (vectorized, one run per configuration (d, k, n));
    local stage: Nelder-Mead from the best point. Every candidate satisfies the assumptions exactly by
    construction (g is the mean of the distribution, sigma_i its exact std, G the smallest admissible).
    Returns ``{"ratio", "values", "weights", "n", "config", "budget"}`` for the worst case found.
    """
    if lemma not in LEMMAS:
        raise ValueError(f"lemma must be one of {LEMMAS}, got {lemma!r}")
    configs = configs or SEARCH_CONFIGS[mode]
    maxiter = maxiter or SEARCH_BUDGET[mode]["maxiter"]
    popsize = popsize or SEARCH_BUDGET[mode]["popsize"]
    ss = np.random.SeedSequence([seed, int(round(p * 1000)), LEMMAS.index(lemma)])
    best = {"ratio": -np.inf}
    nfev = 0
    for (d, k, n), child in zip(configs, ss.spawn(len(configs))):
        dim = 2 * d * k

        def neg(x, d=d, k=k, n=n):
            v, w = _decode(x.T if x.ndim == 2 else x, d, k)
            return -ratios(lemma, v, w, n, p, scale)

        bounds = [(-1.0, 1.0)] * (d * k) + [(0.0, 1.0)] * (d * k)
        res = differential_evolution(
            neg,
            bounds,
            maxiter=maxiter,
            popsize=popsize,
            seed=np.random.default_rng(child),
            vectorized=True,
            updating="deferred",
            polish=False,
            tol=1e-12,
        )
        nfev += res.nfev
        lo_b, hi_b = [b[0] for b in bounds], [b[1] for b in bounds]
        loc = minimize(
            lambda x, neg=neg, lo_b=lo_b, hi_b=hi_b: float(neg(np.clip(x, lo_b, hi_b))[0]),
            res.x,
            method="Nelder-Mead",
            options={"maxfev": 200 * dim, "xatol": 1e-12, "fatol": 1e-14},
        )
        nfev += loc.nfev
        x = np.clip(loc.x, lo_b, hi_b) if loc.fun < res.fun else res.x
        r = -float(neg(x)[0])
        if r > best["ratio"]:
            v, w = _decode(x, d, k)
            best = {"ratio": r, "values": v[0], "weights": w[0], "n": n, "config": {"d": d, "k": k, "n": n}}
    best["budget"] = {
        "optimizer": "differential evolution (vectorized) + Nelder-Mead polish, one run per configuration",
        "configurations (d, k, n)": [list(c) for c in configs],
        "restarts": len(configs),
        "evaluations": int(nfev),
        "maxiter": maxiter,
        "popsize": popsize,
        "support": "per coordinate k points in [-1, 1] (scale-invariant ratio), independent coordinates",
    }
    return best


# ---------------------------------------------------------------------------------------------------
# records


def check_identity_A(p_list, seed: int = 0, samples: int = 200) -> list[Claim]:
    """thm1.A: <g, s(g)> = ||g||_{p*}^{p*} on random vectors (heavy-tailed magnitudes, zeros included),
    float64 against an mpmath evaluation; holds when the relative error is at the rounding level."""
    import mpmath

    rng = np.random.default_rng(np.random.SeedSequence([seed, 101]))
    out = []
    stmt, src = STATEMENTS["thm1.A"]
    for p in p_list:
        ps = dual_exponent(p)
        worst = 0.0
        for _ in range(samples):
            d = int(rng.integers(1, 9))
            g = rng.standard_normal(d) * 10.0 ** rng.uniform(-8, 8, d)
            g[rng.random(d) < 0.2] = 0.0
            lhs = float(np.dot(g, steepest_map(g, p)))
            with mpmath.workdps(40):
                rhs = mpmath.fsum(abs(mpmath.mpf(x)) ** (mpmath.mpf(p) / (mpmath.mpf(p) - 1)) for x in g)
                rhs_f = float(rhs)
            scale = max(abs(rhs_f), 1e-300)
            worst = max(worst, abs(lhs - rhs_f) / scale)
        holds = worst <= 1e-12
        out.append(
            Claim(
                id="thm1.A",
                statement=stmt,
                source=src,
                assumptions=["none (an algebraic identity of s(x) = sgn(x)|x|^{1/(p-1)})"],
                params={"p": p, "p_star": ps, "samples": samples, "setting": "random g, |g_i| in 1e-8..1e8"},
                status="holds" if holds else "inconclusive",
                method="exact",
                empirical=worst,
                bound=1e-12,
                reason=(
                    f"max relative error of float64 <g, s(g)> against the mpmath ||g||_{{p*}}^{{p*}}: {worst:.2e}"
                    if holds
                    else f"float64 and mpmath differ by {worst:.2e} (relative): beyond rounding; inspect"
                ),
            )
        )
    return out


def check_identity_C(p_list, seed: int = 0, samples: int = 200) -> list[Claim]:
    """thm1.C (identity part): ||s(x)||_p^2 = ||x||_{p*}^{2/(p-1)} for every x (the paper writes g_t
    where the step uses g~_t; the identity itself holds for any vector)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 102]))
    out = []
    stmt, src = STATEMENTS["thm1.C"]
    for p in p_list:
        worst = 0.0
        for _ in range(samples):
            d = int(rng.integers(1, 9))
            x = rng.standard_normal(d) * 10.0 ** rng.uniform(-4, 4, d)
            lhs = float(lp_norm(steepest_map(x, p), p)) ** 2
            rhs = float(lp_norm(x, dual_exponent(p))) ** (2.0 / (p - 1.0))
            worst = max(worst, abs(lhs - rhs) / max(rhs, 1e-300))
        holds = worst <= 1e-10
        out.append(
            Claim(
                id="thm1.C",
                statement=stmt,
                source=src,
                assumptions=["none for the identity ||s(x)||_p^2 = ||x||_{p*}^{2/(p-1)}"],
                params={"p": p, "samples": samples, "setting": "identity, random x"},
                status="holds" if holds else "inconclusive",
                method="exact",
                empirical=worst,
                bound=1e-10,
                reason=(
                    f"identity ||s(x)||_p^2 = ||x||_{{p*}}^{{2/(p-1)}}: max relative error {worst:.2e}. Note: the "
                    "paper writes ||g_t||_{p*} in C, but C involves s(g~_t), so the bound needs Assumption 4 on g~_t "
                    "(it holds; the subscript is a typo)"
                ),
            )
        )
    return out


def search_records(p_list, *, seed: int = 0, quick: bool = False, scale: float = 1.0, progress=None) -> list[Claim]:
    """One adversarial-search record per (lemma, p); ``violated`` only after the mpmath re-check."""
    mode = "quick" if quick else "full"
    out = []
    for p in p_list:
        for lemma in LEMMAS:
            t0 = time.perf_counter()
            best = search(lemma, p, seed=seed, mode=mode, scale=scale)
            w = make_witness(lemma, p, best["n"], best["values"], best["weights"], scale)
            params = {"p": p, "lemma": lemma, **best["config"], "search": best["budget"], "bound_scale": scale}
            stmt, src = STATEMENTS[lemma]
            common = dict(
                id=lemma,
                statement=stmt,
                source=src,
                assumptions=ASSUMPTIONS
                + (["Assumption 1 (L-smoothness, for the constant L)"] if lemma == "thm1.C" else []),
                params=params,
                method="adversarial-search",
            )
            budget_txt = (
                f"{best['budget']['restarts']} restarts, {best['budget']['evaluations']} exact evaluations, "
                f"(d, k, n) in {best['budget']['configurations (d, k, n)']}"
            )
            chk = _recheck(w)
            if chk["violated"]:
                w["recheck"] = chk
                out.append(
                    Claim(
                        **common,
                        status="violated",
                        empirical=chk["empirical"],
                        bound=chk["bound"],
                        ratio=chk["ratio"],
                        witness=w,
                        reason=(
                            f"worst ratio {chk['ratio']:.4g} (float64 {best['ratio']:.4g}); re-checked from the "
                            f"witness alone at {chk['dps']} digits, assumptions re-derived"
                        ),
                    )
                )
            else:
                # a float64 ratio above 1 that the exact re-check does not confirm was rounding
                note = (
                    f"the float64 search reached {best['ratio']:.6g}, the high-precision re-check of that point gives "
                    f"{chk['ratio']:.6g} (assumptions ok: {chk['assumptions_ok']})"
                    if best["ratio"] > 1.0
                    else f"worst ratio {best['ratio']:.4g}"
                )
                out.append(
                    Claim(
                        **common,
                        status="holds",
                        empirical=chk["empirical"],
                        bound=chk["bound"],
                        ratio=chk["ratio"],
                        reason=f"no {'confirmed ' if best['ratio'] > 1.0 else ''}violation within the search budget "
                        f"({budget_txt}); {note}",
                        data={"worst_case": w},
                    )
                )
            if progress:
                progress(f"search {lemma} p={p:g}: worst ratio {best['ratio']:.4g} ({time.perf_counter() - t0:.1f}s)")
    return out


# measured settings: a synthetic problem at a fixed theta with the noise families of `synthetic`
MEASURED_SETTINGS = [
    # (noise kind, batch n, method)
    ("rademacher", 1, "exact"),
    ("two-point", 4, "exact"),
    ("uniform", 1, "monte-carlo"),
    ("gaussian", 1, "monte-carlo"),
    ("student-t", 1, "monte-carlo"),
]


def _setting_point(d: int, seed: int):
    """A separable nonconvex problem and a theta whose gradient coordinates span (0.05, 1): small ones
    comparable to the noise (where the sign-flip and same-sign terms matter), large ones not."""
    from synthetic.problems import SeparableNonconvex

    prob = SeparableNonconvex(d=d, profile="flat", seed=seed)
    u = np.linspace(0.025, 1.0, d) * np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
    theta = prob.b + u
    return prob, theta


def measured_records(p_list, *, seed: int = 0, quick: bool = False, d: int = 6, sigma: float = 0.3) -> list[Claim]:
    """E[B1], E[B2], E[B], E[C] on a synthetic problem at a fixed theta, for each noise family: exact
    sums for finite-support noise, Monte Carlo (95% interval) otherwise. Unbounded noise (Gaussian,
    Student-t) breaks Assumption 4: reported ``not-applicable`` and measured against G = the largest
    sampled ||g~||_{p*}."""
    from synthetic.noise import FiniteSupport, make_noise

    prob, theta = _setting_point(d, seed)
    g = prob.grad(theta)
    samples = 20_000 if quick else 100_000
    out = []
    for p in p_list:
        ps = dual_exponent(p)
        for kind, n, method in MEASURED_SETTINGS:
            sig = np.full(d, sigma)
            noise = make_noise(kind, sig)
            params = {"p": p, "d": d, "n": n, "noise": kind, "problem": f"separable (flat, seed {seed})"}
            params["theta"] = "b + u, u_i in +-[0.025, 1] (|g_i| from 0.05 to 1)"
            if method == "exact":
                if isinstance(noise, FiniteSupport):
                    nv, nw = noise.values, noise.weights
                else:  # Rademacher: +-sigma_i with probability 1/2
                    nv, nw = np.stack([sig, -sig], axis=1), np.full((d, 2), 0.5)
                values, weights = g[:, None] + nv, nw
                vals, probs = batch_distribution(values, weights, n)
                terms = expected_terms(g, vals, probs, p, with_C=True)
                G = float(lp_norm(np.max(np.abs(values), axis=1), ps))
                cis = {k: None for k in terms}
                applicable, why = True, None
            else:
                rng = np.random.default_rng(np.random.SeedSequence([seed, 303, int(p * 1000), n]))
                gt = g + noise.sample_mean(rng, n, size=(samples,))
                a = _a(p)
                ag, av = np.abs(g), np.abs(gt) ** a
                same = np.sign(gt) == np.sign(g)
                per = {
                    "B1": np.sum(ag * (ag**a + av) * ~same, axis=-1),
                    "B2": np.sum(ag * np.abs(ag**a - av) * same, axis=-1),
                    "B": np.sum(g * (np.sign(g) * ag**a - np.sign(gt) * av), axis=-1),
                    "C": 0.5 * lp_norm(gt, ps) ** (2.0 / (p - 1.0)),
                }
                terms = {k: float(v.mean()) for k, v in per.items()}
                half = {k: 1.96 * float(v.std(ddof=1)) / math.sqrt(samples) for k, v in per.items()}
                cis = {k: [terms[k] - half[k], terms[k] + half[k]] for k in per}
                b = noise.bound()
                if b is None:
                    G = float(np.max(lp_norm(gt, ps)))
                    applicable = False
                    why = (
                        f"Assumption 4 (||g~||_{{p*}} <= G) fails: {kind} noise is unbounded. Measured anyway against "
                        f"G = the largest of {samples} sampled ||g~||_{{p*}} = {G:.4g}"
                    )
                else:
                    G = float(lp_norm(np.abs(g) + b, ps))
                    applicable, why = True, None
                params["samples"] = samples
            params["G"] = G
            for lemma in LEMMAS:
                key = lemma.split(".")[1]
                emp = float(terms[key])
                bound = float(lemma_bound(lemma, p, G, float(sig.sum()), n))
                ci = cis[key]
                stmt, src = STATEMENTS[lemma]
                common = dict(id=lemma, statement=stmt, source=src, assumptions=ASSUMPTIONS, params=dict(params))
                common["method"] = method
                if not applicable:
                    survives = "survives" if (ci[1] <= bound) else "does not survive"
                    out.append(
                        Claim(
                            **common,
                            status="not-applicable",
                            empirical=emp,
                            bound=bound,
                            ci=ci,
                            reason=f"{why}; the bound {survives} anyway (ratio {emp / bound:.3g})",
                        )
                    )
                    continue
                if method == "exact":
                    if emp <= bound:
                        out.append(Claim(**common, status="holds", empirical=emp, bound=bound))
                    else:
                        w = make_witness(lemma, p, n, values, weights)
                        chk = _recheck(w)
                        w["recheck"] = chk
                        status = "violated" if chk["violated"] else "inconclusive"
                        out.append(
                            Claim(
                                **common,
                                status=status,
                                empirical=emp,
                                bound=bound,
                                witness=w if chk["violated"] else None,
                                reason=f"exact expectation exceeds the bound; mpmath re-check ratio {chk['ratio']:.4g}",
                            )
                        )
                else:
                    if ci[1] <= bound:
                        out.append(Claim(**common, status="holds", empirical=emp, bound=bound, ci=ci))
                    elif ci[0] > bound:
                        w = {
                            "kind": "monte-carlo",
                            "noise": kind,
                            "sigma": sig.tolist(),
                            "g": g.tolist(),
                            "n": n,
                            "p": p,
                            "G": G,
                            "samples": samples,
                            "seed": [seed, 303, int(p * 1000), n],
                            "estimate": emp,
                            "ci": ci,
                        }
                        out.append(
                            Claim(
                                **common,
                                status="violated",
                                empirical=emp,
                                bound=bound,
                                ci=ci,
                                witness=w,
                                reason="the whole 95% interval lies above the bound",
                            )
                        )
                    else:
                        out.append(
                            Claim(
                                **common,
                                status="inconclusive",
                                empirical=emp,
                                bound=bound,
                                ci=ci,
                                reason="the 95% interval contains the bound; more samples needed",
                            )
                        )
            # data for the per-term bar figure
            out[-1].data = {"terms": {k: float(v) for k, v in terms.items()}, "setting": f"{kind}, n={n}"}
    return out


DEFAULT_P = (2.5, 3.0, 4.0, 8.0)


def run_lemmas(p_list=None, *, seed: int = 0, quick: bool = False, progress=None) -> list[Claim]:
    """``lptheory check lemmas``: thm1.A and the identity of thm1.C (exact), measured E[B1], E[B2],
    E[B], E[C] on synthetic settings, and the adversarial search for each of thm1.B1, B2, B, C.

    Example
    -------
    >>> recs = run_lemmas([4.0], quick=True)                                   # doctest: +SKIP
    >>> [(r.id, r.status) for r in recs if r.method == "adversarial-search"]   # doctest: +SKIP
    """
    p_list = [float(p) for p in (p_list or DEFAULT_P)]
    for p in p_list:
        if not (2.0 <= p < math.inf):
            raise ValueError(f"p must be in [2, inf) for the Theorem 1 checks, got {p}")
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    recs = check_identity_A(p_list, seed) + check_identity_C(p_list, seed)
    say(f"identities done ({time.perf_counter() - t0:.1f}s)")
    recs += measured_records(p_list, seed=seed, quick=quick)
    say(f"measured terms done ({time.perf_counter() - t0:.1f}s)")
    recs += search_records(p_list, seed=seed, quick=quick, progress=say)
    return recs


def stderr_progress(msg: str) -> None:
    print(f"[lptheory] {msg}", file=sys.stderr, flush=True)
