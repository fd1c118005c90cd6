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

Every module of lptheory, synthetic and proofs_checks that defines a ``cache=True`` kernel calls
:func:`install` before it does (``tests/test_numba_stale_cache.py`` checks this), so the guard is in place before
any cached dispatcher is first called. This module does not import numba itself; :func:`install` does,
and is only called where numba is about to be used anyway (``import lptheory`` still does not import numba).
"""

from __future__ import annotations

import functools
import pickle
import warnings

__all__ = ["install", "guarded", "StaleNumbaCacheWarning", "STALE"]

#: The errors that mean "this cache entry refers to code that no longer exists": a module that is gone
#: (``ImportError``, ``ModuleNotFoundError``), a name that is gone from a module (``AttributeError``, as
#: ``pickle`` raises it), and pickle's own error for a reference it cannot rebuild.
STALE = (ImportError, AttributeError, pickle.UnpicklingError)

_MARK = "_lptheory_stale_cache_guard"
_WARNED: list = []  # one warning per process (the first stale entry); later ones are recompiled silently


class StaleNumbaCacheWarning(RuntimeWarning):
    """numba's disk cache held an entry for a kernel that refers to code that no longer exists (a module
    or function moved since the entry was written); the kernel was compiled afresh and the entry replaced.
    Issued once per process."""


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
    """``load_overload`` (numba's ``Cache.load_overload(self, sig, target_context)``) with the errors of
    :data:`STALE` turned into a cache miss (``None``) and a :class:`StaleNumbaCacheWarning`, once per process;
    any other error propagates unchanged."""
    if getattr(load_overload, _MARK, False):
        return load_overload

    @functools.wraps(load_overload)
    def load(self, *args, **kwargs):
        try:
            return load_overload(self, *args, **kwargs)
        except STALE as exc:
            _warn_once(self, exc)
            return None  # a miss: the dispatcher compiles, then save_overload overwrites the entry

    setattr(load, _MARK, True)
    return load


@functools.lru_cache(maxsize=1)
def install() -> bool:
    """Put the guard on numba's cache loading (idempotent, cheap after the first call).

    Returns
    -------
    bool
        True when the guard is in place; False without numba, or with a numba whose ``Cache`` class has
        no ``load_overload`` (another design: nothing is hooked there, and a stale entry fails as numba
        makes it fail; deleting the ``*.nbi``/``*.nbc`` files clears it).
    """
    try:
        from numba.core import caching
    except ImportError:
        return False
    cls = getattr(caching, "Cache", None)
    load_overload = getattr(cls, "load_overload", None)
    if load_overload is None:
        return False  # a numba without Cache.load_overload (the method exists from 0.2x to 0.68): do nothing
    cls.load_overload = guarded(load_overload)
    return True
