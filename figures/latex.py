r"""``report.tex``: the report for a review or an appendix, in LaTeX (booktabs tables), written by the report
next to ``index.html`` from the same content: the executive summary, the claims in the paper's notation,
the corrections, every verdict and the figures.

It compiles with ``pdflatex`` and the packages of a basic TeX Live (``booktabs``, ``longtable``, ``array``,
``amsmath``, ``amssymb``, ``graphicx``, ``geometry``, ``hyperref``). Text is escaped (``& % $ # _ { } ~ ^ \``
and ``< > |``); formulas between ``$...$`` (the summary's) and the pack's LaTeX statements pass unchanged.
Nothing runs into the margin: every table's columns are fractions of the line summing to 1 (``L{f}``), long
words in cells may break (:func:`breakable`), a pack section's formulas are written across the table under
their row and scaled down only when wider than it (``\fitbox``), and paragraphs are set ``\sloppy``.
:func:`check_structure` is the structural check the tests run where pdflatex is not installed.
"""

from __future__ import annotations

import os
import re

__all__ = ["render", "write_latex", "escape", "breakable", "text_with_math", "check_structure"]

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "\u2026": r"\ldots{}",
    "\u00d7": r"$\times$",
    "\u2264": r"$\le$",
    "\u2265": r"$\ge$",
    "\u2013": "--",
    "\u2014": "---",
    "\u201c": "``",
    "\u201d": "''",
    "\u2019": "'",
}
_SPECIAL_RE = re.compile("|".join(re.escape(k) for k in _SPECIAL))


def escape(text) -> str:
    """Plain text as LaTeX text: specials escaped, other non-ASCII characters replaced by ``?`` (pdflatex
    has no glyph for most of them)."""
    s = _SPECIAL_RE.sub(lambda m: _SPECIAL[m.group(0)], str(text))
    s = re.sub(r'"([^"]*)"', r"``\1''", s)
    return "".join(c if ord(c) < 128 else "?" for c in s)


def text_with_math(text) -> str:
    """Text with formulas between ``$...$``: the text escaped, the formulas kept (an unpaired ``$`` is
    escaped as text)."""
    parts = str(text).split("$")
    if len(parts) % 2 == 0:  # unpaired: no math at all
        return escape(text)
    return "".join(f"${p}$" if i % 2 else escape(p) for i, p in enumerate(parts))


def breakable(text) -> str:
    """Plain text as LaTeX text (:func:`escape`) that may break inside its long words (identifiers, dotted
    names, paths, lists without spaces): after a ``.``, ``/``, ``_``, ``=``, ``,`` or ``-`` of a word of more
    than 16 characters (a table cell cannot hold one otherwise)."""

    def brk(m):
        return re.sub(r"(\.|/|\\_|=|,|-(?!-))(?=.)", r"\1\\allowbreak{}", m.group(0))

    return re.sub(r"[^\s$]{17,}", brk, escape(text))


def _cols(*weights: float) -> str:
    """A column specification of ``L`` columns with widths in proportion to ``weights`` (summing to the line:
    the table fits)."""
    total = sum(weights)
    return "".join(f"L{{{w / total:.4f}}}" for w in weights)


def _id(text) -> str:
    """An identifier in typewriter type that may break after its dots and hyphens."""
    return "\\texttt{" + escape(text).replace(".", ".\\allowbreak{}").replace("-", "-\\allowbreak{}") + "}"


def _math(tex: str | None, fallback: str) -> str:
    return f"${tex}$" if tex else breakable(fallback)


