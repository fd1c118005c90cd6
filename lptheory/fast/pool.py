"""The worker threads of the numpy engines (the reference engine, the fused kernels, the simulator's
kernels): one pool per process, sized by :func:`threads`. Imports nothing from lptheory but
:mod:`lptheory.config`, so every engine module can use it without importing another. The layers above
reach it through :mod:`lptheory.parallel`."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import config

__all__ = ["threads", "get_pool", "inline", "on_team", "split"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


_tls = threading.local()


def threads(fused: bool = False) -> int:
    """Worker threads for large numpy arrays: ``LPTHEORY_THREADS`` (set it to 1 to pin one core);
    by default every core for the fused engine (measured faster on 2 cores) and 1 for the reference
    engine (two threads were slower there: its many passes are bound by the interpreter).

    1 on a worker thread of the pool, and on a thread inside :func:`inline` (work that is already one
    part of a split runs in its thread: no nested submissions, which could wait on themselves)."""
    if getattr(_tls, "inline", False):  # set on the pool's workers (_mark_worker) and inside inline()
        return 1
    n = config.threads()
    if n is not None:
        return n
    return _CPUS if fused else 1


_CPUS = max(1, min(os.cpu_count() or 1, 16))


def _forget_pool_in_child() -> None:
    """A forked child (multiprocessing's "fork": the parallel checks) inherits the pool object but not
    its threads: work submitted to it would wait forever. The child starts its own pool instead."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _mark_worker() -> None:
    _tls.inline = True


def get_pool(n: int) -> ThreadPoolExecutor:
    """The process's worker pool, with at least ``n`` threads (created on first use; a forked child
    starts its own)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < n:  # noqa: SLF001
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lptheory", initializer=_mark_worker)
        return _pool


class inline:
    """``with inline():`` -- the engines called in this block on this thread run in it, unsplit
    (:func:`threads` is 1 there): for a caller that splits the work over the pool itself and runs one
    part on the calling thread."""

    def __enter__(self):
        self.before = getattr(_tls, "inline", False)
        _tls.inline = True
        return self

    def __exit__(self, *exc):
        _tls.inline = self.before
        return False


class on_team:
    """``with on_team(team):`` -- the splits made by :func:`split` on this thread in this block run on
    ``team`` (an object with ``run(fn, n, threads)``, such as :class:`lptheory.fast.omp.Team`: the OpenMP team
    of torch's operations) instead of the pool; ``team=None`` leaves the pool in use."""

    def __init__(self, team):
        self.team = team

    def __enter__(self):
        self.before = getattr(_tls, "team", None)
        _tls.team = self.team
        return self

    def __exit__(self, *exc):
        _tls.team = self.before
        return False


def split(fn, n: int, nthreads: int) -> list:
    """``[fn(0), ..., fn(n - 1)]``, the parts run in parallel by at most ``nthreads`` threads: on the team
    of an enclosing :class:`on_team` block (the calling thread among its members), else on the pool (every
    part submitted, the calling thread waiting)."""
    team = getattr(_tls, "team", None)
    if team is not None:
        return team.run(fn, n, nthreads)
    pool = get_pool(nthreads)
    futures = [pool.submit(fn, i) for i in range(n)]
    return [f.result() for f in futures]
