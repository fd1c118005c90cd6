"""report.tex fits its page (issue 37: 52 overfull boxes, the largest 74.6 pt): every table's columns are
fractions of the line that sum to 1, long words may break, the pack's formulas get the table's whole width
(scaled down only when wider). Compiled and its log read in test_report_presentation where pdflatex is
installed; these checks run without it."""

from __future__ import annotations

import re

import pytest

from figures.latex import breakable, check_structure
from tests.report_pages import render_saved


@pytest.fixture(scope="module")
def tex(tmp_path_factory):
    return (render_saved(tmp_path_factory.mktemp("tex")) / "report.tex").read_text()


def test_every_table_is_as_wide_as_the_line(tex):
    head = "\\begin{longtable}{"
    specs = [ln[len(head) : -1] for ln in tex.splitlines() if ln.startswith(head)]
    assert len(specs) >= 4  # claims, corrections, verdicts, provenance
    for spec in specs:
        assert re.fullmatch(r"(L\{[\d.]+\})+", spec), spec  # only fractions of the line, no absolute width
        assert sum(float(f) for f in re.findall(r"L\{([\d.]+)\}", spec)) == pytest.approx(1.0, abs=2e-3), spec


def test_formulas_of_a_pack_section_span_the_table(tex):
    corrections = tex.split(r"\section{Corrections}", 1)[1].split(r"\end{longtable}", 1)[0]
    spanning = [ln for ln in corrections.splitlines() if ln.startswith(r"\multicolumn{")]
    assert spanning and all(r"\textbf{corrected:}" in ln for ln in spanning)
    assert sum(r"\fitbox{$" in ln for ln in spanning) >= len(spanning)  # each formula scaled only if wider
    assert check_structure(tex) == []


def test_long_words_may_break_short_ones_stay():
    assert breakable("lptheory.accelerated.accelerated_bound") == (
        r"lptheory.\allowbreak{}accelerated.\allowbreak{}accelerated\_\allowbreak{}bound"
    )
    assert breakable("p=3, d=2 (ratio 1.117)") == "p=3, d=2 (ratio 1.117)"
    assert breakable("x" * 30) == "x" * 30  # no break point: nothing to add
