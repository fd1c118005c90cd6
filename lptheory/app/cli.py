"""The ``lptheory`` command line (the application floor, :mod:`lptheory.app`): it may reach every layer, lazily.

Exit status: 0 when everything ran (a violated claim is a finding, not a failure); 1 when a finding
fails the run on request (``--fail-on``); 2 for bad input (checked before any work starts, the
message names the flag or configuration key); 3 when a check or a run crashed; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shutil
import sys

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_CRASH, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

from .console import fmt_exact, fmt_num  # noqa: E402  (a few lines of stdlib code: cheap to import)


class UsageError(ValueError):
    """Bad input from the command line (exit status 2)."""


SEED_MAX = 2**63 - 1  # seeds are stored as int64 (results.parquet, run.json)


def seed_arg(text: str) -> int:
    """argparse type of ``--seed`` (and of the pytest plugin's ``--lptheory-seed``): an integer in
    [0, 2**63 - 1] (checked before any work)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**63 - 1], got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**63 - 1], got {text}")
    return value


def _count_arg(text: str) -> int:
    """argparse type of counts (``--steps``, ``--d``, ...): an integer, also written ``1e6``, at most
    2**63 - 1 (the counts are int64 in the records and in numpy's samplers: ``--batch 1e20`` used to end in
    an OverflowError traceback inside the binomial sampler)."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if not (math.isfinite(number) and number.is_integer()):
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        value = int(number)
    if abs(value) > SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer of at most 2**63 - 1, got {text}")
    return value


P_MAX = 1e3  # finite exponents above this overflow or underflow float64 powers |x|^p for most x


def _p_arg(text: str) -> float:
    """argparse type of ``--p`` / ``--p-measure`` in every command: a finite number in (1, 1e3] (each
    command then checks its own range, e.g. p >= 2 for Stacey). The same answer everywhere: ``--p 1e308``
    used to run and diverge in ``run``, stop with exit 2 mid-way in ``check lemmas`` and crash in
    ``check theorem1``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and 1.0 < value <= P_MAX):
        raise argparse.ArgumentTypeError(
            f"must be a finite number in (1, {P_MAX:g}], got {text} (|x|^p overflows or underflows float64 "
            "for most x beyond that)"
        )
    return value


def _check_seed(value, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
        raise UsageError(f"{where} must be an integer in [0, 2**63 - 1], got {value!r}")


class _HelpFormatter(argparse.HelpFormatter):
    """Help of every command: an option's default appended as ``(default: X)`` once, and only where it says
    something: not for a default of None (the help says what happens then), a flag's False, an empty list,
    or a help text that already states its default (it mentions "default" or ``%(default)s``). argparse's
    ArgumentDefaultsHelpFormatter printed ``(default: None)`` after "(their default: 3)" and the like."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or (isinstance(default, (list, tuple)) and not default)
            or "%(default)" in text
            or re.search(r"\bdefaults?\b", text, flags=re.IGNORECASE)
        ):
            return text
        return f"{text} (default: %(default)s)"

    def _split_lines(self, text, width):  # names such as stacey-pp-schatten are not broken at their hyphens
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        import textwrap

        return textwrap.fill(
            " ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
        )


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):  # one line naming the flag, exit 2 (argparse's own convention)
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"lptheory: error: {message}\n")


def _say_factory(quiet: bool, prefix: str):
    if quiet:
        return lambda msg: None

    def say(msg):
        from .console import write_line

        write_line(f"[{prefix}] {msg}", sys.stderr)  # never into a live progress line

    return say


def _prepare_out(path: str, flag: str = "--out", args=None, lock: bool = True) -> bool:
    """Check (before any work) that ``path`` can be a writable output directory; creates it and takes
    its lock (:class:`lptheory.app.guard.OutputLock`, released when the command ends; a directory that
    another run is writing is refused). Returns whether it was created (so that an interrupted run can
    remove it)."""
    from .guard import OutputBusy, OutputLock, OutputOwned, claim_directory

    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: exists and is not a directory")
    real = os.path.realpath(path)
    if lock and os.path.dirname(real) == real:
        raise UsageError(f"{flag} {path}: the root directory; give the command a directory of its own")
    created = not os.path.exists(path)
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, f".lptheory-write-test-{os.getpid()}")
        with open(probe, "w") as fh:
            fh.write("")
        os.remove(probe)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: not writable ({exc.strerror or exc})") from exc
    if args is not None:
        args._created_dirs = (
            [*getattr(args, "_created_dirs", []), path] if created else getattr(args, "_created_dirs", [])
        )
    if not lock:
        return created
    try:
        lock = OutputLock(path).acquire()
    except OutputBusy as exc:
        raise UsageError(f"{flag} {path}: {exc}; wait for it to finish or choose another {flag}") from None
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot be locked ({exc.strerror or exc})") from exc
    if args is not None:
        args._locks = [*getattr(args, "_locks", []), lock]
        args._created_out = created
        try:  # one command's output per directory (a report and a sweep would replace each other's files)
            claim_directory(path, args.command)
        except OutputOwned as exc:
            raise UsageError(f"{flag} {exc}; choose another {flag}") from None
        except OSError as exc:
            raise UsageError(f"{flag} {path}: not writable ({exc.strerror or exc})") from exc
    return created


def _cleanup_owned(args) -> None:
    """:func:`_cleanup` of ``args.out`` if this run holds its lock (never a directory that another run
    is writing: a refused second writer must not touch the first one's staging files)."""
    if getattr(args, "_locks", None):
        _cleanup(getattr(args, "out", None), getattr(args, "_created_out", False))


def _cleanup(path: str | None, created: bool) -> None:
    """After an interruption or a failure: remove temporary files and staging directories, and the
    directory if this run created it."""
    from .guard import cleanup

    cleanup(path, created)


# ---------------------------------------------------------------------------------------------------
# info, demo


# the CPU wheel (the README's install): PyPI's torch for Linux x86-64 is the CUDA build, which pulls gigabytes
TORCH_CPU_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _cmd_info(args) -> int:
    import platform

    import numpy

    import lptheory

    print(f"lptheory {lptheory.__version__}")
    print(f"python   {platform.python_version()}")
    print(f"numpy    {numpy.__version__}")
    try:
        import torch

        print(f"torch    {torch.__version__} (cuda available: {torch.cuda.is_available()})")
    except ImportError:
        print(f"torch    not installed (CPU wheel: {TORCH_CPU_INSTALL}; CUDA: see pytorch.org)")
    eng = lptheory.engine_info()
    extra = f", numba {eng['numba']}, verified: {eng['verified']}" if eng.get("numba") else ""
    print(f"engine   {eng['engine']} ({eng['threads']} threads{extra}): {eng.get('reason', '')}")
    from proofs_checks.recheck import ball_backend

    ball = ball_backend().name
    hint = "" if ball == "arb" else ' (pip install "lptheory[proofs]" for python-flint\'s arb: faster proofs)'
    print(f"proofs   interval/ball arithmetic: {ball}{hint}")
    from lptheory.optimizers import OPTIMIZERS

    print("optimizers: " + ", ".join(OPTIMIZERS))
    from synthetic.noise import NOISES
    from synthetic.problems import PROBLEMS

    print("problems: " + ", ".join(PROBLEMS))
    print("noise models: " + ", ".join(NOISES))
    from proofs_checks.packs import installed_packs, load_ref

    packs = installed_packs()
    print("claim packs: " + ", ".join(packs))
    for name, ref in packs.items():
        try:
            checks = list(load_ref(ref).checks)
        except Exception:  # noqa: BLE001 -- info lists what loads; a broken pack shows as such
            print(f"  {name}: (does not load)")
            continue
        print(f"  {name}: checks {', '.join(checks)}")
    return EXIT_OK


def _cmd_demo(args) -> int:
    """Run an optimizer on a small ill-conditioned quadratic and print its loss: a smoke test."""
    import numpy as np

    from lptheory import lp_norm
    from lptheory.optimizers import OPTIMIZERS, hyper_names

    for flag, lo in (("d", 1), ("replicates", 1), ("steps", 0)):
        if getattr(args, flag) < lo:
            raise UsageError(f"--{flag} must be >= {lo}, got {getattr(args, flag)}")
    cls = OPTIMIZERS[args.optimizer]
    hyper = {"lr": args.lr}
    if "p" in hyper_names(cls):
        hyper["p"] = 3.0 if args.p is None else args.p
    elif args.p is not None:
        raise UsageError(f"--p: optimizer {args.optimizer} has no exponent p")
    from lptheory.spectral import laid_out

    try:
        built = cls(**hyper)
    except (ValueError, TypeError) as exc:
        flag = next((f"--{k}" for k in hyper if str(exc).startswith(k + " ")), "--optimizer " + args.optimizer)
        raise UsageError(f"{flag}: {exc}") from exc
    opt = laid_out(built, args.d)  # a matrix optimizer: each replicate's iterate as one row
    rng = np.random.default_rng(np.random.SeedSequence(args.seed))
    h = np.logspace(0, -3, args.d)
    theta = rng.standard_normal((args.replicates, args.d))
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
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# run

_OWN_FLAGS = ("p", "lr")  # hyper-parameters with flags of their own (their help and defaults differ)


def _hyper_flags() -> tuple[str, ...]:
    """The optimizers' hyper-parameters that are ``lptheory run`` flags besides --p and --lr: derived from
    the registered definitions (lptheory.optimizers.flag_fields), numbers first, then those with choices."""
    from lptheory.optimizers import flag_fields
    from lptheory.rules import field_info

    named = [(n, field_info(f)["choices"] is not None) for n, f in flag_fields().items() if n not in _OWN_FLAGS]
    return tuple(n for n, c in named if not c) + tuple(n for n, c in named if c)


def _add_hyper_flags(p_run) -> None:
    """One flag per hyper-parameter of :func:`_hyper_flags`."""
    from lptheory.optimizers import flag_fields
    from lptheory.rules import field_info

    fields = flag_fields()
    named = [(n, field_info(fields[n])) for n in _hyper_flags()]
    for name, _ in [x for x in named if x[1]["choices"] is None]:
        p_run.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=float,
            default=None,
            help=f"{name} (optimizers that have it; their default when omitted)",
        )
    for name, info in [x for x in named if x[1]["choices"] is not None]:
        p_run.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            default=None,
            choices=list(info["choices"]),
            help=f"{info['help']} (its default: {fields[name].default})",
        )


