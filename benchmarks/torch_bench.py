"""What the torch benchmarks (``bench_torch_optim.py``, ``bench_torch_loop.py``, ``bench_muon.py``) share: the
``--threads`` flag with the check of their repeat count, and the lines of their results. Imported by them as a
sibling module (``python benchmarks/bench_X.py`` puts this folder first on ``sys.path``)."""

from __future__ import annotations

import os

import torch


def parse(ap, argv, count: str, minimum: int):
    """``ap``'s arguments with ``--threads`` (``torch.set_num_threads``, set here when given); SystemExit when
    the repeat count ``--<count>`` is below ``minimum``."""
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = ap.parse_args(argv)
    if getattr(args, count) < minimum:
        raise SystemExit(f"--{count} must be >= {minimum}")
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def load_average() -> str:
    """The machine's load averages (1, 5, 15 minutes), as the results' header states them."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def print_best(header: str, best: dict, warm: dict, width: int, digits: int) -> None:
    """The header (the load average appended) and one line per contender: its best time in ms and its first
    step in s."""
    print(f"{header}, load average {load_average()}")
    for k, v in best.items():
        print(f"  {k:<{width}} {v:9.{digits}f} ms   (first step {warm[k]:6.2f} s)")
