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

import math
import os
import threading

from .fast.pool import get_pool, threads

__all__ = ["threads", "get_pool", "fused_available", "dask_client", "close_dask", "DaskUnavailable"]


class DaskUnavailable(RuntimeError):
    """dask.distributed is not installed, or the scheduler cannot be reached."""


def fused_available() -> bool:
    """Whether the fused numba engine runs the numpy optimizers in this process."""
    from .fast import fused as _fused

    return _fused.available()


def dask_client(scheduler: str | None, workers: int | None, timeout: float = 30.0):
    """A Dask client: to ``scheduler`` (its handshake within ``timeout`` seconds), or to a new
    LocalCluster of ``workers`` single-threaded worker processes (default: the cores). Raises DaskUnavailable
    when the scheduler is unreachable or silent.

    The connection is made in a daemon thread joined with a deadline: ``distributed.Client`` waits for
    ever on an address that accepts the TCP connection but never answers the handshake, whatever its
    own ``timeout``."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        msg = "dask.distributed is not installed: pip install 'lptheory[sweep]' (or --workers 0)"
        raise DaskUnavailable(msg) from None
    import logging

    if scheduler:
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"scheduler timeout must be a finite number of seconds > 0, got {timeout!r}")
        box = {}

        def attempt():
            try:
                box["client"] = Client(scheduler, timeout=f"{0.5 * timeout}s")  # refused: its own error
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        th = threading.Thread(target=attempt, name="lptheory-scheduler-connect", daemon=True)
        th.start()
        th.join(timeout)
        if th.is_alive() or not box:
            raise DaskUnavailable(
                f"--scheduler {scheduler}: no answer from a Dask scheduler within {timeout:g} s (the address "
                "accepts connections but the handshake never completed; --scheduler-timeout to wait longer)"
            )
        if "error" in box:
            exc = box["error"]
            if isinstance(exc, (OSError, TimeoutError)):
                raise DaskUnavailable(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
            raise exc
        return box["client"], None
    n = workers or os.cpu_count() or 1
    os.environ.setdefault("LPTHEORY_THREADS", "1")  # one core per worker process: no oversubscription
    # silence_logs only lowers the level of distributed's stream handlers, and only until the cluster's close
    # restores it: a batched stream closed during that close (a Ctrl-C) then printed an INFO traceback
    # ("Batched Comm Closed ... CommClosedError"). The logger's own level stays at ERROR until close_dask.
    _quiet_local(+1)
    cluster = client = None
    try:
        cluster = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        )
        client = Client(cluster)
        # the same in the worker processes, for their whole life (a worker the nanny restarts too)
        client.register_worker_callbacks(setup=_quiet_distributed)
    except BaseException:
        if cluster is None:
            _quiet_local(-1)
        else:
            close_dask(client, cluster)
        raise
    return client, cluster


def _quiet_distributed():
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)


def close_dask(client, cluster) -> None:
    """Close what :func:`dask_client` returned (either may be None): the client, then the local cluster;
    then give the ``distributed`` logger back the level it had before a local cluster was made (its INFO
    messages stay silent until the cluster's event loop has stopped)."""
    try:
        if client is not None:
            client.close()
    finally:
        if cluster is not None:
            try:
                cluster.close()
            finally:
                _quiet_local(-1)


_QUIET = {"depth": 0, "level": 0}
_QUIET_LOCK = threading.Lock()


def _quiet_local(step: int) -> None:
    """The ``distributed`` logger at ERROR in this process while any local cluster lives (``step`` +1 when
    one is made, -1 when it is closed); its own level back when the last is closed."""
    import logging

    log = logging.getLogger("distributed")
    with _QUIET_LOCK:
        if step > 0 and _QUIET["depth"] == 0:
            _QUIET["level"] = log.level
        _QUIET["depth"] = max(0, _QUIET["depth"] + step)
        log.setLevel(logging.ERROR if _QUIET["depth"] else _QUIET["level"])
