"""Audit item 3: Lemma 2's crossing and the decider b2_at_most_a.

(i) An independent crossing: the family X in {0+, 1} (weight q on 1, g = q) has E phi_B2 / sd ->
    R(q) = q ((1 - q) q^a + q (1 - q^a)) / sqrt(q (1 - q)) as the atom at 0+ -> 0 (phi_B2(0+; q) = q^(1+a), the
    paper's phi_B2(0; q) = 0 is not used: the limit is approached by admissible laws). kappa(p) = (p - 1) max_q R;
    the crossing kappa = 1 is found by mpmath (findroot on kappa(p) - 1, the max over q by findroot on R' = 0), 40
    digits, and compared with the toolkit's certified [2.751836, 2.751855].
(ii) The decider at p below, inside and above the crossing: it must prove below, must refuse above (where (i) gives
    an explicit law with kappa > 1, re-checked at 50 digits with an actual atom 10^-k, not the limit).
(iii) The corner majorant H(l, t) = sqrt(t (1 - t)) (g l^(a-1) + g^a) <= 1 on l in [0.95, 1] (g = l + (1 - l) t):
    a dense float/mp grid, and the true F1a ratio <= a next to the corner (l -> 1, t near 1/2) at 50 digits.

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/b2_check.py   (writes b2_check_results.json)
"""

import json
import os
import sys
import time

import mpmath
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from phi import ratio_mp  # noqa: E402

HERE = os.path.dirname(__file__)
mpmath.mp.dps = 40


def R(q, p):
    a = 1 / (p - 1)
    return q * ((1 - q) * q**a + q * (1 - q**a)) / mpmath.sqrt(q * (1 - q))


def kappa(p):
    p = mpmath.mpf(p)
    qs = [mpmath.mpf(i) / 400 for i in range(1, 400)]
    q0 = max(qs, key=lambda q: R(q, p))
    q = mpmath.findroot(lambda q: mpmath.diff(lambda s: R(s, p), q), q0)
    return (p - 1) * R(q, p), q


def main():
    out = {}
    pc = mpmath.findroot(lambda p: kappa(p)[0] - 1, mpmath.mpf("2.7518"))
    out["crossing_independent"] = mpmath.nstr(pc, 25)
    out["kappa_at"] = {}
    for p in ("2.75", "2.7517", "2.7518", "2.751836", "2.75186", "2.7519", "2.752", "2.76", "3"):
        k, q = kappa(mpmath.mpf(p))
        # an actual admissible law: atoms 10^-k (k = 60) and 1, weight q on 1, at 50 digits
        eps = mpmath.mpf(10) ** -60
        r, g, sd = ratio_mp("B2", [eps, 1], [1 - q, q], float(p), dps=60)
        out["kappa_at"][p] = {
            "kappa_limit": mpmath.nstr(k, 20),
            "q": mpmath.nstr(q, 20),
            "kappa_actual_law_eps_1e-60": mpmath.nstr((mpmath.mpf(p) - 1) * r, 20),
        }
        print(p, out["kappa_at"][p], flush=True)

    from proofs_checks.stacey.sharp import b2_at_most_a

    out["decider"] = {}
    for p in (2.5, 2.75, 2.7517, 2.7518, 2.75183, 2.75186, 2.7519, 2.752, 2.76, 3.0):
        t0 = time.time()
        r = b2_at_most_a(p)
        k = kappa(mpmath.mpf(p))[0]
        out["decider"][str(p)] = {
            "proved": r["proved"],
            "kappa_independent": mpmath.nstr(k, 15),
            "consistent": not (r["proved"] and k > 1),
            "faces": [(f["face"], f["hi"], f["below_a"]) for f in r["faces"]],
            "corner": r["corner"]["status"],
            "seconds": time.time() - t0,
        }
        print(p, r["proved"], mpmath.nstr(k, 15), f"{time.time() - t0:.1f}s", flush=True)
    # corner majorant: dense grid
    worst = {}
    for p in (2.05, 2.5, 2.75, 2.7517, 2.7518):
        a = 1 / (p - 1)
        lv = 1 - np.concatenate([np.geomspace(1e-12, 0.05, 400), [0.0]])
        tv = np.concatenate(
            [np.linspace(0, 1, 2001), 0.5 + np.geomspace(1e-9, 0.1, 200), 0.5 - np.geomspace(1e-9, 0.1, 200)]
        )
        L, T = np.meshgrid(lv, tv)
        G = L + (1 - L) * T
        H = np.sqrt(T * (1 - T)) * (G * L ** (a - 1) + G**a)
        i = np.unravel_index(np.argmax(H), H.shape)
        # the true F1a ratio next to the corner at 50 digits, relative to a
        best = mpmath.mpf(0)
        for e in (1e-3, 1e-6, 1e-9, 1e-12):
            for t in np.linspace(0.3, 0.7, 41):
                rr, _, _ = ratio_mp("B2", [1 - e, 1], [1 - t, t], p, dps=50)
                best = max(best, rr * (p - 1))
        worst[str(p)] = {
            "max_H": float(H[i]),
            "at_l": float(L[i]),
            "at_t": float(T[i]),
            "max_F1a_ratio_over_a_near_corner": mpmath.nstr(best, 20),
        }
        print(p, worst[str(p)], flush=True)
    out["corner"] = worst
    json.dump(out, open(os.path.join(HERE, "b2_check_results.json"), "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
