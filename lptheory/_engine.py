"""Applies an element-wise update rule to whole arrays: chunked and threaded on numpy, direct on torch.

A *rule* is a function ``rule(xp, h, *arrays)`` that reads its inputs and writes its outputs with
``out=`` calls of the array module ``xp`` (see :mod:`lptheory._kernels`). It is written once; this
module decides how to run it:

* numpy: the arrays are flattened and the rule is called on blocks of ``CHUNK`` elements, so that
  every intermediate stays in cache (a pass over a large array is memory-bound; in cache, arithmetic
  is 3 to 20 times cheaper), optionally on ``LPTHEORY_THREADS`` worker threads for large arrays
  (numpy releases the GIL inside its loops). Element-wise rules give bit-identical results for any
  split.
* torch: the rule is called once on the whole tensors (torch vectorizes and threads its own kernels),
  with scratch tensors allocated on the inputs' device. No host synchronization happens here.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK = 16384
_PARALLEL_MIN = 1 << 18
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_tls = threading.local()


def threads() -> int:
    """Worker threads for large numpy arrays: ``LPTHEORY_THREADS``, default 1.

    Measured on the project's 2-core reference machine, two threads were slower than one (the step is
    bound by memory bandwidth and the interpreter), so threading is opt-in.
    """
    env = os.environ.get("LPTHEORY_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError as exc:
            raise ValueError(f"LPTHEORY_THREADS must be a positive integer, got {env!r}") from exc
        if n < 1:
            raise ValueError(f"LPTHEORY_THREADS must be a positive integer, got {env!r}")
        return n
    return 1


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < n:  # noqa: SLF001
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="lptheory")
        return _pool


def _scratch(n_scratch: int, dtype) -> list[np.ndarray]:
    cache = getattr(_tls, "scratch", None)
    if cache is None:
        cache = _tls.scratch = {}
    key = (np.dtype(dtype).str, n_scratch, CHUNK)
    bufs = cache.get(key)
    if bufs is None:
        bufs = cache[key] = [np.empty(CHUNK, dtype=dtype) for _ in range(n_scratch)]
    return bufs


def _run_range(rule, h, flats, n_scratch, lo, hi):
    scratch = _scratch(n_scratch, flats[0].dtype)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        for s in range(lo, hi, CHUNK):
            e = min(hi, s + CHUNK)
            k = e - s
            rule(np, h, *[a[s:e] for a in flats], *[b[:k] for b in scratch])


def apply(rule, xp, h, arrays, n_scratch: int) -> None:
    """Run ``rule(xp, h, *arrays, *scratch)`` over all elements of ``arrays`` (same shape each).

    Output arrays among ``arrays`` must be C-contiguous numpy arrays (they are written through flat
    views); the caller guarantees it. ``over``/``invalid`` warnings are silenced in the numpy path
    because the rules never rely on them: non-finite results are the callers' to detect.
    """
    if xp is not np:
        scratch = [xp.empty_like(arrays[0]) for _ in range(n_scratch)]
        rule(xp, h, *arrays, *scratch)
        return
    flats = [a.reshape(-1) for a in arrays]
    n = flats[0].size
    nt = threads()
    if nt == 1 or n < _PARALLEL_MIN or threading.current_thread().name.startswith("lptheory"):
        _run_range(rule, h, flats, n_scratch, 0, n)
        return
    # contiguous ranges aligned to CHUNK, one per worker
    per = -(-n // (nt * CHUNK)) * CHUNK
    bounds = [(lo, min(n, lo + per)) for lo in range(0, n, per)]
    pool = _get_pool(nt)
    futures = [pool.submit(_run_range, rule, h, flats, n_scratch, lo, hi) for lo, hi in bounds]
    for f in futures:
        f.result()
