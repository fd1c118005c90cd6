"""The worker pools of the adversarial search: threads (``LPTHEORY_SEARCH_THREADS``) for the objective's
row halves and forked processes for independent search tasks (:func:`map_tasks`).
"""

from __future__ import annotations

__all__ = ["map_tasks", "search_pool", "search_threads"]


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
    started first); in order, same results."""
    import multiprocessing as mp

    workers = min(int(workers), len(tasks))
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        return [fn(state, t) for t in tasks]
    import concurrent.futures as cf

    key = id(state)
    _FORKED[key] = (state, tasks)
    try:
        order = sorted(range(len(tasks)), key=lambda k: -(cost[k] if cost is not None else 0))
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork")) as ex:
            futs = {k: ex.submit(_forked_call, key, fn, k) for k in order}
            return [futs[k].result() for k in range(len(tasks))]
    finally:
        _FORKED.pop(key, None)
