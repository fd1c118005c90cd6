"""Work split over the OpenMP team of the process's OpenMP runtime (torch's), instead of lptheory's own
thread pool (:mod:`lptheory.fast.pool`).

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
:meth:`Team.run` after the region ends. A process forked after this module was imported does not use the
team (GNU OpenMP is not fork-safe: the parent's team threads do not exist there; torch's own parallel
operations hang in such a child unless it sets ``torch.set_num_threads(1)``, which also keeps lptheory.torch
off the team, since it never asks for more threads than torch's); ``LPTHEORY_OMP=0`` turns the route off.

Known limit: the floating-point mode is per thread. After ``torch.set_flush_denormal(True)`` (flush
subnormals to zero on the calling thread only) a range computed by another member (as by a worker of
lptheory's pool) keeps subnormals; the bits then depend on which thread ran the range, with either route.

Imports nothing from lptheory but :mod:`lptheory.config` and does not import torch: the caller names
the directory of the runtime it uses (torch's library directory)."""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import sys
import threading

from .. import config

__all__ = ["Team", "team", "enabled", "keep_interrupt"]

# GNU, LLVM and Intel runtimes (all three export GOMP_parallel), as shipped or renamed by wheels
# ("libgomp-a34b3233.so.1"); not libomptarget and the like
_NAME = re.compile(r"^lib(gomp|omp|iomp5)([-.]|$)")


def enabled() -> bool:
    """False when ``LPTHEORY_OMP`` is ``0`` (use lptheory's own pool), else True; other values are an error."""
    env = config.omp()
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
            if _NAME.match(os.path.basename(path)) and path not in out:
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
        self._dropped: list = []  # KeyboardInterrupts raised on entry to a member (see _unraisable)
        _watch_unraisable()

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
        calling thread among them; one thread or one item: on the calling thread, no OpenMP region); the
        first exception of an item is raised after all members return, and a KeyboardInterrupt that arrived
        while a member entered its callback (where ctypes would only print it) after that."""
        if n <= 0:
            return []
        if threads <= 1 or n == 1:
            return [fn(i) for i in range(n)]
        key = next(self._keys)
        results: list = [None] * n
        errors: list = []
        self._calls[key] = (fn, threading.Lock(), [0], results, errors)
        try:
            self._parallel(self._body, key, min(int(threads), n), 0)
        finally:
            del self._calls[key]
        if errors:
            raise errors[0]
        if self._dropped:
            with _hook_lock:
                got, self._dropped[:] = self._dropped[:], []
            if got:
                raise got[0]
        return results


_hook_lock = threading.Lock()
_hook_installed = False


def _watch_unraisable() -> None:
    """Install (once) a ``sys.unraisablehook`` that keeps, instead of printing, a KeyboardInterrupt raised
    in a team member's callback before its ``try`` (Python runs a pending signal handler on entry to the
    function; ctypes then reports the exception as unraisable and drops it): :meth:`Team.run` raises it
    after the region, as the pool's route raises it in ``Future.result``. Everything else goes to the hook
    that was there before."""
    global _hook_installed
    with _hook_lock:
        if _hook_installed:
            return
        before = sys.unraisablehook

        def hook(unraisable):
            if not keep_interrupt(unraisable):
                before(unraisable)

        sys.unraisablehook = hook
        _hook_installed = True


def keep_interrupt(unraisable) -> bool:
    """True, keeping it for :meth:`Team.run` to raise, when ``unraisable`` (``sys.unraisablehook``'s
    argument) is a KeyboardInterrupt raised in a team member's callback; False otherwise."""
    obj = getattr(unraisable, "object", None)
    team = getattr(obj, "__self__", None)
    if not (isinstance(team, Team) and getattr(obj, "__func__", None) is Team._member):
        return False
    if not isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        return False
    with _hook_lock:
        team._dropped.append(unraisable.exc_value)
    return True


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
            where = os.path.realpath(directory)
            here = [p for p in found if os.path.dirname(os.path.realpath(p)) == where]
            pick = here[0] if here else (found[0] if len(found) == 1 else None)
            t = None
            if pick is not None:
                try:
                    t = Team(pick)
                except (OSError, AttributeError):  # not loadable, or no GOMP_parallel in it
                    t = None
            _team, _found = t, directory
    return _team
