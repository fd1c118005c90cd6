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


_HYPER = ("p", "lr", "alpha", "tau", "beta1", "beta2", "eps", "weight_decay", "eps_mode", "momentum")


def _cmd_run(args) -> int:
    import dataclasses
    import json
    import os

    from figures.runs import plot_runs
    from lptheory.optimizers import OPTIMIZERS
    from lptheory.simulate import simulate
    from synthetic.noise import make_noise, sigma_profile
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    problem = make_problem(args.problem, d=args.d, seed=args.problem_seed)
    sigma = sigma_profile(args.sigma_profile, problem.d, args.sigma, seed=args.problem_seed)
    noise = make_noise(args.noise, sigma)
    batch = args.batch
    if args.batch_schedule == "T":
        batch = lambda t, T=args.steps: T  # noqa: E731  (Theorem 1's n_t = T)
    oracle = GradientOracle(problem, noise, batch)
    names = args.optimizer or ["stacey-pp"]
    traces = {}
    for name in names:
        cls = OPTIMIZERS[name]
        fields = {f.name for f in dataclasses.fields(cls)}
        hyper = {k: getattr(args, k) for k in _HYPER if k in fields and getattr(args, k) is not None}
        opt = cls(**hyper)
        if not args.quiet:
            print(f"running {opt!r}", file=sys.stderr)
        traces[name] = simulate(
            opt,
            problem,
            oracle,
            args.steps,
            args.replicates,
            args.seed,
            record_every=args.record_every,
            p_measure=args.p_measure or args.p,
            on_nonfinite="record",
            progress=not args.quiet,
            backend=args.backend,
            device=args.device,
            dtype=args.dtype,
        )
    pm = args.p_measure or args.p
    print(
        f"problem {args.problem} (d={problem.d}), noise {args.noise} (||sigma||_1={sigma.sum():.4g}), "
        f"batch {args.batch_schedule if args.batch_schedule == 'T' else args.batch}, T={args.steps}, "
        f"R={args.replicates}, seed={args.seed}; assumptions: {oracle.assumptions()}"
    )
    print("common random numbers: every optimizer saw the same noise streams")
    print(
        f"{'optimizer':<12} {'final f - f*':>28} {'final ||grad||_p*^p* (p=' + format(pm, 'g') + ')':>36}"
        f" {'diverged':>9}"
    )
    for name, tr in traces.items():
        s = tr.summary()
        g, c = s["gap"], s["grad_pstar"]
        print(
            f"{name:<12} {g['mean']:>12.5g} [{g['lo']:.4g}, {g['hi']:.4g}] {c['mean']:>16.5g} "
            f"[{c['lo']:.4g}, {c['hi']:.4g}] {s['diverged']:>9}"
        )
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "trace.csv")
    first = True
    for name, tr in traces.items():
        tmp = csv_path + ".part"
        tr.to_csv(tmp, extra={"optimizer": name})
        with open(tmp) as src, open(csv_path, "w" if first else "a") as dst:
            lines = src.readlines()
            dst.writelines(lines if first else lines[1:])
        os.remove(tmp)
        first = False
    png = os.path.join(args.out, "run.png")
    plot_runs(
        traces,
        png,
        p_measure=pm,
        title=f"{args.problem} d={problem.d}, {args.noise} noise, batch {args.batch}, R={args.replicates}",
    )
    meta = {
        "argv": vars(args) | {"func": None},
        "configs": {n: t.config for n, t in traces.items()},
        "summary": {n: t.summary() for n, t in traces.items()},
    }
    with open(os.path.join(args.out, "run.json"), "w") as fh:
        json.dump(meta, fh, indent=2, default=lambda o: None if callable(o) else str(o))
    print(f"wrote {csv_path}, {png}, {os.path.join(args.out, 'run.json')}")
    bad = [n for n, t in traces.items() if t.diverged.any()]
    if bad:
        print(f"note: replicates diverged for {', '.join(bad)} (recorded as NaN; try a smaller --lr)")
    return 0


