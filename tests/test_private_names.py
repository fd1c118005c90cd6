"""No private name is used outside its module (issue 22, item 4).

A name starting with ``_`` (not a dunder) is private to the module that defines it. Shared helpers are
public in their layer. The rule, checked on the source of the packages (``lptheory``, ``synthetic``,
``proofs_checks``, ``figures``) and ``examples/`` by reading their imports and attribute accesses with :mod:`ast`:

* ``from M import _f`` and ``M._f`` (``M`` an imported module) are errors when ``_f`` is a function,
  class or variable of ``M``;
* a private *module* (``_engine``, ``_validate``, ...) is private to its top-level package: importing it
  (``from lptheory import _validate``, ``import lptheory._xp``, ``from lptheory._kernels import x``) from
  another top-level package is an error; inside its own package it is how the package is built.

The examples are scanned too. Tests and benchmarks may use private names (white-box tests and timings of
kernels); they are not scanned.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("lptheory", "synthetic", "proofs_checks", "figures")
SCANNED = (*PACKAGES, "examples")  # the examples are written as a user writes: public names only

# Uses left to other helpers' files (issue 22 was split): each entry is (importing module, used name).
# The lead empties this list at integration; a new private use anywhere else fails the test, and an entry
# that is no longer used fails it too (so the list only shrinks).
ALLOWED: set = set()  # emptied at integration: every private name stays in its module


def _modules():
    for pkg in SCANNED:
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, pkg)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    yield (rel[: -len(".__init__")] if rel.endswith(".__init__") else rel), path


def _is_module(dotted: str) -> bool:
    base = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    parts = module.split(".")
    base = parts if is_pkg else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _problems(dotted: str, user: str) -> list[str]:
    """What is private-across-modules in the use of the dotted name ``dotted`` by module ``user``."""
    out, parts = [], dotted.split(".")
    if parts[0] not in PACKAGES:  # another library's names (torch._foreach_add, os._exit) are its own business
        return out
    for i, part in enumerate(parts):
        if not _private(part):
            continue
        prefix = ".".join(parts[: i + 1])
        if _is_module(prefix):
            if parts[0] != user.split(".")[0]:  # a private module used from another top-level package
                out.append(prefix)
        else:  # a private function, class or variable of the module before it
            owner = ".".join(parts[:i])
            if owner != user:
                out.append(prefix)
        if not _is_module(prefix):
            break
    return out


def private_uses() -> set[tuple[str, str]]:
    """Every (module, private dotted name) the packages use across modules."""
    found = set()
    for mod, path in _modules():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        is_pkg = path.endswith("__init__.py")
        aliases: dict[str, str] = {}  # local name -> dotted module
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    for bad in _problems(a.name, mod):
                        found.add((mod, bad))
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(mod, is_pkg, node.level, node.module)
                for a in node.names:
                    full = f"{src}.{a.name}"
                    for bad in _problems(full, mod):
                        found.add((mod, bad))
                    if _is_module(full):
                        aliases[a.asname or a.name] = full
        for node in ast.walk(tree):  # M._f with M an imported module
            if isinstance(node, ast.Attribute) and _private(node.attr):
                chain, cur = [node.attr], node.value
                while isinstance(cur, ast.Attribute):
                    chain.append(cur.attr)
                    cur = cur.value
                if isinstance(cur, ast.Name) and cur.id in aliases:
                    dotted = ".".join([aliases[cur.id], *reversed(chain)])
                    for bad in _problems(dotted, mod):
                        found.add((mod, bad))
    return found


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_no_private_name_is_used_outside_its_module():
    uses = private_uses()
    new = sorted(uses - ALLOWED)
    assert not new, "private names used outside their module (make the helper public in its layer):\n" + "\n".join(
        f"  {m} uses {n}" for m, n in new
    )
    stale = sorted(ALLOWED - uses)
    assert not stale, f"allow-list entries no longer used (remove them): {stale}"


def test_the_scanner_finds_a_planted_private_import(tmp_path, monkeypatch):
    """The rule catches each form: a private function imported or reached as an attribute, and a private
    module imported from another top-level package; a package's own private module is fine."""
    for pkg in ("lptheory", "synthetic"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "lptheory" / "_priv.py").write_text("def helper():\n    pass\n")
    (tmp_path / "lptheory" / "core.py").write_text("def _hidden():\n    pass\n")
    (tmp_path / "lptheory" / "ok.py").write_text("from . import _priv\nfrom ._priv import helper\n")
    (tmp_path / "lptheory" / "bad.py").write_text(
        "from .core import _hidden\nfrom . import core\n\n\ndef f():\n    return core._hidden()\n"
    )
    (tmp_path / "synthetic" / "user.py").write_text("from lptheory import _priv\nimport lptheory._priv\n")
    me = sys.modules[__name__]
    monkeypatch.setattr(me, "ROOT", str(tmp_path))
    monkeypatch.setattr(me, "PACKAGES", ("lptheory", "synthetic"))
    monkeypatch.setattr(me, "SCANNED", ("lptheory", "synthetic"))
    assert private_uses() == {("lptheory.bad", "lptheory.core._hidden"), ("synthetic.user", "lptheory._priv")}
