"""The paper's smaller claims, one record each (``lptheory check claims``).

* ``steepest.closed-form`` (Section 4.1): argmin_theta <eta g, theta - theta_t> + 1/2 ||theta - theta_t||_p^2
  has theta_{t+1}^(i) = theta_t^(i) - eta ||g||_{p*}^{(p-2)/(p-1)} g^(i) / |g^(i)|^{(p-2)/(p-1)}.
* ``lionk.first-step`` (Section 4.2): from theta_0 = z_0 = m_0 = 0, Lion-K (K = ||.||_{p*}) gives
  theta_1 = -eta grad K((1-beta1) g~_0) and Stacey(p,2) gives
  theta_1 = -(1-tau) eta s^eps((1-beta1) g~_0) - tau alpha (1-beta1) g~_0; "they coincide only when tau = 0".
* ``intro.norm-ratio`` (Section 1): ||x_0 - x*||_p^2 can be as small as d^{2/p - 1} ||x_0 - x*||_2^2.
* ``cor.batch-variance`` (Corollary 2): an n-sample mini-batch has E|g~_i - g_i|^2 <= sigma_i^2 / n.
* ``cor.bounded-gradient`` (Corollary 3): ||g||_{p*} <= E||g~||_{p*} <= G, and |g~_i|, |g_i| <= G.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from lptheory.geometry import dual_exponent, lp_norm
from lptheory.optimizers import StaceyP2

from .lemmas import batch_distribution
from .records import Claim

__all__ = ["run_claims"]


def _steepest(rng, n_cases):
    worst = 0.0
    for _ in range(n_cases):
        p = float(rng.uniform(2.05, 8.0))
        d = int(rng.integers(1, 5))
        g = rng.standard_normal(d)
        eta = float(10 ** rng.uniform(-2, 0))
        paper = -eta * lp_norm(g, dual_exponent(p)) ** ((p - 2) / (p - 1)) * g / np.abs(g) ** ((p - 2) / (p - 1))
        obj = lambda u, g=g, eta=eta, p=p: float(eta * g @ u + 0.5 * lp_norm(u, p) ** 2)  # noqa: E731
        best = min(
            (minimize(obj, x0, method="BFGS", options={"gtol": 1e-12}) for x0 in (paper * 0.5, -g, paper * 2)),
            key=lambda r: r.fun,
        )
        # compare objective values (the minimizer is unique: strictly convex objective)
        worst = max(worst, (obj(paper) - best.fun) / (abs(best.fun) + 1e-300))
    return worst


def run_claims(p_list=None, *, seed: int = 0, quick: bool = False, progress=None) -> list[Claim]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 606]))
    n_cases = 100 if quick else 400
    out = []
    # steepest.closed-form
    w = _steepest(rng, 40 if quick else 150)
    out.append(
        Claim(
            id="steepest.closed-form",
            source="Section 4.1",
            statement="argmin_theta <eta g, theta - theta_t> + 1/2 ||theta - theta_t||_p^2 = theta_t - eta ||g||_{p*}^{(p-2)/(p-1)} g/|g|^{(p-2)/(p-1)} (coordinate-wise)",
            assumptions=["p > 2", "g with nonzero coordinates"],
            params={"cases": 40 if quick else 150},
            method="exact",
            empirical=w,
            bound=1e-9,
            status="holds" if w <= 1e-9 else "violated",
            witness=None if w <= 1e-9 else {"note": "rerun with the seed", "seed": seed},
            reason=f"the closed form's objective is never above BFGS's minimum by more than {w:.1e} (relative)",
        )
    )
    # lionk.first-step
    p, eta, alpha, tau, b1, eps = 3.0, 0.1, 0.05, 0.3, 0.9, 1e-8
    g0 = np.array([0.3, -2.0, 0.7])
    zero = np.zeros_like(g0)
    opt = StaceyP2(p=p, lr=eta, alpha=alpha, tau=tau, beta1=b1, beta2=0.99, eps=eps, weight_decay=0.0, z_init="zero")
    th1, _ = opt.step(zero, g0, opt.init(zero))
    c = (1 - b1) * g0
    s_eps = c / (np.abs(c) ** ((p - 2) / (p - 1)) + eps)
    paper_stacey = -(1 - tau) * eta * s_eps - tau * alpha * c
    err = float(np.max(np.abs(th1 - paper_stacey)))
    out.append(
        Claim(
            id="lionk.first-step",
            source="Section 4.2",
            statement="Stacey(p,2): theta_1 = -(1-tau) eta s^eps((1-beta1) g~_0) - tau alpha (1-beta1) g~_0 from theta_0 = z_0 = m_0 = 0",
            assumptions=["theta_0 = z_0 = m_0 = 0", "no weight decay"],
            params={"p": p, "eta": eta, "alpha": alpha, "tau": tau, "beta1": b1, "eps": eps, "g0": g0.tolist()},
            method="exact",
            empirical=err,
            bound=1e-15,
            status="holds" if err <= 1e-15 else "violated",
            witness=None if err <= 1e-15 else {"theta1_alg1": th1.tolist(), "theta1_paper": paper_stacey.tolist()},
            reason=f"Algorithm 1 (lptheory.optimizers.StaceyP2) and the paper's formula agree to {err:.1e}",
        )
    )
    # "coincide only when tau = 0": at tau = 0, Stacey's first step is -eta s^eps(c); Lion-K's is -eta grad K(c)
    opt0 = StaceyP2(p=p, lr=eta, alpha=alpha, tau=0.0, beta1=b1, beta2=0.99, eps=0.0, weight_decay=0.0, z_init="zero")
    st1, _ = opt0.step(zero, g0, opt0.init(zero))
    ps = dual_exponent(p)
    gradK = np.sign(c) * np.abs(c) ** (ps - 1) / lp_norm(c, ps) ** (ps - 1)
    lion1 = -eta * gradK
    gap = float(np.max(np.abs(st1 - lion1)))
    scale = float(lp_norm(c, ps) ** (1 / (p - 1)))
    out.append(
        Claim(
            id="lionk.first-step",
            source="Section 4.2",
            statement="Lion-K (K = ||.||_{p*}) and Stacey(p,2) coincide (first iterate) only when tau = 0 (read: at tau = 0 they coincide, and only then)",
            assumptions=["theta_0 = z_0 = m_0 = 0", "eps = 0"],
            params={"p": p, "eta": eta, "tau": 0.0, "beta1": b1, "g0": g0.tolist(), "setting": "tau = 0"},
            method="exact",
            empirical=gap,
            bound=0.0,
            status="violated",
            witness={
                "g0": g0.tolist(),
                "p": p,
                "eta": eta,
                "beta1": b1,
                "theta1_stacey": st1.tolist(),
                "theta1_lionK": lion1.tolist(),
                "ratio_of_steps": scale,
            },
            reason=(
                f"even at tau = 0 the first iterates differ (max gap {gap:.3g}): Stacey's steepest step s(c) is "
                f"||c||_{{p*}}^(1/(p-1)) = {scale:.4g} times Lion-K's grad K(c) = s(c)/||c||_{{p*}}^(1/(p-1)) "
                "(same direction). They coincide only up to a g-dependent rescaling of eta (or when "
                "||(1-beta1) g~_0||_{p*} = 1); for tau > 0 the directions differ too, as the paper says"
            ),
        )
    )
    # intro.norm-ratio
    worst_min = math.inf
    for _ in range(n_cases):
        p = float(rng.uniform(2.05, 10.0))
        d = int(rng.integers(1, 50))
        x = rng.standard_normal(d) * rng.uniform(0, 1, d) ** 3
        worst_min = min(worst_min, (lp_norm(x, p) ** 2 / lp_norm(x, 2) ** 2) / d ** (2 / p - 1))
    attained = max(
        abs((lp_norm(np.ones(d), p) ** 2 / d) / d ** (2 / p - 1) - 1) for d in (1, 7, 100) for p in (2.5, 4.0, 9.0)
    )
    ok = worst_min >= 1 - 1e-12 and attained < 1e-12
    out.append(
        Claim(
            id="intro.norm-ratio",
            source="Section 1",
            statement="||x_0 - x*||_p^2 can be as small as d^{2/p - 1} ||x_0 - x*||_2^2 (p >= 2)",
            assumptions=["p >= 2"],
            params={"cases": n_cases},
            method="exact",
            empirical=worst_min,
            bound=1.0,
            status="holds" if ok else "violated",
            witness=None if ok else {"note": "rerun with the seed", "seed": seed},
            reason=(
                f"min over random x of (||x||_p^2/||x||_2^2) / d^(2/p-1) = {worst_min:.6f} >= 1 (power-mean "
                f"inequality), and constant vectors attain d^(2/p-1) (error {attained:.1e}): 'as small as' is exact"
            ),
        )
    )
    # corollaries
    worst_var, worst_a, worst_b = 0.0, 0.0, 0.0
    for _ in range(n_cases):
        k, n, d = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        p = float(rng.uniform(2.05, 8.0))
        v = rng.uniform(-1, 1, (d, k))
        w = rng.dirichlet(np.ones(k), size=d)
        g = np.sum(v * w, axis=1)
        sig2 = np.sum(w * (v - g[:, None]) ** 2, axis=1)
        vals, probs = batch_distribution(v, w, n)
        var_b = np.sum(probs * (vals - g[:, None]) ** 2, axis=1)
        worst_var = max(worst_var, float(np.max(var_b / np.maximum(sig2 / n, 1e-300))))
        # (a): ||g||_{p*} <= E||g~||_{p*} (product distribution; d small) and <= G = sup
        ps = dual_exponent(p)
        grids = np.meshgrid(*[vals[i] for i in range(d)], indexing="ij")
        pgrid = np.prod(np.meshgrid(*[probs[i] for i in range(d)], indexing="ij"), axis=0)
        norms = lp_norm(np.stack([x.ravel() for x in grids], axis=1), ps)
        e_norm = float(np.sum(pgrid.ravel() * norms))
        G = float(norms.max())
        worst_a = max(worst_a, float(lp_norm(g, ps)) / e_norm, e_norm / G)
        worst_b = max(worst_b, float(np.max(np.abs(vals))) / G, float(np.max(np.abs(g))) / G)
    out.append(
        Claim(
            id="cor.batch-variance",
            source="Corollary 2 (Section 4.1)",
            statement="If the stochastic gradient is an n-sample mini-batch estimate, then E|g~_i - g_i|^2 <= sigma_i^2 / n",
            assumptions=["i.i.d. samples", "Assumption 3 per sample"],
            params={"cases": n_cases},
            method="exact",
            empirical=worst_var,
            bound=1.0,
            status="holds" if worst_var <= 1 + 1e-9 else "violated",
            witness=None if worst_var <= 1 + 1e-9 else {"seed": seed},
            reason=f"exact batch-mean variances / (sigma^2/n): worst {worst_var:.12f} (equality for i.i.d. samples)",
        )
    )
    ok = worst_a <= 1 + 1e-12 and worst_b <= 1 + 1e-12
    out.append(
        Claim(
            id="cor.bounded-gradient",
            source="Corollary 3 (Section 4.1)",
            statement="(a) ||g||_{p*} = ||E g~||_{p*} <= E||g~||_{p*} <= G (Jensen); (b) |g~_i| <= G and |g_i| <= G",
            assumptions=["Assumption 4", "Assumption 2"],
            params={"cases": n_cases},
            method="exact",
            empirical=max(worst_a, worst_b),
            bound=1.0,
            status="holds" if ok else "violated",
            witness=None if ok else {"seed": seed},
            reason=f"worst ratios over exact finite distributions: (a) {worst_a:.6f}, (b) {worst_b:.6f} (both <= 1)",
        )
    )
    if progress:
        progress(f"{len(out)} claims checked")
    return out
