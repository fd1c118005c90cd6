"""CPU time of drawing a report's figures, this code against a baseline commit, interleaved on the same machine.

Every check's figures (:func:`figures.figures_for`) and the pack's section figures are drawn from a report's
``claims.json`` (``--claims DIR``), in one fresh process per run, as a serial report draws them; the baseline
commit is exported (``git archive``) to a temporary folder. Runs alternate A/B, B/A, ...; each logs its figure CPU
(process time of the drawing alone) and the load average. The result: the median of each side, their ratio
(candidate / baseline), each pair's ratio (the runs of one repeat, back to back) and their median, and the files
compared between the two sides' last runs: PNG files by their decoded RGBA
pixels, SVG files byte for byte (``SOURCE_DATE_EPOCH=0`` and a fixed ``svg.hashsalt``).

    python benchmarks/bench_figures.py --claims /tmp/rep --baseline f03cec1 --repeats 5

The machine may be shared: the load average says how much; compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(claims_dir: str, out: str) -> None:
    """Draw every figure of ``claims_dir``'s records into ``out``; print ``{"cpu": seconds}`` as JSON."""
    import time

    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "bench_figures"
    from figures import figures_for
    from figures.report import _section_figures
    from proofs_checks.packs import load

    pack = load(None)
    with open(os.path.join(claims_dir, "claims.json"), encoding="utf-8") as fh:
        claims = json.load(fh)["claims"]
    by_check: dict = {}
    for c in claims:
        c = dict(c)
        by_check.setdefault(c.pop("check"), []).append(c)
    t0 = time.process_time()
    for check, recs in by_check.items():
        figures_for(pack, check, recs, out)
    _section_figures(pack, claims, out, lambda what, exc: print(f"{what}: {exc}", file=sys.stderr))
    print(json.dumps({"cpu": time.process_time() - t0}))


def _run(tree: str, claims_dir: str, out: str) -> float:
    env = {**os.environ, "PYTHONPATH": tree, "SOURCE_DATE_EPOCH": "0"}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--claims", claims_dir, "--out", out]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"drawing failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["cpu"]


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _compare(a: str, b: str) -> list[str]:
    """The files that differ between folders ``a`` and ``b`` (PNG: decoded pixels; SVG: bytes), and those only
    one has."""
    import numpy as np
    from PIL import Image

    names = lambda d: {f for f in os.listdir(d) if f.endswith((".png", ".svg"))}  # noqa: E731
    fa, fb = names(a), names(b)
    out = [f"{f} (one side only)" for f in sorted(fa ^ fb)]
    for f in sorted(fa & fb):
        pa, pb = os.path.join(a, f), os.path.join(b, f)
        if f.endswith(".png"):
            pixels = [np.asarray(Image.open(p).convert("RGBA")) for p in (pa, pb)]
            same = np.array_equal(*pixels)
        else:
            with open(pa, "rb") as x, open(pb, "rb") as y:
                same = x.read() == y.read()
        if not same:
            out.append(f)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--claims", required=True, help="a report's folder (its claims.json is read)")
    ap.add_argument("--baseline", default=None, help="commit to compare with (none: this code alone)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1 (got {args.repeats})")
    claims = os.path.abspath(args.claims)
    if args.child:
        _child(claims, args.out)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_figures_") as tmp:
        sides = {"candidate": ROOT}
        if args.baseline:
            base = os.path.join(tmp, "baseline")
            os.makedirs(base)
            archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
            sides = {"baseline": base, "candidate": ROOT}
        times: dict = {k: [] for k in sides}
        order = list(sides)
        for i in range(args.repeats):
            for name in order if i % 2 == 0 else order[::-1]:
                load = os.getloadavg()[0]
                t = _run(sides[name], claims, os.path.join(tmp, f"out_{name}"))
                times[name].append(t)
                print(f"run {i + 1} {name}: figure CPU {t:.2f} s (load {load:.2f})", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in med.items():
            print(f"{k}: median figure CPU {v:.2f} s over {len(times[k])} runs")
        if args.baseline:
            print(f"ratio candidate / baseline: {med['candidate'] / med['baseline']:.3f}")
            # each repeat's pair (run back to back): on a shared host the pairs' ratios say more than the medians
            pairs = [c / b for b, c in zip(times["baseline"], times["candidate"])]
            print("pair ratios: " + ", ".join(f"{r:.3f}" for r in pairs) + f" (median {statistics.median(pairs):.3f})")
            a, b = os.path.join(tmp, "out_baseline"), os.path.join(tmp, "out_candidate")
            diff = _compare(a, b)
            print("files: " + ("the same (PNG pixels, SVG bytes)" if not diff else "differ: " + ", ".join(diff)))
            if not diff:  # the PNG files' bytes too (the same pixels, the same encoder settings: the same bytes)
                pngs = [f for f in sorted(os.listdir(a)) if f.endswith(".png")]
                other = [f for f in pngs if _read(os.path.join(a, f)) != _read(os.path.join(b, f))]
                print(
                    f"PNG bytes: {len(pngs) - len(other)} of {len(pngs)} files identical"
                    + (f" ({', '.join(other)} not)" if other else "")
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
