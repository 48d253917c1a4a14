"""Progress bars of a sweep on standard error: redrawn in place on a terminal, plain lines
otherwise.

On a terminal a bar is redrawn with ``\\r`` (dask's own :class:`~dask.diagnostics.ProgressBar`
and :class:`~sweeps.runner._TextBar` for a cluster). Piped into a file or a CI log, ``\\r``
redraws pile up into one unreadable line, so there the bar prints one plain line each time
another tenth of the work is done, and one when it finishes: ``[####    ] | 50% Completed |
1.2s``.
"""

from __future__ import annotations

import sys
from typing import TextIO

from dask.diagnostics import ProgressBar

STEP_PERCENT = 10
"""A plain bar prints a line each time this many more percent of the work is done (%)."""


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default: standard error) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


class PlainSteps:
    """Decides which percentages a plain bar prints: each new multiple of :data:`STEP_PERCENT`
    once, and 100 % at the end."""

    def __init__(self) -> None:
        self.last: int | None = None

    def due(self, percent: int) -> bool:
        """Whether a line for ``percent`` (0–100) should be printed now."""
        step = percent // STEP_PERCENT * STEP_PERCENT
        if self.last is not None and step <= self.last:
            return False
        self.last = step
        return True


def bar_line(percent: int, width: int, elapsed: str) -> str:
    """One line of a bar, as dask draws it, without ``\\r``."""
    filled = "#" * (width * percent // 100)
    return f"[{filled:<{width}}] | {percent:3d}% Completed | {elapsed}"


class PlainProgressBar(ProgressBar):
    """dask's in-process progress bar writing plain lines (no ``\\r``) for a file or a pipe."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._steps = PlainSteps()

    def _draw_bar(self, frac: float, elapsed: float) -> None:
        from dask.utils import format_time

        percent = int(100 * frac)
        if self._file is not None and self._steps.due(percent):
            self._file.write(bar_line(percent, self._width, format_time(elapsed)) + "\n")
            self._file.flush()

    def _finish(self, dsk, state, errored) -> None:
        self._running = False
        self._timer.join()
        from timeit import default_timer

        elapsed = default_timer() - self._start_time
        self.last_duration = elapsed
        if elapsed >= self._minimum and not errored:
            self._draw_bar(1, elapsed)


def in_process_bar(stream: TextIO | None = None) -> ProgressBar:
    """dask's progress bar on ``stream`` (default standard error), plain unless a terminal."""
    stream = sys.stderr if stream is None else stream
    return ProgressBar(out=stream) if is_terminal(stream) else PlainProgressBar(out=stream)
