r"""Formulas written in plain text (``N^{-1/4}``, ``sum_{t=0}^{T-1}``, ``||g~||_{p*}``, ``2^(1-2/p)``) as
LaTeX between ``$...$``, so that the report's pages render them like the pack's LaTeX statements (issue 37: 58
formulas stayed raw in headings, the contents and table cells of index.html).

:func:`inline_math` finds the formula words of a text (a word with a superscript ``^`` or a braced subscript
``_{``; a brace group may hold spaces), joins neighbouring ones, writes each run in LaTeX (:func:`to_latex`) and
puts it between ``$...$``. The rest of the text is left as it is; a text that already has a ``$`` (it marks
its formulas itself) or a backslash (it is LaTeX or code) is returned unchanged.
"""

from __future__ import annotations

import functools
import re

__all__ = ["inline_math", "to_latex", "is_formula_word", "Plain", "finalize"]

_GREEK = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "phi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
)
_FUNCS = ("sum", "log", "exp", "max", "min", "sup", "inf", "lim", "sin", "cos")
_WORD_RE = re.compile(r"\b(" + "|".join(_GREEK + _FUNCS) + r")(?![A-Za-z])")
_TRAIL = ".,;:!?"


def is_formula_word(word: str) -> bool:
    """A word written as a formula: it has a superscript (``^``) or a braced subscript (``_{``)."""
    return "^" in word or "_{" in word


def _words(text: str) -> list[str]:
    """``text`` cut into words and the spaces between them (a brace group stays in one word)."""
    out, cur, depth = [], "", 0
    for c in text:
        if c.isspace() and depth == 0:
            if cur:
                out.append(cur)
                cur = ""
            if out and out[-1].isspace():
                out[-1] += c
            else:
                out.append(c)
            continue
        depth = max(depth + (c == "{") - (c == "}"), 0)
        cur += c
    if cur:
        out.append(cur)
    return out


def _split_edges(word: str) -> tuple[str, str, str]:
    """``(lead, core, tail)``: punctuation after the formula (``.,;:``, a closing bracket without its opening
    one in the word) and an opening bracket without its closing one before it stay text."""
    tail = ""
    while word:
        c = word[-1]
        if c in _TRAIL or (c in ")]" and word.count(c) > word.count({")": "(", "]": "["}[c])):
            tail, word = c + tail, word[:-1]
        else:
            break
    lead = ""
    while word and word[0] in "([" and word.count(word[0]) > word.count({"(": ")", "[": "]"}[word[0]]):
        lead, word = lead + word[0], word[1:]
    return lead, word, tail


def _group(s: str, i: int) -> int:
    """The index after the bracket group opening at ``s[i]`` (``(`` or ``{``), or -1 when it does not close."""
    close = {"(": ")", "{": "}"}[s[i]]
    depth = 0
    for j in range(i, len(s)):
        depth += (s[j] == s[i]) - (s[j] == close)
        if depth == 0:
            return j + 1
    return -1


def to_latex(formula: str) -> str:
    r"""A formula in plain-text notation written in LaTeX: ``||x||`` as ``\|x\|``, ``g~`` as ``\tilde{g}``,
    ``p*`` (a dual exponent) as ``p^*``, ``^(...)`` as ``^{...}``, ``sqrt(x)`` as ``\sqrt{x}``, ``<=`` and
    ``>=`` as ``\le`` and ``\ge``, Greek letters and ``sum``, ``log``, ... as commands."""
    s = formula.replace("||", r"\|").replace("<=", r"\le ").replace(">=", r"\ge ").replace("->", r"\to ")
    s = re.sub(r"([A-Za-z])~", r"\\tilde{\1}", s)
    s = s.replace("~", r"\sim ").replace("<", r"\lt ").replace(">", r"\gt ")
    s = re.sub(r"([%#&])", r"\\\1", s)
    s = re.sub(r"(?<=[A-Za-z0-9}])\*(?![A-Za-z0-9(])", "^*", s)  # p* -> p^*, not 2*q
    s = _WORD_RE.sub(r"\\\1", s)
    s = re.sub(r"\bsgn\b", r"\\operatorname{sgn}", s)
    out, i = [], 0
    while i < len(s):  # ^( ... ) and sqrt( ... ) as brace groups
        if s.startswith("^(", i) and (j := _group(s, i + 1)) > 0:
            out.append("^{" + s[i + 2 : j - 1] + "}")
            i = j
        elif s.startswith("sqrt(", i) and (j := _group(s, i + 4)) > 0:
            out.append(r"\sqrt{" + s[i + 5 : j - 1] + "}")
            i = j
        else:
            out.append(s[i])
            i += 1
    # a superscript of several characters without braces (N^-e, t^pq) as one group
    return re.sub(r"\^(?![{(])([+-]?[A-Za-z0-9.]+)", r"^{\1}", "".join(out))


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        depth += (c == "{") - (c == "}")
        if depth < 0:
            return False
    return depth == 0


