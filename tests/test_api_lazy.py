"""``proofs_checks.api`` imports its names on first use (issue 46): importing the module costs no sympy and no
scipy.optimize; every public name still resolves, to the object of the module that defines it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import proofs_checks.api as api

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("sympy", "scipy.optimize")


def _imported_after(code: str) -> dict:
    """{module: imported?} for :data:`HEAVY` after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(str(m in sys.modules) for m in {HEAVY!r}))"
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return dict(zip(HEAVY, (w == "True" for w in out.stdout.split())))


def test_importing_the_api_imports_neither_sympy_nor_scipy_optimize():
    assert _imported_after("import proofs_checks.api") == {m: False for m in HEAVY}
    # the light names stay light
    assert _imported_after("from proofs_checks.api import Pack, Claim, decide") == {m: False for m in HEAVY}


def test_the_probe_sees_a_heavy_import():  # the control: a name that needs the engines imports both
    assert _imported_after("from proofs_checks.api import adversarial_search") == {m: True for m in HEAVY}


def test_every_public_name_resolves_to_its_modules_object():
    from proofs_checks import engines, expressions, packs, recheck

    assert set(api._WHERE) == set(api.__all__)
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert api.load_pack is packs.load and api.register_recheck is recheck.register
    assert api.adversarial_search is engines.adversarial_search and api.x is expressions.x
    assert set(api.__all__) <= set(dir(api))


def test_the_type_checking_imports_match_the_lazy_table():
    """The ``if TYPE_CHECKING:`` block (what readers and type checkers see) names the same modules and names."""
    with open(api.__file__, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen = {}
    for node in block.body:
        mod = "." * node.level + (node.module or "")
        for a in node.names:
            seen[a.asname or a.name] = (mod, a.name)
    assert seen == api._WHERE


def test_an_unknown_name_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        api.no_such_name  # noqa: B018
