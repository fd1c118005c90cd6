"""Output directories that commands write: a lock against a second writer, prompt Ctrl-C, nothing
half-written.

* :class:`OutputLock`: an exclusive advisory lock (``fcntl.flock`` where available, else an
  ``O_EXCL`` lock file) on ``OUT/.lptheory.lock`` for the whole run. A second ``lptheory`` writing the
  same ``--out`` is refused (exit 2, naming the other process) before it does any work, so two reports
  can never mix their files. The kernel drops an ``flock`` with its process: no stale locks after a crash.
* :func:`interruptible`: while a command runs, SIGINT (Ctrl-C, sent by the terminal to the whole
  foreground process group) kills every descendant process (worker pools, their forked searches) and
  raises KeyboardInterrupt in the main thread at once (forked workers, which inherit the handler,
  exit quietly); a watchdog cleans up and exits with 130 if the
  unwinding has not finished within ``grace`` seconds. The command exits within about a second
  whatever ``--jobs``.
* :func:`staging` + :func:`publish`: a report is written into a hidden staging directory inside OUT
  and moved into place file by file (``os.replace``, atomic each) with SIGINT held back, so an
  interruption leaves either the previous files or the new ones, never a partial file; an
  interrupted run removes its staging directory (and OUT itself when the run created it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading

LOCK_NAME = ".lptheory.lock"
STAGING_PREFIX = ".lptheory-staging-"


class OutputBusy(RuntimeError):
    """Another process holds the lock of an output directory."""


class OutputLock:
    """Exclusive lock on an output directory (see the module docstring). Use as a context manager or
    call :meth:`acquire` / :meth:`release`; ``acquire`` raises :class:`OutputBusy` at once (never waits)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, LOCK_NAME)
        self._fd = None

    def _holder(self) -> str:
        try:
            with open(self.path) as fh:
                pid = fh.read().strip()
        except OSError:
            pid = ""
        return f"pid {pid}" if pid else "another process"

    def acquire(self) -> OutputLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover  (Windows: an O_EXCL lock file)
            try:
                self._fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                raise OutputBusy(f"{self.directory} is being written by {self._holder()}") from None
            os.write(self._fd, str(os.getpid()).encode())
            return self
        while True:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise OutputBusy(f"{self.directory} is being written by {self._holder()}") from None
            try:  # the holder before us may have unlinked the file we opened: lock the one on disk
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # unlinked while still locked (acquire re-checks the inode)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


# ---------------------------------------------------------------------------------------------------
# processes


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (this process by default), children first. Linux: from
    ``/proc``; elsewhere the direct ``multiprocessing`` children only."""
    pid = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = None
    if entries is None:  # pragma: no cover
        import multiprocessing as mp

        return [p.pid for p in mp.active_children() if p.pid]
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(e))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def kill_descendants() -> int:
    """SIGKILL every descendant process; returns how many were signalled."""
    n = 0
    for pid in descendants():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            n += 1
    return n


# ---------------------------------------------------------------------------------------------------
# output directories


def cleanup(path: str | None, created: bool) -> None:
    """After an interruption or a failure: remove temporary files and staging directories, and the
    directory itself if this run created it. Safe to call twice, from any thread."""
    if not path or not os.path.isdir(path):
        return
    if created:
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        for name in os.listdir(path):
            full = os.path.join(path, name)
            if name.startswith(STAGING_PREFIX):
                shutil.rmtree(full, ignore_errors=True)
            elif name.startswith(".") and name.endswith(".part"):
                with contextlib.suppress(OSError):
                    os.remove(full)


def staging(out: str) -> str:
    """A fresh hidden directory inside ``out`` to write a report into before :func:`publish`."""
    path = os.path.join(out, f"{STAGING_PREFIX}{os.getpid()}")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def publish(stage: str, out: str) -> list[str]:
    """Move every file of ``stage`` to the same relative place in ``out`` (``os.replace``: atomic per
    file), then remove ``stage``. Returns the paths in ``out``. A SIGINT arriving meanwhile (on the
    main thread) is held and delivered to the previous handler once every file is in place."""
    held = []
    main = threading.current_thread() is threading.main_thread()
    if main:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        moved = []
        for dirpath, _, files in os.walk(stage):
            rel = os.path.relpath(dirpath, stage)
            dest_dir = out if rel == "." else os.path.join(out, rel)
            os.makedirs(dest_dir, exist_ok=True)
            for f in files:
                if f.endswith(".part"):
                    continue
                dest = os.path.join(dest_dir, f)
                os.replace(os.path.join(dirpath, f), dest)
                moved.append(dest)
        shutil.rmtree(stage, ignore_errors=True)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    if held:
        if callable(previous):
            previous(signal.SIGINT, None)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt
    return moved


# ---------------------------------------------------------------------------------------------------
# Ctrl-C


@contextlib.contextmanager
def interruptible(on_timeout=None, grace: float = 1.0, code: int = 130, linger: bool = False):
    """Within the block, SIGINT kills every descendant process and raises KeyboardInterrupt here; if
    the process is still alive ``grace`` seconds later, ``on_timeout()`` runs (the cleanup) and the
    process exits with ``code`` (``os._exit``: a pool's shutdown cannot hold it). Worker processes
    forked inside the block inherit the handler and exit at once with ``code``, without a traceback.

    ``linger=False`` (a caller inside a longer-lived process: a test, a notebook) stops the watchdog
    when the block is left; ``linger=True`` (the ``lptheory`` program) keeps it through the rest of
    the process, interpreter shutdown included."""
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield
        return
    owner = os.getpid()
    timers = []

    def watchdog():
        with contextlib.suppress(Exception):
            if on_timeout:
                on_timeout()
        with contextlib.suppress(Exception):
            print("lptheory: interrupted", file=sys.stderr, flush=True)
        os._exit(code)

    def handler(signum, frame):
        if os.getpid() != owner:  # a forked worker that inherited the handler: go, quietly (the
            os._exit(code)  # main process reports the interruption and cleans up)
        kill_descendants()
        t = threading.Timer(grace, watchdog)
        t.daemon = True
        t.start()
        timers.append(t)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if os.getpid() == owner:
            signal.signal(signal.SIGINT, previous)
            if not linger:
                for t in timers:
                    t.cancel()
