"""Assumption 1's "equivalent definition" of l_p smoothness.

Claim (Section 2, Assumption 1): f is L-smooth w.r.t. ||.||_p, ||grad f(x) - grad f(y)||_{p*} <= L ||x - y||_p,
"or equivalently" |f(y) - f(x) - <grad f(x), y - x>| <= L/2 ||y - x||_p^2.

For a quadratic f(x) = x^T H x / 2 the two constants are L_lip = ||H||_{p->p*} = sup u^T H v / (||u||_p
||v||_p) and L_2s = sup |u^T H u| / ||u||_p^2; L_2s <= L_lip always, with equality for semidefinite H
and for p = 2, but not in general: H = diag(1, -1) has L_2s = 1 and L_lip = 2^{1 - 2/p}. The check
searches 2x2 symmetric matrices for the largest ratio in both directions (L_2s on a dense grid of the
l_p unit circle, L_lip at an explicit pair from the nonlinear power iteration); a violation's witness
re-computes the pair's ratio and L_2s (a maximum over the circle) at high precision. In 3 and 4
dimensions and on the separable family both constants are only estimated from below: inconclusive.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy as sp
from scipy.optimize import differential_evolution

from lptheory.geometry import lp_norm

from ..api import Claim, ClaimSpec, Point, value_claim

STATEMENT = (
    "Assumption 1: ||grad f(x) - grad f(y)||_{p*} <= L ||x - y||_p, or equivalently "
    "|f(y) - f(x) - <grad f(x), y - x>| <= (L/2) ||y - x||_p^2 (same constant L)"
)
SPEC = ClaimSpec(
    id="asm1.equivalence",
    statement=STATEMENT,
    source="Section 2, Assumption 1",
    assumptions=("f twice differentiable (quadratics)", "p >= 2"),
    show=("p", "direction", "d", "setting"),
)
FAMILY_SPEC = dataclasses.replace(SPEC, assumptions=("p >= 2",))  # a non-quadratic f: twice differentiable only
DEFAULT_P = (3.0, 4.0, 8.0)


def two_sided_constant(H: np.ndarray, p: float, grid: int = 20_000) -> float:
    """sup |u^T H u| / ||u||_p^2 for a symmetric 2x2 H: dense grid of directions, refined around the best."""
    if H.shape != (2, 2):
        raise ValueError("two_sided_constant: only 2x2 matrices (dense angular grid)")
    from synthetic.smoothness import circle_argmax, circle_refine

    th, U = _first_grid(grid)
    best_val = 0.0
    for k in range(3):
        if k:
            U = np.stack([np.cos(th), np.sin(th)], axis=1)
        got = circle_argmax(U, H, p)  # the lines below in one compiled call, same bits (None: not here)
        if got is None:
            val = np.abs(np.einsum("ni,ij,nj->n", U, H, U)) / lp_norm(U, p) ** 2
            i = int(np.argmax(val))
            got = (i, float(val[i]))
        i = got[0]
        best_val = max(best_val, got[1])
        w = th[1] - th[0] if th.size > 1 else 1e-3
        if k == 0:
            rest = circle_refine(th[i], w, 2, H, p)  # the passes below in one compiled call, same bits
            if rest is not None:
                for v in rest:
                    best_val = max(best_val, v)
                return best_val
        th = np.linspace(th[i] - 2 * w, th[i] + 2 * w, 2001)
    return best_val


_GRIDS: dict = {}


def _first_grid(grid: int):
    """(angles, unit-circle points) of the first pass of :func:`two_sided_constant` (the same for every H),
    made once per grid size (read-only)."""
    got = _GRIDS.get(grid)
    if got is None:
        th = np.linspace(0.0, np.pi, grid, endpoint=False)
        U = np.stack([np.cos(th), np.sin(th)], axis=1)
        th.flags.writeable = False
        U.flags.writeable = False
        if len(_GRIDS) > 8:
            _GRIDS.clear()
        got = _GRIDS[grid] = (th, U)
    return got


_STARTS: dict = {}


def _start_rows(seed, starts: int, d: int, p: float) -> np.ndarray:
    """``duality_map(default_rng(seed).standard_normal((starts, d)), p)``: the power iteration's first rows,
    the same for every H of a (seed, starts, d, p); made once per process for an int seed (read-only; the
    differential evolution of :func:`run_smoothness` asks for the same rows ~2000 times: 2000 calls of
    :func:`lipschitz_constant` measured 0.28-0.41 -> 0.18-0.26 s of CPU)."""
    from synthetic.smoothness import duality_map

    if type(seed) is not int:
        return duality_map(np.random.default_rng(seed).standard_normal((starts, d)), p)
    key = (seed, starts, d, float(p))
    got = _STARTS.get(key)
    if got is None:
        got = duality_map(np.random.default_rng(seed).standard_normal((starts, d)), p)
        got.flags.writeable = False
        if len(_STARTS) > 64:
            _STARTS.clear()
        _STARTS[key] = got
    return got


def lipschitz_constant(H: np.ndarray, p: float, starts: int = 16, iters: int = 100, seed: int = 0):
    """A lower bound on ||H||_{p->p*} by alternating duality maps: (value, u, v) at the best explicit pair
    (from :func:`_start_rows`)."""
    from synthetic.smoothness import bilinear_power_iteration, pair_ratios

    u, v = bilinear_power_iteration(H, p, _start_rows(seed, starts, H.shape[0], p), iters)
    vals = pair_ratios(u, H, v, p)  # the line below in one compiled call, same bits (None: not here)
    if vals is None:
        vals = np.einsum("ni,ij,nj->n", u, H, v) / (lp_norm(u, p) * lp_norm(v, p))
    i = int(np.argmax(vals))
    return float(vals[i]), u[i], v[i]


def two_sided_lower(H: np.ndarray, p: float, rng, n_dirs: int = 4000) -> float:
    """A lower bound on sup |u^T H u| / ||u||_p^2 in any dimension: random directions and sign patterns,
    the best few refined by Nelder-Mead; every value is evaluated at an explicit u."""
    from scipy.optimize import minimize

    from synthetic.smoothness import quad_forms, small_lp_norm, two_sided_nelder_mead

    d = H.shape[0]
    U = rng.standard_normal((n_dirs, d))
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * d)).reshape(d, -1).T
    U = np.vstack([U, signs, np.eye(d)])
    f = lambda u: abs(u @ H @ u) / small_lp_norm(u, p) ** 2  # noqa: E731  (lp_norm's bits, compiled)
    vals = np.abs(quad_forms(U, H)) / lp_norm(U, p) ** 2  # einsum("ni,ij,nj->n", U, H, U)'s bits, compiled
    best = float(vals.max())
    opts = {"xatol": 1e-10, "fatol": 1e-14, "maxfev": 2000}
    for i in np.argsort(vals)[-5:]:
        fun = two_sided_nelder_mead(H, p, U[i], **opts)  # scipy's run below, bit for bit, compiled
        if fun is None:
            fun = minimize(lambda u: -f(u), U[i], method="Nelder-Mead", options=opts).fun
        best = max(best, -float(fun))
    return best


def _pair_point(H, u, v, p) -> Point:
    """L_lip at the pair (u, v) <= L_2s = max over the circle, both re-computed at high precision."""
    h11, h12, h22, u1, u2, v1, v2, pp, t = sp.symbols("h11 h12 h22 u1 u2 v1 v2 p t", real=True)
    norm = lambda a, b: (sp.Abs(a) ** pp + sp.Abs(b) ** pp) ** (1 / pp)  # noqa: E731
    lip = (u1 * (h11 * v1 + h12 * v2) + u2 * (h12 * v1 + h22 * v2)) / (norm(u1, u2) * norm(v1, v2))
    c, s = sp.cos(t), sp.sin(t)
    two = sp.Function("MaxOver")(sp.Abs(h11 * c**2 + 2 * h12 * c * s + h22 * s**2) / norm(c, s) ** 2, t, 0, sp.pi)
    sc = {"h11": H[0, 0], "h12": H[0, 1], "h22": H[1, 1], "u1": u[0], "u2": u[1], "v1": v[0], "v2": v[1], "p": p}
    note = "u^T H v / (||u||_p ||v||_p) <= sup_w |w^T H w| / ||w||_p^2 is what 'equivalent, same L' needs"
    return Point(sc, lhs=lip, rhs=two, extra={"matrix": H.tolist(), "note": note})


def _ratio(params, p, direction):
    H = np.array([[params[0], params[1]], [params[1], params[2]]])
    if np.abs(H).max() < 1e-6:
        return 0.0
    l2s = two_sided_constant(H, p, grid=2000)
    lip, _, _ = lipschitz_constant(H, p, starts=6, iters=40)
    if direction == "lip/2s":
        return lip / max(l2s, 1e-300)
    return l2s / max(lip, 1e-300)


def _family_records(p_list, seed, quick) -> list[Claim]:
    """Both constants on higher-dimensional quadratics and on the separable family: lower bounds only,
    so the records are inconclusive with the estimated ratios."""
    from synthetic.problems import SeparableNonconvex
    from synthetic.smoothness import estimate_smoothness

    out = []
    for p in p_list:
        rng = np.random.default_rng([seed, 707, int(p * 1000)])
        worst = {3: (0.0, None), 4: (0.0, None)}
        for d in (3, 4):
            for _ in range(15 if quick else 60):
                M = rng.standard_normal((d, d))
                H = (M + M.T) / 2 if rng.random() < 0.7 else M @ M.T / d
                lip, _, _ = lipschitz_constant(H, p, starts=8, iters=60, seed=int(rng.integers(1 << 30)))
                r = lip / two_sided_lower(H, p, rng, n_dirs=1000 if quick else 4000)
                if r > worst[d][0]:
                    worst[d] = (r, H.tolist())
        out.append(
            value_claim(
                SPEC,
                max(w[0] for w in worst.values()),
                1.0,
                {"p": p, "direction": "lip/2s", "d": "3, 4", "setting": "random symmetric H (70% indefinite)"},
                method="adversarial-search",
                uncertified=f"estimated worst L_lip / L_2s: d=3 {worst[3][0]:.4f}, d=4 {worst[4][0]:.4f}. "
                "Uncertified: the two-sided constant is a multi-start lower bound here; the d = 2 record certifies "
                "the gap",
                data={"worst_by_d": {str(k): {"ratio_estimate": w[0], "matrix": w[1]} for k, w in worst.items()}},
            )
        )
        prob = SeparableNonconvex(d=20, profile="power", seed=seed)
        lip = estimate_smoothness(prob, p, starts=16, iters=40, pairs=256, seed=seed)
        x = prob.x0() + rng.standard_normal((4000, prob.d)) * rng.choice([0.1, 1.0, 3.0], size=(4000, 1))
        yv = x + rng.standard_normal((4000, prob.d)) * rng.choice([1e-2, 1e-1, 1.0], size=(4000, 1))
        num = np.abs(prob.f(yv) - prob.f(x) - np.sum(prob.grad(x) * (yv - x), axis=1))
        two = float(np.max(2 * num / lp_norm(yv - x, p) ** 2))
        out.append(
            value_claim(
                FAMILY_SPEC,
                lip,
                two,
                {
                    "p": p,
                    "direction": "both",
                    "problem": "separable (power, d = 20)",
                    "setting": "pairs (two-sided) and power iteration (Lipschitz)",
                },
                method="monte-carlo",
                uncertified=f"lower bounds on both constants: Lipschitz {lip:.4g}, two-sided {two:.4g} (ratio "
                f"{lip / two:.3f}); both are lower bounds, so the ratio is indicative only (certified value L_p = "
                f"{prob.certificate('L')(p):.4g})",
            )
        )
    return out


def run_smoothness(ctx):
    """``lptheory check smoothness``: asm1.equivalence for each p (both directions)."""
    p_list = [float(p) for p in ctx.get("p") or DEFAULT_P]
    for p in p_list:
        if not (2.0 <= p < math.inf):
            raise ValueError(f"--p must be in [2, inf), got {p:g}")
    out = []
    for p in p_list:
        for direction in ("lip/2s", "2s/lip"):
            res = differential_evolution(
                lambda x, p=p, direction=direction: -_ratio(x, p, direction),
                [(-1.0, 1.0)] * 3,
                maxiter=8 if ctx.quick else 25,
                popsize=8,
                seed=np.random.default_rng([ctx.seed, int(p * 1000), direction == "lip/2s"]),
                polish=False,
                tol=1e-10,
            )
            x = res.x
            H = np.array([[x[0], x[1]], [x[1], x[2]]])
            l2s = two_sided_constant(H, p)
            lip, u, v = lipschitz_constant(H, p, starts=32, iters=200)
            ev = np.linalg.eigvalsh(H)
            kind = "indefinite" if ev.min() < 0 < ev.max() else "semidefinite"
            params = {
                "p": p,
                "direction": direction,
                "d": 2,
                "search": f"differential evolution, {res.nfev} evaluations",
            }
            budget = f"differential evolution over 2x2 symmetric matrices, {res.nfev} evaluations"
            if direction == "lip/2s":
                rec = value_claim(
                    SPEC,
                    lip,
                    l2s,
                    params,
                    method="adversarial-search",
                    at=_pair_point(H, u, v, p),
                    tolerance=5e-4,
                    budget=budget,
                    note=f"L_lip (at an explicit pair) against L_2s (dense grid), H {kind}; the theory value for "
                    f"diag(1, -1) is 2^(1-2/p) = {2 ** (1 - 2 / p):.4f}. The paper's proofs only use the upper quadratic "
                    "bound, which follows from either form, so Theorem 1 is unaffected",
                )
            else:
                rec = value_claim(
                    SPEC,
                    l2s,
                    lip,
                    params,
                    method="adversarial-search",
                    tolerance=5e-7,
                    budget=budget,
                    note="the Lipschitz form implies the two-sided form; L_lip is a power-iteration lower bound (a local "
                    "maximum), so an excess here is not a witness",
                )
            rec.data = {"matrix": H.tolist(), "L_lipschitz_at_pair": lip, "L_two_sided_grid": l2s}
            out.append(rec)
        ctx.say(f"smoothness p={p:g} done")
    return out + _family_records(p_list, ctx.seed, ctx.quick)
