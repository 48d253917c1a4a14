"""Every process-wide side effect and every private Panel hook the apps rely on, in one place.

Panel and panel-material-ui do not promise these internals; :data:`TESTED_PANEL` and
:data:`TESTED_PANEL_MATERIAL_UI` are the versions they were checked against, and
``tests/apps/test_panel_compat.py`` fails when another version is installed, so an upgrade
re-checks each hook here:

- :data:`PRIORITY_CHANGES` (``Syncable._priority_changes``): properties processed on the next
  tick instead of after Panel's 50 ms debounce;
- :func:`cleanup_doc` (``panel.io.document._cleanup_doc``): releases a throwaway document's
  sessions and models after a warm-up build;
- :func:`detach_busy` (``pmui.Page.busy``, read-only, linked to ``pn.state.busy`` by a watcher):
  drops the link and its watcher so a page is not re-walked on every busy toggle;
- :func:`freeze_gc` (``gc.freeze``): moves every object alive now out of later collections;
  called by the server's start-up only (:mod:`apps.ui.warmup`);
- :func:`gate_page_requests` (``panel.io.server.DocHandler.get`` and ``.get_session``): page
  requests pass an :class:`~apps.ui.page_gate.PageGate`; called by the server's start-up only
  (``apps/ui/serve_setup.py``).
"""

from __future__ import annotations

import contextvars
import gc
import inspect

import panel as pn
import panel_material_ui as pmui
from panel.io.document import _cleanup_doc
from panel.io.server import DocHandler
from panel.util import edit_readonly

from apps.ui.page_gate import PageGate, Ticket
from apps.ui.waiting_page import TURN_COOKIE, TURN_HEADER, YOUR_TURN, waiting_page

TESTED_PANEL = "1.9.4"
"""The Panel version these hooks were checked against."""
TESTED_PANEL_MATERIAL_UI = "0.16.6"
"""The panel-material-ui version these hooks were checked against."""

PRIORITY_CHANGES = ["value", "value_throttled"]
"""A widget's properties that skip Panel's debounce (``_priority_changes``)."""


def cleanup_doc(doc) -> None:
    """Release a Bokeh document built outside a session (Panel's ``_cleanup_doc``)."""
    _cleanup_doc(doc)


def detach_busy(page: pmui.Page) -> None:
    """Set ``page.busy`` False for good and remove the watcher linking it to ``pn.state``.

    Setting the read-only flag drops the link but not its watcher on ``pn.state``, which then
    holds every page ever served (about 3 MB each) and re-sets each one on every busy toggle.
    """
    with edit_readonly(page):
        page.busy = False
    for watchers in pn.state.param.watchers.get("busy", {}).values():
        for watcher in list(watchers):
            if getattr(getattr(watcher.fn, "__self__", None), "self", None) is page:
                pn.state.param.unwatch(watcher)


def freeze_gc() -> None:
    """Collect, then exempt every object alive now from later collections (process-wide)."""
    gc.collect()
    gc.freeze()


async def _settled(result):
    """``result`` awaited if it is awaitable: Tornado's ``authenticated`` decorator returns
    None, not a coroutine, when it redirects a visitor who is not logged in."""
    return await result if inspect.isawaitable(result) else result


_TICKET: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("lab_page_ticket",
                                                                       default=None)
"""The page request's place in the gate, seen by the session it builds (same task)."""


def gate_page_requests(gate: PageGate) -> None:
    """Send every page load of this server process through ``gate`` (process-wide; a
    second call replaces the gate).

    Only a browser's navigation to a page is gated (``Sec-Fetch-Dest: document``), once the
    visitor is logged in: other clients only fetch the HTML, which costs the server its build
    alone. A load admitted builds its session as usual, and the session gives the place back
    on its ``document_ready`` event (the browser has drawn the page); :meth:`PageGate.sent`
    covers a browser that disconnects or never connects. A load that has to wait gets
    :func:`~apps.ui.waiting_page.waiting_page`, whose request for its turn (header
    :data:`~apps.ui.waiting_page.TURN_HEADER`) is answered here when the turn comes."""
    already = getattr(DocHandler, "_lab_gate", None) is not None
    DocHandler._lab_gate = gate
    if already:
        return
    original_get, original_get_session = DocHandler.get, DocHandler.get_session

    async def get(self, *args, **kwargs):
        gate = DocHandler._lab_gate
        reader = self.request.headers.get(TURN_HEADER)
        if reader is not None and self.current_user:  # a waiting page asks for its turn
            self.set_header("Cache-Control", "no-store")
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.write(YOUR_TURN if await gate.turn(reader) else "not in line")
            return None
        if self.request.headers.get("Sec-Fetch-Dest") != "document" or not self.current_user:
            return await _settled(original_get(self, *args, **kwargs))
        ticket = None
        for name in self.request.cookies:
            if name.startswith(TURN_COOKIE):
                ticket = gate.claim(name.removeprefix(TURN_COOKIE))
                if ticket is not None:
                    self.clear_cookie(name, path="/")
                    break
        ticket = ticket or gate.enter()
        if ticket is None:
            self.set_header("Cache-Control", "no-store")
            place = gate.wait_in_line()
            if place is None:
                self.set_status(503)
                self.set_header("Retry-After", "10")
                self.set_header("Content-Type", "text/plain; charset=utf-8")
                self.write("Too many readers are waiting for the lab; try again in a minute.")
                return None
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(waiting_page(*place))
            return None
        token = _TICKET.set(ticket)
        try:
            return await _settled(original_get(self, *args, **kwargs))
        finally:
            _TICKET.reset(token)
            gate.sent(ticket)

    async def get_session(self):
        session = await _settled(original_get_session(self))
        ticket = _TICKET.get()
        if ticket is not None and not ticket.done and ticket.session is None:
            ticket.session = session
            gate = DocHandler._lab_gate
            session.document.on_event("document_ready", lambda event: gate.leave(ticket))
        return session

    DocHandler.get, DocHandler.get_session = get, get_session
