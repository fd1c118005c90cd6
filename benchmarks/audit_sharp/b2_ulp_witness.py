"""The one finding: b2_at_most_a reports the upper end of C*(p) for Lemma 2 as a = 1/(p-1) rounded DOWN to a
float (``a_down``), and sharp_constant stores that float as the certified ``upper``. The supremum is a itself
(approached by X in {1 - d, 1}, weight 1/2, d -> 0: the ratio tends to a), so laws exist whose ratio lies strictly
between the stored float upper end and a: the stored bracket [lower, upper] misses C*(p) by < 1 ulp. The proof's
mathematical content (C* <= a exactly) is unaffected; the float is rounded the wrong way (an upper end must be
rounded up).

    PYTHONPATH=$PWD python3 benchmarks/audit_sharp/b2_ulp_witness.py   (writes b2_ulp_witness_results.json)
"""

import json
import os
import sys

import mpmath

sys.path.insert(0, os.path.dirname(__file__))
from phi import ratio_mp  # noqa: E402

from proofs_checks.stacey.sharp import b2_at_most_a  # noqa: E402

out = {}
for p in (2.05, 2.5, 2.75, 2.7518):
    r = b2_at_most_a(p)
    up = r["a"]  # what sharp_constant stores as the certified upper end when proved
    with mpmath.workdps(60):
        a = 1 / (mpmath.mpf(p) - 1)  # the float p, exactly
        d = mpmath.mpf(10) ** -25
        xs, ws = [1 - d, mpmath.mpf(1)], [mpmath.mpf(1) / 2, mpmath.mpf(1) / 2]
        v, g, sd = ratio_mp("B2", xs, ws, p, dps=120)
        out[str(p)] = {
            "proved": r["proved"],
            "stored_upper": repr(up),
            "a_exact_50": mpmath.nstr(a, 50),
            "witness_atoms": ["1 - 10^-25", "1"],
            "witness_weights": ["1/2", "1/2"],
            "witness_g": mpmath.nstr(g, 40),
            "witness_sd": mpmath.nstr(sd, 10),
            "witness_ratio_50": mpmath.nstr(v, 50),
            "ratio_minus_stored_upper": mpmath.nstr(v - mpmath.mpf(up), 5),
            "ratio_minus_a": mpmath.nstr(v - a, 5),
            "exceeds_stored_upper": bool(v > mpmath.mpf(up)),
        }
        print(p, out[str(p)], flush=True)
json.dump(out, open(os.path.join(os.path.dirname(__file__), "b2_ulp_witness_results.json"), "w"), indent=1)