def _run_plan(args):
    """Validate every flag of ``lptheory run`` before any work; returns the optimizers to run."""
    from lptheory.optimizers import OPTIMIZERS, hyper_names

    names = args.optimizer or ["stacey-pp"]
    if args.batch_schedule == "T" and args.batch is not None:
        raise UsageError(f"--batch {args.batch}: not used with --batch-schedule T (n_t = T = --steps)")
    if args.batch is None:
        args.batch = 1
    for flag in _hyper_flags() + ("p",):
        val = getattr(args, flag)
        if val is None:
            continue
        takers = [n for n in names if flag in hyper_names(OPTIMIZERS[n])]
        if not takers and flag != "p":
            having = sorted(n for n in OPTIMIZERS if flag in hyper_names(OPTIMIZERS[n]))
            raise UsageError(
                f"--{flag.replace('_', '-')}: none of the selected optimizers ({', '.join(names)}) has it "
                f"(optimizers with it: {', '.join(having)})"
            )
    if args.backend == "numpy":
        if args.device not in (None, "cpu"):
            raise UsageError(f"--device {args.device}: only for --backend torch (the numpy backend runs on the cpu)")
        if args.dtype not in (None, "float64"):
            raise UsageError(f"--dtype {args.dtype}: only for --backend torch (numpy runs in float64)")
    else:
        try:
            import torch
        except ImportError:
            raise UsageError(f"--backend torch: torch is not installed ({TORCH_CPU_INSTALL})") from None
        if args.device is not None:
            try:
                torch.device(args.device)
            except (RuntimeError, ValueError, TypeError):
                raise UsageError(f"--device {args.device}: not a torch device (e.g. cpu, cuda, cuda:1)") from None
        if args.device and args.device.startswith("cuda") and not torch.cuda.is_available():
            raise UsageError(f"--device {args.device}: CUDA is not available on this machine")
    for flag in ("steps", "replicates", "d", "batch", "record_every"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if args.seed < 0 or args.problem_seed < 0:
        raise UsageError("--seed and --problem-seed must be >= 0")
    opts = {}
    for name in names:
        cls = OPTIMIZERS[name]
        fields = set(hyper_names(cls))
        hyper = {
            k: getattr(args, k) for k in (*_hyper_flags(), *_OWN_FLAGS) if k in fields and getattr(args, k) is not None
        }
        try:
            opts[name] = cls(**hyper)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--optimizer {name}: {exc}") from exc
    return opts


def _check_shape(args, problem) -> None:
    """``--shape M N`` multiplies to the problem's d (exit 2 otherwise); a warning when it lays out a matrix
    problem's iterates other than the problem's own shape."""
    shape = tuple(args.shape) if args.shape else None
    if shape is None:
        return
    if shape[0] * shape[1] != problem.d:
        raise UsageError(f"--shape {shape[0]} {shape[1]}: M * N must equal the problem's d = {problem.d}")
    own = getattr(problem, "shape", None)
    if isinstance(own, (tuple, list)) and len(own) == 2 and tuple(own) != shape:
        print(
            f"lptheory run: warning: --shape {shape[0]} {shape[1]} lays out the iterates of a {own[0]} x {own[1]} "
            f"matrix problem ({args.problem}) differently: its geometry is not the optimizer's",
            file=sys.stderr,
        )


def _with_matrix_shape(opts: dict, args, problem, layout=None) -> dict:
    """The matrix optimizers (Muon, Scion, Schatten-p descent, Stacey in Schatten-p) with the layout of each
    replicate's flat iterate: ``--shape M N``, else the problem's own matrix shape (its ``shape``), else the
    noise's matrix layout ``layout`` (a noise that has one, such as rank-one: one layout for both), else
    (1, d) (the iterate as one row). Without it the simulator would take the replicates as the rows of one
    matrix. ``--shape`` is checked by :func:`_check_shape`."""
    from lptheory.spectral import MatrixOptimizer

    from .assembly import lay_out

    out = {}
    for name, opt in opts.items():
        new = lay_out(opt, problem, layout, args.shape)
        if new is not opt and not args.quiet:
            print(f"{name}: each replicate's iterate as a {new.shape[0]} x {new.shape[1]} matrix", file=sys.stderr)
        out[name] = new
    if args.shape and layout is None and not any(isinstance(o, MatrixOptimizer) for o in out.values()):
        raise UsageError(
            "--shape: none of the selected optimizers is a matrix optimizer (muon, scion, schatten-...) and the "
            f"noise ({args.noise}) has no matrix layout"
        )
    return out


def _run_setting(args):
    """The problem, noise and oracle of ``lptheory run`` (:func:`.assembly.build_setting`, shared with the
    sweep), a value a builder rejects named by its flag (exit 2)."""
    from .assembly import SettingError, build_setting

    batch = args.batch
    if args.batch_schedule == "T":
        batch = lambda t, T=args.steps: T  # noqa: E731  (Theorem 1's n_t = T)
    try:
        return build_setting(
            args.problem,
            {"d": args.d, "seed": args.problem_seed},
            noise=args.noise,
            sigma=args.sigma,
            profile=args.sigma_profile,
            profile_seed=args.problem_seed,
            batch=batch,
            shape=args.shape,
            check_problem=lambda problem: _check_shape(args, problem),
        )
    except SettingError as exc:
        flag = {"problem": f"--problem {args.problem}", "sigma": "--sigma", "noise": f"--noise {args.noise}"}
        raise UsageError(f"{flag.get(exc.part, '--batch')}: {exc}") from exc.error


def _check_run_memory(args, opts) -> None:
    """Refuse (exit 2, with the numbers) a run whose arrays and records cannot fit in the memory this
    machine has available, before the problem or any array is built."""
    from .resources import available_memory, fmt_bytes, run_estimate, state_slots

    itemsize = 4 if args.dtype == "float32" else 8
    est = run_estimate(
        replicates=args.replicates,
        d=args.d,
        steps=args.steps,
        record_every=args.record_every,
        slots=[state_slots(o) for o in opts.values()],
        itemsize=itemsize,
        batch=args.batch if args.batch_schedule != "T" else args.steps,
    )
    on_gpu = args.backend == "torch" and (args.device or "cpu").startswith("cuda")
    host_need = est["records"] if on_gpu else est["total"]
    checks = [("memory", host_need, available_memory())]
    if on_gpu:
        import torch

        dev = torch.device(args.device)
        checks.append((f"{dev} memory", est["working"], torch.cuda.mem_get_info(dev)[0]))
    for what, need, have in checks:
        if have is not None and need > have:
            raise UsageError(
                f"--replicates {args.replicates} x --d {args.d}, --steps {args.steps} / --record-every "
                f"{args.record_every}: the run needs about {fmt_bytes(need)} of {what} ({est['arrays']} arrays of "
                f"R x d x {itemsize} bytes = {fmt_bytes(est['working'])}; records {fmt_bytes(est['records'])} for "
                f"{est['recorded_steps']:,} recorded steps) but {fmt_bytes(have)} is available; lower --replicates "
                "or --d, or raise --record-every"
            )


def _run_table(traces: dict, nonfinite: dict, pm: float, replicates: int) -> list[str]:
    """The result table of ``lptheory run``: one row per optimizer, the final f - f* and ||grad f||_{p*}^{p*}
    (means over the replicates that did not diverge, with 95% Student-t intervals), the diverged replicates
    and the steps with non-finite gradients; columns aligned whatever the values (:func:`.console.table`)."""
    from .console import Interval, table

    rows = []
    for name, tr in traces.items():
        s = tr.summary()
        g, c = s["gap"], s["grad_pstar"]
        rows.append(
            [
                name,
                g["mean"],
                Interval(g["lo"], g["hi"]),
                c["mean"],
                Interval(c["lo"], c["hi"]),
                f"{s['diverged']}/{replicates}",
                nonfinite[name],
            ]
        )
    head = ["optimizer", "final f - f*", "95% CI", f"final ||grad||_p*^p* (p={fmt_exact(pm)})", "95% CI"]
    return table([*head, "diverged", "nonfinite"], rows, align="<>>>>>>")


def _simulate_runs(args, opts: dict, setting, pm: float) -> dict:
    """One trace per optimizer (common random numbers: every optimizer sees the same noise streams), with a
    progress bar per optimizer unless ``--quiet``."""
    from lptheory.simulate import simulate

    from .console import StepProgress

    traces = {}
    for i, (name, opt) in enumerate(opts.items(), 1):
        if not args.quiet:
            print(f"running {opt!r}", file=sys.stderr, flush=True)
        bar = StepProgress(name, args.steps, i, len(opts)) if not args.quiet else contextlib.nullcontext()
        with bar:
            traces[name] = simulate(
                opt,
                setting.problem,
                setting.oracle,
                args.steps,
                args.replicates,
                args.seed,
                record_every=args.record_every,
                p_measure=pm,
                on_nonfinite="record",
                progress=bar if not args.quiet else False,
                backend=args.backend,
                device=args.device,
                dtype=args.dtype,
            )
    return traces


def _run_meta(args, traces: dict, nonfinite: dict) -> dict:
    """The contents of ``run.json``: the command's arguments, versions, provenance and each run's summary."""
    import datetime as dt

    from proofs_checks.records import clean, config_hash, git_commit, source_info, versions

    argv = {k: v for k, v in vars(args).items() if not k.startswith("_") and k != "func"}
    meta = {
        "argv": argv,
        "seed": args.seed,
        "config_hash": config_hash(argv),
        "versions": versions(),
        "configs": {n: t.config for n, t in traces.items()},
        "summary": {n: {**t.summary(), "nonfinite": nonfinite[n]} for n, t in traces.items()},
        "diverged_at": {n: [int(v) for v in t.diverged_at] for n, t in traces.items()},
        "nonfinite": nonfinite,
    }
    meta["git_commit"] = git_commit()
    meta["source"] = source_info()["text"]
    meta["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return clean(meta)


def _figure_skipped(args, what: str, exc: BaseException) -> None:
    """The warning of a figure that could not be drawn (its data are written): names it and the error; the
    traceback with ``--traceback``."""
    if getattr(args, "traceback", False):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    print(
        f"lptheory {args.command}: warning: {what} not drawn: {type(exc).__name__}: {exc} (the data are written; "
        "--traceback shows where it failed)",
        file=sys.stderr,
    )


def _write_run(args, traces: dict, nonfinite: dict, pm: float, title: str) -> list[str]:
    """Write ``trace.csv`` and ``run.json`` (the data, first), then the figure ``run.png``/``.svg``: a figure
    that cannot be drawn (matplotlib refuses a log scale of all-zero values, say) is skipped with a warning
    naming it, the data are kept. Staged, then moved into ``--out`` (never half-written). Returns the paths
    written."""
    import json

    from .guard import publish, staging

    stage = staging(args.out)  # everything written aside, then moved into place (never half-written)
    tmp = os.path.join(stage, "trace.csv")
    for i, (name, tr) in enumerate(traces.items()):
        tr.to_csv(tmp, extra={"optimizer": name}, header=i == 0, mode="w" if i == 0 else "a")
    with open(os.path.join(stage, "run.json"), "w") as fh:
        meta = _run_meta(args, traces, nonfinite)
        json.dump(meta, fh, indent=2, allow_nan=False, default=lambda o: None if callable(o) else str(o))
    written = ["trace.csv", "run.png", "run.svg", "run.json"]
    try:
        from figures.runs import plot_runs

        plot_runs(traces, os.path.join(stage, "run.png"), p_measure=pm, title=title)
    except Exception as exc:  # noqa: BLE001 -- a figure is never worth the data: skipped, named, the data kept
        for name in ("run.png", "run.svg"):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(stage, name))
            written.remove(name)
        _figure_skipped(args, f"figure {os.path.join(args.out, 'run.png')} (and .svg)", exc)
    publish(stage, args.out)
    return [os.path.join(args.out, name) for name in written]


def _cmd_run(args) -> int:
    from lptheory.optimizers import nonfinite_steps

    opts = _run_plan(args)
    _check_run_memory(args, opts)
    setting = _run_setting(args)
    problem, noise_desc = setting.problem, args.noise
    if setting.layout is not None:
        noise_desc += f" on a {setting.layout[0]} x {setting.layout[1]} matrix"
    opts = _with_matrix_shape(opts, args, problem, setting.layout)  # the matrix optimizers: the same layout
    _prepare_out(args.out, args=args)
    batch_text = f"n_t = T = {args.steps}" if args.batch_schedule == "T" else str(args.batch)
    pm = args.p_measure or args.p or 3.0
    traces = _simulate_runs(args, opts, setting, pm)
    assumptions = setting.oracle.assumptions()
    held = [k.replace("_", " ") for k, v in assumptions.items() if v]
    missing = [k.replace("_", " ") for k, v in assumptions.items() if not v]
    print(
        f"problem {args.problem} (d={problem.d}), noise {noise_desc} (||sigma||_1={fmt_num(setting.sigma.sum(), 4)}), "
        f"batch {batch_text}, T={args.steps}, "
        f"R={args.replicates}, seed={args.seed}; assumptions: {', '.join(held) or 'none'} hold"
        + (f"; not: {', '.join(missing)}" if missing else "")
    )
    print("common random numbers: every optimizer saw the same noise streams")
    nonfinite = {name: nonfinite_steps(opt) for name, opt in opts.items()}
    print("\n".join(_run_table(traces, nonfinite, pm, args.replicates)))
    if args.replicates < 2:
        print("95% CI: nan with fewer than two replicates (no interval from one value)")
    title = f"{args.problem} d={problem.d}, {args.noise} noise, batch {batch_text}, R={args.replicates}"
    print("wrote " + ", ".join(_write_run(args, traces, nonfinite, pm, title)))
    bad = [n for n, t in traces.items() if t.diverged.any()]
    if bad:
        print(
            f"note: replicates diverged for {', '.join(bad)} (a result: recorded as NaN from the divergence step on, "
            "marked in the plot; try a smaller --lr)"
        )
    bad_g = [f"{n} ({k} steps)" for n, k in nonfinite.items() if k]
    if bad_g:
        print(f"note: gradients with NaN or inf entries reached {', '.join(bad_g)}: the 'nonfinite' column")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# check and report


def _parse_sets(items) -> dict:
    """``--set KEY=V[,V...]`` -> {KEY: text}; the check types each value from its option's default
    (``Check.coerce_option``)."""
    out = {}
    for it in items or ():
        if "=" not in it:
            raise UsageError(f"--set {it}: expected KEY=VALUE[,VALUE...]")
        k, v = it.split("=", 1)
        out[k.strip()] = v
    return out


def _resolve_target(target: str, names):
    """(pack, check names) for ``lptheory check TARGET [NAME ...]``."""
    from proofs_checks.packs import DEFAULT_PACK, PackError, load

    if not target.strip():  # '' used to mean the default pack: every check run
        raise UsageError("TARGET is empty: give a check name, a claim file, a module or a pack")

    default = load(DEFAULT_PACK)
    if target in default.checks:
        return default, [target, *names]
    try:
        pack = load(target)
    except PackError as exc:
        raise UsageError(f"{exc} (built-in checks: {', '.join(default.checks)})") from exc
    return pack, list(names) or list(pack.checks)


def _plan_checks(pack, names, p, sets, skip=()):
    from proofs_checks.runner import plan

    options = {}
    for n in names:
        c = pack.checks.get(n)
        if c is None:
            continue
        o = {}
        if p is not None:
            if "p" not in c.options:
                if len(names) == 1:
                    raise UsageError(f"check {n!r} does not take --p (it takes {', '.join(c.options) or 'no options'})")
            else:
                o["p"] = [float(v) for v in p]
        for k, v in sets.items():
            if k == "p":  # --set p=1e308: the same range as --p, named the same way
                for u in str(v).split(","):
                    try:
                        _p_arg(u.strip())
                    except argparse.ArgumentTypeError as exc:
                        raise UsageError(f"--set p={v}: {exc} (as --p)") from None
            if k in c.options or len(names) == 1:
                try:
                    o[k] = c.coerce_option(k, v)
                except ValueError as exc:
                    where = "" if f"check {n!r}" in str(exc) else f" (check {n!r})"
                    raise UsageError(f"--set {k}={v}: {exc}{where}") from None
        options[n] = o
    if p is not None and not any("p" in pack.checks[n].options for n in names if n in pack.checks):
        raise UsageError(f"--p: none of the selected checks ({', '.join(names)}) takes it")
    try:
        return plan(pack, names, options, skip)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def _cmd_check(args) -> int:
    from proofs_checks.records import dumps, format_table, meta
    from proofs_checks.runner import run_checks

    from .console import stdout_to_stderr

    # --json: standard output holds the JSON document alone (a claim file's prints, at import or in its
    # checks, go to stderr)
    with stdout_to_stderr() if args.json else contextlib.nullcontext():
        if args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
        pack, names = _resolve_target(args.target, args.names)
        sets = _parse_sets(args.set)
        # --workers / --scheduler: the Dask engine of the checks that train many runs (the practice pack's tasks)
        for flag, key in ((args.workers, "workers"), (args.scheduler, "scheduler")):
            if flag is not None:
                sets[key] = str(flag)
        planned = _plan_checks(pack, names, args.p, sets)
        if not (math.isfinite(args.ratio_tolerance) and args.ratio_tolerance >= 0):
            raise UsageError(f"--ratio-tolerance must be a finite number >= 0, got {args.ratio_tolerance}")
        baseline = _load_baseline(args.baseline) if args.baseline else None
        fail_on = _parse_fail_on(args.fail_on)
        if args.out:
            _prepare_out(args.out, args=args)
        say = _say_factory(args.quiet, "lptheory check")
        try:
            results, elapsed = run_checks(
                pack,
                planned,
                seed=args.seed,
                quick=args.quick,
                jobs=args.jobs,
                say=say,
                on_done=lambda n, k, dt: say(f"{n}: {k} records in {dt:.1f}s"),
            )
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a check that failed to run is an error, unlike a violated claim
            return _run_failure(exc, pack, args)
    _warn_empty(results)
    claims = [{"check": n, **r} for n, recs in results.items() for r in recs]
    info = meta(
        ",".join(planned), args.seed, {"pack": pack.target, "options": planned, "quick": args.quick}, quick=args.quick
    )
    if args.json:
        print(dumps(claims, info))
    else:
        for n, recs in results.items():
            if len(results) > 1:
                print(f"\n== {n}: {pack.section(n)} ==")
            text = pack.format_text(n, recs)  # a pack's own layout (Pack.text_format), else the table
            print(format_table(recs) if text is None else text)
        if len(results) > 1:  # the totals of every check run (each table above counts its own)
            from proofs_checks.records import status_counts_text

            every = [r.to_dict() if hasattr(r, "to_dict") else r for recs in results.values() for r in recs]
            print(f"\nall {len(results)} checks: " + status_counts_text(every))  # negative controls counted apart
    if args.out:
        from figures import figures_for

        from .guard import publish, staging

        stage = staging(args.out)  # written aside, then moved into place file by file (never half-written)
        for n, recs in results.items():
            with open(os.path.join(stage, f"check_{n}.json"), "w") as fh:
                fh.write(dumps([{"check": n, **r} for r in recs], info, indent=1))
            try:
                skipped = lambda what, exc: _figure_skipped(args, what, exc)  # noqa: E731 -- one figure: the others drawn
                paths = [os.path.basename(p) for p in figures_for(pack, n, recs, stage, skipped)]
            except Exception as exc:  # noqa: BLE001 -- a figure is never worth the data: skipped, named
                _figure_skipped(args, f"the figures of check {n}", exc)
                paths = []
            if not args.json:
                print(
                    f"wrote {os.path.join(args.out, f'check_{n}.json')}"
                    + "".join(f", {os.path.join(args.out, p)}" for p in paths)
                )
        publish(stage, args.out)
    if fail_on or baseline is not None:
        from proofs_checks.regression import compare, format_regressions

        if baseline is not None:  # a whole report as the baseline of some checks: only their records count
            ran = set(planned)
            kept = [b for b in baseline if b.get("check") is None or b.get("check") in ran]
            if len(kept) < len(baseline) and not args.quiet:
                print(
                    f"--baseline: {len(baseline) - len(kept)} records of checks not run here ignored "
                    f"(compared: {len(kept)} of {', '.join(sorted(ran))})",
                    file=sys.stderr,
                )
            baseline = kept
        problems = compare(claims, baseline, fail_on=fail_on, ratio_tolerance=args.ratio_tolerance)
        if problems:
            print(format_regressions(problems), file=sys.stderr)
            return EXIT_FINDING
    return EXIT_OK


def _exception_chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _frames(exc):
    """[(file, line, function, code line)] of ``exc``'s traceback, innermost last, including the frames of
    a worker process (``concurrent.futures`` hands them over as the text of the ``__cause__``)."""
    import re
    import traceback

    frames = []
    for e in reversed(list(_exception_chain(exc))):
        if type(e).__name__ == "_RemoteTraceback":
            for m in re.finditer(r'File "([^"]+)", line (\d+), in (\S+)\n(?: +(.*)\n)?', str(e)):
                frames.append((m.group(1), int(m.group(2)), m.group(3), (m.group(4) or "").strip()))
        else:
            frames += [
                (f.filename, f.lineno, f.name, (f.line or "").strip()) for f in traceback.extract_tb(e.__traceback__)
            ]
    return frames


def _where(exc, pack) -> str:
    """' in check NAME (FILE, line N: CODE)': the innermost frame of the failure in the user's claim code
    (the claim file, or the pack's module), and the check it belongs to."""
    import inspect

    src = pack.target if os.path.isfile(str(pack.target)) else None
    if src is None:
        mod = sys.modules.get(str(pack.target).split(":")[0])
        src = getattr(mod, "__file__", None)
    if not src:
        return ""
    src = os.path.realpath(src)
    mine = [f for f in _frames(exc) if os.path.realpath(f[0]) == src]
    if not mine:
        return ""
    codes = {}
    for name, c in pack.checks.items():
        with contextlib.suppress(TypeError, AttributeError):
            codes[inspect.unwrap(c.fn).__code__.co_name] = name
    check = next((codes[f[2]] for f in mine if f[2] in codes), None)
    file, line, func, code = mine[-1]
    where = f" in check {check!r}" if check else ""
    rel = os.path.relpath(file)
    shown = file if rel.startswith("..") else rel
    return f"{where} ({shown}, line {line}, in {func}" + (f": {code})" if code else ")")


def _no_space(exc, args) -> str | None:
    """'no space left on device (PATH)' when ``exc`` (or its cause) is a full disk or an exceeded quota,
    naming the file (else the command's output directory); None otherwise."""
    import errno

    codes = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
    full = next((e for e in _exception_chain(exc) if isinstance(e, OSError) and e.errno in codes), None)
    if full is None:
        return None
    where = full.filename or getattr(args, "out", None) or "the output directory"
    what = "no space left on device" if full.errno == errno.ENOSPC else "disk quota exceeded"
    return f"{what} ({where}); free some space or choose another --out, then run again"


def _bad_directory_switch(exc) -> str | None:
    """'NAME=PATH: ...' when ``exc`` (or its cause) is an OSError on the directory a switch of
    :data:`lptheory.config.SWITCHES` that takes a directory names (``LPTHEORY_PRACTICE_CACHE=/dev/null``, a
    read-only one): bad input from the environment, named, not a crash."""
    from lptheory.config import SWITCHES

    errors = [e for e in _exception_chain(exc) if isinstance(e, OSError) and e.filename]
    for sw in SWITCHES:
        value = os.environ.get(sw.name, "").strip()
        if "directory" not in sw.values or not value or value == "0":
            continue
        root = os.path.realpath(value)
        for e in errors:
            got = os.path.realpath(os.fsdecode(e.filename))
            if got == root or got.startswith(root.rstrip(os.sep) + os.sep):
                why = e.strerror or type(e).__name__
                return f"{sw.name}={value}: not a writable directory ({why}: {e.filename}); {sw.effect}"
    return None


_SWITCH_VALUES = {  # a switch's documented values (lptheory.config.SWITCHES) -> whether a value is one of them
    "numpy": lambda v: v.lower() == "numpy",
    "0": lambda v: v == "0",
    "0, 1": lambda v: v in ("0", "1"),
    "a positive integer": lambda v: v.isascii() and v.isdigit() and int(v) >= 1,
    "an integer >= 1": lambda v: v.isascii() and v.isdigit() and int(v) >= 1,
}


def _check_switches() -> None:
    """Refuse (UsageError naming it) a switch of :data:`lptheory.config.SWITCHES` set to a value outside the ones
    its row documents (``LPTHEORY_SVML=maybe``, ``LPTHEORY_ENGINE=fortran`` were taken as unset, silently; a
    count such as ``LPTHEORY_THREADS=abc`` was refused only by a command that reads it), and one that takes a
    directory and is set to a path that exists but is not a writable directory (``LPTHEORY_PRACTICE_CACHE=/dev/null``,
    a file, a read-only directory): bad input from the environment, refused before any work (the practice check
    found it only when it first wrote a trial, 37 s in, and exited 3, "a check failed to run"). A path that does not
    exist yet is left to the code that creates it."""
    from lptheory.config import SWITCHES

    for sw in SWITCHES:
        value = os.environ.get(sw.name, "").strip()
        if value and sw.values in _SWITCH_VALUES and not _SWITCH_VALUES[sw.values](value):
            raise UsageError(f"{sw.name}={value}: must be {sw.values} (or unset); {sw.effect}")
        if "directory" not in sw.values or not value or value == "0":
            continue
        if not os.path.exists(value):  # made when first needed: only under a directory
            up = os.path.dirname(os.path.abspath(value))
            while up != os.path.dirname(up) and not os.path.exists(up):
                up = os.path.dirname(up)
            if os.path.isdir(up):
                continue
            raise UsageError(f"{sw.name}={value}: cannot be created ({up} is not a directory); {sw.effect}")
        if not os.path.isdir(value):
            raise UsageError(f"{sw.name}={value}: exists and is not a directory; {sw.effect}")
        if not os.access(value, os.W_OK | os.X_OK):
            raise UsageError(f"{sw.name}={value}: not a writable directory; {sw.effect}")


def _warn_empty(results: dict) -> None:
    """One line on stderr per check that returned no records: it ran, but decided nothing (no verdict counts
    for it, and the totals say nothing about it); the run goes on (exit status unchanged)."""
    for name, recs in results.items():
        if not recs:
            print(
                f"lptheory: warning: check {name!r} returned no records: it decided nothing (its verdict "
                "counts are all 0)",
                file=sys.stderr,
            )


def _run_failure(exc, pack, args) -> int:
    """A check raised: a claim that cannot be evaluated as written (ClaimError, also as the cause of
    another exception) is bad input in the claim file (exit 2, naming it); anything else is a crash
    (exit 3). Both name the check, the file and the line; ``--traceback`` prints the traceback.
    Nothing half-written is left behind."""
    import traceback

    from proofs_checks.spec import ClaimError

    from .guard import stop_requested

    if stop_requested():  # the workers were stopped by Ctrl-C/SIGTERM/SIGHUP: an interruption, not a crash
        raise KeyboardInterrupt
    _cleanup_owned(args)
    full = _no_space(exc, args) or _bad_directory_switch(exc)
    if full:
        print(f"lptheory: error: {full}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "traceback", False):
        traceback.print_exception(exc, file=sys.stderr)
    where = _where(exc, pack)
    hint = "" if getattr(args, "traceback", False) else " (--traceback shows the traceback)"
    claim_err = next((e for e in _exception_chain(exc) if isinstance(e, ClaimError)), None)
    if claim_err is not None:
        print(f"lptheory: error in claims {pack.target}{where}: {claim_err}", file=sys.stderr)
        return EXIT_USAGE
    print(f"lptheory: a check failed to run{where}: {type(exc).__name__}: {exc}{hint}", file=sys.stderr)
    return EXIT_CRASH


def _load_baseline(path):
    return _load_claims(path, "--baseline")


_FAIL_ON = ("violated", "inconclusive", "regressed", "unproved")  # unproved: a holds only on what was tested


def _parse_fail_on(text):
    if text is None:
        return ()
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    if not items:  # --fail-on '' or ',,': failing on nothing was never asked for
        raise UsageError(f"--fail-on {text!r}: names no finding (comma-separated among {', '.join(_FAIL_ON)})")
    bad = [s for s in items if s not in _FAIL_ON]
    if bad:
        raise UsageError(f"--fail-on {bad[0]!r}: allowed values are {', '.join(_FAIL_ON)}")
    return items


def _config_p(pack, cfg: dict, path) -> None:
    """The exponents a report configuration gives (``[checks.NAME] p = [...]``, those that differ from the
    pack's defaults): a non-empty list of numbers, none NaN, the finite ones in (1, 1e3] as ``--p``; exit 2
    naming the file and the key (each check then holds them to its own range)."""
    for name, opts in cfg["checks"].items():
        p = opts.get("p")
        if p is None or name not in pack.checks or p == pack.checks[name].defaults.get("p"):
            continue
        key = f"--config {path}: checks.{name}.p"
        if not p:
            raise UsageError(f"{key} is empty: give at least one exponent, or leave the key out (the check's own)")
        for v in p:
            if math.isnan(v):
                raise UsageError(f"{key}: an exponent is NaN (not a number)")
            if math.isfinite(v) and not 1.0 < v <= P_MAX:
                raise UsageError(
                    f"{key}: each exponent must be a number in (1, {P_MAX:g}] (or inf where the check allows it), "
                    f"got {v!r} (|x|^p overflows or underflows float64 for most x beyond that)"
                )


def _plan_report(pack, names: list, skip: list, cfg: dict, path) -> dict:
    """The report's checks with their options resolved (:func:`proofs_checks.runner.plan`); a value a check
    refuses is exit 2 naming the configuration file and the key (``checks.NAME.p``)."""
    from proofs_checks.runner import plan

    _config_p(pack, cfg, path)
    options = {n: cfg["checks"].get(n, {}) for n in names}
    for n in names:
        if n in pack.checks and n not in skip:
            try:
                pack.checks[n].resolve(options[n])
            except ValueError as exc:
                text = str(exc).replace("--p ", f"checks.{n}.p ").replace("--p:", f"checks.{n}.p:")
                text = re.sub(r"--set ([\w.-]+)", rf"checks.{n}.\1", text)  # the file's key
                where = f"--config {path}: " if path else "configuration: "
                raise UsageError(f"{where}{text}" + ("" if f"checks.{n}" in text else f" (check {n})")) from exc
    try:
        return plan(pack, names, options, skip)
    except ValueError as exc:
        raise UsageError(f"configuration: {exc}") from exc


_MAX_REPORT_CONFIG = 16 * 1024 * 1024  # bytes: a report configuration is a few lines


def _check_config_file(path) -> None:
    """``--config PATH`` is a regular file of at most 16 MiB (``/dev/zero``, a FIFO or a terminal was read until
    memory ran out: the report never started and never said why)."""
    if not path or not os.path.exists(path) or os.path.isdir(path):  # missing, a directory: load_config says so
        return
    if not os.path.isfile(path):
        raise UsageError(f"--config {path}: not a regular file (a TOML file is expected)")
    if os.path.getsize(path) > _MAX_REPORT_CONFIG:
        raise UsageError(f"--config {path}: larger than {_MAX_REPORT_CONFIG} bytes (not a report configuration)")


def _kept_now() -> dict:
    """This process's counts of the deciders' kept decisions (:func:`proofs_checks.moment.kept_counts`), zeros when
    no decider ran here (the module is not imported for it)."""
    import sys

    mod = sys.modules.get("proofs_checks.moment")
    return mod.kept_counts() if mod is not None else {"read": 0, "computed": 0, "directory": None}


def _kept_total(base: dict, counts: list) -> dict:
    """The run's kept decisions: each process's counts less what it held when the run began (a forked worker
    starts with this process's counts, ``base``)."""
    out = {"read": 0, "computed": 0, "directory": None}
    for c in counts:
        for k in ("read", "computed"):
            out[k] += c[k] - base[k]
        if c["directory"] and c["read"] > base["read"]:
            out["directory"] = c["directory"]
    return out


def _cmd_report(args) -> int:
    from figures.report import draw_figures, load_config, write_report
    from proofs_checks.packs import PackError, load
    from proofs_checks.records import meta
    from proofs_checks.runner import run_checks

    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    try:
        pack = load(args.claims)
    except PackError as exc:
        raise UsageError(str(exc)) from exc
    _check_config_file(args.config)
    try:
        cfg = load_config(args.config, pack)
    except RecursionError:
        raise UsageError(f"--config {args.config}: nested too deeply to read (not a report configuration)") from None
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    skip = [s.strip() for s in (args.skip or "").split(",") if s.strip()]
    if args.only is not None and not only:  # --only '' ran every check
        raise UsageError(f"--only {args.only!r}: names no check (comma-separated check names; leave it out for all)")
    if args.skip is not None and not skip:  # --skip '' (an unset variable in a script) ran every check
        raise UsageError(f"--skip {args.skip!r}: names no check (comma-separated check names; leave it out for none)")
    for flag, lst in (("--only", only), ("--skip", skip)):
        for n in lst:
            if n not in pack.checks:
                raise UsageError(f"{flag} {n}: no such check in pack {pack.name!r} (checks: {', '.join(pack.checks)})")
    names = only or list(pack.checks)
    if skip and not set(names) - set(skip):
        chosen = f"--only {args.only}" if only else f"pack {pack.name!r}"
        raise UsageError(f"--skip {args.skip}: leaves no check of {chosen} to run")
    fail_on = _parse_fail_on(args.fail_on)  # bad input before any work starts
    planned = _plan_report(pack, names, skip, cfg, args.config)
    seed = cfg["seed"] if args.seed is None else args.seed
    _check_seed(seed, "--seed" if args.seed is not None else f"--config {args.config}: seed")
    _prepare_out(args.out, args=args)
    say = _say_factory(args.quiet, "lptheory report")
    bar = _CheckBar(len(planned), args.quiet)
    from .guard import publish, staging

    stage = staging(args.out)  # written aside, then moved into place file by file (never half-written)
    drawn: dict = {}  # the figures drawn by the workers that ran the checks (--jobs > 1), while others run

    kept_base, kept_by_pid = _kept_now(), {}  # the deciders' decisions read back from disk (provenance)

    def figures_drawn(name, got):
        figs, pid, kept = got
        drawn[name] = figs[0]
        kept_by_pid[pid] = kept  # a worker's counts so far (it may run several checks)
        for what, exc in figs[1]:
            _figure_skipped(args, what, exc)  # skipped, named; the data written

    try:
        try:
            stopped = None
            try:
                results, elapsed = run_checks(
                    pack,
                    planned,
                    seed=seed,
                    quick=args.quick,
                    jobs=args.jobs,
                    say=say,
                    on_done=bar.done,
                    after=lambda name, recs: (draw_figures(pack, name, recs, stage), os.getpid(), _kept_now()),
                    on_after=figures_drawn,
                )
            except BaseException as exc:  # KeyboardInterrupt, SystemExit... too: the bar is closed whatever stops it
                stopped = exc
                raise
            finally:
                bar.close(stopped)
        except Exception as exc:
            shutil.rmtree(stage, ignore_errors=True)
            return _run_failure(exc, pack, args)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _warn_empty(results)
    info = meta(
        "report",
        seed,
        {"pack": pack.target, "checks": planned, "quick": args.quick, "config": args.config},
        quick=args.quick,
    )
    info["kept_decisions"] = kept = _kept_total(kept_base, [_kept_now(), *kept_by_pid.values()])
    res = write_report(
        stage,
        pack=pack,
        records=results,
        meta=info,
        elapsed=elapsed,
        options=planned,
        on_figure_error=lambda what, exc: _figure_skipped(args, what, exc),  # skipped, named; the data written
        figures=drawn,
    )
    publish(stage, args.out)
    from proofs_checks.records import is_control, status_counts_text

    print("verdicts: " + status_counts_text(res["claims"]))  # negative controls counted apart
    if kept["read"]:
        print(
            f"kept decisions: {kept['read']} read back from {kept['directory']} (made earlier by the same sources, in "
            f"another process of this run or in an earlier run; signed with your key), {kept['computed']} computed; "
            "LPTHEORY_SHARP_CACHE=0 recomputes them all"
        )
    found = [r for r in res["violated"] if not is_control(r)]
    if found:
        print("violated claims (findings about the paper; witnesses re-checked, details in the report):")
        for line in _violated_table(found):
            print("  " + line)
        from figures.report import RECHECK_CMD, witness_files

        if files := witness_files(results):  # the files the report wrote: the hint names one that exists
            import shlex

            first = shlex.quote(os.path.join(args.out, next(iter(files.values()))))
            print(
                f"witnesses: {os.path.join(args.out, 'witnesses')}{os.sep} (one JSON file per violated record); "
                f"re-check one: {RECHECK_CMD.format(path=first)}"
            )
    print(
        f"report: {args.out}/index.html, {args.out}/report.md, {args.out}/report.tex, {args.out}/claims.json, "
        f"{args.out}/results.csv"
    )
    if fail_on:  # the same rule as lptheory check --fail-on (no baseline here: regressed finds nothing)
        from proofs_checks.regression import compare, format_regressions

        problems = compare(res["claims"], None, fail_on=fail_on)
        if problems:
            print(format_regressions(problems), file=sys.stderr)
            return EXIT_FINDING
    return EXIT_OK


def _param_text(k, v) -> str:
    if isinstance(v, float):
        return f"{k}={v:g}"
    if isinstance(v, str) and (not v or any(c in v for c in ' ,="')):
        import json

        return f"{k}={json.dumps(v)}"  # quoted: a setting with spaces or commas stays one visible value
    return f"{k}={v}"


def _violated_table(found: list[dict]) -> list[str]:
    """The table of violated claims that ``lptheory report`` prints (claim, params, check, ratio), one row per
    record. Params: p and d where the record has them; where rows of the same claim and check would still
    read the same, the parameters whose values tell them apart (the record's ``show`` keys first, then the
    others in name order; only as many as needed), e.g. ``p=3 setting="tau = 0, g0 #2 (d = 5)"``."""
    from proofs_checks.records import distinguishing_keys

    from .console import table

    def text(i, ks):
        return " ".join(_param_text(k, found[i]["params"][k]) for k in ks)

    base = [[k for k, kind in (("p", float), ("d", int)) if isinstance(r["params"].get(k), kind)] for r in found]
    keys = distinguishing_keys(found, base, lambda i, ks: (found[i]["id"], found[i]["check"], text(i, ks)))
    rows = []
    for i, r in enumerate(found):
        rt = r["ratio"]
        rows.append([r["id"], text(i, keys[i]), r["check"], rt if isinstance(rt, (int, float)) else "-"])
    return table(["claim", "params", "check", "ratio"], rows, digits=4, align="<<<>")


class _CheckBar:
    """Progress over the checks: a line rewritten in place on a terminal (:class:`.console.StepProgress`; tqdm
    drew nothing on a terminal that reports zero columns, such as ``script``'s), plain lines otherwise."""

    def __init__(self, total, quiet):
        from .console import StepProgress

        self.bar = None
        self.quiet = quiet
        self.total = total
        self.n = 0
        if not quiet and sys.stderr.isatty():
            self.bar = StepProgress("checks", total, unit="checks", rate=False).__enter__()

    def done(self, name, k, dt):
        self.n += 1
        if self.bar is not None:
            self.bar.note = f"{name}: {k} records in {dt:.0f}s"
            self.bar(self.n, self.total)
        elif not self.quiet:
            print(
                f"[lptheory report] {name}: {k} records in {dt:.1f}s ({self.n}/{self.total})",
                file=sys.stderr,
                flush=True,
            )

    def close(self, exc: BaseException | None = None):
        """Clear the live line (a summary, or where it stopped); idempotent."""
        bar, self.bar = self.bar, None
        if bar is not None:
            bar.__exit__(type(exc) if exc is not None else None, exc, None)


# ---------------------------------------------------------------------------------------------------
# the parser


def _one_of(names, what: str = "optimizer") -> str:
    return f"{what}, one of: {', '.join(sorted(names))}"


def _add_options(parser, options) -> None:
    """Add the options ``[(flag, keywords), ...]`` to ``parser`` (one sub-command's options as data); an item
    that is a function adds its own (``fn(parser)``)."""
    for item in options:
        if callable(item):
            item(parser)
        else:
            flag, kw = item
            parser.add_argument(flag, **kw)


def _seed_option(help_text: str = "random seed", default=0):
    return ("--seed", {"type": seed_arg, "default": default, "help": help_text})


def _jobs_option():
    return (
        "--jobs",
        {
            "type": int,
            "default": _default_jobs(),
            "metavar": "N",
            "help": f"local processes; the same results for any N (default: {_default_jobs()}, the cores, at most 8)",
        },
    )


def _quiet_option(help_text: str = "no progress output"):
    return ("--quiet", {"action": "store_true", "help": help_text})


def _traceback_option(help_text: str = "print the traceback when a check fails to run"):
    return ("--traceback", {"action": "store_true", "help": help_text})


def _optimizer_option(OPTIMIZERS, **kw):
    return ("--optimizer", {"choices": sorted(OPTIMIZERS), "metavar": "NAME", "help": _one_of(OPTIMIZERS), **kw})


_ABOUT = {  # sub-command: (help, description) keywords of its parser
    "info": dict(
        help="versions, backends, optimizers and claim packs",
    ),
    "demo": dict(
        help="step an optimizer on a small quadratic (a smoke test)",
        description="Step an optimizer on the quadratic f(x) = sum_i h_i x_i^2 / 2 with h_i from 1 down to 1e-3 "
        "(log-spaced), from a random start per replicate, and print the mean loss and gradient norm every tenth "
        "of the steps: a smoke test of an installation.",
    ),
    "run": dict(
        help="simulate optimizers on a synthetic problem; writes a CSV trace, a plot and run.json",
        description="Run one or more optimizers (common random numbers) on a synthetic problem with per-coordinate "
        "noise and a batch size, over R replicates; print final f - f* and ||grad f||_{p*}^{p*} with 95% Student-t "
        "intervals; write trace.csv, run.png/.svg and run.json to --out. Divergence is recorded, not an error.",
    ),
    "check": dict(
        help="run claim checks (a check of the Stacey pack, a claim file, a module or an installed pack)",
        description="Run checks and print their verdicts (holds / violated / inconclusive / not-applicable). TARGET "
        "is a check of the built-in Stacey pack (`lptheory info` lists every pack's checks), a claim file "
        "(path/to/claims.py), a module (pkg.claims or pkg.claims:PACK) or an installed pack's name; NAMES select "
        "checks of it (all by default).",
    ),
    "report": dict(
        help="run a pack's checks and write the report (HTML, Markdown, LaTeX, figures, claims.json, results.csv)",
        description="Run the checks of a pack (the Stacey paper by default) and write index.html (math rendered "
        "offline by the vendored KaTeX), report.md, report.tex, every figure (PNG and SVG), claims.json and "
        "results.csv (and results.parquet with pyarrow) to --out.",
    ),
    "sweep": dict(
        help="run a grid of simulator cells on Dask; results in Parquet, cached and resumable",
        description="Run the grid of CONFIG.toml (see examples/sweeps/theorem1_rate.toml) on an embedded Dask "
        "LocalCluster (default), on an existing Dask scheduler (--scheduler) or in this process (--workers 0). "
        "One Parquet file per cell in OUT/cells (written atomically; a cell already there is not recomputed), "
        "all rows in OUT/results.parquet. Exit status 1 when a cell failed (the others still run).",
    ),
    "plot": dict(
        help="rate curves of a sweep (PNG and SVG)",
        description="A metric of a sweep against a swept parameter (log-log), lines by --hue, panels by --col, "
        "intervals over seeds (or replicates), fitted slopes; defaults from the config's [plot] section.",
    ),
    "diff": dict(
        help="what changed between two runs, claim by claim (status, ratio, witness)",
        description="Compare two claims.json files (from lptheory check --json/--out or lptheory report), or two "
        "report directories: claims whose status, ratio or witness changed, and claims added or removed.",
    ),
}


def _demo_options() -> list:
    """The options of ``lptheory demo``."""
    from lptheory.optimizers import OPTIMIZERS

    return [
        _optimizer_option(OPTIMIZERS, default="stacey-pp"),
        (
            "--p",
            {"type": _p_arg, "default": None, "help": "l_p exponent of the optimizers that have one (default: 3)"},
        ),
        ("--lr", {"type": float, "default": 1e-2, "help": "step size"}),
        ("--d", {"type": _count_arg, "default": 1000, "help": "dimension"}),
        ("--replicates", {"type": _count_arg, "default": 4, "metavar": "R", "help": "independent replicates"}),
        ("--steps", {"type": _count_arg, "default": 200, "metavar": "T", "help": "number of steps"}),
        _seed_option(),
    ]


def _run_options() -> list:
    """The options of ``lptheory run``."""
    from lptheory.optimizers import OPTIMIZERS
    from synthetic.noise import NOISES
    from synthetic.problems import PROBLEMS

    optimizer_help = _one_of(OPTIMIZERS) + "; repeat to compare several (default: stacey-pp)"
    shape_help = (
        "matrix optimizers: each replicate's iterate as an M x N matrix, M * N = d; also the layout of --noise "
        "rank-one (default, one layout for both: the problem's own matrix shape, else with --noise rank-one the "
        "noise's own split (see --noise), else 1 x d)"
    )
    noise_help = (
        _one_of(NOISES, "noise family") + "; rank-one: each draw one row of the d = M x N matrix (--shape M N, "
        "else the problem's own shape, else M the largest divisor of d up to sqrt(d)); the matrix optimizers take "
        "the same layout"
    )
    return [
        _optimizer_option(OPTIMIZERS, action="append", help=optimizer_help),
        ("--p", {"type": _p_arg, "default": None, "help": "l_p exponent of the l_p optimizers (their default: 3)"}),
        (
            "--p-measure",
            {
                "type": _p_arg,
                "default": None,
                "metavar": "P",
                "help": "p of the gradient metric ||grad f||_{p*}^{p*} (default: --p, else 3)",
            },
        ),
        (
            "--problem",
            {"default": "separable", "choices": sorted(PROBLEMS), "metavar": "NAME"}
            | {"help": _one_of(PROBLEMS, "problem")},
        ),
        (
            "--problem-seed",
            {"type": seed_arg, "default": 0, "metavar": "SEED", "help": "seed of the problem instance"},
        ),
        ("--d", {"type": _count_arg, "default": 100, "help": "dimension"}),
        (
            "--shape",
            {"type": _count_arg, "nargs": 2, "metavar": ("M", "N"), "default": None, "help": shape_help},
        ),
        ("--noise", {"default": "rademacher", "choices": sorted(NOISES), "metavar": "NAME", "help": noise_help}),
        ("--sigma", {"type": float, "default": 0.1, "help": "noise std per coordinate (scale of the profile)"}),
        ("--sigma-profile", {"default": "flat", "choices": ["flat", "power"], "help": "per-coordinate stds"}),
        (
            "--batch",
            {"type": _count_arg, "default": None, "metavar": "N"}
            | {"help": "batch size n_t, the same at every step (default: 1; not with --batch-schedule T)"},
        ),
        (
            "--batch-schedule",
            {"default": "constant", "choices": ["constant", "T"], "help": "'T': n_t = T as in Theorem 1"},
        ),
        ("--steps", {"type": _count_arg, "default": 1000, "metavar": "T", "help": "number of steps T"}),
        ("--replicates", {"type": _count_arg, "default": 16, "metavar": "R", "help": "independent replicates R"}),
        _seed_option("random seed (same seed, same bits)"),
        (
            "--record-every",
            {"type": _count_arg, "default": 10, "metavar": "N", "help": "record the metrics every N steps"},
        ),
        ("--lr", {"type": float, "default": None, "help": "step size (the optimizer's default when omitted)"}),
        _add_hyper_flags,
        (
            "--optimizer-module",
            {"action": "append", "default": argparse.SUPPRESS, "metavar": "FILE_OR_MODULE"}
            # absent unless given: run.json's argv and config hash stay as they were
            | {
                "help": "import this .py file or module first: the optimizer classes it defines join --optimizer "
                "(repeatable; default: none)"
            },
        ),
        ("--backend", {"default": "numpy", "choices": ["numpy", "torch"], "help": "array backend"}),
        ("--device", {"default": None, "help": "torch device, e.g. cpu or cuda (--backend torch only)"}),
        (
            "--dtype",
            {"default": None, "choices": ["float64", "float32"]}
            | {"help": "float32 needs --backend torch (float64 when omitted)"},
        ),
        ("--out", {"default": "out", "help": "output directory"}),
        _quiet_option(),
    ]


def _check_options() -> list:
    """The options of ``lptheory check``."""

    return [
        ("target", {"metavar": "TARGET", "help": "a check name, a claim file, a module or a pack"}),
        ("names", {"metavar": "NAME", "nargs": "*", "help": "checks of TARGET to run (default: all)"}),
        (
            "--workers",
            {"type": int, "default": None, "metavar": "N"}
            | {"help": "checks that train many runs (practice tasks): a Dask LocalCluster of N workers (0: here)"},
        ),
        (
            "--scheduler",
            {"default": None, "metavar": "ADDRESS"}
            | {"help": "checks that train many runs (practice tasks): an existing Dask scheduler, tcp://host:port"},
        ),
        (
            "--p",
            {"type": _p_arg, "action": "extend", "nargs": "+", "default": None}
            | {"help": "p values (checks that take p; their defaults otherwise)"},
        ),
        ("--set", {"action": "append", "metavar": "KEY=V[,V...]", "help": "another option of the check"}),
        ("--quick", {"action": "store_true", "help": "smaller budgets (a smoke run; used by the tests)"}),
        ("--json", {"action": "store_true", "help": 'print one JSON object {"claims": [...], "meta": {...}}'}),
        (
            "--out",
            {"default": None}
            | {
                "help": "directory for check_NAME.json and the figures, PNG and SVG (default: none, the verdicts "
                "printed only)"
            },
        ),
        _seed_option(),
        _jobs_option(),
        _quiet_option("no progress lines on stderr"),
        _traceback_option(),
        _fail_on_option(),
        ("--baseline", {"default": None, "help": "claims.json (or a report directory) to compare against"}),
        (
            "--ratio-tolerance",
            {"type": float, "default": 0.05}
            | {"help": "with --baseline: a ratio moving towards its bound by more than this (relative) regresses"},
        ),
    ]


def _fail_on_option(extra: str = "") -> tuple:
    """``--fail-on KINDS`` of ``lptheory check`` and ``lptheory report`` (same values, :data:`_FAIL_ON`, and the
    same rule, :func:`proofs_checks.regression.compare`)."""
    return (
        "--fail-on",
        {"default": None, "metavar": "KINDS"}
        | {
            "help": f"exit 1 on findings: comma-separated among {', '.join(_FAIL_ON)} (a holds whose evidence "
            "covers what was tested only, not the claim's whole class)" + extra
        },
    )


def _report_options() -> list:
    """The options of ``lptheory report``."""

    return [
        (
            "--claims",
            {"default": None, "metavar": "TARGET"}
            | {"help": "claim file, module or installed pack (default: the built-in Stacey pack)"},
        ),
        ("--only", {"default": None, "metavar": "NAMES", "help": "comma-separated checks to run (default: all)"}),
        ("--skip", {"default": None, "metavar": "NAMES", "help": "comma-separated checks to leave out"}),
        ("--out", {"default": "report", "help": "output directory (default: report)"}),
        (
            "--config",
            {"default": None}
            | {"help": "TOML file: seed = N and [checks.NAME] options merged over the pack's defaults"},
        ),
        _seed_option("random seed (default: the configuration's seed, else 0)", default=None),
        ("--quick", {"action": "store_true", "help": "smoke run (small budgets)"}),
        _jobs_option(),
        _quiet_option(),
        _traceback_option(),
        _fail_on_option("; the report is written first (regressed needs a baseline: lptheory check --baseline)"),
    ]


def _sweep_options() -> list:
    """The options of ``lptheory sweep``."""

    return [
        ("config", {"metavar": "CONFIG.toml", "help": "the sweep's grid and fixed values"}),
        ("--out", {"default": "sweep", "help": "output directory (default: sweep)"}),
        (
            "--scheduler",
            {"default": None, "metavar": "ADDRESS", "help": "an existing Dask scheduler, tcp://host:port"},
        ),
        (
            "--scheduler-timeout",
            {"type": float, "default": 30.0, "metavar": "SECONDS"}
            | {"help": "seconds to wait for the scheduler's handshake (default: 30)"},
        ),
        (
            "--workers",
            {
                "type": int,
                "default": None,
                "help": "LocalCluster worker processes (default: the cores; 0: no Dask)",
            },
        ),
        ("--resume", {"action": "store_true", "help": "continue the sweep in --out (its cells are kept)"}),
        (
            "--dry-run",
            {"action": "store_true", "help": "print the cells, what is cached and the work; run nothing"},
        ),
        ("--yes", {"action": "store_true", "help": "run a grid larger than sweep.max_cells"}),
        (
            "--optimizer-module",
            {"action": "append", "default": argparse.SUPPRESS, "metavar": "FILE_OR_MODULE"}
            | {
                "help": "import this .py file or module first (and on every Dask worker): the optimizer classes it "
                "defines join the grid's optimizer.name (repeatable; default: none)"
            },
        ),
        _quiet_option(),
    ]


def _plot_options() -> list:
    """The options of ``lptheory plot``."""

    return [
        ("sweep_dir", {"metavar": "SWEEP_DIR", "help": "the --out directory of lptheory sweep"}),
        (
            "--x",
            {"default": None}
            | {"help": "the swept parameter on the x axis (default: the config's [plot] x, else sim.steps)"},
        ),
        (
            "--y",
            {"default": None, "help": "the metric, e.g. grad_pstar_avg (default: the config's [plot] y, else gap)"},
        ),
        (
            "--hue",
            {"default": None}
            | {
                "help": "one line per value of this column, e.g. optimizer.name (default: the config's [plot] "
                "hue, else one line)"
            },
        ),
        (
            "--col",
            {"default": None}
            | {"help": "one panel per value of this column, e.g. p (default: the config's [plot] col, else one panel)"},
        ),
        (
            "--theory-slope",
            {"type": float, "default": None}
            | {"help": "draw a reference line with this slope (default: the config's [plot] theory_slope, else none)"},
        ),
        ("--out", {"default": None, "help": "file stem (default: SWEEP_DIR/rate)"}),
    ]


def _diff_options() -> list:
    """The options of ``lptheory diff``."""

    return [
        ("old", {"metavar": "OLD", "help": "claims.json, check_NAME.json or a report directory"}),
        ("new", {"metavar": "NEW", "help": "claims.json, check_NAME.json or a report directory"}),
        ("--json", {"action": "store_true", "help": 'print {"changes": [...], "summary": {...}}'}),
    ]


def build_parser() -> argparse.ArgumentParser:
    """The ``lptheory`` parser: each sub-command's help and description from ``_ABOUT``, its options from
    ``_NAME_options()``; every sub-command also takes ``--traceback`` (the traceback of a failure, as well as
    its one-line message)."""
    parser = _Parser(
        prog="lptheory",
        description="Numerical theory verification for l_p stochastic optimization. Exit status: 0 ran (a violated "
        "claim is a finding), 1 a finding failed the run (--fail-on), 2 bad input, 3 a check or a command crashed.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands = {
        "info": (_cmd_info, list),
        "demo": (_cmd_demo, _demo_options),
        "run": (_cmd_run, _run_options),
        "check": (_cmd_check, _check_options),
        "report": (_cmd_report, _report_options),
        "sweep": (_cmd_sweep, _sweep_options),
        "plot": (_cmd_plot, _plot_options),
        "diff": (_cmd_diff, _diff_options),
    }
    for name, (func, options) in commands.items():
        p = sub.add_parser(name, **_ABOUT[name])
        _add_options(p, options())
        if name not in ("check", "report"):  # these two place theirs after --quiet
            _add_options(p, [_traceback_option("print the traceback when the command fails")])
        p.set_defaults(func=func)
    return parser


def _cmd_diff(args) -> int:
    import json

    from proofs_checks.regression import diff

    old = _load_claims(args.old, "OLD")
    new = _load_claims(args.new, "NEW")
    for recs, what, path in ((old, "OLD", args.old), (new, "NEW", args.new)):
        _no_duplicate_records(recs, f"{what} {path}")
    rows = diff(old, new)
    summary = {
        "old": len(old),
        "new": len(new),
        "changed": sum(r["change"] not in ("added", "removed") for r in rows),
        "added": sum(r["change"] == "added" for r in rows),
        "removed": sum(r["change"] == "removed" for r in rows),
        "status_changed": sum("status" in r["change"].split(",") for r in rows),
        "evidence_changed": sum("evidence" in r["change"].split(",") for r in rows),
    }
    if args.json:
        print(json.dumps({"changes": rows, "summary": summary}, indent=1, sort_keys=True))
        return EXIT_OK
    print(
        f"{summary['old']} -> {summary['new']} records: {summary['changed']} changed "
        f"({summary['status_changed']} in status, {summary['evidence_changed']} in evidence), "
        f"{summary['added']} added, {summary['removed']} removed"
    )
    if rows:
        from proofs_checks.regression import format_rows

        print("\n".join(format_rows(rows, [], [("change", 20), ("status", 28), ("ratio", 0)])))
    return EXIT_OK


def _no_duplicate_records(recs, where: str) -> None:
    """UsageError when two records of one file are the same record (:func:`proofs_checks.regression.key`): a
    diff would compare only one of them ("2 -> 1 records")."""
    from proofs_checks.regression import key

    seen = {}
    for i, r in enumerate(recs):
        k = key(r)
        if k in seen:
            raise UsageError(
                f"{where}: records {seen[k]} and {i} are the same record (id {r.get('id')!r}, same check and "
                "setting): a diff compares one record with one"
            )
        seen[k] = i


def _load_claims(path, what):
    """The records of a claims JSON file or a report directory, every field the readers use validated
    (:func:`proofs_checks.records_io.read_records`); UsageError naming ``what``, the file and the key."""
    from proofs_checks.records_io import RecordsFileError, read_records

    try:
        return read_records(path, what)
    except RecordsFileError as exc:
        raise UsageError(str(exc)) from None


def _needs_extra(extra: str, command: str, *modules) -> None:
    """UsageError naming the extra when one of ``modules`` does not import (``lptheory sweep`` without
    ``pip install 'lptheory[sweep]'``: a missing optional dependency, not a bug)."""
    import importlib

    for mod in modules:
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise UsageError(
                f"lptheory {command} needs the {extra!r} extra ({mod} does not import: {exc}); "
                f"pip install 'lptheory[{extra}]'"
            ) from None


def _cmd_sweep(args) -> int:
    from lptheory.app import sweep as S

    if not args.dry_run and not (args.workers == 0 and args.scheduler is None):
        _needs_extra("sweep", "sweep", "pyarrow", "dask", "distributed")
    else:
        _needs_extra("sweep", "sweep", "pyarrow")

    if args.workers is not None and args.workers < 0:
        raise UsageError(f"--workers must be >= 0, got {args.workers}")
    if not (math.isfinite(args.scheduler_timeout) and args.scheduler_timeout > 0):
        raise UsageError(f"--scheduler-timeout must be a finite number of seconds > 0, got {args.scheduler_timeout}")
    try:
        cfg = S.load_config(args.config)
        if not args.dry_run:
            _prepare_out(args.out, args=args)
        args._created_out = False  # never remove a sweep's output: its cells are what --resume continues from
        if args.dry_run and args.yes and S.grid_size(cfg) > cfg["sweep"].get("max_cells", S.MAX_CELLS):
            return _sweep_preview(S.preview(cfg, args.out), args, list(cfg["grid"]))
        if args.dry_run:
            pl = S.plan(cfg, args.out, confirm_large=args.yes)
            n, cached = len(pl["cells"]), pl["cached"]
            print(f"{n} cells, {cached} cached in {args.out}, {n - cached} to run")
            print(f"work: {pl['work']:,} replicate-steps (steps x replicates over the cells to run)")
            for c in pl["todo"][:20]:
                print("  " + ", ".join(f"{k}={v}" for k, v in c.items() if k in cfg["grid"]))
            if len(pl["todo"]) > 20:
                print(f"  ... and {len(pl['todo']) - 20} more")
            return EXIT_OK
        res = S.run_sweep(
            cfg,
            args.out,
            scheduler=args.scheduler,
            workers=args.workers,
            resume=args.resume,
            confirm_large=args.yes,
            progress=not args.quiet,
            scheduler_timeout=args.scheduler_timeout,
        )
    except S.SweepConfigError as exc:
        text = str(exc)
        raise UsageError(text if text.startswith(f"{args.config}:") else f"{args.config}: {text}") from None
    except S.SweepError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"{res.cells} cells: {len(res.computed)} computed, {len(res.cached)} cached, {len(res.failed)} failed; "
        f"{res.seconds:.1f} s ({res.compute_seconds:.1f} s of cell compute)"
    )
    if res.path:
        print(f"results: {res.path}")
    if res.failed:
        print("failed cells (details in failed.json):", file=sys.stderr)
        for h, f in res.failed.items():
            print(f"  {h}: {f['error']}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def _sweep_preview(pv: dict, args, swept: list) -> int:
    """``lptheory sweep --dry-run --yes`` on a grid larger than sweep.max_cells: counts from the axes' lengths
    (:func:`.sweep.preview`), no list of every cell."""
    print(
        f"{pv['cells']:,} cells (the product of the grid's axes; cells that become equal run once), "
        f"{pv['cached']:,} cell files already in {args.out}"
    )
    print(f"work: at most {pv['work']:,} replicate-steps (steps x replicates over the cells)")
    print("first cells:")
    for c in pv["first"]:
        print("  " + ", ".join(f"{k}={v}" for k, v in c.items() if k in swept))
    return EXIT_OK


def _cmd_plot(args) -> int:
    import json

    _needs_extra("sweep", "plot", "pyarrow")
    import pyarrow.parquet as pq

    from figures.sweep import plot_sweep

    if args.theory_slope is not None and not math.isfinite(args.theory_slope):
        raise UsageError(f"--theory-slope must be a finite number, got {args.theory_slope}")
    path = os.path.join(args.sweep_dir, "results.parquet")
    if not os.path.exists(path):
        raise UsageError(f"{path}: no results (run lptheory sweep CONFIG --out {args.sweep_dir} first)")
    defaults = {}
    meta = os.path.join(args.sweep_dir, "sweep.json")
    if os.path.exists(meta):
        try:
            with open(meta) as fh:
                defaults = json.load(fh).get("config", {}).get("plot", {})
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"{meta}: not a sweep's sweep.json ({exc})") from None
    x = args.x or defaults.get("x") or "sim.steps"
    y = args.y or defaults.get("y") or "gap"
    hue = args.hue or defaults.get("hue")
    col = args.col or defaults.get("col")
    slope = args.theory_slope if args.theory_slope is not None else defaults.get("theory_slope")
    stem = args.out or os.path.join(args.sweep_dir, "rate")
    _prepare_out(
        os.path.dirname(os.path.abspath(stem)), flag="--out" if args.out else "SWEEP_DIR", args=args, lock=False
    )
    try:
        slopes, paths = plot_sweep(pq.read_table(path), stem, x=x, y=y, hue=hue, col=col, theory_slope=slope)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for (cv, hv), s in slopes.items():
        label = f"{col}={cv}, " if col else ""
        print(
            f"{label}{hue + '=' if hue else ''}{hv}: fitted slope {s:.3f}" + (f" (theory {slope:g})" if slope else "")
        )
    print("wrote " + ", ".join(paths))
    return EXIT_OK


def _drop_cluster_exit_hook() -> None:
    """After an interruption: Dask's exit hook would close the sweep's LocalCluster, whose workers were
    killed already, and print the traceback of that failure: it is dropped (nothing is left to close)."""
    spec = sys.modules.get("distributed.deploy.spec")
    hook = getattr(spec, "close_clusters", None)
    if hook is not None:
        import atexit

        atexit.unregister(hook)


def _quiet_colorama_reset() -> None:
    """numba imports colorama, whose import registers an exit hook that writes ESC[0m (reset the colours) to
    a terminal: a stray control sequence after our last line (seen in ``script`` logs). Nothing here colours
    the terminal, so there is nothing to reset: the hook is dropped."""
    mod = sys.modules.get("colorama.initialise")
    reset = getattr(mod, "reset_all", None)
    if reset is not None:
        import atexit

        atexit.unregister(reset)


def _import_optimizer_modules(argv) -> None:
    """Import the modules named by ``--optimizer-module`` (a .py file or a module name) before the parser is
    built: the optimizer classes they define register themselves, so ``--optimizer`` and the hyper-parameter
    flags of ``lptheory run`` include them, and ``lptheory sweep`` passes them to its workers. UsageError naming
    the flag when one does not import."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if _command_of(argv) not in _TAKES_OPTIMIZER_MODULE:  # parsed first: a command without the flag rejects it
        return  # (argparse, exit 2) and nothing named by it is imported
    named = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--optimizer-module"]
    named += [a.split("=", 1)[1] for a in argv if a.startswith("--optimizer-module=")]
    from lptheory import plugins

    for target in named:  # one plug-in mechanism (lptheory.plugins): the sweep's workers load the same list
        try:
            plugins.load(target)
        except KeyboardInterrupt:  # Ctrl-C, or the module raised it: an interruption (exit 130), one line
            raise _ImportInterrupted(f"--optimizer-module {target}") from None
        except plugins.PluginError as exc:  # any failure of the user's module: exit 2 naming the flag
            msg = str(exc)
            if "sys.exit(" in msg:
                msg += " (a module of optimizers defines classes; it does not exit)"
            raise UsageError(f"--optimizer-module {msg}") from None


_TAKES_OPTIMIZER_MODULE = ("run", "sweep")


class _ImportInterrupted(Exception):
    """A KeyboardInterrupt while a user's module was imported (the message names it)."""


def _command_of(argv) -> str | None:
    """The sub-command of ``argv``: its first word that is not an option (the top-level parser's only options are
    -h/--help, which take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv=None) -> int:
    try:
        _import_optimizer_modules(argv)
    except UsageError as exc:
        print(f"lptheory: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _ImportInterrupted as exc:
        print(f"lptheory: interrupted while importing {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2), already printed
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        _check_switches()
    except UsageError as exc:
        print(f"lptheory: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from .guard import interruptible, orphan_guard

    orphan_guard()  # every worker process forked from here on dies with this one, however it ends

    def on_timeout():  # Ctrl-C and the unwinding took too long: clean up from the watchdog
        _cleanup_owned(args)

    try:
        # as a program (argv from sys.argv) the watchdog outlives the command: exit within a second
        with interruptible(on_timeout=on_timeout, code=EXIT_INTERRUPTED, linger=argv is None):
            return args.func(args)
    except KeyboardInterrupt:
        _cleanup_owned(args)
        _drop_cluster_exit_hook()
        print("lptheory: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into a reader that stopped (``| head``): not an error of ours
        try:  # no second traceback when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # stdout without a file descriptor
            pass
        return EXIT_OK
    except (UsageError, ValueError, TypeError) as exc:
        _cleanup_owned(args)
        if getattr(args, "traceback", False):
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        from proofs_checks.packs import PackError

        kind = "error"
        if isinstance(exc, PackError):
            kind = "error in claims"
        print(f"lptheory: {kind}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a crash: no staging directory or half-made output left behind, the traceback, exit 3
        _cleanup_owned(args)
        full = _no_space(exc, args) or _bad_directory_switch(exc)
        if full:  # not a bug: the disk is full (nothing half-written is left behind), a switch names a bad directory
            print(f"lptheory: error: {full}", file=sys.stderr)
            return EXIT_USAGE
        from .guard import stop_requested

        if stop_requested():  # what a stop signal broke (a pool whose workers it killed): an interruption
            _drop_cluster_exit_hook()
            print("lptheory: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
        print(
            f"lptheory: {args.command} crashed: {type(exc).__name__}: {exc} (a bug: the traceback above says where)",
            file=sys.stderr,
        )
        return EXIT_CRASH
    finally:
        _quiet_colorama_reset()
        for lock in getattr(args, "_locks", ()):
            lock.release()
        from .guard import remove_if_empty

        for path in getattr(args, "_created_dirs", ()):  # made by this run and left empty (it stopped early)
            remove_if_empty(path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
