"""Every pack in the repository uses only the documented claim API (issue 34, item 3).

A pack (``proofs_checks/stacey``, ``proofs_checks/spectral``, ``examples/claim_*.py``) imports from the claim layer
only names listed in :data:`proofs_checks.api.__all__` (its own package excepted). The one other module a pack may
import from is the standalone re-check :mod:`proofs_checks.recheck` (its ``__all__``): a pack's own re-check module
stays import-free of the toolkit, and ``proofs_checks.api`` imports the whole toolkit. Read with :mod:`ast`, lazy
imports inside functions included.
"""

from __future__ import annotations

import ast
import glob
import os

import proofs_checks.api as api
import proofs_checks.recheck as recheck

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTED = {"proofs_checks.api": set(api.__all__), "proofs_checks.recheck": set(recheck.__all__)}


def _packs() -> list[str]:
    pats = ("proofs_checks/stacey/*.py", "proofs_checks/spectral/*.py", "examples/claim_*.py")
    return sorted(p for pat in pats for p in glob.glob(os.path.join(ROOT, pat)))


def undocumented_imports(source: str, package: str | None) -> list[str]:
    """``module.name`` for every name ``source`` (a module of the pack package ``package``, or None for a claim
    file) imports from ``proofs_checks`` outside the documented names."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["proofs_checks", package] if package else []
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not (mod == "proofs_checks" or mod.startswith("proofs_checks.")):
                continue
            if package and (mod == f"proofs_checks.{package}" or mod.startswith(f"proofs_checks.{package}.")):
                continue
            allowed = DOCUMENTED.get(mod, set())
            out += [f"{mod}.{a.name}" for a in node.names if a.name not in allowed]
        elif isinstance(node, ast.Import):
            for a in node.names:
                own = package and a.name.startswith(f"proofs_checks.{package}")
                if a.name.startswith("proofs_checks") and not own and a.name not in DOCUMENTED:
                    out.append(a.name)
    return out


def test_every_pack_imports_only_documented_names():
    bad = []
    for path in _packs():
        rel = os.path.relpath(path, ROOT).split(os.sep)
        package = rel[1] if rel[0] == "proofs_checks" else None
        with open(path, encoding="utf-8") as fh:
            bad += [f"{'/'.join(rel)}: {name}" for name in undocumented_imports(fh.read(), package)]
    assert not bad, "packs import names outside proofs_checks.api.__all__:\n" + "\n".join(bad)


def test_the_packs_are_found():
    names = {os.path.relpath(p, ROOT) for p in _packs()}
    assert "proofs_checks/stacey/lemmas.py" in names and "proofs_checks/spectral/recheck.py" in names
    assert any(n.startswith("examples/claim_") for n in names)


def test_the_checker_catches_a_planted_import():
    src = (
        "from proofs_checks.engines import SearchJob\nfrom ..bnb import branch_and_bound\n"
        "from .formulas import F\nfrom ..api import Pack, secret\nimport proofs_checks.verdict\n"
        "def f():\n    from proofs_checks.recheck import _parse\n"
    )
    got = undocumented_imports(src, "stacey")
    assert got == [
        "proofs_checks.engines.SearchJob",
        "proofs_checks.bnb.branch_and_bound",
        "proofs_checks.api.secret",
        "proofs_checks.verdict",
        "proofs_checks.recheck._parse",
    ]


def test_every_documented_name_has_a_docstring_or_is_listed_in_the_api_text():
    for name in api.__all__:
        obj = getattr(api, name)
        documented = callable(obj) and (obj.__doc__ or "").strip()
        assert documented or f"``{name}``" in api.__doc__ or f"`{name}`" in api.__doc__, name
