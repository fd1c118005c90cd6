"""Wall time of ``lptheory report``, this code against a baseline commit, interleaved on the same machine.

Both commits are checked out into temporary worktrees (the candidate too, so that edits made while the benchmark
runs do not leak into it), each gets one warm-up report (numba compiles its kernels once per source path), then
the runs alternate A/B, B/A, A/B, ... per mode (``--jobs 1`` and ``--jobs 2`` by default). Every run is a fresh
process; its wall time, its CPU time (with its workers') and the machine's load average before and after are
logged. The result: the median of each side, the ratio of medians (candidate / baseline) per mode, the ratio of
each adjacent pair, the ratio of CPU medians, and whether the records (``claims.json``, every record, the run's
metadata and every ``seconds`` field aside: timings, at any depth, e.g. a kept decision's certificate) are identical
between the two sides, and if not, whether each side's runs are identical among themselves (exit 1 otherwise:
a run that is not deterministic; A and B differ where the candidate adds checks the baseline lacks).

    python benchmarks/bench_report.py --baseline 7f2e8e7 --repeats 3 [--quick] [--modes 1,2] [--json out.json]

The machine may be shared: the load average says how much; compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(*args, cwd=ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _worktree(commit: str, where: str) -> str:
    _git("worktree", "add", "--detach", "-f", where, commit)
    return where


def _run(tree: str, jobs: int, quick: bool, out: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree}
    cmd = [sys.executable, "-m", "lptheory", "report", "--jobs", str(jobs), "--out", out, "--quiet", "--seed", "0"]
    if quick:
        cmd.append("--quick")
    load0 = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)  # the report and its workers
    if proc.returncode != 0:
        raise SystemExit(f"report failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    with open(os.path.join(out, "claims.json"), encoding="utf-8") as fh:
        claims = _timeless(json.load(fh)["claims"])
    return {"wall": wall, "cpu": cpu, "load_before": load0, "load_after": os.getloadavg()[0], "claims": claims}


def _timeless(o):
    """``o`` without its ``seconds`` fields at any depth (timings differ between runs of the same code)."""
    if isinstance(o, dict):
        return {k: _timeless(v) for k, v in o.items() if k != "seconds"}
    if isinstance(o, list):
        return [_timeless(v) for v in o]
    return o


def _records_cell(s) -> str:
    """The records column: identical on both sides, or each side's runs identical among themselves (A and B
    differ: e.g. the candidate's added checks), or NOT (a side's runs differ: the run is not deterministic)."""
    if s["records_identical"]:
        return f"identical ({s['n_records']})"
    if s["records_stable"]:
        return f"A {s['n_records']}, B {s['n_records_B']}: each side's runs identical, A != B"
    return f"NOT identical between runs of one side (A {s['n_records']}, B {s['n_records_B']})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="7f2e8e7", help="commit A (default: 7f2e8e7, before issue 46)")
    ap.add_argument("--candidate", default="HEAD", help="commit B (default: HEAD)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per side and mode (default 3)")
    ap.add_argument("--modes", default="1,2", help="the --jobs values, comma-separated (default 1,2)")
    ap.add_argument("--quick", action="store_true", help="lptheory report --quick")
    ap.add_argument("--no-warmup", action="store_true", help="skip the warm-up report of each side")
    ap.add_argument("--json", default=None, help="write every run (walls, loads) and the summary to this file")
    args = ap.parse_args(argv)
    modes = [int(m) for m in args.modes.split(",") if m]
    if args.repeats < 1 or not modes or min(modes) < 1:
        raise SystemExit("--repeats >= 1 and --modes of integers >= 1")
    tmp = tempfile.mkdtemp(prefix="bench_report_")
    sides = {}
    try:
        sides["A"] = (_git("rev-parse", "--short", args.baseline), _worktree(args.baseline, os.path.join(tmp, "A")))
        sides["B"] = (_git("rev-parse", "--short", args.candidate), _worktree(args.candidate, os.path.join(tmp, "B")))
        print(f"A = {sides['A'][0]}, B = {sides['B'][0]}; {os.cpu_count()} cores; modes --jobs {modes}", flush=True)
        if not args.no_warmup:
            for s, (_, tree) in sides.items():
                r = _run(tree, max(modes), args.quick, os.path.join(tmp, f"warm{s}"))
                print(f"warm-up {s}: {r['wall']:.1f} s (load {r['load_before']:.1f})", flush=True)
        runs = []
        for i in range(args.repeats):
            for jobs in modes:
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                for s in order:
                    r = _run(sides[s][1], jobs, args.quick, os.path.join(tmp, f"out{s}{jobs}_{i}"))
                    r.update(side=s, jobs=jobs, repeat=i)
                    runs.append(r)
                    print(
                        f"repeat {i} --jobs {jobs} {s}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU (load "
                        f"{r['load_before']:.2f} -> "
                        f"{r['load_after']:.2f})",
                        flush=True,
                    )
        summary = []
        for jobs in modes:
            a = [r for r in runs if r["jobs"] == jobs and r["side"] == "A"]
            b = [r for r in runs if r["jobs"] == jobs and r["side"] == "B"]
            ma, mb = statistics.median(r["wall"] for r in a), statistics.median(r["wall"] for r in b)
            ca, cb = statistics.median(r["cpu"] for r in a), statistics.median(r["cpu"] for r in b)
            pairs = [rb["wall"] / ra["wall"] for ra, rb in zip(a, b)]
            same = all(r["claims"] == a[0]["claims"] for r in a + b)
            # each side's runs agree among themselves (the same code, any order: determinism); A and B may
            # differ where the candidate has checks the baseline lacks
            stable = all(r["claims"] == a[0]["claims"] for r in a) and all(r["claims"] == b[0]["claims"] for r in b)
            loads = [x for r in a + b for x in (r["load_before"], r["load_after"])]
            summary.append(
                {
                    "jobs": jobs,
                    "median_A": ma,
                    "median_B": mb,
                    "ratio": mb / ma,
                    "cpu_A": ca,
                    "cpu_B": cb,
                    "cpu_ratio": cb / ca,
                    "pair_ratios": pairs,
                    "records_identical": same,
                    "records_stable": stable,
                    "n_records": len(a[0]["claims"]),
                    "n_records_B": len(b[0]["claims"]),
                    "load_min": min(loads),
                    "load_max": max(loads),
                }
            )
        print("\n| --jobs | A median | B median | B / A (medians) | pair ratios | CPU B / A | load | records |")
        print("|---|---|---|---|---|---|---|---|")
        for s in summary:
            print(
                f"| {s['jobs']} | {s['median_A']:.1f} s | {s['median_B']:.1f} s | **{s['ratio']:.2f}x** | "
                f"{', '.join(f'{x:.2f}' for x in s['pair_ratios'])} | {s['cpu_ratio']:.2f}x | "
                f"{s['load_min']:.1f}-{s['load_max']:.1f} | "
                f"{_records_cell(s)} |"
            )
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                slim = [{k: v for k, v in r.items() if k != "claims"} for r in runs]
                json.dump({"A": sides["A"][0], "B": sides["B"][0], "runs": slim, "summary": summary}, fh, indent=1)
        return 0 if all(s["records_stable"] for s in summary) else 1
    finally:
        for _, tree in sides.values():
            subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
