"""Dump the toolkit's claimed sharp-constant brackets (proofs_checks.stacey.sharp.sharp_constant) to JSON, so the
independent searches in this folder can be compared with them. Run from the clone root:
    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/toolkit_values.py > benchmarks/audit_sharp/toolkit_values.json
"""

import json
import sys
import time

from proofs_checks.stacey.sharp import SHARP_P, TERMS, sharp_constant

out = {}
for p in SHARP_P:
    for term in TERMS:
        t0 = time.time()
        s = sharp_constant(term, float(p))
        out[f"{term} p={p}"] = {
            "lower": s["lower"],
            "upper": s["upper"],
            "upper_from": s["upper_from"],
            "evidence": s["evidence"],
            "law": s["law"],
            "seconds": time.time() - t0,
        }
        print(term, p, s["lower"], s["upper"], s["evidence"], f"{time.time() - t0:.1f}s", file=sys.stderr, flush=True)
print(json.dumps(out, indent=1, default=str))
