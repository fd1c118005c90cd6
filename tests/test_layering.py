"""The layering, checked statically (every ``import`` in the source, lazy ones included):

lptheory (core) <- synthetic <- proofs_checks <- figures; only the application floor ``lptheory/app``
imports upward. A planted violation in a scratch tree must be caught, so the checker itself is tested.
"""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("lptheory", "synthetic", "proofs_checks", "figures")
# modules outside lptheory/app allowed to import lptheory.app: `python -m lptheory`, the old lptheory.testing
# aliases (the installed pytest11 entry point of an older install names them) and the alias of the sweep module
# (moved to lptheory.app.sweep: application code)
APP_ALIASES = ("lptheory/__main__.py", "lptheory/testing/", "proofs_checks/sweep.py")


def _pack_figures(rel: str) -> bool:
    """A pack's figure module (``proofs_checks/<pack>/figures.py``, named by the pack as a string and imported
    only by the report) sits on the figures layer: it may import ``figures``, and no claim module may import it."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[0] == "proofs_checks" and parts[2] == "figures.py"


def _module_name(rel: str) -> str:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports_of(source: str, module: str, is_package: bool):
    """[(imported module, line, top_level)] of ``source`` (relative imports resolved; imports under
    ``if TYPE_CHECKING:`` left out: they never run)."""
    tree = ast.parse(source)
    out = []
    pkg = module if is_package else module.rpartition(".")[0]

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = pkg.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    name = ".".join(base + ([child.module] if child.module else []))
                else:
                    name = child.module
                out.append((name, child.lineno, top))
                for a in child.names:  # `from . import _fused`: the submodule itself
                    out.append((f"{name}.{a.name}", child.lineno, top))
            nested = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, nested)

    visit(tree, True)
    return out


def scan(root: str):
    """{relative path: [(imported module, line, top_level)]} for every .py file of the four packages."""
    found = {}
    for top in PACKAGES:
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "__pycache__"))]
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    with open(path, encoding="utf-8") as fh:
                        found[rel] = imports_of(fh.read(), _module_name(rel), f == "__init__.py")
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def violations(found) -> list[str]:
    """Every import that goes against the layering, as 'path:line imports module (rule)'."""
    higher = {
        "lptheory": {"synthetic", "proofs_checks", "figures"},
        "synthetic": {"proofs_checks", "figures"},
        "proofs_checks": {"figures"},
        "figures": set(),
    }
    bad = []
    for rel, imps in found.items():
        layer = "figures" if _pack_figures(rel) else rel.split("/")[0]
        in_app = rel.startswith("lptheory/app/")
        for name, line, _ in imps:
            if not name:
                continue
            if not in_app and _top(name) in higher[layer]:
                bad.append(f"{rel}:{line} imports {name} (a higher layer; only lptheory/app may)")
            if (
                layer == "proofs_checks"
                and not in_app
                and name.startswith("proofs_checks.")
                and _pack_figures(name.replace(".", "/") + ".py")
            ):
                bad.append(f"{rel}:{line} imports {name} (a pack's figure module is on the figures layer)")
            if (
                not in_app
                and (name == "lptheory.app" or name.startswith("lptheory.app."))
                and not rel.startswith(APP_ALIASES)
            ):
                bad.append(f"{rel}:{line} imports {name} (the application floor is the top)")
    return bad


def cycles(found, only_top_level: bool, within: str = "lptheory"):
    """Pairs (a, b) of modules of ``within`` that import each other."""
    mods = {_module_name(rel): rel for rel in found if rel.startswith(within + "/")}
    edges = {m: set() for m in mods}
    for m, rel in mods.items():
        for name, _, top in found[rel]:
            if only_top_level and not top:
                continue
            if name in mods and name != m:
                edges[m].add(name)
    return sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, ()))


# ---------------------------------------------------------------------------------------------------


def test_the_layers_import_downward_only():
    bad = violations(scan(ROOT))
    assert not bad, "layering broken:\n" + "\n".join(bad)


def test_the_application_floor_imports_upward_lazily():
    """lptheory/app reaches every layer, but only inside functions (importing the CLI module or the
    pytest plugin loads no higher layer)."""
    found = scan(ROOT)
    eager = [
        f"{rel}:{line} imports {name} at module level"
        for rel, imps in found.items()
        if rel.startswith("lptheory/app/")
        for name, line, top in imps
        if top and name and _top(name) in {"synthetic", "proofs_checks", "figures"}
    ]
    assert not eager, "\n".join(eager)


def test_no_module_level_import_cycle_engine_fused():
    assert ("lptheory.fast.engine", "lptheory.fast.fused") not in cycles(scan(ROOT), only_top_level=True)


def test_no_import_cycle_engine_fused_even_lazily():
    """The engines share the pool (_pool) and the step's names (_state); neither imports the other's
    module at import time, and _fused never imports _engine at all."""
    assert ("lptheory.fast.engine", "lptheory.fast.fused") not in cycles(scan(ROOT), only_top_level=False)


def test_the_checker_catches_planted_violations(tmp_path):
    """A scratch tree with one violation of each rule: every one is reported, the clean files are not."""
    files = {
        "lptheory/__init__.py": "",
        "lptheory/geometry.py": "def f():\n    from proofs_checks import records\n",
        "lptheory/ok.py": "import numpy\nfrom . import geometry\n",
        "lptheory/uses_app.py": "from lptheory.app import cli\n",
        "lptheory/app/__init__.py": "",
        "lptheory/app/cli.py": "def main():\n    import figures\n",
        "lptheory/a.py": "from . import b\n",
        "lptheory/b.py": "def g():\n    from .a import x\n",
        "synthetic/__init__.py": "",
        "synthetic/problems.py": "from figures.style import x\n",
        "proofs_checks/__init__.py": "",
        "proofs_checks/stacey/__init__.py": "",
        "proofs_checks/stacey/figs.py": "from figures import report\n",
        "proofs_checks/stacey/figures.py": "from figures.style import save\n",  # a pack's figure module: allowed
        "proofs_checks/stacey/checks.py": "def run():\n    from .figures import plot\n",  # a claim module: not
        "proofs_checks/runner.py": "from synthetic import problems\nfrom lptheory import geometry\n",
        "figures/__init__.py": "from proofs_checks import records\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    found = scan(str(tmp_path))
    bad = violations(found)
    flagged = {b.split(":")[0] for b in bad}
    assert flagged == {
        "lptheory/geometry.py",
        "lptheory/uses_app.py",
        "synthetic/problems.py",
        "proofs_checks/stacey/figs.py",
        "proofs_checks/stacey/checks.py",
    }, bad
    assert cycles(found, only_top_level=False) == [("lptheory.a", "lptheory.b")]
    assert cycles(found, only_top_level=True) == []
