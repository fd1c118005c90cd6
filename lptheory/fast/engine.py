"""Applies an element-wise update rule to whole arrays: chunked and threaded on numpy, direct on torch.

A *rule* is a function ``rule(xp, h, b)`` that reads its inputs and writes its outputs (named buffers
``b``) with ``out=`` calls of the array module ``xp`` (see :mod:`lptheory._kernels`). It is written once; this
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

import threading

import numpy as np

from .._state import Buffers
from .pool import get_pool, threads

CHUNK = 16384
_PARALLEL_MIN = 1 << 18
_tls = threading.local()


def _scratch(n_scratch: int, dtype) -> list[np.ndarray]:
    cache = getattr(_tls, "scratch", None)
    if cache is None:
        cache = _tls.scratch = {}
    key = (np.dtype(dtype).str, n_scratch, CHUNK)
    bufs = cache.get(key)
    if bufs is None:
        bufs = cache[key] = [np.empty(CHUNK, dtype=dtype) for _ in range(n_scratch)]
    return bufs


def _scratch_names(n: int) -> list[str]:
    return [f"s{i + 1}" for i in range(n)]


def _run_range(rule, h, names, flats, n_scratch, lo, hi):
    scratch = _scratch(n_scratch, flats[0].dtype)
    snames = _scratch_names(n_scratch)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        for s in range(lo, hi, CHUNK):
            e = min(hi, s + CHUNK)
            k = e - s
            b = Buffers(**{n: a[s:e] for n, a in zip(names, flats)}, **{n: a[:k] for n, a in zip(snames, scratch)})
            rule(np, h, b)


def apply(rule, xp, h, arrays: dict, n_scratch: int, scratch=None) -> None:
    """Run ``rule(xp, h, Buffers(**arrays, s1=..., ...))`` over all elements of ``arrays`` (a dict of
    same-shape arrays: inputs and outputs by name).

    Output arrays among ``arrays`` must be C-contiguous numpy arrays (they are written through flat
    views); the caller guarantees it. ``over``/``invalid`` warnings are silenced in the numpy path
    because the rules never rely on them: non-finite results are the callers' to detect.
    """
    names = list(arrays)
    if xp is not np:
        # torch: ``scratch`` (n_scratch tensors shaped like the arrays, reused by the caller across
        # steps) or fresh ones
        if scratch is None:
            first = arrays[names[0]]
            scratch = [xp.empty_like(first) for _ in range(n_scratch)]
        rule(xp, h, Buffers(**arrays, **dict(zip(_scratch_names(n_scratch), scratch))))
        return
    flats = [arrays[n].reshape(-1) for n in names]
    n = flats[0].size
    nt = threads()
    if nt == 1 or n < _PARALLEL_MIN or threading.current_thread().name.startswith("lptheory"):
        _run_range(rule, h, names, flats, n_scratch, 0, n)
        return
    # contiguous ranges aligned to CHUNK, one per worker
    per = -(-n // (nt * CHUNK)) * CHUNK
    bounds = [(lo, min(n, lo + per)) for lo in range(0, n, per)]
    pool = get_pool(nt)
    futures = [pool.submit(_run_range, rule, h, names, flats, n_scratch, lo, hi) for lo, hi in bounds]
    for f in futures:
        f.result()


def engine() -> str:
    """The numpy engine in use: ``fused`` (numba installed, the default) or ``numpy`` (the reference,
    ``LPTHEORY_ENGINE=numpy``)."""
    from . import fused as _fused

    return "fused" if _fused.available() else "numpy"


def run(opt, h, arrays: dict, scratch=None, *, count_nonfinite: bool = False, alias=None):
    """Run optimizer ``opt``'s rule on the named ``arrays`` (see :meth:`ElementwiseOptimizer.named`):
    numpy arrays through the fused engine when available (same bits as the reference), else the
    reference engine; torch tensors directly (with the caller's reusable ``scratch`` tensors if given).

    With ``count_nonfinite`` (numpy arrays) it returns the number of non-finite entries of
    ``arrays["grad"]``, counted by the fused kernels while they read the gradient (no extra pass), or
    before the reference engine runs (0 when their sum is finite); otherwise None. ``alias``: the
    in-place pattern of the outputs when the caller knows it (the fused engine's kernel key)."""
    first = next(iter(arrays.values()))
    if isinstance(first, np.ndarray):
        from . import fused as _fused

        if _fused.available():
            nt = threads(fused=True) if first.size >= (1 << 17) else 1
            got = _fused.run(opt, h, arrays, nt, count_nonfinite=count_nonfinite, alias=alias)
            if got is not False:
                return got if count_nonfinite else None
        nf = _count_nonfinite(arrays["grad"]) if count_nonfinite else None
        apply(type(opt).rule, np, h, arrays, opt.n_scratch)
        return nf
    from .._xp import namespace

    apply(type(opt).rule, namespace(first), h, arrays, opt.n_scratch, scratch)
    return None


def _count_nonfinite(g: np.ndarray) -> int:
    """Non-finite entries of ``g``: 0 when its sum is finite (one summing pass), else counted."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.add.reduce(g, axis=None))
    if total - total == 0.0:
        return 0
    return int(g.size - np.count_nonzero(np.isfinite(g)))
