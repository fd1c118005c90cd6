"""Results kept on disk between runs, read back only when this installation wrote them.

A cache directory (``~/.cache/lptheory/...``) is a place others may write to: a shared home, a copied
directory, a file planted by another user. An entry is therefore signed: its first line is an HMAC-SHA256 of
its content under a secret of this user (:func:`cache_key`, 32 random bytes in a file of mode 0600 owned by
the user, kept outside the cache directories so that copying a cache does not copy the key), and an entry
whose signature does not verify is ignored (recomputed and rewritten). What is read back is never run: a
sympy result is stored as ``srepr`` text and read by the safe parser
(:func:`proofs_checks.safe_parse.parse_expression`), never by ``sympify``/``eval``.

:func:`cached_limit` (``sympy.limit`` kept on disk) is the one cache of the claim layer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import warnings

import sympy as sp

from .safe_parse import parse_expression

__all__ = [
    "cached_limit",
    "cache_key",
    "signed_read",
    "signed_write",
    "load_signed",
    "save_signed",
    "CacheEntryIgnored",
]


def key_path() -> str:
    """Where the signing secret lives: ``$XDG_CONFIG_HOME/lptheory/cache-key`` (``~/.config`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "lptheory", "cache-key")


def cache_key() -> bytes | None:
    """This user's signing secret (created on first use: 32 random bytes, mode 0600), or None where it cannot
    be had safely (an unwritable home, a key file not owned by this user, readable by others, or not 32 bytes
    long): the caches are then not used, results are computed."""
    path = key_path()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            key = fh.read(64)
    except OSError:
        return None
    own = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    if not own or not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or len(key) != 32:
        return None
    return key


def _signature(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def signed_read(path: str) -> str | None:
    """The content of the cache entry ``path`` when its signature verifies under :func:`cache_key`, else None
    (missing, unreadable, truncated, written by another installation or edited)."""
    key = cache_key()
    if key is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            head, text = fh.read().split("\n", 1)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return text if hmac.compare_digest(head, _signature(key, text)) else None


def signed_write(path: str, text: str) -> bool:
    """Write ``text`` to the cache entry ``path`` with its signature (atomically: a temporary file replaced);
    False where it cannot be written or no key is available (nothing is cached then)."""
    key = cache_key()
    if key is None:
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(_signature(key, text) + "\n" + text)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


class CacheEntryIgnored(UserWarning):
    """A cache entry that exists but is not used (unsigned, signed under another key, edited, damaged or of
    the wrong shape): it counts as a miss, is recomputed and rewritten."""


_READ_LIMIT = 512 * 1024 * 1024  # characters: an entry larger than this is damaged (or /dev/zero), not read whole


def load_signed(path: str, parse=json.loads, *, what: str = "cache entry"):
    """The content of the signed cache entry ``path``, read by ``parse`` (default :func:`json.loads`), or None:
    a miss.

    A missing file, or no signing key (:func:`cache_key`), is a plain miss. A file that is there but cannot be
    used (unreadable, not text, larger than 512 MiB, no signature or one that does not verify under this user's
    key: edited, copied from another installation, or written before entries were signed) is a miss too, with a
    :class:`CacheEntryIgnored` warning naming the file; so is one whose ``parse`` raises (ValueError, TypeError,
    KeyError, AttributeError, IndexError: a ``parse`` that checks the shape of what it read, e.g. that a JSON
    document is an object with the fields the caller uses, makes a damaged entry a miss instead of a crash on
    every later run). Nothing read is run (``parse`` gets text)."""
    key = cache_key()
    if key is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO planted there never blocks
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _ignored(path, what, f"cannot be read ({exc.strerror or exc})")
    try:
        with os.fdopen(fd, "r", encoding="utf-8") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return _ignored(path, what, "not a regular file")
            raw = fh.read(_READ_LIMIT + 1)
    except (OSError, UnicodeDecodeError) as exc:
        return _ignored(path, what, f"cannot be read as text ({exc})")
    if len(raw) > _READ_LIMIT:
        return _ignored(path, what, f"larger than {_READ_LIMIT} characters")
    head, sep, text = raw.partition("\n")
    if not sep or not hmac.compare_digest(head.encode("utf-8", "replace"), _signature(key, text).encode()):
        return _ignored(
            path,
            what,
            "its signature does not verify under this user's key (edited, copied, or written by another installation)",
        )
    try:
        return parse(text)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        return _ignored(path, what, f"damaged ({type(exc).__name__}: {exc})")


def save_signed(path: str, obj, dump=json.dumps) -> bool:
    """Write ``dump(obj)`` (default :func:`json.dumps`) to the cache entry ``path``, signed under this user's key
    and atomically (:func:`signed_write`, the entry :func:`load_signed` reads back); False where nothing could
    be written (no key, an unwritable directory: the result is simply not cached)."""
    return signed_write(path, dump(obj))


def _ignored(path, what, why):
    warnings.warn(f"{what} {path} ignored: {why}; recomputed", CacheEntryIgnored, stacklevel=3)
    return None


def _limit_cache_dir():
    """Where :func:`cached_limit` keeps its results: ``$LPTHEORY_LIMIT_CACHE`` (``0``: no cache), else
    ``~/.cache/lptheory/sympy-limits``."""
    from lptheory import config

    env = config.raw("LPTHEORY_LIMIT_CACHE")
    if env == "0":
        return None
    return env or os.path.join(os.path.expanduser("~"), ".cache", "lptheory", "sympy-limits")


def cached_limit(expr, var, point, direction="+"):
    """``sympy.limit(expr, var, point, direction)``, kept on disk: a result does not depend on the run's
    options, only on the expression and sympy, so it is computed once per machine (keyed by sympy's
    version and the arguments' ``srepr``) and read back as the same expression afterwards. An entry is signed
    (:func:`signed_read`) and read by the safe parser; a missing, unreadable, corrupt or foreign entry, or an
    unwritable directory, just means sympy computes it."""
    args = "\n".join([sp.__version__, sp.srepr(expr), sp.srepr(var), sp.srepr(sp.sympify(point)), direction])
    root = _limit_cache_dir()
    path = None
    if root is not None:
        path = os.path.join(root, hashlib.sha256(args.encode()).hexdigest() + ".srepr")
        text = signed_read(path)
        if text is not None:
            try:
                return parse_expression(text, path)
            except ValueError:
                pass
    lim = sp.limit(expr, var, point, direction)
    if path is not None:
        signed_write(path, sp.srepr(lim))
    return lim
