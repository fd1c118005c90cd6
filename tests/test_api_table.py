"""Issue 44, item 4: the README's API table names every public name of ``proofs_checks.api`` and only those."""

from __future__ import annotations

import re
from pathlib import Path

import proofs_checks.api as api

README = Path(__file__).resolve().parent.parent / "README.md"


def table_names(text: str) -> set[str]:
    """The names in backticks at the start of each cell entry of the README's claim-API table (``Name(args)`` and
    ``Name`` alike; paths such as ``proofs_checks/verdict.py`` and keyword arguments such as ``scope=`` are not
    names)."""
    start = text.index("### The claim API (`proofs_checks.api`)")
    end = text.index("\n## ", start)
    rows = [ln for ln in text[start:end].splitlines() if ln.startswith("| ") and not ln.startswith("| need")]
    names = set()
    for ln in rows:
        for m in re.finditer(r"`([A-Za-z_][A-Za-z0-9_]*)(?=[`(])", ln):
            names.add(m.group(1))
    return names - {"proofs_checks"}


def test_the_api_table_is_complete():
    listed = table_names(README.read_text())
    public = set(api.__all__)
    assert not public - listed, f"public names missing from the README's API table: {sorted(public - listed)}"
    extra = listed - public
    assert not extra, f"the README's API table names what proofs_checks.api does not export: {sorted(extra)}"


def test_the_table_check_catches_a_missing_name():
    text = README.read_text()
    assert "`bnb_record`" in text
    broken = text.replace("`bnb_record`", "bnb_record")
    assert "bnb_record" not in table_names(broken)
