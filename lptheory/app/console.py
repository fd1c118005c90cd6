"""What the command line writes on a console: the step progress of ``lptheory run`` and its result table.

Progress (:class:`StepProgress`, :func:`write_line`): defined in the core module :mod:`lptheory.progress`
(the simulator's ``progress=True`` draws with it too) and re-exported here; see that module.

Tables (:func:`table`): numbers right-aligned in columns as wide as their widest cell, text left-aligned;
non-finite values written ``inf``, ``-inf``, ``nan``; an interval ``[lo, hi]`` with both ends aligned.
"""

from __future__ import annotations

import contextlib
import math
import numbers

from lptheory.progress import StepProgress, write_line  # noqa: F401  (re-exported)


def fmt_num(x, digits: int = 5) -> str:
    """``x`` in ``digits`` significant digits (``g`` format), with inf, -inf and nan written as such (also for
    numpy scalars) and no negative zero; an integer (a count) exactly, in all its digits."""
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return str(int(x))
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = f"{v:.{digits}g}"
    return "0" if text == "-0" else text


def fmt_exact(x) -> str:
    """``x`` in full precision (the shortest text that reads back as the same float: ``1.0000001``, not the
    ``1`` of five digits), an integral value without its ``.0`` (``3``); for parameters such as p, where a
    rounded value would name another setting."""
    v = float(x)
    if math.isfinite(v) and v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return fmt_num(v) if not math.isfinite(v) else repr(v)


class Interval:
    """A cell ``[lo, hi]`` of :func:`table`: both ends formatted by :func:`fmt_num` and right-aligned
    within their column, so the brackets and the comma line up from row to row."""

    def __init__(self, lo, hi, digits: int = 4):
        self.lo, self.hi = fmt_num(lo, digits), fmt_num(hi, digits)


def _cell(c, digits: int) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, Interval):
        return f"[{c.lo}, {c.hi}]"
    return fmt_num(c, digits)


def table(header: list[str], rows: list[list], digits: int = 5, align: str | None = None) -> list[str]:
    """Lines of a table: the header, then one line per row. A cell is text (left-aligned), a number
    (:func:`fmt_num`, right-aligned) or an :class:`Interval`; ``align`` (one ``<`` or ``>`` per column)
    overrides the alignment of a column (e.g. counts written ``3/16``). Each column is as wide as its widest
    cell (header included), columns separated by two spaces, no trailing spaces."""
    kinds, cells = [], []
    for j in range(len(header)):
        col = [r[j] for r in rows]
        if col and all(isinstance(c, Interval) for c in col):
            wl, wh = max(len(c.lo) for c in col), max(len(c.hi) for c in col)
            cells.append([f"[{c.lo:>{wl}}, {c.hi:>{wh}}]" for c in col])
            kinds.append(">")
        elif col and all(not isinstance(c, str) for c in col):
            cells.append([fmt_num(c, digits) for c in col])
            kinds.append(">")
        else:  # text, or numbers or intervals mixed with text (such as "-" for a value that does not exist)
            cells.append([_cell(c, digits) for c in col])
            kinds.append("<" if all(isinstance(c, str) for c in col) else ">")
    if align is not None:
        if len(align) != len(header) or set(align) - {"<", ">"}:
            raise ValueError(f"align must be one of '<' or '>' per column ({len(header)}), got {align!r}")
        kinds = list(align)
    widths = [max([len(h), *(len(c) for c in col)]) for h, col in zip(header, cells)]
    lines = ["  ".join(f"{h:{k}{w}}" for h, k, w in zip(header, kinds, widths)).rstrip()]
    for i in range(len(rows)):
        lines.append("  ".join(f"{col[i]:{k}{w}}" for col, k, w in zip(cells, kinds, widths)).rstrip())
    return lines


@contextlib.contextmanager
def stdout_to_stderr():
    """Within the block, whatever is written to standard output goes to standard error: ``print`` here
    (``sys.stdout``) and, where standard output is a file descriptor, anything written to it (worker
    processes forked inside the block, C code). ``lptheory check --json`` runs its checks so: a claim
    file's prints never break the JSON document on standard output."""
    import os
    import sys

    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
        err = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (a test's capture)
        fd = None
    saved = None
    if fd is not None:
        saved = os.dup(fd)
        os.dup2(err, fd)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            os.dup2(saved, fd)
            os.close(saved)
