"""The page's busy note: shown while an update (calculation and redraw) runs, seen only when
it takes more than :data:`BUSY_DELAY_S`.

The note is switched on as an update starts and off when its last part has finished. On a
server, a change made while a browser event is processed is written to the page at once, so
the browser has the note before the calculation begins. The browser waits the delay declared
in :data:`BUSY_CSS` (a timer, started when the note arrives) before showing it, so quick
updates never flash it. It floats over the page: no layout shift when it comes and goes.
Nothing here knows about experiments.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import panel as pn
import param

BUSY_DELAY_S = 0.3
"""How long an update runs before the note becomes visible, s."""

BUSY_TEXT = "Updating…"
"""What the note says."""

BUSY_CSS = f"""
:host {{ --lab-busy-delay: {BUSY_DELAY_S}s; height: 0; }}
.lab-busy {{ position: fixed; top: 72px; left: 50%; transform: translateX(-50%);
  z-index: 1300; font-size: 0.95rem; padding: 6px 16px; border-radius: 16px;
  color: #fff; background: rgba(0, 114, 178, 0.95); box-shadow: 0 2px 8px rgba(0,0,0,0.3);
  pointer-events: none; }}
.lab-busy[hidden] {{ display: none; }}
"""
"""The note floats at the top of the window; ``--lab-busy-delay`` is how long an update runs
before the browser shows it (0.3 s)."""


class BusyNote(pn.custom.JSComponent):
    """"Updating…" while at least one part of an update is running.

    Each part calls :meth:`begin` when it starts and :meth:`end` when it is done (or uses
    :meth:`during`); the note is switched off when every part that began has ended. While it
    is on (``busy``, and ``visible`` for the layout), the browser shows it once
    ``--lab-busy-delay`` has passed; a timer, not a CSS animation, because the page's
    animation clock stands still while the browser is busy handling messages.
    """

    busy = param.Boolean(default=False, doc="An update is running (the browser shows the note "
                                            "after the delay).")

    _esm = """
    export function render({ model, el }) {
      const note = document.createElement("div");
      note.className = "lab-busy";
      note.setAttribute("role", "status");
      note.textContent = TEXT;
      note.hidden = true;
      let timer = null;
      const delay = () => {
        const value = parseFloat(getComputedStyle(el).getPropertyValue("--lab-busy-delay"));
        return Number.isFinite(value) ? value * 1000 : 300;
      };
      const follow = () => {
        clearTimeout(timer);
        note.hidden = true;
        if (model.busy) { timer = setTimeout(() => { note.hidden = false; }, delay()); }
      };
      model.on("busy", follow);
      follow();
      return note;
    }
    """.replace("TEXT", f'"{BUSY_TEXT}"')

    def __init__(self, **params):
        params = {"visible": False, "stylesheets": [BUSY_CSS], "margin": 0,
                  "css_classes": ["lab-busy-note"], "sizing_mode": "stretch_width", **params}
        super().__init__(**params)
        self._running = 0

    @property
    def running(self) -> int:
        """How many parts of the current update have begun and not ended."""
        return self._running

    def begin(self) -> None:
        """A part of an update starts: switch the note on (seen after the delay)."""
        self._running += 1
        if not self.busy:
            self.param.update(busy=True, visible=True)

    def end(self) -> None:
        """A part of an update has finished: switch the note off if it was the last one."""
        self._running = max(self._running - 1, 0)
        if self._running == 0 and self.busy:
            self.param.update(busy=False, visible=False)

    def follow(self, owner: param.Parameterized, flag: str) -> None:
        """Count ``owner.flag`` as a part of each update: begun when it turns True, ended when
        it turns False (e.g. an experiment's ``computing``)."""
        owner.param.watch(lambda event: self.begin() if event.new else self.end(), flag)

    @contextmanager
    def during(self) -> Iterator[None]:
        """Show the note while the body runs."""
        self.begin()
        try:
            yield
        finally:
            self.end()
