"""Worker processes that end with their parent, however it ends (``SIGKILL`` included).

A process killed with ``SIGKILL`` cannot stop its children: they are re-parented and run on. Here a worker
asks the kernel for ``SIGKILL`` when its parent dies (Linux: ``prctl(PR_SET_PDEATHSIG)``) and, everywhere,
runs a daemon thread that exits the process once its parent pid has changed (it was re-parented).
:func:`die_with_parent` does both in one worker (a pool's initializer); :func:`orphan_guard` does it in
every process forked from then on (``os.register_at_fork``). Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["process_alive", "set_parent_death_signal", "die_with_parent", "orphan_guard"]


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True  # no /proc: os.kill said it exists
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Linux: ask the kernel to send ``signum`` to this process when the thread that forked it ends
    (``prctl(PR_SET_PDEATHSIG)``). Returns whether it was set (False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent: int, *, pdeathsig: bool = True, poll: float = 0.5) -> None:
    """Make this process (a worker) end when process ``parent`` does, however it ends: ``SIGKILL`` from
    the kernel when the parent dies (Linux, ``pdeathsig``; only right when the parent's forking thread lives
    as long as the parent, its main thread), and a daemon thread that polls the parent pid every ``poll``
    seconds and exits (``os._exit``) once this process has been re-parented. Exits at once when the parent
    is already gone."""
    if pdeathsig:
        set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before we got here
        os._exit(1)

    def watch():
        import time

        while True:
            time.sleep(poll)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="lptheory-parent-watch", daemon=True).start()


_fork_state: dict = {}


def _before_fork() -> None:
    _fork_state["parent"] = os.getpid()
    _fork_state["main"] = threading.current_thread() is threading.main_thread()


def _after_fork_in_child() -> None:
    parent = _fork_state.get("parent")
    if parent is not None:
        die_with_parent(parent, pdeathsig=_fork_state.get("main", False))


def orphan_guard() -> None:
    """From now on, every process forked by this one (and by its forked children: worker pools, their
    searches) dies with its parent (:func:`die_with_parent`; ``pdeathsig`` only for the forks made by the main
    thread, which lives as long as the process). Called once by the ``lptheory`` program; idempotent."""
    if _fork_state.get("registered") or not hasattr(os, "register_at_fork"):
        return
    _fork_state["registered"] = True
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