def _cmd_check(args) -> int:
    import json
    import os
    import time

    from proofs_checks import get_check
    from proofs_checks.records import format_table, meta

    fn = get_check(args.name)
    progress = None
    t_start = time.perf_counter()
    if not args.quiet:

        def progress(msg, t0=t_start):
            print(f"[lptheory check {args.name} {time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    try:
        claims = fn(args.p, seed=args.seed, quick=args.quick, progress=progress)
    except (ValueError, TypeError):
        raise
    except Exception as exc:  # a check that failed to run is an error, unlike a violated claim
        print(f"lptheory: check {args.name!r} failed to run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    info = meta(args.name, args.seed, {"p": args.p, "quick": args.quick})
    doc = {"claims": [c.to_dict() for c in claims], "meta": info}
    if args.json:
        print(json.dumps(doc))
    elif args.name == "symbolic":
        from proofs_checks.symbolic import format_proof

        print(format_proof(claims))
        print("\n" + format_table(claims).rsplit("\n\n", 1)[-1])
    else:
        print(format_table(claims))
    if args.out:
        from figures.theorem1 import figures_for

        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{args.name}.json"), "w") as fh:
            json.dump(doc, fh, indent=1)
        paths = figures_for(args.name, doc["claims"], args.out)
        if not args.json:
            print(f"wrote {os.path.join(args.out, args.name + '.json')}" + "".join(f", {p}" for p in paths))
    return 0


def _cmd_report(args) -> int:
    from figures.report import run_report

    res = run_report(args.out, config=args.config, quick=args.quick, jobs=args.jobs, quiet=args.quiet)
    counts = res["counts"]
    print("verdicts: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if res["missing"]:
        print("not yet available: " + ", ".join(res["missing"]))
    if res["violated"]:
        print("violated claims (findings about the paper; witnesses in the report):")
        for r in res["violated"]:
            p = r["params"].get("p")
            extra = f" p={p:g}" if isinstance(p, float) else ""
            print(f"  {r['id']}{extra}  [{r['check']}]  ratio {r['ratio'] if r['ratio'] is not None else '-'}")
    print(f"report: {args.out}/index.html, {args.out}/report.md, {args.out}/claims.json, {args.out}/results.csv")
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

    from synthetic.noise import NOISES
    from synthetic.problems import PROBLEMS

    p_run = sub.add_parser(
        "run",
        help="simulate optimizers on a synthetic problem; writes a CSV trace and a plot",
        description="Run one or more optimizers (common random numbers) on a synthetic problem with "
        "per-coordinate noise and a batch size, over R replicates; print final f - f* and "
        "||grad f||_{p*}^{p*} with 95% intervals; write trace.csv, run.png and run.json to --out.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p_run.add_argument(
        "--optimizer",
        action="append",
        choices=sorted(OPTIMIZERS),
        help="optimizer name; repeat to compare (default stacey-pp)",
    )
    p_run.add_argument("--p", type=float, default=3.0, help="l_p exponent of the l_p optimizers")
    p_run.add_argument("--p-measure", type=float, default=None, help="p of the gradient metric (default --p)")
    p_run.add_argument("--problem", default="separable", choices=sorted(PROBLEMS))
    p_run.add_argument("--problem-seed", type=int, default=0, help="seed of the problem instance")
    p_run.add_argument("--d", type=int, default=100, help="dimension")
    p_run.add_argument("--noise", default="rademacher", choices=sorted(NOISES))
    p_run.add_argument("--sigma", type=float, default=0.1, help="noise std per coordinate (scale of the profile)")
    p_run.add_argument("--sigma-profile", default="flat", choices=["flat", "power"])
    p_run.add_argument("--batch", type=int, default=1, help="batch size n_t (constant)")
    p_run.add_argument(
        "--batch-schedule", default="constant", choices=["constant", "T"], help="'T': n_t = T as in Theorem 1"
    )
    p_run.add_argument("--steps", type=int, default=1000, help="T")
    p_run.add_argument("--replicates", type=int, default=16, help="R")
    p_run.add_argument("--seed", type=int, default=0)
    p_run.add_argument("--record-every", type=int, default=10)
    p_run.add_argument("--lr", type=float, default=None, help="step size (default: the optimizer's default)")
    for name in ("alpha", "tau", "beta1", "beta2", "eps", "weight_decay", "momentum"):
        p_run.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=float,
            default=None,
            help=f"{name} (optimizers that have it; default: the optimizer's)",
        )
    p_run.add_argument("--eps-mode", dest="eps_mode", default=None, choices=["paper", "official"])
    p_run.add_argument("--backend", default="numpy", choices=["numpy", "torch"], help="array backend")
    p_run.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda (backend torch)")
    p_run.add_argument("--dtype", default=None, choices=["float64", "float32"], help="float32: backend torch only")
    p_run.add_argument("--out", default="out", help="output directory")
    p_run.add_argument("--quiet", action="store_true", help="no progress bar")
    p_run.set_defaults(func=_cmd_run)

    from proofs_checks import CHECKS

    p_check = sub.add_parser(
        "check",
        help="check a claim family of the paper; prints verdicts (holds / violated / inconclusive / not-applicable)",
        description="Run the checks of one claim family. Checks: "
        + "; ".join(f"{k}: {v[2]}" for k, v in CHECKS.items())
        + ". Exit status 0 whenever the checks ran, whatever the verdicts.",
    )
    p_check.add_argument("name", choices=sorted(CHECKS), help="claim family")
    p_check.add_argument(
        "--p", type=float, action="extend", nargs="+", default=None, help="p values (default: per check)"
    )
    p_check.add_argument(
        "--quick", action="store_true", help="smaller budgets (about 20 s per check; used by the tests)"
    )
    p_check.add_argument("--json", action="store_true", help='print one JSON object {"claims": [...], "meta": {...}}')
    p_check.add_argument("--out", default=None, help="directory for NAME.json and the figures (PNG and SVG)")
    p_check.add_argument("--seed", type=int, default=0)
    p_check.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_check.set_defaults(func=_cmd_check)

    p_rep = sub.add_parser(
        "report",
        help="run every check and write the full report (HTML, Markdown, figures, claims.json, results.csv)",
        description="Run every available check at the embedded defaults (figures/report_defaults.toml; "
        "--config FILE overrides any value) and write index.html, report.md, all figures (PNG and SVG), "
        "claims.json and results.csv to --out. Exit status 0 whenever the checks ran.",
    )
    p_rep.add_argument("--out", default="report", help="output directory")
    p_rep.add_argument("--config", default=None, help="TOML file merged over the defaults")
    p_rep.add_argument("--quick", action="store_true", help="smoke run (small budgets)")
    p_rep.add_argument("--jobs", type=int, default=1, help="checks run in N local processes (same results)")
    p_rep.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_rep.set_defaults(func=_cmd_report)
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
