"""The worker pools of the adversarial search: threads (``LPTHEORY_SEARCH_THREADS``) for the objective's
row halves and forked processes for independent search tasks (:func:`map_tasks`); and the process budget
of a run of several checks (:func:`process_budget`, :func:`holding`): one count of busy processes shared by
the runner's pool and the checks that parallelize inside it (issue 46: no ``2 x jobs`` busy processes).
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["map_tasks", "search_pool", "search_threads", "process_budget", "holding", "budget_active", "fork_context"]

_BUDGET: dict = {"sem": None}
"""The semaphore of the active process budget (None: no budget), inherited by forked processes."""

_SINGLE = ("LPTHEORY_THREADS", "LPTHEORY_SEARCH_THREADS")
"""The thread counts a process of a budget runs with, each 1 unless the user set it."""


def fork_context():
    """multiprocessing's "fork" context, or None where the platform has none."""
    import multiprocessing as mp

    return mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None


def budget_active() -> bool:
    """Whether a process budget is active in this process (set by :func:`process_budget`, inherited by fork)."""
    return _BUDGET["sem"] is not None


@contextlib.contextmanager
def process_budget(jobs: int):
    """``with process_budget(jobs):`` -- at most ``jobs`` processes busy with checks at once, whoever starts
    them: each process running a check holds one token of the budget (:func:`holding`) and a search of that
    check forks a helper only for a token it takes (:func:`map_tasks`), or runs the task itself. Each process
    then runs one thread (``LPTHEORY_THREADS`` and ``LPTHEORY_SEARCH_THREADS`` 1 unless set, and the BLAS's
    threads 1 through threadpoolctl where it is installed): ``jobs`` tokens, ``jobs`` busy cores. Needs the
    "fork" start method (the budget is inherited); elsewhere it does nothing. Records never depend on it."""
    ctx = fork_context()
    if ctx is None or jobs < 1:
        yield
        return
    before = {k: os.environ.get(k) for k in _SINGLE}
    saved = _BUDGET["sem"]
    _BUDGET["sem"] = ctx.Semaphore(int(jobs))
    for k in _SINGLE:
        os.environ.setdefault(k, "1")
    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # not a dependency: the numpy BLAS keeps its threads (the checks make little use of it)
            pass
        else:
            stack.enter_context(threadpool_limits(limits=1))
        try:
            yield
        finally:
            _BUDGET["sem"] = saved
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@contextlib.contextmanager
def holding():
    """``with holding():`` -- this process holds one token of the active budget while the block runs (waits for
    one; nothing without a budget)."""
    sem = _BUDGET["sem"]
    if sem is None:
        yield
        return
    sem.acquire()
    try:
        yield
    finally:
        sem.release()


@contextlib.contextmanager
def spare_tokens(wanted: int):
    """``with spare_tokens(k) as n:`` -- take up to ``k`` free tokens of the active budget without waiting (n of
    them, 0 when none is free), released at the end: a check that runs its own pool of processes sizes it to
    ``1 + n`` (its own token and the spare ones). Without a budget: ``n = k``."""
    sem = _BUDGET["sem"]
    if sem is None:
        yield max(0, int(wanted))
        return
    got = 0
    try:
        while got < wanted and sem.acquire(block=False):
            got += 1
        yield got
    finally:
        for _ in range(got):
            sem.release()


_POOL: dict = {}


def search_threads() -> int:
    """Threads for one large objective call: ``$LPTHEORY_SEARCH_THREADS``, else min(2, cores). A row's
    value does not depend on the other rows of its call, so the results do not depend on this (nor on
    where a call is cut: anywhere, the rows stay grouped by job)."""
    import os

    from lptheory import config

    env = config.raw("LPTHEORY_SEARCH_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"LPTHEORY_SEARCH_THREADS must be an integer >= 1, got {env!r}") from None
    return min(2, os.cpu_count() or 1)


def search_pool():
    """One worker thread for the other half of a split call (made again in a forked child)."""
    import concurrent.futures as cf
    import os

    got = _POOL.get("pool")
    if got is None or got[0] != os.getpid():
        got = _POOL["pool"] = (os.getpid(), cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lptheory-search"))
    return got[1]


_FORKED: dict = {}


def _forked_call(key, fn, k):
    state, tasks = _FORKED[key]
    return fn(state, tasks[k])


def map_tasks(fn, state, tasks, workers: int, cost=None):
    """``[fn(state, t) for t in tasks]``, in ``workers`` forked processes when there are several (the
    state, which may hold closures, is inherited, not pickled; the costliest tasks, by ``cost``, are
    started first); in order, same results. Under a process budget (:func:`process_budget`) this process
    counts as one of them: a helper is forked only for a token it takes from the budget, and this process
    runs a task itself whenever no token is free."""
    workers = min(int(workers), len(tasks))
    ctx = fork_context()
    if workers <= 1 or ctx is None:
        return [fn(state, t) for t in tasks]
    import concurrent.futures as cf

    key = id(state)
    _FORKED[key] = (state, tasks)
    try:
        order = sorted(range(len(tasks)), key=lambda k: -(cost[k] if cost is not None else 0))
        if _BUDGET["sem"] is not None:
            return _map_budgeted(fn, state, tasks, workers, order, key, ctx)
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
            futs = {k: ex.submit(_forked_call, key, fn, k) for k in order}
            return [futs[k].result() for k in range(len(tasks))]
    finally:
        _FORKED.pop(key, None)


def _map_budgeted(fn, state, tasks, workers, order, key, ctx):
    """:func:`map_tasks` under a budget: this process and at most ``workers - 1`` forked helpers, each helper
    holding a token of the budget while it has tasks (it takes the next pending task as it finishes one)."""
    import collections
    import concurrent.futures as cf

    from lptheory.lifetime import die_with_parent

    sem = _BUDGET["sem"]
    pending = collections.deque(order)
    results: dict = {}
    helpers: list = []  # [executor, future, task index]

    def collect(h):
        results[h[2]] = h[1].result()
        if pending:
            h[2] = pending.popleft()
            h[1] = h[0].submit(_forked_call, key, fn, h[2])
        else:
            h[0].shutdown(wait=True)
            h[1] = None
            sem.release()

    try:
        while pending or any(h[1] is not None for h in helpers):
            for h in helpers:
                if h[1] is not None and h[1].done():
                    collect(h)
            if not pending:
                running = [h[1] for h in helpers if h[1] is not None]
                if running:
                    cf.wait(running, return_when=cf.FIRST_COMPLETED)
                continue
            live = sum(h[1] is not None for h in helpers)
            if live < workers - 1 and sem.acquire(block=False):
                k = pending.popleft()
                try:
                    ex = cf.ProcessPoolExecutor(
                        max_workers=1, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),)
                    )
                    helpers.append([ex, ex.submit(_forked_call, key, fn, k), k])
                except BaseException:
                    sem.release()
                    raise
                continue
            k = pending.popleft()  # no free token: this process runs the task
            results[k] = fn(state, tasks[k])
        return [results[k] for k in range(len(tasks))]
    finally:
        for h in helpers:
            if h[1] is not None:  # an error or an interrupt: the helpers still running are let go
                h[0].shutdown(wait=False, cancel_futures=True)
                sem.release()
