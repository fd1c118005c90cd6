"""The worker threads of lptheory's numpy engines, for the layers above (the simulator kernels of
``synthetic``) and for user code that runs its own blocked kernels beside the optimizers: one pool per
process, shared with the optimizers' engines.

* :func:`threads` -- how many worker threads a large numpy pass uses (``LPTHEORY_THREADS``; every core
  for the fused engine by default);
* :func:`get_pool` -- the process's ``ThreadPoolExecutor`` with at least ``n`` threads;
* :func:`fused_available` -- whether the fused numba engine is in use (numba importable and
  ``LPTHEORY_ENGINE`` not ``numpy``); :func:`lptheory.engine_info` says more and verifies it.
"""

from __future__ import annotations

from .fast.pool import get_pool, threads

__all__ = ["threads", "get_pool", "fused_available"]


def fused_available() -> bool:
    """Whether the fused numba engine runs the numpy optimizers in this process."""
    from .fast import fused as _fused

    return _fused.available()
