"""Running the checks of a pack: options resolved and validated before any work, then the checks in
this process or in ``jobs`` worker processes (same records either way: every check seeds itself)."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time

from lptheory.lifetime import die_with_parent

from .packs import Context, Pack, load

__all__ = ["CheckExited", "plan", "run_checks"]


class CheckExited(RuntimeError):
    """A check that ended the process instead of returning its records (``sys.exit``, ``SystemExit``):
    a crash of that check, never a silent success."""


def _run_check(pack: Pack, name: str, ctx: Context) -> list:
    """``pack.checks[name].run(ctx)``; a ``SystemExit`` out of the check (``sys.exit(0)`` too) becomes
    :class:`CheckExited` naming the check (it would otherwise end the command with the check's exit code,
    as if everything had run)."""
    try:
        return pack.checks[name].run(ctx)
    except SystemExit as exc:
        raise CheckExited(
            f"check {name!r} called sys.exit({exc.code!r}) instead of returning its records (a check must "
            "return a list of Claim records; it ran no further)"
        ) from exc


def plan(pack: Pack, names=None, options: dict | None = None, skip=()) -> dict[str, dict]:
    """``{check name: resolved options}`` for the selected checks (all by default), in the pack's
    order. Unknown names and options and invalid values raise ValueError naming them."""
    options = dict(options or {})
    names = list(names or pack.checks)
    unknown = [n for n in [*names, *skip, *options] if n not in pack.checks]
    if unknown:
        raise ValueError(f"unknown check {unknown[0]!r} for pack {pack.name!r} (checks: {', '.join(pack.checks)})")
    chosen = [n for n in pack.checks if n in names and n not in set(skip)]
    if not chosen:
        raise ValueError("no check selected")
    return {n: pack.checks[n].resolve(options.get(n)) for n in chosen}


def _run_one(target: str, name: str, opts: dict, seed: int, quick: bool):
    pack = load(target)
    t0 = time.perf_counter()
    recs = _run_check(pack, name, Context(seed=seed, quick=quick, options=opts))
    return name, [r.to_dict() for r in recs], time.perf_counter() - t0


def run_checks(
    pack: Pack, planned: dict[str, dict], *, seed: int, quick: bool, jobs: int = 1, say=None, on_done=None
) -> tuple[dict[str, list[dict]], dict[str, float]]:
    """Run the planned checks; returns (records as dicts by check, seconds by check). ``say(msg)``
    receives progress lines from inside the checks; ``on_done(name, n_records, seconds)`` is called as
    each check finishes.

    With ``jobs > 1``: the checks that parallelize themselves (``Check.parallel``) run here, one after
    the other, each with ``jobs`` processes, while the others run in a pool of ``jobs`` processes.
    Records do not depend on ``jobs`` (every check seeds itself)."""
    results, elapsed = {}, {}

    def local(name, opts, n_jobs):
        t0 = time.perf_counter()
        ctx = Context(
            seed=seed,
            quick=quick,
            options=opts,
            say=(lambda m, name=name: say(f"{name}: {m}")) if say else (lambda m: None),
            jobs=n_jobs,
        )
        recs = _run_check(pack, name, ctx)
        results[name], elapsed[name] = [r.to_dict() for r in recs], time.perf_counter() - t0
        if on_done:
            on_done(name, len(recs), elapsed[name])

    pooled = {n: o for n, o in planned.items() if not (jobs > 1 and pack.checks[n].parallel)}
    if jobs > 1 and len(pooled) > 1:
        # workers end with this process however it ends (SIGKILL included): none left running, none holding
        # an inherited lock of the output directory
        with cf.ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent, initargs=(os.getpid(),)) as ex:
            futs = {ex.submit(_run_one, pack.target, n, o, seed, quick): n for n, o in pooled.items()}
            for name, opts in planned.items():
                if name not in pooled:
                    local(name, opts, jobs)
            for fut in cf.as_completed(futs):
                name, recs, dt = fut.result()
                results[name], elapsed[name] = recs, dt
                if on_done:
                    on_done(name, len(recs), dt)
    else:
        for name, opts in planned.items():
            local(name, opts, jobs if pack.checks[name].parallel else 1)
    ordered = {n: results[n] for n in planned}
    return ordered, {n: elapsed[n] for n in planned}
