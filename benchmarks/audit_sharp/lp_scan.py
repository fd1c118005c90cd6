"""Audit item 1, a second independent route: the inner problem V(g, tau) = sup E phi(X; g) over laws on a grid of
[-1, 1] with E X = g, E (X - g)^2 <= tau^2, solved as a linear program (scipy HiGHS) at fixed (g, tau), no
two-point or face reduction assumed (the LP may use any number of atoms; its basic solutions have <= 3). The grid
holds 0 exactly (the paper's sgn(0) = 0 convention), +-1, a uniform grid, and geometric refinements near 0, near
+-g and near +-1. Both signs of g are scanned (the symmetry g -> -g is tested, not assumed); g near 0 and near 1,
tau from 1e-5 to its maximum sqrt(1 - g^2).

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/lp_scan.py [--p ...] [--terms ...]
Writes lp_scan_results.json: per (term, p) the largest V/tau found, its (g, tau), its law (re-checked at 50
digits), and the largest asymmetry |V(g) - V(-g)| / tau seen (in the ratio's units).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from scipy.optimize import linprog, minimize

sys.path.insert(0, os.path.dirname(__file__))
from phi import TERMS, phi_np, ratio_mp, ratio_np  # noqa: E402

HERE = os.path.dirname(__file__)
P_LIST = (2.05, 2.5, 3.0, 4.0, 8.0, 16.0, 50.0, 2.75, 2.7518, 2.7519, 2.76)
G_LIST = (1e-6, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 1 - 1e-6)


def grid(g):
    base = np.linspace(-1, 1, 2001)
    geo = 10.0 ** -np.linspace(1, 12, 45)
    pts = [base, [0.0, -1.0, 1.0], geo, -geo, 1 - geo, -1 + geo, g + geo, g - geo, -g + geo, -g - geo]
    x = np.unique(np.clip(np.concatenate([np.atleast_1d(np.asarray(v, float)) for v in pts]), -1, 1))
    return x


def inner(term, p, g, tau):
    x = grid(g)
    c = -phi_np(term, x, g, p)
    A_eq = np.vstack([np.ones_like(x), x])
    b_eq = [1.0, g]
    A_ub = (((x - g) / tau) ** 2)[None, :]  # scaled: HiGHS' 1e-7 feasibility tolerance is relative to 1, not tau^2
    r = linprog(c, A_ub=A_ub, b_ub=[1.0], A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if r.status != 0:
        return None, None
    w = r.x
    keep = w > 1e-14
    return -r.fun, (x[keep].tolist(), w[keep].tolist())


def scan(term, p):
    best = (-np.inf, None)
    asym = 0.0
    for g0 in G_LIST:
        tmax = np.sqrt(1 - g0**2)
        taus = np.unique(np.concatenate([tmax * np.geomspace(1e-5, 1, 18), [tmax]]))
        for tau in taus:
            vals = {}
            for g in (g0, -g0):
                v, law = inner(term, p, g, tau)
                if v is None:
                    continue
                vals[g] = v
                if v / tau > best[0]:
                    best = (v / tau, (g, tau, law))
            if len(vals) == 2:  # in the ratio's units (V/tau): relative V is LP noise where V ~ 1e-14
                asym = max(asym, abs(vals[g0] - vals[-g0]) / tau)
    val, (g, tau, (xs, ws)) = best
    mp, gm, sd = ratio_mp(term, xs, ws, p)  # the law's own ratio E phi / sd >= E phi / tau
    # polish the LP's law (its atoms and weights free, G = 1) by Nelder-Mead; re-checked at 50 digits
    k = len(xs)
    th0 = np.concatenate([xs, np.log(np.maximum(ws, 1e-300))])

    def f(th):
        xx = np.clip(th[:k], -1, 1)[None, :]
        ww = np.exp(np.clip(th[k:], -700, 50))[None, :]
        r = ratio_np(term, xx, ww, p)[0]
        return -r if np.isfinite(r) else 1e9

    rr = minimize(f, th0, method="Nelder-Mead", options={"maxiter": 20000, "xatol": 1e-13, "fatol": 1e-16})
    px = np.clip(rr.x[:k], -1, 1).tolist()
    pw = np.exp(np.clip(rr.x[k:], -700, 50))
    pol, _, _ = ratio_mp(term, px, (pw / pw.sum()).tolist(), p)
    if pol < mp:
        pol, px, pw = mp, xs, np.asarray(ws)
    return {
        "polished_ratio_50": str(pol),
        "polished_atoms": list(px),
        "polished_weights": (pw / pw.sum()).tolist(),
        "lp_best_V_over_tau": val,
        "g": g,
        "tau": tau,
        "law_atoms": xs,
        "law_weights": ws,
        "law_ratio_50": str(mp),
        "law_mean": float(gm),
        "max_asymmetry_over_tau": asym,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", type=float, nargs="*", default=list(P_LIST))
    ap.add_argument("--terms", nargs="*", default=list(TERMS))
    args = ap.parse_args()
    path = os.path.join(HERE, "lp_scan_results.json")
    res = json.load(open(path)) if os.path.exists(path) else {}
    for p in args.p:
        for term in args.terms:
            t0 = time.time()
            r = scan(term, p)
            r["seconds"] = time.time() - t0
            res[f"{term} p={p}"] = r
            print(
                term,
                p,
                r["lp_best_V_over_tau"],
                r["law_ratio_50"][:20],
                r["polished_ratio_50"][:20],
                f"asym {r['max_asymmetry_over_tau']:.1e}",
                f"{r['seconds']:.0f}s",
                flush=True,
            )
            json.dump(res, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
