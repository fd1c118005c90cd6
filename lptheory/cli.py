"""The ``lptheory`` command line. The one place that may reach every layer; it imports lazily."""

from __future__ import annotations

import argparse
import sys


def _cmd_info(args) -> int:
    import platform

    import numpy

    import lptheory

    print(f"lptheory {lptheory.__version__}")
    print(f"python   {platform.python_version()}")
    print(f"numpy    {numpy.__version__}")
    try:
        import torch

        cuda = torch.cuda.is_available()
        print(f"torch    {torch.__version__} (cuda available: {cuda})")
    except ImportError:
        print("torch    not installed (pip install 'lptheory[torch]')")
    from lptheory.optimizers import OPTIMIZERS

    print("optimizers: " + ", ".join(OPTIMIZERS))
    return 0


def _cmd_demo(args) -> int:
    """Run an optimizer on a small ill-conditioned quadratic and print its loss: a smoke test."""
    import numpy as np

    from lptheory import lp_norm
    from lptheory.optimizers import make

    hyper = {"lr": args.lr}
    if args.optimizer in {"lp-descent", "stacey-p2", "stacey-pp"}:
        hyper["p"] = args.p
    opt = make(args.optimizer, **hyper)
    rng = np.random.default_rng(np.random.SeedSequence(args.seed))
    d = args.d
    h = np.logspace(0, -3, d)  # diagonal curvatures
    theta = rng.standard_normal((args.replicates, d))
    state = opt.init(theta)
    print(f"{opt!r}")
    print(f"{'step':>6} {'mean f':>14} {'mean ||grad||_2':>16}")
    for t in range(args.steps + 1):
        g = h * theta
        if t % max(1, args.steps // 10) == 0:
            f = 0.5 * np.sum(h * theta**2, axis=-1)
            print(f"{t:>6} {f.mean():>14.6e} {lp_norm(g, 2).mean():>16.6e}")
        if t < args.steps:
            theta, state = opt.step(theta, g, state, donate=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from lptheory.optimizers import OPTIMIZERS

    parser = argparse.ArgumentParser(
        prog="lptheory",
        description="Numerical theory verification for l_p stochastic optimization (Stacey, ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_info = sub.add_parser("info", help="versions, backends and the available optimizers")
    p_info.set_defaults(func=_cmd_info)
    p_demo = sub.add_parser("demo", help="step an optimizer on a small quadratic (a smoke test)")
    p_demo.add_argument("--optimizer", default="stacey-pp", choices=sorted(OPTIMIZERS))
    p_demo.add_argument("--p", type=float, default=3.0, help="l_p exponent (l_p optimizers only)")
    p_demo.add_argument("--lr", type=float, default=1e-2)
    p_demo.add_argument("--d", type=int, default=1000)
    p_demo.add_argument("--replicates", type=int, default=4)
    p_demo.add_argument("--steps", type=int, default=200)
    p_demo.add_argument("--seed", type=int, default=0)
    p_demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"lptheory: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
