"""A stale entry of numba's on-disk cache is a cache miss, not a crash.

``numba.njit(cache=True)`` keeps compiled kernels in ``__pycache__/*.nbi`` (the index) and ``*.nbc`` (the
compiled code) beside the source, or under ``$NUMBA_CACHE_DIR``. numba trusts an entry while the *kernel's own*
source file keeps its modification time and size and the kernel's bytecode is the same; it never looks at the
modules whose functions the kernel calls. The compiled code pickles the environment of every function it
contains by module name, so after such a module moves (issue 34 moved ``lptheory._svml_kernels`` to
``lptheory.fast.svml_kernels``) an unchanged kernel file still finds its old entry, and loading it fails in
``pickle.loads`` with ``ModuleNotFoundError`` (or ``AttributeError`` for a moved function). A git checkout
upgraded across the move, or any install whose unchanged files keep their mtimes, then crashed on the first call.

:func:`install` wraps numba's ``Cache.load_overload`` (the one method through which a dispatcher reads its
disk cache, numba/core/caching.py) once per process: when loading an entry raises one of :data:`STALE` (the
entry refers to code that is gone), the load returns ``None``, which numba treats as a miss: it compiles
the kernel afresh and overwrites the entry. The first such entry in a process issues a
:class:`StaleNumbaCacheWarning` naming the kernel and how to clear the caches. Nothing else changes: other
errors still raise, and a kernel that fails to compile still fails, since compilation happens after the
load, outside the wrapper (an error that the wrapper took for staleness but that is not, is met again
there). The wrapper applies to every numba cache in the process, lptheory's or not.

A cache entry of the toolkit's own kernels is also stale when a source file of the toolkit's kernels is newer
than it: numba would otherwise run the *old* code of a callee edited in place in another file (same module and
name, new code: an edit of ``lptheory.numpy_power`` or of ``lptheory.fast`` under an unchanged
``synthetic/_smooth_kernel.py`` returned the old results). Every module that defines a numba function of the
toolkit, or whose names numba code resolves (a shim such as ``lptheory.numpy_power``), registers its file with
one line before it defines or imports them: ``numba_cache.install(__file__)`` where it defines ``cache=True``
kernels (the guard and the registration), ``numba_cache.register(__file__)`` elsewhere (no numba import); the
modules of ``lptheory.fast`` (this package, the kernels' machinery) are registered with the first call. The
newest modification time of the files registered so far is kept per process, each file stated once, when it
registers (a few dozen ``stat`` calls; a kernel's callees are imported, hence registered, before it runs).
Before numba reads the entry of a kernel defined in a registered file (or in a file registered with
``callee=False``: the fused kernels that :mod:`lptheory.fast.fused` generates into its cache directory, whose
own file numba stamps), the wrapper compares the modification time of the entry's index file (numba's
``*.nbi``, one per kernel) with that newest time; an index that is not newer is emptied (``Cache.flush``) and
the load is a miss: numba compiles the kernel afresh and its ``save_overload`` writes the index again, now
newer, so later processes load it normally (an emptied index also drops the kernel's other signatures, each
recompiled at its next use: numba rewrites the index only when it adds a key, so a miss without the flush
would compile in every process). This miss is the normal case after an edit: no warning, one ``DEBUG`` line of
the ``lptheory.fast.numba_cache`` logger. ``save_overload`` is wrapped too: an entry is not written while a
registered file has changed since this process read it (the code in memory is older than the files), so an
edit made while a process runs is seen by the next process (up to the few milliseconds between that check and
numba's write). Kernels of other files (a user's ``cache=True`` functions) keep numba's behaviour.

Consequences: a fresh clone (no caches) compiles as before; an install whose files all keep their install
time (``pip install .``) writes its caches later, so nothing is recompiled after the first run; a git
checkout that changes any registered file recompiles the toolkit's cached kernels once (the same after
``touch`` of such a file). Clock skew: an index file whose time is in the future counts as newer (loaded);
a *source* file whose time is in the future makes its dependents recompile in every process until that time
has passed (only speed is lost; ``touch`` the file to end it). A file that cannot be stated (a zip import)
does not count.

Every module of lptheory, synthetic and proofs_checks that defines a ``cache=True`` kernel calls
:func:`install` before it does (``tests/test_numba_stale_cache.py`` checks this), so the guard is in place before
any cached dispatcher is first called. This module does not import numba itself; :func:`install` does,
and is only called where numba is about to be used anyway (``import lptheory`` still does not import numba).
"""

