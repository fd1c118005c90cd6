"""Verdict snapshots: a pack's verdicts at one seed, stored as JSON and compared as a reviewable diff.

A snapshot holds, per check, each record's ``[id, setting, status, ratio]`` in order. The test-suite
holds a run against it (same statuses, ratios within ``RTOL``); after a change made on purpose, it is
regenerated with one command and the diff is reviewed before committing::

    python -m proofs_checks.snapshot                      # the default pack, --quick, seed 0: print the diff
    python -m proofs_checks.snapshot --write              # ... and rewrite tests/snapshots/<pack>_quick_seed0.json
    python -m proofs_checks.snapshot --pack my_claims.py --out snap.json --write
    python -m proofs_checks.snapshot --from report/claims.json --write   # from a report already run

Exit status: 0 when the run matches the stored snapshot (or ``--write`` wrote it), 1 when it differs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from .packs import DEFAULT_PACK, load
from .records import setting_text
from .runner import plan, run_checks

__all__ = ["RTOL", "take", "compare", "dumps", "by_check", "default_path", "main"]

RTOL = 1e-12  # ratios agree within this relative tolerance


def default_path(pack_name: str, seed: int = 0, quick: bool = True) -> str:
    """``tests/snapshots/<pack>_<quick|full>_seed<seed>.json`` under the repository root."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = f"{pack_name}_{'quick' if quick else 'full'}_seed{seed}.json"
    return os.path.join(root, "tests", "snapshots", name)


def take(records_by_check: dict, *, pack: str, seed: int, quick: bool) -> dict:
    """The snapshot of ``{check: [record dicts]}`` (a runner's result or a report's claims by check)."""
    checks = {
        c: [[r["id"], setting_text(r["params"], r.get("show")), r["status"], _ratio(r.get("ratio"))] for r in recs]
        for c, recs in records_by_check.items()
    }
    return {
        "about": "verdicts of a pack's checks: per check, each record's [id, setting, status, ratio] in order; "
        "regenerate with `python -m proofs_checks.snapshot --write` and review the diff",
        "pack": pack,
        "seed": seed,
        "quick": quick,
        "checks": checks,
    }


def dumps(snap: dict) -> str:
    """The snapshot as JSON with one record per line (a change shows as one changed line in a diff)."""
    head = {k: v for k, v in snap.items() if k != "checks"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "checks": {']
    checks = list(snap["checks"].items())
    for i, (c, rows) in enumerate(checks):
        lines.append(f"  {json.dumps(c)}: [")
        lines += [f"   {json.dumps(r)}" + ("," if j < len(rows) - 1 else "") for j, r in enumerate(rows)]
        lines.append("  ]" + ("," if i < len(checks) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def _ratio(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def by_check(claims: list[dict]) -> dict:
    """Records with a ``check`` field (claims.json) grouped by check, in order."""
    out: dict = {}
    for r in claims:
        out.setdefault(r["check"], []).append(r)
    return out


def compare(old: dict, new: dict, rtol: float = RTOL) -> list[str]:
    """The differences between two snapshots, one line each (empty when they agree): checks added or
    removed, record counts, ids, statuses and ratios (beyond ``rtol``). Old snapshots of [id, status]
    rows compare on those two fields."""
    lines = []
    for c in sorted(set(old["checks"]) | set(new["checks"])):
        if c not in new["checks"]:
            lines.append(f"- check {c}: removed")
            continue
        if c not in old["checks"]:
            lines.append(f"+ check {c}: added ({len(new['checks'][c])} records)")
            continue
        a, b = old["checks"][c], new["checks"][c]
        if len(a) != len(b):
            lines.append(f"~ {c}: {len(a)} records -> {len(b)}")
        for i, (ra, rb) in enumerate(zip(a, b)):
            ida, sta = ra[0], ra[-2] if len(ra) == 4 else ra[1]
            idb, stb = rb[0], rb[-2] if len(rb) == 4 else rb[1]
            where = f"{c}[{i}] {idb}" + (f" ({rb[1]})" if len(rb) == 4 and rb[1] else "")
            if ida != idb:
                lines.append(f"~ {c}[{i}]: id {ida} -> {idb}")
            elif sta != stb:
                lines.append(f"~ {where}: {sta} -> {stb}")
            elif len(ra) == 4 and len(rb) == 4:
                x, y = ra[3], rb[3]
                if (x is None) != (y is None) or (x is not None and abs(x - y) > rtol * max(1.0, abs(x), abs(y))):
                    lines.append(f"~ {where}: ratio {x} -> {y}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m proofs_checks.snapshot",
        description="Run a pack's checks and compare their verdicts with the stored snapshot (print the diff); "
        "--write stores the new one.",
    )
    ap.add_argument("--pack", default=DEFAULT_PACK, help=f"pack name, claim file or module (default: {DEFAULT_PACK})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="full budgets (default: --quick)")
    ap.add_argument("--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 8)))
    ap.add_argument("--out", default=None, help="snapshot file (default: tests/snapshots/<pack>_quick_seed<S>.json)")
    ap.add_argument("--write", action="store_true", help="write the new snapshot")
    ap.add_argument(
        "--from",
        dest="source",
        default=None,
        help="claims.json of a report already run with the same pack, seed and budget (instead of running)",
    )
    args = ap.parse_args(argv)
    pack = load(args.pack)
    quick = not args.full
    path = args.out or default_path(pack.name, args.seed, quick)
    if args.source:
        from .records_io import RecordsFileError, read_document

        try:  # every field validated: a malformed file is named, with its key, not a traceback
            doc = read_document(args.source, "--from")
        except RecordsFileError as exc:
            print(f"python -m proofs_checks.snapshot: error: {exc}", file=sys.stderr)
            return 2
        meta = doc.get("meta", {})
        if meta.get("seed") != args.seed or bool(meta.get("quick")) != quick:
            print(f"{args.source}: seed {meta.get('seed')}, quick {meta.get('quick')}: not this snapshot's run")
            return 2
        results = by_check(doc["claims"])
    else:
        results, _ = run_checks(pack, plan(pack), seed=args.seed, quick=quick, jobs=args.jobs)
    new = take(results, pack=pack.target, seed=args.seed, quick=quick)
    old = None
    if os.path.exists(path):
        with open(path) as fh:
            old = json.load(fh)
    diff = compare(old, new) if old is not None else [f"+ {path}: new snapshot"]
    print("\n".join(diff) if diff else f"{path}: no change")
    if args.write:
        with open(path, "w") as fh:
            fh.write(dumps(new))
        print(f"wrote {path}")
        return 0
    return 1 if diff else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
