"""Audit item 2: do the toolkit's face expressions, range forms and enclose_max really enclose the laws' ratios?

For each face of proofs_checks.stacey.sharp.two_point_faces (the objects under audit) the face point is mapped to
its two-point law by this audit's own reading of the face's name (not the toolkit's test helper):
  F1a (m, t): atoms (m^(p-1), 1), weight t on 1;     F1b (m, g): atoms (-m^(p-1), 1), mean g;
  F1c (l, g): atoms (l, 1), mean g;                  F2 (r, f): atoms (-1, r), mean r f;
and the law's ratio E phi / sd is computed at 50 digits by phi.py (the paper's terms, with signs). Checks:
  1. the face expression (sympy -> mpmath) equals the law's ratio at random interior points;
  2. random sub-boxes (log-uniform widths 1e-10..1, half of them snapped to an edge or corner of the face, where
     the range forms take over): the range form's ball and enclose_max's ``hi`` on the sub-box must be >= every
     sampled law's ratio in it (samples include the sub-box's corners, nudged inside where the law degenerates).

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/enclosure_check.py   (writes enclosure_check_results.json)
"""

import json
import os
import sys
import time

import mpmath
import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(__file__))
from phi import ratio_mp  # noqa: E402

from proofs_checks.ball import ball_backend, working_precision  # noqa: E402
from proofs_checks.bnb import _balls, enclose_max  # noqa: E402
from proofs_checks.stacey.sharp import two_point_faces  # noqa: E402

HERE = os.path.dirname(__file__)
TERM = {"thm1.B": "B", "thm1.B1": "B1", "thm1.B2": "B2"}


def law(name, pt, p):
    mp = mpmath.mpf
    if name.startswith("F1a"):
        return [mp(pt["m"]) ** (mp(p) - 1), mp(1)], [1 - mp(pt["t"]), mp(pt["t"])]
    if name.startswith(("F1b", "F1c")):
        lv = -(mp(pt["m"]) ** (mp(p) - 1)) if name.startswith("F1b") else mp(pt["l"])
        w1 = (mp(pt["g"]) - lv) / (1 - lv)
        return [lv, mp(1)], [1 - w1, w1]
    r = mp(pt["r"])
    g = r * mp(pt["f"])
    w1 = (g + 1) / (r + 1)
    return [mp(-1), r], [1 - w1, w1]


def law_ratio(term, name, pt, p):
    with mpmath.workdps(50):
        xs, ws = law(name, pt, p)
        if not (0 < ws[1] < 1) or xs[0] >= xs[1] or any(abs(v) > 1 for v in xs):
            return None
        return ratio_mp(TERM[term], xs, ws, p, dps=50)[0]


def main():
    rng = np.random.default_rng(7)
    num = ball_backend(None, 128)
    out, bad = {}, []
    for p in (2.05, 2.5, 3.0, 8.0, 50.0):
        for term in ("thm1.B", "thm1.B1", "thm1.B2"):
            t0 = time.time()
            for name, e, box, rf in two_point_faces(term, p):
                syms = {s.name: s for s in e.free_symbols}
                fe = sp.lambdify([syms[k] for k in box], e, "mpmath")
                maxdiff, n_in, n_sub, worst_margin = 0.0, 0, 0, None
                for _ in range(8):  # 1. expression = law ratio
                    pt = {
                        k: float(rng.uniform(lo + 0.01 * (hi - lo), hi - 0.01 * (hi - lo)))
                        for k, (lo, hi) in box.items()
                    }
                    v = law_ratio(term, name, pt, p)
                    if v is None:
                        continue
                    with mpmath.workdps(50):
                        ev = fe(*[mpmath.mpf(pt[k]) for k in box])
                    maxdiff = max(maxdiff, float(abs(ev - v) / max(abs(v), mpmath.mpf(1e-30))))
                    n_in += 1
                for j in range(24):  # 2. sub-boxes
                    sub = {}
                    for k, (lo, hi) in box.items():
                        w = (hi - lo) * 10.0 ** rng.uniform(-10, 0)
                        mode = rng.integers(3) if j % 2 == 0 else 2
                        a0 = lo if mode == 0 else hi - w if mode == 1 else rng.uniform(lo, hi - w)
                        sub[k] = (float(a0), float(min(a0 + w, hi)))
                    with working_precision(num, 128):
                        try:
                            ball = rf(_balls(num, sub), num)
                            rf_hi = float(num.upper(ball)) if num.finite(ball) else float("inf")
                        except Exception:  # noqa: BLE001 - a range form that raises encloses nothing: not a failure
                            rf_hi = float("inf")
                    em = enclose_max(e, sub, range_form=rf, rtol=1e-3, max_boxes=40)
                    hi = em["hi"]
                    samples = [{k: float(rng.uniform(*sub[k])) for k in sub} for _ in range(12)]
                    samples += [{k: sub[k][c >> i & 1] for i, k in enumerate(sub)} for c in range(4)]
                    for s in samples:
                        v = law_ratio(term, name, s, p)
                        if v is None:
                            continue
                        n_sub += 1
                        m = min(hi, rf_hi) - float(v)
                        worst_margin = m if worst_margin is None else min(worst_margin, m)
                        if v > mpmath.mpf(hi) or v > mpmath.mpf(rf_hi):
                            bad.append(
                                {
                                    "term": term,
                                    "p": p,
                                    "face": name,
                                    "sub": sub,
                                    "pt": s,
                                    "value": str(v),
                                    "enclose_max_hi": hi,
                                    "range_form_hi": rf_hi,
                                }
                            )
                out[f"{term} p={p} {name[:3]}"] = {
                    "expr_vs_law_max_rel_diff": maxdiff,
                    "interior_points": n_in,
                    "sampled_in_subboxes": n_sub,
                    "worst_margin": worst_margin,
                }
            print(term, p, f"{time.time() - t0:.0f}s", len(bad), flush=True)
    out["violations"] = bad
    json.dump(out, open(os.path.join(HERE, "enclosure_check_results.json"), "w"), indent=1, default=str)
    print("violations:", len(bad))


if __name__ == "__main__":
    main()