from __future__ import annotations

import contextlib
import functools
import glob
import logging
import os
import pickle
import threading
import warnings

__all__ = ["install", "register", "guarded", "StaleNumbaCacheWarning", "STALE"]

#: The errors that mean "this cache entry refers to code that no longer exists": a module that is gone
#: (``ImportError``, ``ModuleNotFoundError``), a name that is gone from a module (``AttributeError``, as
#: ``pickle`` raises it), and pickle's own error for a reference it cannot rebuild.
STALE = (ImportError, AttributeError, pickle.UnpicklingError)

_MARK = "_lptheory_stale_cache_guard"
_WARNED: list = []  # one warning per process (the first stale entry); later ones are recompiled silently
_LOG = logging.getLogger(__name__)
_LOCK = threading.Lock()
_KERNEL_FILES: set = set()  # registered files: a cached kernel defined in one is checked against _SOURCES
_SOURCES: dict = {}  # registered callee files -> (st_mtime_ns, st_size) when registered (None: cannot stat)
_NEWEST = [-1]  # the newest st_mtime_ns among _SOURCES (-1: none)


class StaleNumbaCacheWarning(RuntimeWarning):
    """numba's disk cache held an entry for a kernel that refers to code that no longer exists (a module
    or function moved since the entry was written); the kernel was compiled afresh and the entry replaced.
    Issued once per process."""


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None  # cannot be stated (a zip import, a file removed since): it does not count
    return st.st_mtime_ns, st.st_size


def _add(path: str, callee: bool) -> None:
    norm = _norm(path)
    _KERNEL_FILES.add(norm)
    if callee and norm not in _SOURCES:
        stamp = _SOURCES[norm] = _stamp(norm)
        if stamp is not None and stamp[0] > _NEWEST[0]:
            _NEWEST[0] = stamp[0]


def register(source: str, *, callee: bool = True) -> None:
    """Count ``source`` (a module's ``__file__``) as a source file of the toolkit's kernels, without importing
    numba: the ``cache=True`` kernels it defines are checked against the registered files, and, with
    ``callee`` (the default), its modification time counts for every checked kernel (kernels call its numba
    functions, or resolve names through it). The first call also registers the modules of this package
    (``lptheory.fast``). Cheap: one ``stat`` per file and process.

    Parameters
    ----------
    source : str
        The file, normally the registering module's ``__file__``.
    callee : bool, optional
        False for a file whose functions no other kernel calls and whose own changes numba sees (the
        generated fused modules, which :mod:`lptheory.fast.fused` touches on every use).
    """
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a file path (a module's __file__), not {type(source).__name__}")
    with _LOCK:
        if not _KERNEL_FILES:
            for path in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "*.py"))):
                _add(path, True)
        _add(os.fspath(source), callee)


def _checked(cache) -> bool:
    code = getattr(getattr(cache, "_py_func", None), "__code__", None)
    return code is not None and _norm(code.co_filename) in _KERNEL_FILES


def _index_mtime(cache):
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)  # numba's IndexDataCacheFile
    if not index:
        return None
    try:
        return os.stat(index).st_mtime_ns
    except OSError:
        return None  # no entry yet: numba misses on its own


def _older_than_sources(cache) -> bool:
    """Whether ``cache`` belongs to a registered kernel and its index is not newer than every registered
    callee file (equal times count as older: a coarse file system clock cannot order them)."""
    if _NEWEST[0] < 0 or not _checked(cache):
        return False
    mtime = _index_mtime(cache)
    return mtime is not None and mtime <= _NEWEST[0]


def _sources_changed() -> bool:
    """Whether a registered callee file changed since this process stated it (stats them all again)."""
    return any(_stamp(path) != stamp for path, stamp in list(_SOURCES.items()) if stamp is not None)


def _kernel_name(cache) -> str:
    fn = getattr(cache, "_py_func", None)
    if fn is None:
        return repr(cache)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


