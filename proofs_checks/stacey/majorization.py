"""Appendix B: l2 majorization implies l_p smoothness with constant ||L||_{p/(p-2)} (p > 2).

Claim (Appendix B). If |f(y) - f(x) - <grad f(x), y - x>| <= 1/2 sum_i L_i (y_i - x_i)^2 for all x, y,
then ||grad f(y) - grad f(x)||_{p*} <= ||L||_{p/(p-2)} ||y - x||_p.

Records:
* ``maj.lp-smoothness``: random quadratics with -diag(L) <= H <= diag(L) (exactly the l2-majorized
  quadratics), whose l_p smoothness constant is ||H||_{p->p*}, bounded from below by the nonlinear power
  iteration at an explicit v (the witness), against ||L||_{p/(p-2)}; and the nonquadratic separable
  family (l2-majorized with L_i = 2 a_i), estimated by pairs plus finite-difference power iteration;
  each searched record is followed by its power control (:func:`proofs_checks.planted.planted_scale_control`:
  the constant divided by 1.25, a planted violation of 25%, must be found by the same search, else the
  holds is withdrawn);
* ``maj.tight``: H = diag(L) attains the constant at u_i = L_i^{1/(p-2)};
* ``maj.chain``: the intermediate chain of Appendix B (the expressions of the symbolic audit) on random
  majorized quadratics and displacements.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import sympy as sp

from lptheory.geometry import dual_exponent, lp_norm

from ..api import ClaimSpec, Env, Point, evaluate, planted_scale_control, value_claim
from .symbolic import MAJ_SIDES, maj_symbols

STATEMENT = (
    "l2 majorization |f(y) - f(x) - grad f(x)^T (y - x)| <= 1/2 sum_i L_i (y_i - x_i)^2 implies, for p > 2, "
    "||L||_{p/(p-2)}-smoothness w.r.t. ||.||_p: ||grad f(y) - grad f(x)||_{p*} <= ||L||_{p/(p-2)} ||y - x||_p"
)
ASSUMPTIONS = ("l2 majorization with vector L (Appendix B)", "p > 2")
SPEC = ClaimSpec(
    id="maj.lp-smoothness",
    statement=STATEMENT,
    source="Appendix B",
    assumptions=ASSUMPTIONS,
    show=("p", "problem", "setting"),
)
TIGHT = ClaimSpec(
    id="maj.tight",
    statement="H = diag(L) attains ||L||_{p/(p-2)}: ||diag(L)||_{p->p*} = ||L||_{p/(p-2)}",
    source="Appendix B (tightness)",
    assumptions=ASSUMPTIONS,
    relation="==",
    show=("p", "d"),
)
CHAIN = ClaimSpec(
    id="maj.chain",
    statement="||dg||_{2rho/(2rho-1)}/||L||_{rho*}^{1/2} <= ||dg||_{L^-1} <= ||y-x||_L <= ||L||_{rho*}^{1/2} ||y-x||_{2rho}",
    source="Appendix B",
    assumptions=ASSUMPTIONS,
    show=("p", "rho", "samples"),
)
DEFAULT_P = (3.0, 4.0, 8.0)


def majorized_quadratic(rng, d: int):
    """(H, L): H = D^{1/2} M D^{1/2} with M symmetric, ||M||_2 <= 1 (one eigenvalue at +-1), D = diag(L),
    so -diag(L) <= H <= diag(L): f(x) = x^T H x / 2 is l2-majorized with exactly this L."""
    L = 10.0 ** rng.uniform(-1, 1, d)
    M = rng.standard_normal((d, d))
    M = (M + M.T) / 2
    M /= np.abs(np.linalg.eigvalsh(M)).max()
    return np.sqrt(L)[:, None] * M * np.sqrt(L)[None, :], L


def _r(p):
    return p / (p - 2.0)


def _norm_ratio_point(H, L, v, p, scale=1.0) -> Point:
    """Where ||H v||_{p*} / ||v||_p <= scale ||L||_{p/(p-2)} was measured (the explicit v), with the
    majorization -diag(L) <= H <= diag(L) as conditions the re-check re-derives."""
    d = H.shape[0]
    Hs, Ls, u, Hu = maj_symbols(d)
    ps, r = p / (p - 1), p / (p - 2)
    lhs = sp.Add(*[sp.Abs(h) ** ps for h in Hu]) ** (1 / ps) / sp.Add(*[sp.Abs(x) ** p for x in u]) ** (1 / p)
    rhs = sp.Add(*[x**r for x in Ls]) ** (1 / r)
    sc = {f"u_{i}": float(v[i]) for i in range(d)} | {f"L_{i}": float(L[i]) for i in range(d)}
    sc |= {f"H_{i}_{j}": float(H[i, j]) for i in range(d) for j in range(d)}
    Hm, Lm = sp.Matrix(Hs), sp.diag(*Ls)
    min_eig = sp.Function("MinEig")
    return Point(
        sc,
        lhs=lhs,
        rhs=sp.Float(scale) * rhs if scale != 1.0 else rhs,
        conditions=(
            ("l2 majorization: diag(L) - H >= 0", min_eig(sp.ImmutableMatrix(Lm - Hm)), ">=", sp.Integer(0)),
            ("l2 majorization: diag(L) + H >= 0", min_eig(sp.ImmutableMatrix(Lm + Hm)), ">=", sp.Integer(0)),
        ),
    )


def _chain_env(H, L, u, rho):
    d = H.shape[0]
    sc = {"rho": [rho]} | {f"L_{i}": [L[i]] for i in range(d)} | {f"u_{i}": [u[i]] for i in range(d)}
    sc |= {f"H_{i}_{j}": [H[i, j]] for i in range(d) for j in range(d)}
    return Env(scalars=sc, S=1)


def run_majorization(ctx, *, h_scale: float = 1.0, bound_scale: float = 1.0):
    """``lptheory check majorization``: maj.lp-smoothness, maj.tight, maj.chain for each p.
    Tests only: ``h_scale`` multiplies the quadratics' H (functions that are NOT majorized by L: the
    assumption is broken, which the witness re-check detects); ``bound_scale`` multiplies the claimed
    constant (a planted false bound)."""
    from synthetic.problems import SeparableNonconvex
    from synthetic.smoothness import constant_hessian_pair, estimate_smoothness

    p_list = [float(p) for p in ctx.get("p") or DEFAULT_P]
    for p in p_list:
        if not (2.0 < p < math.inf):
            raise ValueError(f"--p must be in (2, inf) for Appendix B (the claim needs p > 2), got {p:g}")
    n_quad = 40 if ctx.quick else 200
    out = []
    for p in p_list:
        rng = np.random.default_rng(np.random.SeedSequence([ctx.seed, 505, int(p * 1000)]))
        worst, arg = -1.0, None
        for _ in range(n_quad):
            d = int(rng.integers(2, 7))
            H, L = majorized_quadratic(rng, d)
            H = H * h_scale
            sub = np.random.default_rng(np.random.SeedSequence([int(rng.integers(1 << 30)), 11]))
            est, v = constant_hessian_pair(H, p, rng=sub, starts=24, iters=80)
            ratio = est / float(lp_norm(L, _r(p)))
            if ratio > worst:
                worst, arg = ratio, (H, L, v, est)
        H, L, v, est = arg
        params = {
            "p": p,
            "setting": f"{n_quad} random majorized quadratics, d = 2..6",
            "method": "power iteration (24 starts)",
        }
        out += planted_scale_control(
            value_claim(
                SPEC,
                est,
                bound_scale * float(lp_norm(L, _r(p))),
                params,
                method="adversarial-search",
                tolerance=5e-10,
                budget=f"{n_quad} random majorized quadratics, d = 2..6, power iteration from 24 starts each",
                at=_norm_ratio_point(H, L, v, p, bound_scale),
                data={"worst_case": {"H": H.tolist(), "L": L.tolist()}},
                note=f"worst lower bound on ||H||_{{p->p*}} / ||L||_{{p/(p-2)}} over {n_quad} quadratics: {worst:.4f}",
            ),
            attained="H = diag(L) attains ||L||_{p/(p-2)} (maj.tight) and is a majorized quadratic of the family",
        )
        # nonquadratic: the separable family, l2-majorized with L_i = 2 a_i (|phi''| <= 2)
        prob = SeparableNonconvex(d=20, profile="power", seed=ctx.seed)
        est = estimate_smoothness(prob, p, starts=16, iters=40, pairs=256, seed=ctx.seed)
        bound = float(lp_norm(2.0 * prob.a, _r(p)))
        out += planted_scale_control(
            value_claim(
                SPEC,
                est,
                bound,
                {
                    "p": p,
                    "problem": "separable (power, d = 20)",
                    "setting": "finite-difference power iteration + random pairs",
                },
                method="adversarial-search",
                tolerance=5e-7,
                budget="finite-difference power iteration from 16 starts and 256 random pairs",
                note="empirical lower bound on L_p (finite differences: no exact witness)",
            ),
            attained="the Hessian at x = b is diag(2 a) (phi''(0) = 2), whose ||.||_{p->p*} is ||2 a||_{p/(p-2)}",
        )
        # tightness: H = diag(L) at u_i = L_i^{1/(p-2)}
        Lt = 10.0 ** rng.uniform(-1, 1, 5)
        u = Lt ** (1.0 / (p - 2.0))
        val = float(lp_norm(Lt * u, dual_exponent(p)) / lp_norm(u, p))
        bound = float(lp_norm(Lt, _r(p)))
        out.append(
            value_claim(
                TIGHT,
                val,
                bound,
                {"p": p, "d": 5, "L": Lt.tolist()},
                tolerance=5e-13,
                at=_norm_ratio_point(np.diag(Lt), Lt, u, p),
                note="||diag(L) u||_{p*} / ||u||_p at u_i = L_i^(1/(p-2)) against ||L||_{p/(p-2)}: the "
                "constant cannot be improved",
            )
        )
        # the intermediate chain on random majorized quadratics (the symbolic audit's expressions)
        rho = p / 2.0
        worst, arg = -math.inf, None
        links = ("reverse-hoelder", "smoothness", "hoelder")
        for _ in range(n_quad):
            d = int(rng.integers(1, 7))
            H, L = majorized_quadratic(rng, d)
            x = rng.standard_normal(d)
            env = _chain_env(H, L, x, rho)
            for link in links:
                lhs_e, rhs_e = MAJ_SIDES[link](d)
                lv, rv = float(evaluate(lhs_e, env)[0]), float(evaluate(rhs_e, env)[0])
                ex = (lv - rv) / (abs(lv) + abs(rv) + 1e-300)
                if ex > worst:
                    worst, arg = ex, (H, L, x, link, lv, rv)
        H, L, x, link, lv, rv = arg
        pt = _norm_ratio_point(H, L, x, p)
        lhs_e, rhs_e = MAJ_SIDES[link](H.shape[0])
        pt = dataclasses.replace(pt, scalars={**pt.scalars, "rho": rho}, lhs=lhs_e, rhs=rhs_e, extra={"link": link})
        out.append(
            value_claim(
                CHAIN,
                lv,
                rv,
                {"p": p, "rho": rho, "samples": n_quad, "link": link},
                at=pt,
                tolerance=5e-13,
                note=f"largest relative excess along the chain over {n_quad} random majorized quadratics: "
                f"{worst:.1e} (link {link})",
            )
        )
        ctx.say(f"majorization p={p:g} done")
    return out
