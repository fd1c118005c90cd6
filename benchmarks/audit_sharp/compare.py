"""Collect the audit's searches (search*.json, edges_results.json, lp_scan_results.json) against the toolkit's
certified brackets (toolkit_values.json; toolkit_extra.json at the extra p) and print the table of AUDIT.md.

A claim is BROKEN when a law's 50-digit ratio exceeds the certified upper end; "confirmed" otherwise, with the
relative gap (upper - best) / upper. Also checks the symmetry phi(x; g) = phi(-x; -g) exactly at random points.

    python3 benchmarks/audit_sharp/compare.py
"""

import json
import os
import sys

import mpmath
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from phi import phi_mp, ratio_mp  # noqa: E402

HERE = os.path.dirname(__file__)


def load(name):
    path = os.path.join(HERE, name)
    return json.load(open(path)) if os.path.exists(path) else {}


def main():
    tk, extra = load("toolkit_values.json"), load("toolkit_extra.json")
    sources = {
        "search": load("search_results.json"),
        "deep": load("search_deep_results.json"),
        "edges": load("edges_results.json"),
        "lp": load("lp_scan_results.json"),
        "ulp": {f"B2 p={k}": v for k, v in load("b2_ulp_witness_results.json").items()},
    }
    mpmath.mp.dps = 50
    rows, broken = [], []
    for key in sorted(set(sources["search"]) | set(sources["edges"]), key=lambda k: (float(k.split("=")[1]), k)):
        term, p = key.split(" p=")
        p = float(p)
        cands = []
        if key in sources["search"]:
            cands.append((mpmath.mpf(sources["search"][key]["ratio_50"]), "search:" + sources["search"][key]["family"]))
        if key in sources["deep"]:
            cands.append((mpmath.mpf(sources["deep"][key]["ratio_50"]), "deep:" + sources["deep"][key]["family"]))
        for edge, v in sources["edges"].get(key, {}).items():
            cands.append((mpmath.mpf(v["ratio_50"]), "edge:" + edge))
        if key in sources["ulp"]:
            cands.append((mpmath.mpf(sources["ulp"][key]["witness_ratio_50"]), "ulp-witness"))
        if key in sources["lp"]:
            cands.append((mpmath.mpf(sources["lp"][key]["polished_ratio_50"]), "lp"))
        best, how = max(cands)
        tkey = f"thm1.{term} p={p}"
        if tkey in tk:
            lo, up = tk[tkey]["lower"], tk[tkey]["upper"]
        elif tkey in extra:
            e = extra[tkey]
            lo = None
            up = e["two_point_upper"]
            if term == "B2" and e.get("b2_at_most_a", {}).get("proved"):
                up = e["b2_at_most_a"]["a"]
        else:
            lo = up = None
        gap = float((mpmath.mpf(up) - best) / mpmath.mpf(up)) if up is not None and np.isfinite(up) else None
        verdict = "BROKEN" if gap is not None and gap < 0 else "confirmed" if gap is not None else "no upper"
        if verdict == "BROKEN":
            broken.append(key)
        rows.append((term, p, lo, up, mpmath.nstr(best, 17), how, gap, verdict))
    print(
        f"{'term':4} {'p':>7} {'toolkit lower':>20} {'toolkit upper':>20} {'audit best (50 dig)':>20} {'source':>14}"
        f" {'(up-best)/up':>12} verdict"
    )
    for term, p, lo, up, best, how, gap, verdict in rows:
        los = f"{lo:.16g}" if lo is not None else "-"
        ups = f"{up:.16g}" if up is not None else "-"
        gs = f"{gap:.2e}" if gap is not None else "-"
        print(f"{term:4} {p:>7} {los:>20} {ups:>20} {best:>20} {how:>14} {gs:>12} {verdict}")
    rng = np.random.default_rng(3)
    worst = 0
    for term in ("B", "B1", "B2"):
        for _ in range(300):
            x, g, p = mpmath.mpf(rng.uniform(-1, 1)), mpmath.mpf(rng.uniform(-1, 1)), float(rng.uniform(2, 60))
            if rng.random() < 0.2:
                x = mpmath.mpf(0)
            worst = max(worst, abs(phi_mp(term, x, g, p) - phi_mp(term, -x, -g, p)))
    print("symmetry phi(x; g) - phi(-x; -g): max |diff| =", worst)
    print("BROKEN:", broken or "none")


if __name__ == "__main__":
    main()


def recheck_toolkit_laws():
    """The toolkit's lower-end laws (toolkit_values.json) re-evaluated by this audit's phi at 120 digits."""
    tk = load("toolkit_values.json")
    worst = 0.0
    for key, v in tk.items():
        term = key.split(" ")[0].replace("thm1.", "")
        p = float(key.split("p=")[1])
        law = v["law"]
        r = ratio_mp(term, law["atoms"], law["weights"], p, dps=120)[0]  # atoms 1e-40 apart need > 50 digits
        worst = max(worst, float(abs(r - mpmath.mpf(law["ratio"])) / abs(r)))
        assert r >= mpmath.mpf(v["lower"]) * (1 - 1e-15), (key, r, v["lower"])
    print(f"toolkit lower-end laws re-checked by the audit's phi: {len(tk)} laws, max rel diff {worst:.1e}")


if __name__ == "__main__":
    recheck_toolkit_laws()
