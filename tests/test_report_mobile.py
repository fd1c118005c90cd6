"""index.html reads on a 390 px screen (issue 37: no viewport, the page laid out at 980 px and the 944 px
Corrections table scrolled the whole page sideways; figure legends unreadable): a viewport, tables that scroll
in their own box, figures at their natural size in a box of their own on a phone; checked in headless
Chromium where it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from figures.report import png_css_size
from tests.report_pages import render_saved


@pytest.fixture(scope="module")
def page_dir(tmp_path_factory):
    return render_saved(tmp_path_factory.mktemp("mobile"))


def test_viewport_and_tables_in_their_own_scrolling_box(page_dir):
    page = (page_dir / "index.html").read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    tables = [m.start() for m in re.finditer(r"<table\b", page)]
    assert len(tables) >= 3  # corrections, verdicts, provenance
    for i in tables:
        before = page[:i].rsplit("<", 1)[1]  # the tag just before the table
        assert re.match(r'div class="[^"]*\bscroll\b', before), before
    css = page[page.index("<style>") : page.index("</style>")]
    assert ".scroll{overflow-x:auto" in css and "img{max-width:100%;height:auto" in css
    phone = css[css.index("@media (max-width:700px)") :]
    assert "figure{overflow-x:auto" in phone and "figure img{max-width:none}" in phone


def test_figures_get_their_natural_size(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5.0, 2.0))
    fig.savefig(tmp_path / "f.png", dpi=130)
    plt.close(fig)
    assert png_css_size(str(tmp_path / "f.png")) == (round(650 * 96 / 130), round(260 * 96 / 130))
    (tmp_path / "x.png").write_bytes(b"not a png")
    assert png_css_size(str(tmp_path / "x.png")) is None and png_css_size(str(tmp_path / "none.png")) is None


@pytest.mark.slow
def test_page_is_no_wider_than_a_390px_screen(page_dir):
    chromium = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    if chromium is None:
        pytest.skip("no headless Chromium here: the layout is checked by its CSS only")
    (page_dir / "frame.html").write_text(
        '<!doctype html><html><body style="margin:0"><iframe id="f" src="index.html" width="390" height="900" '
        'style="border:0"></iframe><script>document.getElementById("f").addEventListener("load",function(){'
        "var f=this;setTimeout(function(){var e=f.contentDocument.documentElement;"
        'document.title="SW="+e.scrollWidth+" CW="+e.clientWidth;},1500)});</script></body></html>'
    )
    out = subprocess.run(
        [
            shutil.which(chromium),
            "--headless=old",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            "--window-size=500,900",
            "--virtual-time-budget=5000",
            "--dump-dom",
            (page_dir / "frame.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r"<title>SW=(\d+) CW=(\d+)</title>", out.stdout)
    assert m, out.stdout[-500:] + out.stderr[-1500:]
    width, client = int(m.group(1)), int(m.group(2))
    assert 370 <= client <= 390 and width <= client  # nothing scrolls the page sideways
