r"""Escaping for ``report.md``: every text field of a report is written so that a Markdown viewer shows it as
text (issue 37: a claim file's ``<script>`` in a title ran in a viewer).

The report's Jinja2 environment for Markdown escapes every ``{{ ... }}`` with :func:`text` (its
``finalize``); a template marks what is not plain text with a filter that escapes for its place and returns
:class:`Safe`: :func:`math` (the inside of ``$...$``), :func:`code` (a code span), :func:`cell` (a table
cell), :func:`block` (text that starts a line), :func:`href` (a link's ``#anchor``), :func:`attr` (an HTML
attribute) and :func:`fence` (a fenced block).

In text, formulas written in plain text are first put between ``$...$`` as in index.html
(:func:`figures.mathtext.inline_math`); formulas between ``$...$`` are kept as formulas (their ``<``, ``>``
and ``&`` written ``\lt``, ``\gt`` and ``\&``, which KaTeX and MathJax read as the same symbols and no viewer
reads as HTML) and code spans between backticks as code spans (shown verbatim); outside them
``\ ` * ~ $``, a ``<`` that could start a tag, an ``_`` that is not inside a word, an ``&`` that would
start an entity and every ``[`` of a field that could hold a link (it has ``](``, ``][`` or ``]:``) are
backslash-escaped (CommonMark shows each as itself), ``|`` too in a table cell, and line breaks become spaces
(a field cannot start a heading, a list or an HTML block).
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

from .mathtext import inline_math

__all__ = ["Safe", "text", "math", "code", "cell", "block", "href", "attr", "fence", "finalize", "install"]


class Safe(str):
    """Markdown already escaped for its place (the environment's ``finalize`` leaves it as it is)."""


# "_" only where it can open or close emphasis (not between two letters or digits: l_p, R_p(q)); "<" where it
# can start a tag, a comment or an autolink ("<=" stays); "&" only before an entity's name ("A & B" stays);
# "[" when the field has a "](", "][" or "]:" (every link, image and link definition has one; "[1, 2]" stays)
_TEXT_SPECIAL = re.compile(r"([\\`*~$]|<(?=[A-Za-z/!?])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?[A-Za-z0-9]+;))")
_LINKISH = re.compile(r"\](?=[(\[:])")
_SPAN = re.compile(r"\$\$[^$]+\$\$|\$[^$]+\$|`[^`]+`")
_MATH_SPECIAL = {"<": r"\lt ", ">": r"\gt ", "&": r"\&", "$": r"\$"}
_MATH_SPECIAL_RE = re.compile(r"[<>]|(?<!\\)[&$]")  # an escaped \& or \$ stays
_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")


def _one_line(s) -> str:
    return re.sub(r"\r\n|\r|\n", " ", str(s))


def _escape_text(s: str, in_cell: bool = False, brackets: bool = False) -> str:
    out = _TEXT_SPECIAL.sub(r"\\\1", s)
    if brackets:
        out = out.replace("[", r"\[")
    return out.replace("|", r"\|") if in_cell else out


def _escape_math(s: str, in_cell: bool = False) -> str:
    out = _MATH_SPECIAL_RE.sub(lambda m: _MATH_SPECIAL[m.group(0)], s)
    return out.replace("|", r"\|") if in_cell else out


def text(s, in_cell: bool = False) -> Safe:
    """Text with formulas and code spans: the formulas between ``$...$`` (or ``$$...$$``) kept as formulas,
    the code spans between single backticks kept, the rest escaped, on one line. ``in_cell``: a table cell
    (``|`` escaped everywhere)."""
    if isinstance(s, Safe):
        return s
    s = inline_math(_one_line(s))  # formulas written in plain text as $...$ (as in index.html)
    out, pos, brackets = [], 0, bool(_LINKISH.search(s))
    for m in _SPAN.finditer(s):
        out.append(_escape_text(s[pos : m.start()], in_cell, brackets))
        span = m.group(0)
        if span.startswith("`"):
            out.append(span.replace("|", r"\|") if in_cell else span)
        else:
            d = "$$" if span.startswith("$$") else "$"
            out.append(d + _escape_math(span[len(d) : -len(d)], in_cell) + d)
        pos = m.end()
    out.append(_escape_text(s[pos:], in_cell, brackets))
    return Safe("".join(out))


def math(tex, in_cell: bool = False) -> Safe:
    """The inside of a formula the template puts between ``$...$`` (a pack's LaTeX statement)."""
    return Safe(_escape_math(_one_line(tex), in_cell))


def cell(s) -> Safe:
    """Text with formulas in a table cell: :func:`text` with every ``|`` escaped."""
    return text(s, in_cell=True)


def block(s) -> Safe:
    """Text that starts a line: :func:`text`, and a leading ``#``, ``>``, ``+``, ``=``, ``-`` or ``1.``
    escaped (no heading, quote or list is made of it)."""

    def esc(m):  # a backslash before the mark; after a number (before a digit it would be shown)
        mark = m.group(2)
        return m.group(1) + (mark + "\\" if mark[0].isdigit() else "\\" + mark)

    return Safe(_LINE_START.sub(esc, text(s), count=1))


def code(s, in_cell: bool = False) -> Safe:
    """A code span holding ``s`` verbatim: delimited by one backtick more than its longest run of backticks
    (padded with a space where it starts or ends with one), on one line. ``in_cell``: in a table cell, where
    GFM splits the row at every ``|`` not escaped, even in a code span (the ``\\`` is removed before the span
    is read)."""
    s = _one_line(s)
    runs = [len(r) for r in re.findall(r"`+", s)]
    ticks = "`" * (max(runs, default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    if in_cell:
        s = s.replace("|", r"\|")
    return Safe(f"{ticks}{pad}{s}{pad}{ticks}")


def fence(s, lang: str = "") -> Safe:
    """A fenced code block holding ``s`` verbatim: a fence longer than any run of backticks in it."""
    runs = [len(r) for r in re.findall(r"`+", str(s))]
    ticks = "`" * max(3, max(runs, default=0) + 1)
    return Safe(f"{ticks}{lang}\n{s}\n{ticks}")


def href(anchor) -> Safe:
    """An anchor as a link target (after ``#``): anything but letters, digits and ``-._~`` percent-encoded."""
    return Safe(quote(str(anchor), safe="-._~"))


def attr(s) -> Safe:
    """A value inside a double-quoted HTML attribute (``<a id="...">``)."""
    return Safe(html.escape(_one_line(s), quote=True))


def finalize(value):
    """The Markdown environment's ``finalize``: :class:`Safe` as it is, anything else as :func:`text`."""
    if isinstance(value, Safe):
        return value
    return text(value)


def install(env) -> None:
    """Make ``env`` (a :class:`jinja2.Environment`) write Markdown: every ``{{ ... }}`` escaped, the filters
    ``mdmath``, ``mdcell``, ``mdcellmath``, ``mdblock``, ``mdcode``, ``mdcellcode``, ``mdhref``, ``mdattr``,
    ``mdfence``."""
    env.finalize = finalize
    env.filters.update(
        mdmath=math,
        mdcell=cell,
        mdcellmath=lambda s: math(s, in_cell=True),
        mdblock=block,
        mdcode=code,
        mdcellcode=lambda s: code(s, in_cell=True),
        mdhref=href,
        mdattr=attr,
        mdfence=fence,
    )
