"""Running the checks of a pack: options resolved and validated before any work, then the checks in
this process or in ``jobs`` worker processes under one process budget (same records either way: every check
seeds itself)."""

from __future__ import annotations

import concurrent.futures as cf
import os
import time

from lptheory.lifetime import die_with_parent

from . import pools
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


def _run_one(target: str, name: str, opts: dict, seed: int, quick: bool, n_jobs: int = 1):
    """One check in a worker process: it holds a token of the run's process budget while it runs (none without
    one) and sends its progress lines to the parent (:data:`_SAY`, when the parent listens)."""
    pack = load(target)
    q = _SAY.get("queue")
    say = (lambda m: q.put(f"{name}: {m}")) if q is not None else (lambda m: None)
    with pools.holding():
        t0 = time.perf_counter()
        recs = _run_check(pack, name, Context(seed=seed, quick=quick, options=opts, say=say, jobs=n_jobs))
        dicts, dt = [r.to_dict() for r in recs], time.perf_counter() - t0
        after = _SAY.get("after")
        return name, dicts, dt, (after(name, dicts) if after is not None else None)


_SAY: dict = {}
"""``{"queue": the progress queue, "after": the hook run after each check}`` of a pooled run, inherited by its
forked workers (neither is pickled)."""


def _pool_order(pack: Pack, planned: dict[str, dict]) -> list[str]:
    """The order the pool starts the checks in: those that parallelize themselves first (the long searches:
    started early, they finish before the pool drains, and a token freed by another check goes to their
    helpers), then the heavy ones (``Check.heavy``: a long check started last keeps one worker busy while the
    others are done), then the rest; within each group the costlier first (``Check.cost``, the pack's estimate of
    a check's seconds: longest first, so that the pool's last seconds go to short checks), the pack's order
    among equal costs."""
    groups = (
        [n for n in planned if pack.checks[n].parallel],
        [n for n in planned if pack.checks[n].heavy and not pack.checks[n].parallel],
        [n for n in planned if not (pack.checks[n].parallel or pack.checks[n].heavy)],
    )
    return [n for g in groups for n in sorted(g, key=lambda n: -pack.checks[n].cost)]


def run_checks(
    pack: Pack,
    planned: dict[str, dict],
    *,
    seed: int,
    quick: bool,
    jobs: int = 1,
    say=None,
    on_done=None,
    after=None,
    on_after=None,
) -> tuple[dict[str, list[dict]], dict[str, float]]:
    """Run the planned checks; returns (records as dicts by check, seconds by check). ``say(msg)``
    receives progress lines from inside the checks; ``on_done(name, n_records, seconds)`` is called as
    each check finishes. ``after(name, record dicts)``, when given, runs in the worker process that ran a
    pooled check, right after it (the report draws the check's figures there, while other checks run); its
    value comes back to ``on_after(name, value)`` here, before ``on_done``. Checks run in this process do not
    call it (their caller does that work itself).

    With ``jobs > 1``: one budget of ``jobs`` busy processes (:func:`proofs_checks.pools.process_budget`) for
    the whole run: the checks run in a pool of ``jobs`` processes, each holding a token while it runs, and a
    check that parallelizes itself (``Check.parallel``) forks helpers only for the tokens it finds free; every
    process runs one thread. One check alone runs in this process under the same budget. Records do not
    depend on ``jobs`` (every check seeds itself)."""
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

    def n_jobs(name):
        return jobs if pack.checks[name].parallel else 1

    fork = pools.fork_context()
    if jobs > 1 and len(planned) > 1 and fork is None:
        # no fork: no budget to share; every check in a pool of ``jobs`` processes, each check on one
        with cf.ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent, initargs=(os.getpid(),)) as ex:
            futs = [ex.submit(_run_one, pack.target, n, o, seed, quick) for n, o in planned.items()]
            for fut in cf.as_completed(futs):
                name, recs, dt, _ = fut.result()
                results[name], elapsed[name] = recs, dt
                if on_done:
                    on_done(name, len(recs), dt)
    elif jobs > 1 and (len(planned) > 1 or any(pack.checks[n].parallel for n in planned)):
        with pools.process_budget(jobs):
            if len(planned) == 1:
                name, opts = next(iter(planned.items()))
                with pools.holding():
                    local(name, opts, n_jobs(name))
            else:
                hooks = (say, on_done, after, on_after)
                _pooled(pack, planned, seed, quick, jobs, fork, n_jobs, hooks, results, elapsed)
    else:
        for name, opts in planned.items():
            local(name, opts, n_jobs(name))
    ordered = {n: results[n] for n in planned}
    return ordered, {n: elapsed[n] for n in planned}


def _pooled(pack, planned, seed, quick, jobs, fork, n_jobs, hooks, results, elapsed) -> None:
    """The checks in a pool of forked workers under the active budget; their progress lines come back through
    a queue and are passed to ``say`` here."""
    say, on_done, after, on_after = hooks
    q = fork.SimpleQueue() if say else None
    _SAY["queue"], _SAY["after"] = q, after

    def drain():
        while q is not None and not q.empty():
            say(q.get())

    try:
        # workers end with this process however it ends (SIGKILL included): none left running, none holding
        # an inherited lock of the output directory
        with cf.ProcessPoolExecutor(
            max_workers=min(jobs, len(planned)),
            mp_context=fork,
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        ) as ex:
            futs = {
                ex.submit(_run_one, pack.target, n, planned[n], seed, quick, n_jobs(n)): n
                for n in _pool_order(pack, planned)
            }
            waiting = set(futs)
            try:
                while waiting:
                    done, waiting = cf.wait(waiting, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                    drain()
                    for fut in done:
                        name, recs, dt, extra = fut.result()
                        results[name], elapsed[name] = recs, dt
                        if on_after is not None and after is not None:
                            on_after(name, extra)
                        if on_done:
                            on_done(name, len(recs), dt)
            except BaseException:
                for fut in waiting:  # a failed check or an interrupt: the checks not started are not started
                    fut.cancel()
                raise
    finally:
        _SAY.pop("queue", None)
        _SAY.pop("after", None)
        if q is not None:
            drain()
            q.close()
