"""Work split over the OpenMP team of the process's OpenMP runtime (torch's), instead of lptheory's own
thread pool (:mod:`lptheory._pool`).

Why: torch's CPU operations run on an OpenMP team (ATen's parallel backend on the PyPI wheels: the GNU
libgomp in ``torch/lib``). After each parallel region the team's threads busy-wait for more work for a
while (GNU OpenMP's default spin, several milliseconds here) before they sleep. An optimizer step comes
right after the backward pass (a parallel region), so a second thread of lptheory's own pool shares a core
with a spinning OpenMP thread: measured on 2 cores, the fused StaceyPP step at p = 3 took 1.14-1.47x
``torch.optim.AdamW(fused=True)`` interleaved with it (one thread per side: 0.90-0.95x). Handing the
same ranges to the OpenMP team itself (``GOMP_parallel``, the entry point the compiler emits for
``#pragma omp parallel``) puts the work on the threads that are already awake: 0.94-0.95x
(``benchmarks/RESULTS.md``).

How: :func:`team` finds the OpenMP runtime mapped into the process (``/proc/self/maps``: Linux only;
elsewhere, or when it cannot be identified, None and the caller uses its own pool). :meth:`Team.run`
calls ``GOMP_parallel`` through :mod:`ctypes` (the GIL is released for the call); each member of the team
enters a Python callback, claims the next item (a lock around one counter, so any team size, even one,
does every item exactly once), and runs it. The items are the caller's ranges, unchanged: the same
elements computed the same way, the same bits as on the pool. An exception in an item is raised by
:meth:`Team.run` after the region ends. A forked child does not use the team (GNU OpenMP is not
fork-safe: the parent's team threads do not exist there); ``LPTHEORY_OMP=0`` turns the route off.

Imports nothing from lptheory and does not import torch: the caller names the directory of the runtime
it uses (torch's library directory)."""

from __future__ import annotations

import ctypes
import itertools
import os
import threading

__all__ = ["Team", "team", "enabled"]

_NAMES = ("libgomp", "libomp", "libiomp5")  # GNU, LLVM and Intel runtimes: all three export GOMP_parallel


def enabled() -> bool:
    """False when ``LPTHEORY_OMP`` is ``0`` (use lptheory's own pool), else True; other values are an error."""
    env = os.environ.get("LPTHEORY_OMP", "").strip()
    if env in ("", "1"):
        return True
    if env == "0":
        return False
    raise ValueError(f"LPTHEORY_OMP must be 0 or 1, got {env!r}")


def _mapped_runtimes() -> list:
    """Paths of the OpenMP runtimes mapped into this process (``/proc/self/maps``), in order of first mapping."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) == 6:
            path = parts[5].strip()
            if os.path.basename(path).startswith(_NAMES) and path not in out:
                out.append(path)
    return out


class Team:
    """The OpenMP runtime at ``path`` (already mapped into the process: opening it again gives the same
    library, hence the same team of threads)."""

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)  # CDLL: the GIL is released while GOMP_parallel runs
        body = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        fn = lib.GOMP_parallel
        fn.argtypes = [body, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        fn.restype = None
        self.path = path
        self._parallel = fn
        self._body = body(self._member)  # kept alive as long as the team
        self._calls: dict = {}
        self._keys = itertools.count(1)

    def _member(self, key) -> None:
        """One member of the team: claims and runs items of the call ``key`` until none is left."""
        call = self._calls[key]
        fn, lock, nxt, results, errors = call
        try:
            while True:
                with lock:
                    i = nxt[0]
                    if i >= len(results):
                        return
                    nxt[0] = i + 1
                results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 -- raised again by run(), on the calling thread
            errors.append(exc)

    def run(self, fn, n: int, threads: int) -> list:
        """``[fn(0), ..., fn(n - 1)]``, the items run by a team of at most ``threads`` OpenMP threads (the
        calling thread among them); the first exception of an item is raised after all members return."""
        if n <= 0:
            return []
        key = next(self._keys)
        results: list = [None] * n
        errors: list = []
        self._calls[key] = (fn, threading.Lock(), [0], results, errors)
        try:
            self._parallel(self._body, key, max(1, min(int(threads), n)), 0)
        finally:
            del self._calls[key]
        if errors:
            raise errors[0]
        return results


_team: Team | None = None
_found: str | None = None  # the directory searched by the last team() call, or "" when not yet searched
_lock = threading.Lock()
_forked = False


def _in_child() -> None:
    global _forked, _team
    _forked, _team = True, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)


def team(directory: str) -> Team | None:
    """The team of the OpenMP runtime loaded from ``directory`` (the runtime torch's operations use), or of
    the only OpenMP runtime mapped into the process when none is loaded from there; None when the route is
    off (``LPTHEORY_OMP=0``, a forked child), off Linux, or when no runtime (or more than one, none of them
    from ``directory``) is mapped."""
    global _team, _found
    if _forked or not enabled():
        return None
    if _found == directory:
        return _team
    with _lock:
        if _found != directory:
            found = _mapped_runtimes()
            here = [p for p in found if os.path.dirname(p) == os.path.normpath(directory)]
            pick = here[0] if here else (found[0] if len(found) == 1 else None)
            t = None
            if pick is not None:
                try:
                    t = Team(pick)
                except (OSError, AttributeError):  # not loadable, or no GOMP_parallel in it
                    t = None
            _team, _found = t, directory
    return _team
