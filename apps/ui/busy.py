"""The page's busy note: shown while an update (calculation and redraw) runs, seen only when
it takes more than :data:`BUSY_DELAY_S`.

The note is made visible as an update starts and hidden when its last part has finished. On a
server, a change made while a browser event is processed is written to the page at once, so
the browser has the note before the calculation begins; a CSS animation keeps it invisible for
the first :data:`BUSY_DELAY_S`, so quick updates never flash it. It floats over the page (no
layout shift when it comes and goes). Nothing here knows about experiments.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import panel as pn

BUSY_DELAY_S = 0.3
"""How long an update runs before the note becomes visible, s."""

BUSY_TEXT = "Updating…"
"""What the note says."""

BUSY_CSS = f"""
:host {{ height: 0; }}
.lab-busy {{ position: fixed; top: 72px; left: 50%; transform: translateX(-50%);
  z-index: 1300; font-size: 0.95rem; padding: 6px 16px; border-radius: 16px;
  color: #fff; background: rgba(0, 114, 178, 0.95); box-shadow: 0 2px 8px rgba(0,0,0,0.3);
  pointer-events: none; animation: lab-busy-appear 0s linear {BUSY_DELAY_S}s both; }}
@keyframes lab-busy-appear {{ from {{ visibility: hidden; }} to {{ visibility: visible; }} }}
"""
"""The note floats at the top of the window; it appears only when an update has taken more
than 0.3 s (the animation restarts each time the note is shown)."""


class BusyNote(pn.pane.HTML):
    """"Updating…" while at least one part of an update is running.

    Each part calls :meth:`begin` when it starts and :meth:`end` when it is done (or uses
    :meth:`during`); the note is hidden when every part that began has ended.
    """

    def __init__(self, **params):
        super().__init__(f'<div class="lab-busy" role="status">{BUSY_TEXT}</div>',
                         visible=False, stylesheets=[BUSY_CSS], margin=0,
                         css_classes=["lab-busy-note"], sizing_mode="stretch_width", **params)
        self._running = 0

    @property
    def running(self) -> int:
        """How many parts of the current update have begun and not ended."""
        return self._running

    def begin(self) -> None:
        """A part of an update starts: show the note (seen after :data:`BUSY_DELAY_S`)."""
        self._running += 1
        if not self.visible:
            self.visible = True

    def end(self) -> None:
        """A part of an update has finished: hide the note if it was the last one."""
        self._running = max(self._running - 1, 0)
        if self._running == 0 and self.visible:
            self.visible = False

    @contextmanager
    def during(self) -> Iterator[None]:
        """Show the note while the body runs."""
        self.begin()
        try:
            yield
        finally:
            self.end()
