"""Wall time of the checks as a user runs them, each command in a fresh process (imports included),
``--repeats`` times, median wall time printed with the median CPU time (user + system of the
command's process) and the machine's load average. Targets (issue "Fused CPU
kernels"): ``lptheory check lemmas --p 4`` <= 5 s; ``lptheory report`` (defaults, serial: ``--jobs 1``)
<= 60 s, with the default (every core) recorded beside it.

    python benchmarks/bench_checks.py [--repeats 3] [--report]

``--report`` adds the two full reports (about 2 and 3 minutes each on the 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [
    (["check", "lemmas", "--p", "4", "--jobs", "1"], 5.0),
    (["check", "lemmas", "--p", "4"], 5.0),
    (["check", "lemmas", "--p", "4", "--quick"], 20.0),
    (["check", "theorem1", "--p", "3", "--quick"], 20.0),
    (["check", "theorem1", "--p", "3"], 60.0),
    (["check", "lemmas"], None),
    (["check", "lemmas", "--jobs", "1"], None),
    (["check", "corrections", "--jobs", "1"], None),
    (["check", "acceleration", "--jobs", "1"], None),
    (["check", "smoothness", "--jobs", "1"], None),
]
REPORTS = [
    (["report", "--jobs", "1", "--out", "{tmp}/serial"], 60.0),
    (["report", "--out", "{tmp}/default"], None),
]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--report", action="store_true", help="also time the full report, serial and default")
    args = ap.parse_args(argv)
    print(f"{os.cpu_count()} cores; load average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'command':<52} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>8}  target")
    with tempfile.TemporaryDirectory() as tmp:
        for cmd, target in COMMANDS + (REPORTS if args.report else []):
            cmd = [c.format(tmp=tmp) for c in cmd]
            times, cpus = [], []
            for _ in range(args.repeats if cmd[0] == "check" else 1):
                t0 = time.perf_counter()
                c0 = os.times()
                subprocess.run([sys.executable, "-m", "lptheory", *cmd, "--quiet"], check=True, capture_output=True)
                c1 = os.times()
                times.append(time.perf_counter() - t0)
                cpus.append((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system))
            med = statistics.median(times)
            verdict = "-" if target is None else f"<= {target:.0f} s: {'met' if med <= target else 'NOT met'}"
            line = "lptheory " + " ".join(c for c in cmd if not c.startswith(tmp))
            print(
                f"{line:<52} {med:>9.1f} {min(times):>7.1f} {max(times):>7.1f} {statistics.median(cpus):>8.1f}  "
                f"{verdict}",
                flush=True,
            )
    print(f"load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
