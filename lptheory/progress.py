"""Progress on a console for the core and the command line (stdlib only; the core may use it, the app layer
re-exports it from :mod:`lptheory.app.console`): :class:`StepProgress`, the ``progress(t, total)`` callable
of :func:`lptheory.simulate.simulate` (``progress=True``) and of ``lptheory run`` / ``lptheory report``, and
:func:`write_line`, a line of text that never lands inside a live progress line.

On a terminal one line that rewrites itself (carriage return, padded with spaces over the previous text,
cut to the terminal's width so that it never wraps: a wrapped line cannot be rewritten and leaves its first
part behind; a terminal that reports zero columns, such as ``script``'s pseudo-terminal, is taken as 80
wide, where tqdm drew nothing), cleared when the run ends or stops, then one plain summary line; a warning
raised meanwhile first clears the line. Elsewhere (a pipe, a log file) plain lines only: one at each tenth
of the steps when at least ``every`` seconds passed since the last one, and the summary.
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings

__all__ = ["StepProgress", "write_line"]


def _fmt_time(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (False for a closed stream or an object without ``isatty``)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class StepProgress:
    """The ``progress(t, total)`` callable of :func:`lptheory.simulate.simulate` for one optimizer of a run
    (``label``, the ``index``-th of ``count``; or any count of ``unit``, such as the checks of ``lptheory
    report``), writing to ``stream`` (stderr). Use as a context manager:
    leaving it, normally or by an exception, clears the line and writes the summary (``stopped at step t``
    when the run did not finish).

    ``tty``: None to ask the stream; ``width``: the terminal's columns (None to ask; 80 when unknown or 0);
    ``clock``: seconds (monotonic); ``interval``: the least seconds between two redraws on a terminal;
    ``every``: the least seconds between two plain lines elsewhere."""

    def __init__(
        self,
        label: str,
        total: int,
        index: int = 1,
        count: int = 1,
        stream=None,
        tty: bool | None = None,
        width: int | None = None,
        clock=time.monotonic,
        interval: float = 0.1,
        every: float = 1.0,
        unit: str = "steps",
        rate: bool = True,
    ):
        self.stream = sys.stderr if stream is None else stream
        self.tty = is_terminal(self.stream) if tty is None else tty
        if width is None and self.tty:
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns
            except (AttributeError, ValueError, OSError):
                width = None
        self.width = width if width and width > 1 else 80
        self.label, self.total, self.index, self.count = label, int(total), index, count
        self.clock, self.interval, self.every = clock, interval, every
        self.t0 = clock()
        self.t = 0
        self.shown = 0  # characters of the live line now on the terminal
        self.last = -math.inf  # clock of the last redraw (terminal) or plain line
        self.next_tenth = 1
        self.unit, self.rate, self.note = unit, rate, ""  # note: shown after the count on the live line
        self.live = ""  # the text of the live line (terminal)
        self.first = None  # (step, clock) of the first report
        self._showwarning = None

    # -- the callable ----------------------------------------------------------------------------
    def __call__(self, t: int, total: int) -> None:
        self.t, self.total = int(t), int(total)
        now = self.clock()
        if self.tty:
            if now - self.last >= self.interval or t >= total:
                self.last = now
                self._draw(self._line(now))
            return
        tenth = (10 * t) // total if total else 10
        if tenth >= self.next_tenth and t < total:
            self.next_tenth = tenth + 1
            if now - self.last >= self.every and now - self.t0 >= self.every:
                self.last = now
                self._write(self._line(now) + "\n")

    def _prefix(self) -> str:
        which = f" ({self.index}/{self.count})" if self.count > 1 else ""
        return f"  {self.label}{which}:"

    def _line(self, now: float) -> str:
        el = now - self.t0
        pct = 100.0 * self.t / self.total if self.total else 100.0
        text = f"{self._prefix()} {pct:3.0f}%  {self.t:,}/{self.total:,} {self.unit}  {_fmt_time(el)}"
        if self.first is None:
            self.first = (self.t, now)  # the rate from here on: the first step carries the set-up (compiling)
        done, took = self.t - self.first[0], now - self.first[1]
        if self.t < self.total and done > 0 and took >= 0.5:
            text += f", about {_fmt_time(took * (self.total - self.t) / done)} left"
        return text + (f"  {self.note}" if self.note else "")

    # -- terminal ---------------------------------------------------------------------------------
    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is not worth failing for
            pass

    def _draw(self, text: str) -> None:
        text = text[: self.width - 1]  # never wraps (a wrapped line cannot be rewritten with \r)
        self._write("\r" + text.ljust(self.shown))
        self.shown, self.live = len(text), text

    def redraw(self) -> None:
        """Draw the live line again (after :meth:`clear` and a line of text)."""
        if self.tty and self.live and not self.shown:
            self._draw(self.live)

    def clear(self) -> None:
        """Remove the live line (terminal only): blanks over it, the cursor back at the line's start."""
        if self.tty and self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    # -- context ----------------------------------------------------------------------------------
    def __enter__(self):
        _LIVE.append(self)
        if self.tty:
            self._showwarning = warnings.showwarning
            orig = self._showwarning

            def showwarning(*args, **kwargs):  # a warning on its own line, never after the live line
                self.clear()
                orig(*args, **kwargs)

            warnings.showwarning = showwarning
        return self

    def __exit__(self, exc_type, exc, tb):
        if self in _LIVE:
            _LIVE.remove(self)
        if self._showwarning is not None:
            warnings.showwarning = self._showwarning
            self._showwarning = None
        self.clear()
        el = self.clock() - self.t0
        if exc_type is None and self.t >= self.total:
            rate = f" ({self.total / el:,.0f} {self.unit}/s)" if el > 0 and self.rate else ""
            self._write(f"{self._prefix()} {self.total:,} {self.unit} in {_fmt_time(el)}{rate}\n")
        else:
            self._write(f"{self._prefix()} stopped at {self.t:,} of {self.total:,} {self.unit} after {_fmt_time(el)}\n")
        return False


_LIVE: list[StepProgress] = []  # the progress lines now open (entered, not yet left)


def write_line(text: str, stream=None) -> None:
    """Write one line of text to ``stream`` (stderr) without mixing it into a live progress line: the open
    progress lines are cleared first and drawn again after it."""
    stream = sys.stderr if stream is None else stream
    for bar in _LIVE:
        bar.clear()
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass
    for bar in _LIVE:
        bar.redraw()
