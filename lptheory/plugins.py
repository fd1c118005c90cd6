"""One plug-in mechanism for what a user adds: optimizers, problems, noise models, practice tasks and packs.

* **Installed packages** declare entry points, one group per kind::

      [project.entry-points."lptheory.optimizers"]   mine = "mypkg.optim"          # a module: importing it registers
      [project.entry-points."lptheory.problems"]     mine = "mypkg.problems"
      [project.entry-points."lptheory.noise"]        mine = "mypkg.noise"
      [project.entry-points."lptheory.tasks"]        mine = "mypkg.tasks:TASKS"    # PracticeTask values
      [project.entry-points."lptheory.checks"]       mine = "mypkg.checks:PACK"    # a pack

  Optimizer classes, problems and noise models register themselves when their module is imported (defining the
  class is the registration); :func:`entry_point_objects` gives the tasks and packs.
* **A user's own file or module** (``--optimizer-module FILE.py``, a task file given to ``lptheory check``) is
  loaded by :func:`load`, which remembers it (:func:`loaded`).

Every process that does the work finds the same plug-ins the same way: the command line loads them, and the
sweep's Dask workers, the practice pack's process pools and Dask workers call :func:`ensure` with the parent's
:func:`loaded` list before running a cell or a chunk (a file is loaded by its absolute path, once per process).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

__all__ = ["GROUPS", "PluginError", "load", "loaded", "ensure", "load_entry_points", "entry_point_objects"]

GROUPS = ("lptheory.optimizers", "lptheory.problems", "lptheory.noise", "lptheory.tasks", "lptheory.checks")
_MODULE_GROUPS = ("lptheory.optimizers", "lptheory.problems", "lptheory.noise")

_LOADED: dict = {}  # target (absolute path or module name) -> module, in load order
_EP_DONE = False


class PluginError(ValueError):
    """A plug-in that cannot be loaded: the message names it and why."""


def _key(target: str) -> str:
    return os.path.abspath(target) if target.endswith(".py") else target


def load(target: str):
    """Import the plug-in ``target`` (a ``.py`` file or an importable module name) once per process and remember
    it (:func:`loaded`). A file becomes the module ``lptheory_user_<stem>``; PluginError names the target when it
    does not exist or raises on import (with the file's line for an error inside it)."""
    if not isinstance(target, str) or not target:
        raise PluginError(f"a plug-in must be a .py file or a module name, got {target!r}")
    key = _key(target)
    if key in _LOADED:
        return _LOADED[key]
    try:
        if key.endswith(".py"):
            if not os.path.isfile(key):
                raise PluginError(f"{target}: no such file")
            name = "lptheory_user_" + os.path.splitext(os.path.basename(key))[0].replace("-", "_")
            spec = importlib.util.spec_from_file_location(name, key)
            if spec is None or spec.loader is None:
                raise PluginError(f"{target}: not a Python file")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(key)
    except PluginError:
        raise
    except SystemExit as exc:  # never a silent exit
        raise PluginError(f"{target}: called sys.exit({exc.code!r}) while being imported") from None
    except KeyboardInterrupt:  # Ctrl-C (or the module raised it): the caller's interruption
        _forget(key)
        raise
    except Exception as exc:  # the user's module: name it, and the line inside it
        import traceback

        line = ""
        if key.endswith(".py"):
            tb = traceback.extract_tb(exc.__traceback__)
            hit = [f.lineno for f in tb if os.path.abspath(f.filename) == key]
            line = f":{hit[-1]}" if hit else ""
        raise PluginError(f"{target}{line}: does not import ({type(exc).__name__}: {exc})") from exc
    _LOADED[key] = mod
    return mod


def _forget(key: str) -> None:
    name = "lptheory_user_" + os.path.splitext(os.path.basename(key))[0].replace("-", "_")
    sys.modules.pop(name, None)


def loaded() -> list:
    """The user plug-ins this process loaded, in order (absolute paths for files): what a worker must load."""
    return list(_LOADED)


def load_entry_points() -> None:
    """Import every module of the optimizer, problem and noise groups of the installed packages (once)."""
    global _EP_DONE
    if _EP_DONE:
        return
    _EP_DONE = True
    for group in _MODULE_GROUPS:
        for ep in _entry_points(group):
            try:
                ep.load()
            except Exception as exc:
                raise PluginError(f"entry point {ep.name} = {ep.value} ({group}): {type(exc).__name__}: {exc}") from exc


def entry_point_objects(group: str) -> list:
    """The objects of the entry points of ``group`` (lists flattened), as ``(entry-point name, object)``."""
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    out = []
    for ep in _entry_points(group):
        try:
            obj = ep.load()
        except Exception as exc:
            raise PluginError(f"entry point {ep.name} = {ep.value} ({group}): {type(exc).__name__}: {exc}") from exc
        for o in obj if isinstance(obj, (list, tuple)) else [obj]:
            out.append((ep.name, o))
    return out


def ensure(targets=()) -> None:
    """In a worker: the installed plug-ins, then each of ``targets`` (a parent's :func:`loaded`) not loaded yet."""
    load_entry_points()
    for t in targets or ():
        load(t)


def _entry_points(group: str):
    try:
        from importlib.metadata import entry_points

        return list(entry_points(group=group))
    except Exception:  # pragma: no cover - broken metadata must not break the toolkit
        return []
