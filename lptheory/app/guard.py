"""Output directories that commands write: a lock against a second writer, prompt Ctrl-C, nothing
half-written.

* :class:`OutputLock`: an exclusive advisory lock (``fcntl.flock`` where available, else an
  ``O_EXCL`` lock file) on ``OUT/.lptheory.lock`` for the whole run. A second ``lptheory`` writing the
  same ``--out`` is refused (exit 2, naming the other process) before it does any work, so two reports
  can never mix their files. The kernel drops an ``flock`` with its process: no stale locks after a crash.
  Forked children close their copy of the lock (:func:`orphan_guard`), so a worker that outlives its parent
  cannot keep the lock; a lock file whose holder is no longer running is taken over, with a message.
* :func:`orphan_guard` / :func:`die_with_parent`: a forked worker dies with its parent, however the parent
  ends (``SIGKILL`` included): ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, and everywhere a watchdog
  thread that exits the worker once its parent is gone.
* :func:`interruptible`: while a command runs, SIGINT (Ctrl-C, sent by the terminal to the whole
  foreground process group), SIGTERM and SIGHUP kill every descendant process (worker pools, their forked searches) and
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

import concurrent.futures as cf
import contextlib
import os
import shutil
import signal
import sys
import threading

from lptheory import lifetime
from lptheory.lifetime import process_alive

LOCK_NAME = ".lptheory.lock"
# the signals that stop a command as Ctrl-C does (clean up, exit 130): SIGINT, SIGTERM (kill, a scheduler's
# time limit) and SIGHUP (the terminal closed)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
STAGING_PREFIX = ".lptheory-staging-"


class OutputBusy(RuntimeError):
    """Another process holds the lock of an output directory."""


OWNER_NAME = ".lptheory-command"  # the command whose output a directory holds (one word)


class OutputOwned(RuntimeError):
    """An output directory holds the output of another command."""


def claim_directory(directory: str, command: str) -> None:
    """Mark ``directory`` as the output of ``command`` (a small file, :data:`OWNER_NAME`), or raise
    :class:`OutputOwned` when it holds the output of another command (``lptheory report`` and ``lptheory
    sweep`` sharing one ``--out`` would replace each other's ``results.parquet``). Call it holding the
    directory's lock. The root directory is refused (a command writes many files into its ``--out``)."""
    real = os.path.realpath(directory)
    if os.path.dirname(real) == real:
        raise OutputOwned(f"{directory} is the root directory: give each command a directory of its own")
    path = os.path.join(directory, OWNER_NAME)
    try:
        with open(path) as fh:
            owner = fh.read().strip()
    except FileNotFoundError:
        owner = None
    if owner is not None and owner != command:
        raise OutputOwned(f"{directory} holds the output of `lptheory {owner}` (see its {OWNER_NAME})")
    if owner is None:  # a directory of someone else's files: never overwritten (report.md, index.html, ...)
        foreign = sorted(n for n in os.listdir(directory) if not _ours(n))
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise OutputOwned(
                f"{directory} is not empty ({shown}) and was not made by lptheory (no {OWNER_NAME}): its files "
                "would be overwritten"
            )
        with open(path, "w") as fh:
            fh.write(command + "\n")


def _ours(name: str) -> bool:
    """Whether ``name`` in an output directory is lptheory's own bookkeeping (its lock, staging directories, the
    write probe), present before the directory is claimed."""
    return name == LOCK_NAME or name.startswith((STAGING_PREFIX, ".lptheory-write-test-"))


class OutputLock:
    """Exclusive lock on an output directory (see the module docstring). Use as a context manager or
    call :meth:`acquire` / :meth:`release`; ``acquire`` raises :class:`OutputBusy` at once (never waits)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.path = os.path.join(directory, LOCK_NAME)
        self._fd = None

    def _holder_pid(self) -> int | None:
        try:
            with open(self.path) as fh:
                text = fh.read().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def _holder(self) -> str:
        pid = self._holder_pid()
        return f"pid {pid}" if pid else "another process"

    def _take_over_if_dead(self) -> bool:
        """The lock file names a process that is no longer running (killed with ``SIGKILL``, say, while a
        worker it forked before :func:`orphan_guard` held the lock): remove the file, say so on stderr, and
        return True (the caller locks a fresh file). False when the holder runs or is unknown."""
        pid = self._holder_pid()
        if pid is None or pid == os.getpid() or process_alive(pid):
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        print(
            f"lptheory: {self.directory}: taking over its lock from pid {pid}, which is no longer running",
            file=sys.stderr,
            flush=True,
        )
        return True

    def acquire(self) -> OutputLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover  (Windows: an O_EXCL lock file)
            try:
                self._fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                if not self._take_over_if_dead():
                    raise OutputBusy(f"{self.directory} is being written by {self._holder()}") from None
                self._fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(self._fd, str(os.getpid()).encode())
            _HELD.add(self)
            return self
        while True:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                if self._take_over_if_dead():
                    continue
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
        _HELD.add(self)
        return self

    def release(self) -> None:
        _HELD.discard(self)
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


_HELD: set = set()  # the locks this process holds (a forked child closes its copies: _drop_locks_in_child)


def _drop_locks_in_child() -> None:
    """In a forked child: close its copies of this process's output locks (the parent keeps its lock; a
    worker must not hold it, since it could outlive the parent)."""
    for lock in list(_HELD):
        if lock._fd is not None:
            with contextlib.suppress(OSError):
                os.close(lock._fd)
            lock._fd = None
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_locks_in_child)


def orphan_guard() -> None:
    """Every process forked from now on by this one (and by its forked children) dies with its parent
    (:func:`lptheory.lifetime.orphan_guard`); forked children never hold the output locks."""
    lifetime.orphan_guard()


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


def _is_resource_tracker(pid: int) -> bool:
    """Whether ``pid`` is a ``multiprocessing`` resource tracker (Linux ``/proc``; False elsewhere)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"multiprocessing.resource_tracker" in fh.read()
    except OSError:
        return False


