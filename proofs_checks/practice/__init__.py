"""The practice pack: the Stacey paper's experimental claims (Section 5) at small scale on real data that ship
inside installed packages, under a protocol whose verdicts come from the optimizers, not from the tuning
(:mod:`proofs_checks.practice.protocol`, :mod:`proofs_checks.practice.experiments`).

``lptheory check practice`` (installed entry point) or ``lptheory check proofs_checks.practice:PACK``; options
``--p`` (the exponents, default 2, 2.5, 3, 4, 6), ``--set seeds=S`` (final-run seeds: 5 with ``--quick``, 6
otherwise), ``--set device=cuda``, ``--set workers=N`` (a Dask LocalCluster) or ``--set scheduler=ADDRESS`` (a
Dask cluster). Checks: one per built-in task (:data:`proofs_checks.practice.tasks.BUILTIN`: ``digits``,
``charlm``, ``digits-cnn``, ``cancer``), ``efficiency`` (Section 5.3's memory and per-iteration cost) and
``probe-controls`` (the probe's estimators on a synthetic problem with known constants). A user's file defining
``TASK = PracticeTask(...)`` runs with ``lptheory check FILE.py`` (:func:`task_pack`).

Trials are cached (``$LPTHEORY_PRACTICE_CACHE``, default ``~/.cache/lptheory/practice``, signed): a rerun or an
interrupted run resumes. Needs the ``practice`` extra (torch and scikit-learn): without it the checks stop with
exit 2 naming it. Every record is evidence at small scale on one task, never for the paper's scale or for a class
of tasks.
"""

from __future__ import annotations

import importlib.util
import math

from proofs_checks.api import Pack, register_recheck

from .recheck import KINDS
from .task import NO_CLAIM, PracticeTask
from .tasks import installed

__all__ = ["PACK", "SMALL_SCALE_NOTE", "PracticeTask", "task_check", "task_pack"]

for _kind, _fn in KINDS.items():
    register_recheck(_kind, _fn)

PACK = Pack(
    "practice",
    title="The Stacey paper's practice at small scale: digits, a character-level transformer, and Theorem 1's "
    "constants measured along training",
    description="The experimental claims of Section 5 (outperforms SGD, Adam, AdamW and Lion; the best p; memory "
    "and per-iteration cost) checked at small scale on data that ship with scikit-learn and CPython, over seeds "
    "with a stated tuning budget, and a geometry probe measuring Theorem 1's sigma_i, G and L along the runs.",
    figures="proofs_checks.practice.figures",
)

SMALL_SCALE_NOTE = (
    "What small-scale evidence can say: whether Stacey, tuned with the same budget as the baselines, beats them on "
    "these two small tasks at these schedules, which p trains best there, what the memory and step cost of the "
    "implementations are, and whether Theorem 1's bound with measured constants orders the exponents as training "
    "does. What it cannot say: anything about ResNet-18 on CIFAR, ResNet-50 on ImageNet or llama-100m on C4 (the "
    "paper's Tables 1-3): rankings of optimizers change with scale, schedule, architecture and tuning budget, so "
    "a win here does not confirm the tables and a loss here does not refute them."
)


def _need(*mods):
    missing = [m for m in mods if importlib.util.find_spec(m) is None]
    if missing:
        names = {"sklearn": "scikit-learn"}
        raise ValueError(
            f"the practice checks need {', '.join(names.get(m, m) for m in missing)}: install the "
            "'practice' extra (pip install 'lptheory[practice]'; CPU torch: install torch first)"
        )


def _validate(mods, task=None):
    def validate(opts):
        _need(*mods)
        ps = opts.get("p") or []
        if not ps or not all(isinstance(p, (int, float)) and 2 <= p and math.isfinite(p) for p in ps):
            raise ValueError(f"--p must list finite exponents >= 2 (Stacey(p,p) needs a finite p), got {ps!r}")
        seeds = opts.get("seeds", 0)
        if not isinstance(seeds, int) or not (seeds == 0 or 2 <= seeds <= 12):
            raise ValueError(f"--set seeds must be 0 (automatic: 5 quick, 6 default) or in [2, 12], got {seeds!r}")
        workers = opts.get("workers", 0)
        if not isinstance(workers, int) or not 0 <= workers <= 256:
            raise ValueError(
                f"--workers (or --set workers) must be an integer in [0, 256] (0: in this process), got {workers!r}"
            )
        dev = opts.get("device", "cpu")
        if dev not in ("cpu", "cuda") and not str(dev).startswith("cuda:"):
            raise ValueError(f"--set device must be cpu or cuda, got {dev!r}")
        if str(dev).startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                raise ValueError("--set device=cuda: no CUDA device is available here (torch.cuda.is_available())")
        if (
            task is not None
        ):  # the task end to end on one batch (its splits, model, loss, metric): errors name the field
            task.validate(0, "cpu")

    return validate


_OPTS = ("p", "seeds", "device", "workers", "scheduler")
_DEF = {"p": [2.0, 2.5, 3.0, 4.0, 6.0], "seeds": 0, "device": "cpu", "workers": 0, "scheduler": ""}