# L{f}: a column of a fraction f of the line (the fractions of a table sum to 1: it fits the line);
# \fitbox{$...$}: a formula wider than its cell scaled down to the cell's width (a narrower one as it is)
_PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[a4paper,margin=1.2cm]{geometry}
\usepackage{amsmath,amssymb}
\usepackage{booktabs,longtable,array}
\usepackage{graphicx}
\usepackage[hidelinks]{hyperref}
\setlength{\LTpre}{4pt}\setlength{\LTpost}{4pt}
\newcolumntype{P}[1]{>{\raggedright\arraybackslash}p{#1}}
\newcolumntype{R}[1]{>{\raggedleft\arraybackslash}p{#1}}
\newcolumntype{L}[1]{>{\raggedright\arraybackslash}p{\dimexpr#1\linewidth-2\tabcolsep\relax}}
\newcommand{\fitbox}[1]{\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{#1}}
"""


def _longtable(spec: str, head: list[str], rows: list[list[str]], size: str = r"\footnotesize") -> str:
    h = " & ".join(f"\\textbf{{{c}}}" for c in head) + r" \\"
    out = [
        "{" + size,
        f"\\begin{{longtable}}{{{spec}}}",
        r"\toprule",
        h,
        r"\midrule",
        r"\endfirsthead",
        r"\toprule",
        h,
        r"\midrule",
        r"\endhead",
        r"\bottomrule",
        r"\endfoot",
    ]
    for row in rows:
        if row and row[0] in ("__rule__", "__space__"):  # a rule between groups; space between records
            out.append(r"\midrule" if row[0] == "__rule__" else r"\addlinespace[3pt]")
            continue
        out.append(" & ".join(row) + r" \\")
    out += [r"\end{longtable}", "}"]
    return "\n".join(out)


# a negative control's record in the per-claim counts (row["control"]: "fails" as it must, "passes" the rule
# it must fail, or "not-applicable": outside the claim's assumptions, it shows nothing): apart from the claim's
# statuses, so that a control failing as it must never reads as an inconclusive setting of the claim
# (singular, plural)
_CONTROL_COUNT = {
    "fails": ("negative control", "negative controls"),
    "passes": ("negative control that does not fail", "negative controls that do not fail"),
    "not-applicable": ("negative control not applicable here", "negative controls not applicable here"),
}


def _count_text(n: int, what) -> str:
    return f"{n} {what[n != 1]}" if isinstance(what, tuple) else f"{n} {what}"


def _section_cell(key: str, v, first: bool) -> str:
    """A cell of a pack's section: a formula (``{"tex", "note"}``) scaled to its cell if wider, evidence as its
    kinds, a list joined, the first column as an identifier, text that may break in its long words."""
    if isinstance(v, dict):
        return "\\fitbox{$" + v["tex"] + "$}" + (f" ({breakable(v['note'])})" if v.get("note") else "")
    if key == "evidence" and isinstance(v, list):
        return breakable("; ".join(str(e).split(":", 1)[0] for e in v))
    if isinstance(v, list):
        return breakable("; ".join(map(str, v)))
    return _id(v) if first else breakable(v)


def _extra_section(x: dict) -> str:
    """A pack's section (e.g. Corrections) as a table: the columns that hold formulas (the pack's LaTeX
    statements) are written under each row across the whole table, each labelled, so that a formula has the
    line's width; the other columns side by side, in widths that fit the line."""
    out = [f"\\section{{{escape(x['title'])}}}"]
    if x.get("intro"):
        out.append(escape(x["intro"]) + "\n")
    cols = x["columns"]
    keys = [k for k, _ in cols]
    cells_of = [row.get("cells") or [row.get(k, "") for k in keys] for row in x["rows"]]
    wide = [i for i in range(1, len(keys)) if any(isinstance(c[i], dict) for c in cells_of)]
    narrow = [i for i in range(len(keys)) if i not in wide]
    rows = []
    for cells in cells_of:
        rows.append([_section_cell(keys[i], cells[i], i == 0) for i in narrow])
        if wide:
            parts = [f"\\textbf{{{escape(cols[i][1])}:}} {_section_cell(keys[i], cells[i], False)}" for i in wide]
            spanning = " \\newline ".join(parts)
            rows.append([f"\\multicolumn{{{len(narrow)}}}{{L{{1}}}}{{{spanning}}}"])
            rows.append(["__space__"])
    weights = [1.6 if i == 0 else 0.7 if keys[i] == "status" else 1.0 for i in narrow]
    head = [escape(cols[i][1]) for i in narrow]
    out.append(_longtable(_cols(*weights), head, rows[:-1] if wide else rows, size=r"\scriptsize"))
    return "\n".join(out)


def render(ctx: dict, tex_of=lambda cid: None, out_dir: str | None = None) -> str:
    """The LaTeX document of a report context (the one the HTML and Markdown templates get);
    ``tex_of(claim id)`` gives a claim's statement in LaTeX (or None: the plain text, escaped);
    figures are included when their PNG exists in ``out_dir``."""
    # \sloppy: a line of a paragraph or a cell may be loose rather than run into the margin
    L = [_PREAMBLE, f"\\title{{{escape(ctx['title'])}}}", r"\date{}", r"\begin{document}", r"\sloppy", r"\maketitle"]
    if ctx.get("description"):
        L.append(escape(ctx["description"]) + "\n")
    verdicts = ctx.get("verdicts_text") or ", ".join(f"{n} {s}" for s, n in ctx["counts"].items())
    L.append(r"\noindent Verdicts: " + escape(verdicts) + ".\n")  # negative controls counted apart
    summ = ctx.get("summary") or {}
    L.append(r"\section{Summary}")
    if summ.get("lead"):
        L.append(text_with_math(summ["lead"]) + "\n")
    for head, items in (
        ("Errors that break a stated result", summ.get("errors") or []),
        ("Imprecise or ambiguous statements (the reading taken, and what holds under the other)",
         summ.get("imprecise") or []),
        ("Typos (they change nothing)", summ.get("typos") or []),
        ("Sharper statements (conjectures from the evidence, each marked searched or proved)",
         summ.get("sharper") or []),
    ):  # fmt: skip
        if not items:
            continue
        L.append(f"\\subsection*{{{head}}}")
        for k, it in enumerate(items, 1):
            num = f"{k}. " if head.startswith("Errors") else ""
            L.append(f"\\paragraph{{{num}{text_with_math(it['title'])}.}}")
            L.append(" ".join(f"\\emph{{{escape(lbl)}:}} {text_with_math(txt)}" for lbl, txt in it["parts"]))
            ev = ", ".join(breakable(a["label"]) for a in it.get("links", []))
            if ev:
                L.append(f"\\\\ {{\\footnotesize Evidence: {ev}.}}")
            L.append("")
    if not summ.get("errors") and not summ.get("typos") and not summ.get("imprecise"):
        L.append("No claim was found violated.\n")
    # the claims in the paper's notation
    seen, claim_rows = {}, []
    for s in ctx["sections"]:
        for r in s["rows"]:
            seen.setdefault(r["id"], {"row": r, "counts": {}})
            c = seen[r["id"]]["counts"]
            own = r["status"] + (f" ({r['holds_scope']})" if r.get("holds_scope") else "")  # holds (proved|...)
            key = _CONTROL_COUNT.get(r.get("control") or "", own)  # negative controls counted apart
            c[key] = c.get(key, 0) + 1
    for cid, v in seen.items():
        r = v["row"]
        verdict = ", ".join(_count_text(n, st) for st, n in v["counts"].items())
        claim_rows.append([_id(cid), breakable(r["source"]), _math(tex_of(cid), r["statement"]), escape(verdict)])
    L.append(r"\section{Claims in the paper's notation}")
    L.append(_longtable(_cols(3.0, 2.8, 9.4, 2.4), ["claim", "source", "statement", "verdicts"], claim_rows))
    for x in ctx.get("extra_sections") or []:  # the pack's sections (e.g. corrections)
        L.append(_extra_section(x))
    # every verdict
    L.append(r"\section{Verdicts}")
    legend = ctx.get("evidence_legend") or []
    if legend:  # each evidence level explained once, before the table that shows it beside every status
        L.append("The column \\emph{evidence} says how strong each verdict's evidence is (strongest first):")
        L.append(r"\begin{description}")
        for e in legend:
            n = e.get("count", 0)
            L.append(f"\\item[{escape(e['level'])}] ({n} record{'s' if n != 1 else ''}) {escape(e['text'])}.")
        L.append(r"\end{description}")
    rows = []
    for s in ctx["sections"]:
        rows.append(["__rule__"])
        rows.append([f"\\multicolumn{{7}}{{l}}{{\\textbf{{{escape(s['title'])}}}}}"])
        for r in s["rows"]:
            st = r["status"]
            shown = r.get("status_text") or st  # "inconclusive (control)" for a negative control
            rows.append(
                [
                    _id(r["id"]),
                    breakable(r["setting"]),
                    f"\\textbf{{{escape(shown)}}}" if st == "violated" else escape(shown),
                    escape(r.get("evidence", "-")),
                    escape(r.get("relation", "")),
                    breakable(r.get("size", "")),
                    breakable(r["method"]),
                ]
            )
    L.append(
        _longtable(
            _cols(3.2, 5.1, 1.8, 1.65, 0.9, 2.9, 1.95),
            ["claim", "setting", "status", "evidence", "rel.", "size", "method"],
            rows[1:],
            size=r"\scriptsize",
        )
    )
    figs = [(s["title"], f) for s in ctx["sections"] for f in s.get("figures", [])]
    if out_dir is not None:
        figs = [(t, f) for t, f in figs if os.path.exists(os.path.join(out_dir, f))]
    if figs:
        L.append(r"\section{Figures}")
        for t, f in figs:
            L.append(
                r"\begin{figure}[htbp]\centering"
                f"\\includegraphics[width=\\linewidth,height=0.42\\textheight,keepaspectratio]{{{f}}}"
                f"\\caption{{{escape(t)} (\\texttt{{{escape(f)}}})}}\\end{{figure}}"
            )
            L.append(r"\clearpage" if figs.index((t, f)) % 2 == 1 else "")
    L.append(r"\section*{Provenance}")
    prov = [[escape(k), breakable(v)] for k, v in ctx.get("provenance", [])]
    L.append(_longtable(_cols(3.2, 14.8), ["", ""], prov))
    L.append(r"\end{document}")
    return "\n".join(L) + "\n"


def write_latex(out_dir: str, ctx: dict, tex_of=lambda cid: None) -> str:
    """Write ``report.tex`` into ``out_dir`` (atomically) and return its path."""
    text = render(ctx, tex_of, out_dir)
    problems = check_structure(text)
    if problems:  # a bug here, never the reader's problem: say where
        raise ValueError("report.tex is malformed: " + "; ".join(problems[:5]))
    path = os.path.join(out_dir, "report.tex")
    tmp = os.path.join(out_dir, ".report.tex.part")
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


def check_structure(text: str) -> list[str]:
    """Structural problems of a LaTeX document (empty when none): unbalanced ``\\begin``/``\\end``,
    unbalanced braces, an odd number of unescaped ``$`` on a line (a paragraph or a table row), an unescaped ``%`` or
    ``#``, a non-ASCII character."""
    out = []
    stack = []
    for m in re.finditer(r"\\(begin|end)\{([^}]+)\}", text):
        kind, env = m.groups()
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            out.append(f"\\end{{{env}}} at offset {m.start()} closes nothing open")
    if stack:
        out.append(f"unclosed environments: {stack}")
    body = re.sub(r"\\[\\{}$&%#_]", "", text)  # drop escaped characters (and the row ends \\)
    depth = 0
    for i, c in enumerate(body):
        depth += (c == "{") - (c == "}")
        if depth < 0:
            out.append(f"a closing brace without an opening one near offset {i}")
            break
    if depth > 0:
        out.append(f"{depth} unclosed brace(s)")
    for k, line in enumerate(body.splitlines()):
        if line.count("$") % 2:
            out.append(f"odd number of $ on line {k + 1}: {line[:80]!r}")
        if "%" in line or "#" in line.replace("#1", ""):
            out.append(f"unescaped % or # on line {k + 1}: {line[:80]!r}")
    if any(ord(c) > 127 for c in text):
        out.append("non-ASCII characters")
    return out
