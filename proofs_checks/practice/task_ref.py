"""How a worker process (a process pool's, a Dask worker's) finds the task it trains: a built-in task's name, or
``"FILE.py:NAME"`` for a task defined in a user's file (loaded once per process, by the same loader as
``lptheory check FILE.py``)."""

from __future__ import annotations

__all__ = ["resolve", "ref_for"]

_LOADED: dict = {}


def ref_for(task, path: str | None = None) -> str:
    """The reference of ``task``: its name for a built-in task, ``"PATH:NAME"`` for one from the file ``path``."""
    return f"{path}:{task.name}" if path else task.name


def resolve(ref: str):
    """The task of ``ref`` (:func:`ref_for`): a built-in or installed task's name, or ``FILE.py:NAME``."""
    from .tasks import BUILTIN, installed

    if ref in BUILTIN:
        return BUILTIN[ref]
    if ":" not in ref:
        known = installed()  # the tasks of installed packages (entry points)
        if ref in known:
            return known[ref]
    if ref in _LOADED:
        return _LOADED[ref]
    path, _, name = ref.rpartition(":")
    if not path:
        raise ValueError(f"task must be one of {sorted(BUILTIN)} or FILE.py:NAME, got {ref!r}")
    from .task import tasks_of_file

    for t in tasks_of_file(path):  # the task file: loaded through lptheory.plugins, once per process
        _LOADED[f"{path}:{t.name}"] = t
    if ref not in _LOADED:
        raise ValueError(f"{path} defines no task named {name!r}")
    return _LOADED[ref]
