"""No import circle among the modules of ``lptheory`` and ``synthetic`` (issue 34), lazy imports included.

The graph is read from the source with :mod:`ast` (every ``import``, at module level or inside a function;
those under ``if TYPE_CHECKING:`` never run and are left out). An edge goes from a module to each module it
imports, and to each sub-package whose ``__init__`` that import runs (``from .fast.step import x`` runs
``lptheory/fast/__init__.py``); the top-level packages themselves are not targets (``from . import x`` inside
``lptheory`` runs no new code of ``lptheory/__init__.py``, which is already being imported).
"""

from __future__ import annotations

import os

from tests.test_layering import ROOT, _module_name, imports_of

PACKAGES = ("lptheory", "synthetic")


def import_graph(root: str, packages=PACKAGES) -> dict[str, set[str]]:
    """{module: modules it imports} for every module of ``packages`` under ``root``."""
    sources = {}
    for top in packages:
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "__pycache__"))]
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                    sources[_module_name(rel)] = (os.path.join(dirpath, f), f == "__init__.py")
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for m, (path, is_pkg) in sources.items():
        with open(path, encoding="utf-8") as fh:
            names = [n for n, _, _ in imports_of(fh.read(), m, is_pkg) if n]
        for n in names:
            parts = n.split(".")
            # the sub-packages whose __init__ the import runs, then the module itself
            for i in range(2, len(parts) + 1):
                target = ".".join(parts[:i])
                if target in sources and target != m and not m.startswith(target + "."):
                    graph[m].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle_in_core_and_synthetic():
    cycles = find_cycles(import_graph(ROOT))
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_speed_machinery_never_imports_the_rules_at_import_time():
    """``lptheory.fast`` is below the rules: only :mod:`lptheory.fast.info` (not imported by the package) may
    reach :mod:`lptheory.optimizers`, to run one real step."""
    graph = import_graph(ROOT)
    users = sorted(m for m, deps in graph.items() if m.startswith("lptheory.fast") and "lptheory.optimizers" in deps)
    assert users == ["lptheory.fast.info"]


def test_the_checker_finds_a_planted_cycle(tmp_path):
    files = {
        "lptheory/__init__.py": "",
        "lptheory/a.py": "from . import b\n",
        "lptheory/b.py": "def f():\n    from .sub.c import x\n",
        "lptheory/sub/__init__.py": "from .d import y\n",
        "lptheory/sub/c.py": "x = 1\n",
        "lptheory/sub/d.py": "def g():\n    from .. import a\n",
        "lptheory/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        "synthetic/__init__.py": "",
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    cycles = find_cycles(import_graph(str(tmp_path)))
    # a -> b -> (lazily) sub.c, which runs sub/__init__ -> sub.d -> (lazily) a; e's import never runs
    assert cycles == [["lptheory.a", "lptheory.b", "lptheory.sub", "lptheory.sub.d"]]
