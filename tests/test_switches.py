"""The ``LPTHEORY_*`` environment switches: read in :mod:`lptheory.config` only, every one listed in its
``SWITCHES`` and in the README's table (issue 34)."""

from __future__ import annotations

import os
import re

import pytest

from lptheory import config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("lptheory", "synthetic", "proofs_checks", "figures")
# readers of other layers not yet moved onto lptheory.config (owned elsewhere; the list only shrinks)
OUTSIDE: set[str] = set()
_READ = re.compile(r"""(os\.environ(\.get)?\s*[\[(]|os\.getenv\s*\()\s*["']LPTHEORY_""")


def _sources():
    for top in SCANNED:
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, ROOT).replace(os.sep, "/"), path


def test_switches_are_read_in_config_only():
    readers = set()
    for rel, path in _sources():
        with open(path, encoding="utf-8") as fh:
            if _READ.search(fh.read()):
                readers.add(rel)
    assert readers - OUTSIDE == {"lptheory/config.py"}
    assert OUTSIDE <= readers, f"no longer reading a switch, drop from OUTSIDE: {sorted(OUTSIDE - readers)}"


def test_every_switch_named_in_the_code_is_listed():
    named = set()
    for _, path in _sources():
        with open(path, encoding="utf-8") as fh:
            named |= set(re.findall(r"\bLPTHEORY_[A-Z0-9_]+\b", fh.read()))
    listed = {s.name for s in config.SWITCHES}
    assert named <= listed, sorted(named - listed)


def test_the_readme_table_is_the_list():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    rows = re.findall(r"^\| `(LPTHEORY_[A-Z0-9_]+)` \| (.*?) \| (.*?) \| (.*?) \|$", text, flags=re.M)
    assert [(n, v, d, e) for n, v, d, e in rows] == [tuple(s) for s in config.SWITCHES]


def test_raw_reads_the_environment_now_and_rejects_unknown_names(monkeypatch):
    monkeypatch.setenv("LPTHEORY_ENGINE", "NumPy")
    assert config.raw("LPTHEORY_ENGINE") == "NumPy" and config.numpy_engine()
    monkeypatch.delenv("LPTHEORY_ENGINE")
    assert config.raw("LPTHEORY_ENGINE", "x") == "x" and not config.numpy_engine()
    with pytest.raises(ValueError, match="LPTHEORY_ENGINE"):
        config.raw("LPTHEORY_ENGNE")


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_threads_rejects_what_is_not_a_positive_integer(monkeypatch, value):
    monkeypatch.setenv("LPTHEORY_THREADS", value)
    with pytest.raises(ValueError, match="LPTHEORY_THREADS must be a positive integer"):
        config.threads()
    monkeypatch.setenv("LPTHEORY_THREADS", "3")
    assert config.threads() == 3