def task_check(pack, task, ref=None):
    """Register ``task`` (a :class:`PracticeTask`) on ``pack`` as a check of the practice protocol
    (:func:`proofs_checks.practice.experiments.run_task`); ``ref`` is how a worker finds it (a built-in name or
    ``FILE.py:NAME``)."""

    def run(ctx):
        from .experiments import run_task

        return run_task(ctx, task, task_ref=ref or task.name)

    run.__name__ = f"practice_{task.name.replace('-', '_')}"
    run.__doc__ = (
        f"Setting: {task.scale or task.name}; {task.steps} steps of batch {task.batch_size} ({task.steps_for(True)} "
        f"with --quick). Methods: SGD w/ momentum, Adam, AdamW, Lion, Stacey(p,p), Stacey(p,2), each tuned with the "
        f"same budget (proofs_checks.practice.protocol). Claim: {task.claim or NO_CLAIM}. "
        f"Example: lptheory check practice {task.name} --quick."
    )
    title = f"Practice: {task.name}" + (f" ({task.claim.split(';')[0][:80]})" if task.claim else f" ({NO_CLAIM})")
    return pack.check(
        task.name,
        title=title,
        options=_OPTS,
        defaults=_DEF,
        validate=_validate(tuple(task.requires), task),
        parallel=True,
    )(run)


def task_pack(tasks, name: str, where: str):
    """A pack of the practice protocol over ``tasks`` (a user's file defining ``TASK``/``TASKS``)."""
    pack = Pack(
        name,
        title=f"Practice on the user's tasks: {', '.join(t.name for t in tasks)}",
        description=f"The practice protocol (fair tuning, paired statistics, controls) on {where}.",
        figures="proofs_checks.practice.figures:for_pack",
    )
    import os

    for t in tasks:
        task_check(pack, t, ref=f"{os.path.abspath(where)}:{t.name}")
    _register_profile(pack)
    return pack


for _t in installed().values():  # the built-in tasks and those of installed packages (lptheory.tasks)
    task_check(PACK, _t)


@PACK.check(
    "efficiency",
    title="Algorithmic efficiency: 2d memory overhead and per-iteration cost in arithmetic operations against Adam",
    validate=lambda opts: _need("torch"),
)
def _efficiency(ctx):
    """Setting: the update rules of lptheory.optimizers (the one source every backend runs), float32 vectors of
    d = 1e5-1e7 values, one thread. Claims (Section 5.3): "a 2d memory overhead ... matches the memory overhead of
    Adam" (per-coordinate state buffers after one step, exact; SGD w/ momentum as the control that must fail;
    the peak memory of a fresh process beside it); "the per-iteration cost, in terms of basic arithmetic
    operations, is also comparable to that of Adam" (operations per coordinate counted by tracing each rule,
    'comparable' read as at most 2x Adam's count, a planted 5x rule as the control; CPU-time ratios against
    torch's fused AdamW and Adam beside it). Example: ``lptheory check practice efficiency``."""
    from .efficiency import run_efficiency

    return run_efficiency(ctx)


@PACK.check("probe-controls", title="The geometry probe on a synthetic problem with certified sigma_i, G and L")
def _probe_controls(ctx):
    """Setting: ``SeparableNonconvex(d=64, "power")`` with uniform noise of a planted profile (sigma_i = 0.1, four
    coordinates at 2.0), per-sample gradients at five points, m = 2,000 (``--quick``) or 8,000 samples each.
    Checked: sigma_i recovered within 5% (relative) in every coordinate; G_p and the secant L_p never above their
    certified values; the planted coordinates found; controls (a wrong profile, L / 10, nothing planted) fail
    the same rules. Example: ``lptheory check practice probe-controls``."""
    from .controls import run_controls

    return run_controls(ctx)


def _verdict_rows(claims):
    rows = {}
    for r in claims:
        if r.get("check") in ("probe-controls",) or ".control" in r["id"] or "params" not in r:
            continue
        pr = r.get("params") or {}
        key = (pr.get("task", "-"), r["id"])
        row = rows.setdefault(
            key,
            {
                "task": key[0],
                "claim": r["id"],
                "holds": 0,
                "violated": 0,
                "inconclusive": 0,
                "not-applicable": 0,
                "scale": pr.get("model", pr.get("model", "-")),
            },
        )
        row[r["status"]] += 1
    # the trial budget each task ran with (its headline record says it: the same for every optimizer)
    budgets = {}
    for r in claims:
        if r.get("id") == "practice.outperforms.headline" and isinstance(r.get("data"), dict):
            trials = r["data"].get("trials") or {}
            budgets[(r.get("params") or {}).get("task")] = (
                f"{r['data'].get('budget', '-')}; {sum(trials.values())} tuning trainings over {len(trials)} optimizers"
            )
    for row in rows.values():
        row["budget"] = budgets.get(row["task"], "-")
    return [{k: str(v) for k, v in row.items()} for row in rows.values()]


PACK.report_section(
    "practice-scope",
    title="Practice at small scale: what it can and cannot say",
    intro=SMALL_SCALE_NOTE,
    columns=(
        ("claim", "claim"),
        ("task", "task"),
        ("scale", "scale"),
        ("holds", "holds"),
        ("violated", "violated"),
        ("inconclusive", "inconclusive"),
        ("not-applicable", "not applicable"),
        ("budget", "trial budget"),
    ),
)(_verdict_rows)


from .profiles import register_section as _register_profile  # noqa: E402  (the across-tasks section)

_register_profile(PACK)
