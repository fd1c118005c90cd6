"""Audit item 3 (planted cases for the decider): b2_at_most_a with other corner splits must still refuse where
Lemma 2 is false (p above the independent crossing 2.7518375..., b2_check.py), and the corner majorant must be
refused where it is false (a < 1/3, p > 4: H > 1 next to l = 1), while it still proves at p = 2.7518.

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/b2_corner_sweep.py   (writes b2_corner_sweep_results.json)
"""

import json
import os
import time

from proofs_checks.stacey.sharp import b2_at_most_a

out = {}
for p, corner in [
    (2.7518, 0.01),
    (2.7518, 0.2),
    (2.75186, 0.01),
    (2.75186, 0.2),
    (2.7519, 0.01),
    (2.7519, 0.3),
    (2.76, 0.5),
    (4.5, 0.05),
    (4.5, 0.001),
    (6.0, 0.02),
]:
    t0 = time.time()
    r = b2_at_most_a(p, corner)
    out[f"p={p} corner={corner}"] = {
        "proved": r["proved"],
        "corner": r["corner"]["status"],
        "faces_below_a": [f["below_a"] for f in r["faces"]],
        "reason": r["reason"][:300],
        "seconds": time.time() - t0,
    }
    print(p, corner, r["proved"], r["corner"]["status"], [f["below_a"] for f in r["faces"]], flush=True)
json.dump(out, open(os.path.join(os.path.dirname(__file__), "b2_corner_sweep_results.json"), "w"), indent=1)
