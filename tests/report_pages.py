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
