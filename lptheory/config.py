"""The ``LPTHEORY_*`` environment switches, read here and nowhere else.

Each switch is read when the code it steers runs (a change of ``os.environ`` between two calls is seen by the
second), except the two kernel switches of ``synthetic`` (``LPTHEORY_GN_KERNEL``, ``LPTHEORY_SMOOTH_KERNEL``),
which their modules read once at import. :data:`SWITCHES` lists every switch with its values, default and
effect (the README's table is this list); :func:`raw` is the one place that reads ``os.environ``.
None of them changes a result: they choose between routes that give the same bits, or where files go.
"""

from __future__ import annotations

import os
from typing import NamedTuple

__all__ = [
    "Switch",
    "SWITCHES",
    "raw",
    "numpy_engine",
    "threads",
    "svml_off",
    "omp",
    "cache_dir",
    "kernel_cache_max",
    "kernel_off",
    "git_commit",
]


class Switch(NamedTuple):
    """One environment switch: its ``name``, the ``values`` it takes, its ``default`` and its ``effect``."""

    name: str
    values: str
    default: str
    effect: str


SWITCHES: tuple[Switch, ...] = (
    Switch(
        "LPTHEORY_ENGINE",
        "numpy",
        "unset (the fused numba engine)",
        "numpy: the optimizers' updates run on the reference numpy engine, not the fused numba kernels",
    ),
    Switch(
        "LPTHEORY_THREADS",
        "a positive integer",
        "every core (at most 16) for the fused engine, 1 for the reference engine",
        "worker threads of the numpy engines and the simulator's row blocks",
    ),
    Switch(
        "LPTHEORY_SVML",
        "0",
        "unset (on where numpy exports its SVML routines)",
        "0: fused kernels call numpy.power between loops instead of numpy's SVML routine inside them",
    ),
    Switch(
        "LPTHEORY_OMP",
        "0, 1",
        "unset (on, on Linux with torch's OpenMP runtime)",
        "0: lptheory.torch's split CPU steps run on lptheory's own pool, not torch's OpenMP team",
    ),
    Switch(
        "LPTHEORY_CACHE_DIR",
        "a directory",
        "~/.cache/lptheory/fused",
        "where the generated fused kernels are written (and compiled by numba's cache)",
    ),
    Switch(
        "LPTHEORY_KERNEL_CACHE_MAX",
        "a positive integer",
        "1024",
        "generated kernel modules kept in the cache directory (least recently used removed first)",
    ),
    Switch(
        "LPTHEORY_GN_KERNEL",
        "0",
        "unset (the numba kernel where it agrees with numpy)",
        "0: synthetic's hard instance computes its gradient norms on the numpy route (read at import)",
    ),
    Switch(
        "LPTHEORY_SMOOTH_KERNEL",
        "0",
        "unset (the numba kernel where it agrees with numpy)",
        "0: synthetic's smoothness estimates take the numpy route (read at import)",
    ),
    Switch(
        "LPTHEORY_SEARCH_THREADS",
        "an integer >= 1",
        "min(2, cores)",
        "threads for one large objective call of the claim checks' adversarial searches (same results)",
    ),
    Switch(
        "LPTHEORY_SYMBOLIC_BATCH",
        "0",
        "unset (batched draws where numba gives the samplers' bits)",
        "0: the symbolic spot checks draw their environments one by one",
    ),
    Switch(
        "LPTHEORY_LIMIT_CACHE",
        "0, a directory",
        "~/.cache/lptheory/sympy-limits",
        "where the claim checks keep their sympy limits (0: recomputed every time)",
    ),
    Switch(
        "LPTHEORY_SHARP_CACHE",
        "0, a directory",
        "~/.cache/lptheory/sharp-constants",
        "where the moment engine's results and the deciders' kept decisions live (the sharp constants, Lemma 2's "
        "crossing, the combined proofs; signed, keyed by the sources' hash; 0: recomputed every time)",
    ),
    Switch(
        "LPTHEORY_PRACTICE_CACHE",
        "a directory",
        "~/.cache/lptheory/practice",
        "where the practice pack keeps its training runs, keyed by configuration (a rerun resumes)",
    ),
    Switch(
        "LPTHEORY_TEST_CACHE",
        "0, a directory",
        "~/.cache/lptheory/test-quick-report",
        "where the test suite keeps its quick report (0: rebuilt)",
    ),
    Switch(
        "LPTHEORY_GIT_COMMIT",
        "a commit id",
        "unset (asked of git)",
        "the commit recorded in the reports' provenance",
    ),
)

_NAMES = frozenset(s.name for s in SWITCHES)


def raw(name: str, default: str = "") -> str:
    """The value of switch ``name`` (one of :data:`SWITCHES`) in the environment now, or ``default``."""
    if name not in _NAMES:
        raise ValueError(f"name must be one of {sorted(_NAMES)}, got {name!r}")
    return os.environ.get(name, default)


def numpy_engine() -> bool:
    """``LPTHEORY_ENGINE=numpy``: the reference numpy engine is forced."""
    return os.environ.get("LPTHEORY_ENGINE", "").lower() == "numpy"


def threads() -> int | None:
    """``LPTHEORY_THREADS`` as a positive integer, or None when unset (ValueError naming it otherwise)."""
    env = os.environ.get("LPTHEORY_THREADS")
    if not env:
        return None
    try:
        n = int(env)
    except ValueError as exc:
        raise ValueError(f"LPTHEORY_THREADS must be a positive integer, got {env!r}") from exc
    if n < 1:
        raise ValueError(f"LPTHEORY_THREADS must be a positive integer, got {env!r}")
    return n


def svml_off() -> bool:
    """``LPTHEORY_SVML=0``: the fused kernels do not call numpy's SVML routines."""
    return os.environ.get("LPTHEORY_SVML", "") == "0"


def omp() -> str:
    """``LPTHEORY_OMP`` stripped (``""`` when unset)."""
    return os.environ.get("LPTHEORY_OMP", "").strip()


def cache_dir() -> str:
    """``LPTHEORY_CACHE_DIR``, or the default ``~/.cache/lptheory/fused``."""
    return os.environ.get("LPTHEORY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "lptheory", "fused")


def kernel_cache_max() -> str:
    """``LPTHEORY_KERNEL_CACHE_MAX`` stripped (``""`` when unset; the kernel cache parses it)."""
    return os.environ.get("LPTHEORY_KERNEL_CACHE_MAX", "").strip()


def kernel_off(name: str) -> bool:
    """Whether switch ``name`` (``LPTHEORY_GN_KERNEL``, ``LPTHEORY_SMOOTH_KERNEL``, ``LPTHEORY_SEARCH_THREADS``
    with value 1 aside) is set to ``"0"``: a numba route turned off."""
    return raw(name) == "0"


def git_commit() -> str | None:
    """``LPTHEORY_GIT_COMMIT``, or None when unset or empty."""
    return os.environ.get("LPTHEORY_GIT_COMMIT") or None
