"""The report's files are safe to open with hostile strings in a claim file (issue 37): ``results.csv``
escapes formula cells (OWASP's rule) and keeps numbers numeric; ``report.md`` escapes Markdown and HTML in
every text field and keeps ``$...$`` formulas."""

from __future__ import annotations

import csv
import re
import textwrap

import pytest

from figures.markdown import attr as md_attr
from figures.markdown import block as md_block
from figures.markdown import cell as md_cell
from figures.markdown import code as md_code
from figures.markdown import href as md_href
from figures.markdown import text as md_text
from figures.report import csv_text
from lptheory.app.cli import main

EVIL_FILE = """
from proofs_checks.api import ClaimSpec, Pack, value_claim

PACK = Pack(
    "evil",
    title="<script>alert('title')</script> *pack* [t](javascript:alert(0))",
    description="[click](javascript:alert(1)) <b>desc</b>",
)
S = ClaimSpec(
    id='=HYPERLINK("http://evil.example","x")',
    statement="<script>alert('stmt')</script> `code` $a<b$ and x_1 * y_2",
    source="<img src=x onerror=alert('src')>",
)
T = ClaimSpec(id="-2+3", statement="@SUM(A1)\\n# heading <i>x</i>", source="+cmd|' /C calc'!A0")


@PACK.check(title="<script>alert('check')</script>")
def evil(ctx):
    return [
        value_claim(S, -0.5, 1.0, {"p": 3.0}),
        value_claim(T, 2.0, 1.0, {"p": -4.0}, applicable=False, why="<script>alert('why')</script>"),
    ]
"""


@pytest.fixture(scope="module")
def evil_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("evil")
    f = tmp / "evil_claims.py"
    f.write_text(textwrap.dedent(EVIL_FILE))
    out = tmp / "rep"
    assert main(["report", "--claims", str(f), "--quick", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    "text,escaped",
    [
        ("=1+2", "'=1+2"),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("==", "'=="),
        ("-0.5", "-0.5"),  # a negative number stays a number
        ("-1e-300", "-1e-300"),
        ("+3", "+3"),
        ("p=3", "p=3"),
        ("", ""),
    ],
)
def test_csv_text_escapes_formulas_not_numbers(text, escaped):
    assert csv_text(text) == escaped


def test_results_csv_has_no_formula_cell_and_numbers_stay_numeric(evil_report):
    with open(evil_report / "results.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    starts = ("=", "+", "-", "@", "\t", "\r")
    for row in body:
        for cell in row:
            if cell.startswith(starts):  # only numbers may start so
                float(cell)
    ids = {r[header.index("id")] for r in body}
    assert ids == {'\'=HYPERLINK("http://evil.example","x")', "'-2+3"}
    values = [float(r[header.index("value")]) for r in body]  # every value parses: no quote in front
    assert -0.5 in values
    assert {float(r[header.index("p")]) for r in body} == {3.0, -4.0}  # a negative setting stays a number


# --- report.md -------------------------------------------------------------------------------------------

RAW_HTML = re.compile(r"(?<!\\)<(script|img|b>|i>)", re.I)  # an injected tag not escaped


def test_report_md_writes_no_injected_html_or_link(evil_report):
    md = (evil_report / "report.md").read_text()
    assert "alert('title')" in md and "alert('check')" in md and "alert('why')" in md  # the strings are there
    assert "alert('stmt')" in md and "onerror=alert('src')" in md and "javascript:alert(1)" in md
    assert not RAW_HTML.search(md), RAW_HTML.search(md)
    assert not re.search(r"(?<!\\)\[[^\]]*\]\(javascript:", md)  # no link: every "[" of a field is escaped
    assert "\\*pack\\*" in md  # no emphasis
    assert "$a\\lt b$" in md  # the statement's formula is kept, its "<" written as \lt
    assert "\n# heading" not in md  # a line break in a field starts nothing
    assert "`` `code` ``" not in md and "`code`" in md  # a code span in a statement stays a code span


def test_report_md_verdict_table_keeps_its_columns(evil_report):
    lines = (evil_report / "report.md").read_text().splitlines()
    i = lines.index("## Verdict table") + 2
    ncol = len(re.findall(r"(?<!\\)\|", lines[i]))
    rows = [ln for ln in lines[i + 2 :] if ln.startswith("| ")]
    rows = rows[: next(k for k, ln in enumerate(rows) if ln.startswith("| provenance"))]
    assert len(rows) == 2 and all(len(re.findall(r"(?<!\\)\|", ln)) == ncol for ln in rows)


def test_report_md_rendered_by_a_markdown_viewer_runs_nothing(evil_report):
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    page = md.render((evil_report / "report.md").read_text())
    assert not re.search(r"<(script|b|i)\b|<[a-z][^>]*onerror", page)  # tags: only the figures' <img>
    assert "javascript:" not in "".join(re.findall(r'href="([^"]*)"', page))
    assert "&lt;script&gt;alert('title')&lt;/script&gt;" in page  # shown as text


@pytest.mark.parametrize(
    "raw,escaped",
    [
        ("<script>x</script>", "\\<script>x\\</script>"),
        ("a <= b & c", "a <= b & c"),  # neither starts a tag or an entity
        ("&lt;", "\\&lt;"),
        ("*bold* and [l](u)", "\\*bold\\* and \\[l](u)"),
        ("[x]: javascript:alert(1)", "\\[x]: javascript:alert(1)"),  # a link definition
        ("n[, c]) in [[1, 2], [3]]", "n[, c]) in [[1, 2], [3]]"),  # no link: brackets as they are
        ("l_p and _x_", "l_p and \\_x\\_"),
        ("$a<b$ & `<i>`", "$a\\lt b$ & `<i>`"),  # a formula and a code span kept
        ("cost $5", "cost \\$5"),
        ("a\n# b", "a # b"),
    ],
)
def test_markdown_text_escapes(raw, escaped):
    assert md_text(raw) == escaped


def test_markdown_block_code_and_cell():
    assert md_block("# title") == "\\# title" and md_block("1. x") == "1\\. x"
    assert md_code("a`b") == "``a`b``" and md_code("`x") == "`` `x ``" and md_code("plain") == "`plain`"
    assert md_cell("|x|_{p}$|y|$") == "\\|x\\|\\_{p}$\\|y\\|$"
    assert md_href("r-a b-0") == "r-a%20b-0" and md_attr('a"<') == "a&quot;&lt;"
