"""The toolkit's certified upper ends at the audit's extra p (2.75, 2.7518, 2.7519, 2.76): two_point_upper for
B, B1 and B2 (target 0: every face enclosed to rtol, no early stop), and b2_at_most_a for B2.

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/toolkit_extra.py > benchmarks/audit_sharp/toolkit_extra.json
"""

import json

from proofs_checks.stacey.sharp import b2_at_most_a, two_point_upper

out = {}
for p in (2.75, 2.7518, 2.7519, 2.76):
    for term in ("thm1.B", "thm1.B1", "thm1.B2"):
        tp = two_point_upper(term, p, 0.0)
        out[f"{term} p={p}"] = {
            "two_point_upper": tp["upper"],
            "certified": tp["certified"],
            "faces": [(f["face"][:3], f["lo"], f["hi"]) for f in tp["faces"]],
        }
    r = b2_at_most_a(p)
    out[f"thm1.B2 p={p}"]["b2_at_most_a"] = {"proved": r["proved"], "a": r["a"]}
print(json.dumps(out, indent=1))
