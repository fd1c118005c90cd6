"""The report's files are safe to open with hostile strings in a claim file (issue 37): ``results.csv``
escapes formula cells (OWASP's rule) and keeps numbers numeric; ``report.md`` escapes Markdown and HTML in
every text field and keeps ``$...$`` formulas."""

from __future__ import annotations

import csv
import textwrap

import pytest

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