# a word that can stand inside a formula between formula words: symbols, numbers, single letters and the
# names above (``+``, ``<=``, ``(1/T)``, ``L``, ``eta``, ``sqrt(n_t)``); "is", "at", "rate" are text
_SYMBOLS = re.compile(r"[A-Za-z0-9_()\[\]/*+\-=<>|.,;:~^{}'!]+")
_NAMES = frozenset(_GREEK + _FUNCS + ("sqrt", "sgn"))
# a word's English tail after a hyphen ("||L||_{p/(p-2)}-smoothness") is text
_SUFFIX = re.compile(r"(?<=[A-Za-z0-9)}\]|])(?=-[A-Za-z]{3,}\b)")


def _kind(word: str) -> str:
    """``"F"`` a formula word, ``"C"`` a word that may join two formula words, ``"T"`` text."""
    if not _balanced(word) or "`" in word:  # a code span is not a formula
        return "T"
    if is_formula_word(word):
        return "F"
    if _SYMBOLS.fullmatch(word) and all(n in _NAMES for n in re.findall(r"[A-Za-z]{2,}", word)):
        return "C"
    return "T"


def inline_math(text) -> str:
    """``text`` with its formulas as LaTeX between ``$...$``: a formula is a run of formula words
    (:func:`is_formula_word`) and the symbols, numbers and single letters between and around them
    (``sum_{t=0}^{T-1} ||g_t||_{p*} <= L eta G^{2/(p-1)}``), without the punctuation that ends it. Unchanged when
    ``text`` has a ``$`` or a backslash (it marks its formulas itself), or no formula word. A function of the
    text alone: each text is converted once per process (a report converts the same texts for index.html and
    report.md)."""
    text = str(text)
    if "$" in text or "\\" in text or ("^" not in text and "_{" not in text):
        return text
    return _inline_math(text)


@functools.lru_cache(maxsize=8192)
def _inline_math(text: str) -> str:
    """:func:`inline_math` of a text that may hold formula words."""
    words = []
    for w in _words(text):
        cut = next((m.start() for m in _SUFFIX.finditer(w) if w[m.start() + 1 :].split("-")[0] not in _NAMES), None)
        words += [w] if cut is None or w.isspace() else [w[:cut], w[cut:]]
    kinds = ["S" if w.isspace() else _kind(w) for w in words]
    out, i = [], 0
    while i < len(words):
        if kinds[i] in "ST":
            out.append(words[i])
            i += 1
            continue
        j = i  # the run of formula and joining words (and the spaces inside it) from i
        while j < len(words) and (
            kinds[j] in "FC" or (kinds[j] == "S" and j + 1 < len(words) and kinds[j + 1] in "FC")
        ):
            j += 1
            if words[j - 1][-1] in ":;":  # a clause ends there ("Lemma 2: E[B2] <= ..."): so does the run
                break
        run = "".join(words[i:j])
        if "F" in kinds[i:j]:
            lead, core, tail = _split_edges(run)
            out.append(f"{lead}${to_latex(core)}${tail}")
        else:
            out.append(run)
        i = j
    return "".join(out)


class Plain(str):
    """Text that is shown as it is written (a command, a witness, an attribute): :func:`finalize` leaves it."""


def finalize(value):
    """The HTML environment's ``finalize``: text through :func:`inline_math`, :class:`Plain` text, markup and
    numbers as they are (the environment escapes the result)."""
    if not isinstance(value, str) or isinstance(value, Plain) or hasattr(value, "__html__"):
        return value
    return inline_math(value)