def kill_descendants() -> int:
    """SIGKILL every descendant process but multiprocessing's resource tracker (it ends by itself with this
    process, after releasing what the workers left; killed, it was relaunched and printed a KeyError
    traceback for every semaphore then released: a dozen after Ctrl-C on a sweep); returns how many
    were signalled."""
    n = 0
    for pid in descendants():
        if _is_resource_tracker(pid):
            continue
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


def remove_if_empty(path: str) -> None:
    """Remove directory ``path`` if it holds nothing but its owner mark (:data:`OWNER_NAME`)."""
    with contextlib.suppress(OSError):
        if set(os.listdir(path)) <= {OWNER_NAME}:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(path, OWNER_NAME))
            os.rmdir(path)


def staging(out: str) -> str:
    """A fresh hidden directory inside ``out`` to write a report into before :func:`publish`. The staging
    directories left by runs that are no longer running (killed with ``SIGKILL``) are removed."""
    with contextlib.suppress(OSError):
        for name in os.listdir(out):
            pid = name[len(STAGING_PREFIX) :]
            if name.startswith(STAGING_PREFIX) and pid.isdigit() and not process_alive(int(pid)):
                shutil.rmtree(os.path.join(out, name), ignore_errors=True)
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
        previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in STOP_SIGNALS}
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
            for sig, prev in previous.items():
                signal.signal(sig, prev)
    if held:
        prev = previous[held[0]]
        if callable(prev):
            prev(held[0], None)
        elif prev == signal.SIG_DFL and held[0] != signal.SIGINT:
            os.kill(os.getpid(), held[0])  # the signal's default action, now that every file is in place
        elif prev != signal.SIG_IGN:
            raise KeyboardInterrupt
    return moved


# ---------------------------------------------------------------------------------------------------
# Ctrl-C


_STOPPED: list = []  # the stop signals received inside interruptible()


def stop_requested() -> int | None:
    """The stop signal (SIGINT, SIGTERM, SIGHUP) received inside :func:`interruptible`, else None."""
    return _STOPPED[0] if _STOPPED else None


@contextlib.contextmanager
def interruptible(on_timeout=None, grace: float = 1.0, code: int = 130, linger: bool = False):
    """Within the block, SIGINT (and SIGTERM, SIGHUP: :data:`STOP_SIGNALS`) kills every descendant process
    and raises KeyboardInterrupt here; if the process is still alive ``grace`` seconds later,
    ``on_timeout()`` runs (the cleanup) and the process exits with ``code`` (``os._exit``: a pool's
    shutdown cannot hold it). Worker processes forked inside the block inherit the handler and exit at
    once with ``code``, without a traceback.

    ``linger=False`` (a caller inside a longer-lived process: a test, a notebook) stops the watchdog
    when the block is left; ``linger=True`` (the ``lptheory`` program) keeps it through the rest of
    the process, interpreter shutdown included.

    The signal is also remembered (:func:`stop_requested`): a KeyboardInterrupt raised where Python
    swallows it (inside an at-fork hook while a pool forks its workers) still ends the command as an
    interruption, not as the crash of the pool whose workers it killed; Python's "Exception ignored"
    report of that KeyboardInterrupt is not printed."""
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield
        return
    owner = os.getpid()
    timers = []
    _STOPPED.clear()

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
        _STOPPED.append(signum)
        kill_descendants()
        t = threading.Timer(grace, watchdog)
        t.daemon = True
        t.start()
        timers.append(t)
        raise KeyboardInterrupt

    def unraisable(info, hook=sys.unraisablehook):
        if not (_STOPPED and isinstance(info.exc_value, KeyboardInterrupt)):
            hook(info)

    def thread_hook(args, hook=threading.excepthook):
        # a process pool's manager thread, finding the workers the stop killed, sets an exception on the futures
        # the interrupted caller had cancelled: CPython's InvalidStateError, printed as "Exception in thread"
        # above "lptheory: interrupted" (a Ctrl-C of report --jobs 2): the stop's doing, not a crash
        if not (_STOPPED and isinstance(args.exc_value, (cf.InvalidStateError, cf.BrokenExecutor))):
            hook(args)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    previous_thread_hook, threading.excepthook = threading.excepthook, thread_hook
    try:
        yield
    finally:
        if os.getpid() == owner:
            for sig, prev in previous.items():
                signal.signal(sig, prev)
            if not linger:
                sys.unraisablehook = previous_hook
                threading.excepthook = previous_thread_hook
            if not linger:
                for t in timers:
                    t.cancel()