def _warn_once(cache, exc: BaseException) -> None:
    if _WARNED:
        return
    _WARNED.append(_kernel_name(cache))
    where = getattr(cache, "cache_path", None) or "a __pycache__ folder beside the source"
    message = (
        f"numba's disk cache of {_WARNED[0]} refers to code that no longer exists ({type(exc).__name__}: {exc}); "
        f"compiled it afresh and replaced the entry (later stale entries in this process are replaced without a "
        f"warning). This follows an upgrade that moved a module; to clear numba's caches delete the *.nbi and *.nbc "
        f"files under the checkout (find <checkout> -name '*.nb[ic]' -delete), or under $NUMBA_CACHE_DIR where set "
        f"(this entry: {where})."
    )
    code = getattr(getattr(cache, "_py_func", None), "__code__", None)
    if code is None:
        warnings.warn(message, StaleNumbaCacheWarning, stacklevel=3)
    else:  # reported at the kernel's own definition (the call stack here is numba's compiler)
        module = getattr(cache._py_func, "__module__", None) or "numba"
        warnings.warn_explicit(message, StaleNumbaCacheWarning, code.co_filename, code.co_firstlineno, module)


def guarded(load_overload):
    """``load_overload`` (numba's ``Cache.load_overload(self, sig, target_context)``) with two kinds of stale
    entries turned into a cache miss (``None``): an entry of a registered kernel whose index is not newer than
    the registered source files (the index is emptied first, no warning), and an entry whose loading raises
    one of :data:`STALE` (a :class:`StaleNumbaCacheWarning`, once per process); any other error propagates
    unchanged."""
    if getattr(load_overload, _MARK, False):
        return load_overload

    @functools.wraps(load_overload)
    def load(self, *args, **kwargs):
        if _older_than_sources(self):
            _LOG.debug("numba cache of %s is older than the toolkit's kernel sources: recompiling", _kernel_name(self))
            with contextlib.suppress(OSError):
                self.flush()  # numba then writes the index afresh when it saves the new entry
            return None
        try:
            return load_overload(self, *args, **kwargs)
        except STALE as exc:
            _warn_once(self, exc)
            return None  # a miss: the dispatcher compiles, then save_overload overwrites the entry

    setattr(load, _MARK, True)
    return load


def guarded_save(save_overload):
    """``save_overload`` (numba's ``Cache.save_overload(self, sig, data)``) that writes nothing for a
    registered kernel while a registered source file has changed since this process stated it (the code just
    compiled may be older than the files: the next process compiles it)."""
    if getattr(save_overload, _MARK, False):
        return save_overload

    @functools.wraps(save_overload)
    def save(self, *args, **kwargs):
        if _checked(self) and _sources_changed():
            _LOG.debug("toolkit sources changed while %s compiled: its cache entry is not written", _kernel_name(self))
            return None
        return save_overload(self, *args, **kwargs)

    setattr(save, _MARK, True)
    return save


@functools.lru_cache(maxsize=1)
def _hook() -> bool:
    try:
        from numba.core import caching
    except ImportError:
        return False
    cls = getattr(caching, "Cache", None)
    load_overload = getattr(cls, "load_overload", None)
    save_overload = getattr(cls, "save_overload", None)
    if load_overload is None or save_overload is None:
        return False  # a numba without Cache.load_overload (the method exists from 0.2x to 0.68): do nothing
    cls.load_overload = guarded(load_overload)
    cls.save_overload = guarded_save(save_overload)
    return True


def install(source: str | None = None, *, callee: bool = True) -> bool:
    """Put the guard on numba's cache loading and saving (idempotent, cheap after the first call), and
    :func:`register` ``source`` where given (a kernel module calls ``numba_cache.install(__file__)``).

    Parameters
    ----------
    source : str, optional
        The calling module's ``__file__``: see :func:`register`.
    callee : bool, optional
        See :func:`register`.

    Returns
    -------
    bool
        True when the guard is in place; False without numba, or with a numba whose ``Cache`` class has
        no ``load_overload`` (another design: nothing is hooked there, and a stale entry fails as numba
        makes it fail; deleting the ``*.nbi``/``*.nbc`` files clears it).
    """
    if source is not None:
        register(source, callee=callee)
    return _hook()
