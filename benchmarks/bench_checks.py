"""Wall time of the Theorem 1 checks as a user runs them (targets: each at most 60 s on the 2-core
machine; ``--quick`` about 20 s, used by the tests):

    lptheory check lemmas --p 4
    lptheory check theorem1 --p 3 --quick

Runs each command ``--repeats`` times in a fresh process (imports included) and prints the median.

    python benchmarks/bench_checks.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["check", "lemmas", "--p", "4"],
    ["check", "lemmas", "--p", "4", "--quick"],
    ["check", "theorem1", "--p", "3", "--quick"],
    ["check", "theorem1", "--p", "3"],
    ["check", "lemmas"],
    ["check", "acceleration"],
]
TARGET_S = 60.0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"{'command':<48} {'median s':>9} {'min s':>7} {'max s':>7}  target")
    for cmd in COMMANDS:
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "lptheory.cli", *cmd, "--quiet"], check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        quick = "--quick" in cmd
        target = 20.0 if quick else (90.0 if "acceleration" in cmd else TARGET_S)
        verdict = "met" if med <= target else "NOT met"
        line = "lptheory " + " ".join(cmd)
        print(f"{line:<48} {med:>9.1f} {min(times):>7.1f} {max(times):>7.1f}  <= {target:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
