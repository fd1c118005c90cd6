"""Writes the simulator snapshot that tests/test_simulate.py::test_simulator_bits_snapshot compares against.

    python tests/snapshots/make_simulate_snapshot.py [REPO] > tests/snapshots/simulate_bits.json

Every (problem, noise, batch, optimizer, d) cell runs 20 steps of 3 replicates from seed 7 and records
the sha256 of its parameter snapshots (every 5 steps), with their sum and sum of squares for a
tolerance comparison on machines whose numpy dispatches transcendental functions differently.
REPO (default: this checkout) lets the same script run against an older checkout of the project.
"""

import hashlib
import json
import platform
import sys

import numpy as np

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else ".")

from lptheory.optimizers import AdamW, LpDescent, StaceyP2, StaceyPP  # noqa: E402
from lptheory.simulate import simulate  # noqa: E402
from synthetic.noise import make_noise  # noqa: E402
from synthetic.oracle import GradientOracle  # noqa: E402
from synthetic.problems import make_problem  # noqa: E402


def optimizers():
    return (
        StaceyPP(p=3.0, lr=0.01, alpha=0.01, tau=0.1),
        LpDescent(p=4.0, lr=0.01),
        AdamW(lr=0.01),
        StaceyP2(p=2.7, lr=0.01, alpha=0.01, tau=0.1),
    )


def cells():
    for d in (32, 30):
        for pname in ("separable", "quadratic-diagonal", "ridge", "logsumexp"):
            for noise in ("rademacher", "gaussian", "two-point", "uniform", "student-t"):
                for batch in (1, 3):
                    for oi, opt in enumerate(optimizers()):
                        if d == 30 and (oi > 0 or batch > 1):
                            continue
                        yield f"{pname}|{noise}|{batch}|{oi}|{d}", pname, noise, batch, opt, d


def run_cell(pname, noise, batch, opt, d):
    pr = make_problem(pname, d=d, seed=1)
    orc = GradientOracle(pr, make_noise(noise, np.full(d, 0.2)), batch=batch)
    tr = simulate(opt, pr, orc, 20, 3, seed=7, snapshots=True, record_every=5)
    snap = np.ascontiguousarray(tr.snapshots, dtype=np.float64)
    return {
        "sha256": hashlib.sha256(snap.tobytes()).hexdigest(),
        "sum": float(snap.sum()),
        "sumsq": float((snap * snap).sum()),
    }


def cpu_features() -> list[str]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as f
    return sorted(k for k, v in f.items() if v)


if __name__ == "__main__":
    out = {
        "numpy": np.__version__,
        "machine": platform.machine(),
        "cpu_features": cpu_features(),
        "cells": {key: run_cell(*args) for key, *args in cells()},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
