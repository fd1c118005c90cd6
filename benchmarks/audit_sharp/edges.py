"""Audit item 1, the edges of the (g, tau) range, each searched on its own (two-point laws suffice for the ratio:
AUDIT.md, the mixture argument; 3-atom laws are in search.py):

  tau_max: tau = sqrt(1 - g^2), the only law is X in {-1, 1} (g scanned on a fine grid + golden refinement);
  g0:      g = 10^-u, u in [3, 40] (g -> 0+), atoms x_l < g < x_r free in [-1, 1];
  g1:      g = 1 - 10^-u, u in [3, 30] (g -> 1-);
  tau0:    sd = sqrt(w (1 - w)) (x_r - x_l) with x_r - x_l = 10^-u, u in [3, 30] (tau -> 0), x_l, w free;
  zero:    an atom exactly at 0 (the paper's sgn(0) = 0) and one free atom (g either sign).
Each by differential evolution + Nelder-Mead, the best law re-evaluated at 50 digits (phi.py).

    python3 benchmarks/audit_sharp/edges.py [--p ...]   (writes edges_results.json)
"""

import argparse
import json
import os
import sys

import mpmath
import numpy as np
from scipy.optimize import differential_evolution, minimize, minimize_scalar

sys.path.insert(0, os.path.dirname(__file__))
from phi import TERMS, ratio_mp, ratio_np  # noqa: E402

HERE = os.path.dirname(__file__)
P_LIST = (2.05, 2.5, 3.0, 4.0, 8.0, 16.0, 50.0, 2.75, 2.7518, 2.7519, 2.76)


def law_of(edge, th):
    """theta -> (atoms, weights) as mpmath numbers (the exact law evaluated at 50 digits)."""
    mp = mpmath.mpf
    with mpmath.workdps(60):
        if edge in ("g0", "g1"):
            u, s1, s2 = (mp(v) for v in th)
            g = mp(10) ** -u if edge == "g0" else 1 - mp(10) ** -u
            xl = -1 + (g + 1) * s1  # s in (0, 1): x_l in (-1, g), x_r in (g, 1)
            xr = g + (1 - g) * s2
        elif edge == "tau0":
            u, xl0, w = (mp(v) for v in th)
            d = mp(10) ** -u
            xl = -1 + (2 - d) * xl0
            xr = xl + d
            return [xl, xr], [1 - w, w]
        elif edge == "zero":
            x1, w = (mp(v) for v in th)
            return [mp(0), x1], [1 - w, w]
        if not (0 < s1 < 1 and 0 < s2 < 1):
            return None
        w = (g - xl) / (xr - xl)  # weight on x_r
        return [xl, xr], [1 - w, w]


BOUNDS = {
    "g0": [(3, 40), (1e-9, 1 - 1e-9), (1e-9, 1 - 1e-9)],
    "g1": [(3, 30), (1e-9, 1 - 1e-9), (1e-9, 1 - 1e-9)],
    "tau0": [(3, 30), (0, 1), (1e-9, 1 - 1e-9)],
    "zero": [(-1, 1), (1e-9, 1 - 1e-9)],
}


def fval(term, p, edge, th):
    law = law_of(edge, th)
    if law is None:
        return 1e9
    xs, ws = law
    if edge in ("tau0",):  # float64 cannot resolve a gap of 10^-30: evaluate in mpmath (30 digits) directly
        r = ratio_mp(term, xs, ws, p, dps=40)[0]
        return -float(r) if mpmath.isfinite(r) else 1e9
    r = ratio_np(term, np.array([[float(v) for v in xs]]), np.array([[float(v) for v in ws]]), p)[0]
    return -r if np.isfinite(r) else 1e9


def run(term, p, seed):
    out = {}
    # tau at its maximum: X in {-1, 1}, g = 2 w - 1
    f = lambda g: -float(ratio_mp(term, [-1, 1], [(1 - g) / 2, (1 + g) / 2], p, dps=30)[0])  # noqa: E731
    gs = np.linspace(-0.999, 0.999, 400)
    g0 = gs[int(np.argmin([f(g) for g in gs]))]
    r = minimize_scalar(
        f, bounds=(max(-1 + 1e-12, g0 - 0.01), min(1 - 1e-12, g0 + 0.01)), method="bounded", options={"xatol": 1e-12}
    )
    out["tau_max"] = {"ratio_50": mpmath.nstr(-f(r.x), 25), "g": float(r.x)}
    for edge in ("g0", "g1", "tau0", "zero"):
        b = BOUNDS[edge]
        de = differential_evolution(
            lambda th, edge=edge: fval(term, p, edge, th),
            b,
            seed=seed,
            maxiter=40 if edge == "tau0" else 80,
            popsize=15,
            tol=1e-12,
            polish=False,
        )
        loc = minimize(
            lambda th, edge=edge: fval(term, p, edge, th),
            de.x,
            method="Nelder-Mead",
            bounds=b,
            options={"maxiter": 2000 if edge != "tau0" else 400, "xatol": 1e-12, "fatol": 1e-16},
        )
        th = loc.x if loc.fun <= de.fun else de.x
        xs, ws = law_of(edge, th)
        rr, g, sd = ratio_mp(term, xs, ws, p, dps=50)
        out[edge] = {
            "ratio_50": mpmath.nstr(rr, 25),
            "g": mpmath.nstr(g, 15),
            "sd": mpmath.nstr(sd, 15),
            "atoms": [mpmath.nstr(v, 45) for v in xs],
            "weights": [mpmath.nstr(v, 45) for v in ws],
        }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", type=float, nargs="*", default=list(P_LIST))
    ap.add_argument("--terms", nargs="*", default=list(TERMS))
    args = ap.parse_args()
    path = os.path.join(HERE, "edges_results.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    for p in args.p:
        for term in args.terms:
            r = run(term, p, 1)
            res[f"{term} p={p}"] = r
            print(term, p, {k: v["ratio_50"][:14] for k, v in r.items()}, flush=True)
            json.dump(res, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
