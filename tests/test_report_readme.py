"""The README says where the report's provenance is, and the pages put it there (issue 37: the README said
"in the HTML's header", it was at the end): last in index.html and report.md, linked from the contents."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.report_pages import DATA, render_saved

ROOT = Path(__file__).resolve().parents[1]


def test_readme_and_pages_put_the_provenance_at_the_end(tmp_path):
    readme = (ROOT / "README.md").read_text()
    assert "HTML's header" not in readme
    assert re.search(r"last, the run's\s+provenance .* at the end of both pages", readme, re.S)
    render_saved(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert re.findall(r'<h2 id="([^"]+)"', page)[-1] == "provenance"
    assert page.index('id="verdicts"') < page.index('<h2 id="provenance"')
    assert '<a href="#provenance">Provenance</a>' in page[page.index('id="contents"') :]
    md = (tmp_path / "report.md").read_text()
    doc = json.loads(DATA.read_text())
    assert re.findall(r"^## (.+)$", md, re.M)[-1] == "Provenance" and "- [Provenance](#provenance)" in md
    assert doc["meta"]["date"] in md[md.index("## Provenance") :]  # the provenance is there, not elsewhere
