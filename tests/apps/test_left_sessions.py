"""A reader's session goes soon after the reader does (issue 38, memory after a burst).

Bokeh kept a session whose websocket had closed until its periodic check (every 17 s) found it
unused for 15 s; during a burst of readers twenty documents were alive at once, and the memory
they filled stayed with the process (``apps/ui/server/session_memory.py``). Here a Bokeh server
runs in this process, on a thread of its own, with
:func:`apps.ui.panel_compat.discard_left_sessions` installed as the lab's server installs it.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator

import pytest
from bokeh.application import Application
from bokeh.application.handlers.function import FunctionHandler
from bokeh.models import Div
from bokeh.server.server import Server
from bokeh.server.tornado import DEFAULT_UNUSED_LIFETIME_MS
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.ioloop import IOLoop
from tornado.websocket import websocket_connect

from apps.ui.panel_compat import discard_left_sessions
from apps.ui.server.session_memory import LEFT_SESSION_LINGER_S
from tests.apps.thread_server import free_port, run_apart, server_on_a_thread

BOKEH_UNUSED_LIFETIME_S = DEFAULT_UNUSED_LIFETIME_MS / 1000
"""Bokeh's default ``unused_session_lifetime`` (s): how long an unused session lives without
the lab's discard."""
BOKEH_CHECK_OFF_MS = 3_600_000
"""Bokeh's own unused-session check and lifetime in this file's server (ms): an hour, so only
the lab's discard destroys a session within a test."""
DESTROYED: dict[str, float] = {}
"""Session id -> time.monotonic() when the server destroyed it."""


def page(doc) -> None:
    """The served app: one model, and a record of the session's end."""
    doc.add_root(Div(text="a page"))
    session_id = doc.session_context.id
    doc.on_session_destroyed(lambda context: DESTROYED.setdefault(session_id, time.monotonic()))


@pytest.fixture
def base_url() -> Iterator[str]:
    """A Bokeh server serving :func:`page` at ``/app`` on a thread (its own event loop)."""
    discard_left_sessions(LEFT_SESSION_LINGER_S)
    port = free_port()

    def make(loop: IOLoop) -> Server:
        return Server({"/app": Application(FunctionHandler(page))}, port=port,
                      address="127.0.0.1", io_loop=loop,
                      allow_websocket_origin=[f"127.0.0.1:{port}"],
                      check_unused_sessions_milliseconds=BOKEH_CHECK_OFF_MS,
                      unused_session_lifetime_milliseconds=BOKEH_CHECK_OFF_MS)

    with server_on_a_thread(make):
        yield f"http://127.0.0.1:{port}"


async def open_page(base: str, connect: bool) -> str:
    """GET the page (the server builds its session); with ``connect``, open the page's
    websocket, read the server's first message, and close it, as a reader leaving does.
    Returns the session id."""
    client = AsyncHTTPClient(force_instance=True)
    try:
        html = (await client.fetch(f"{base}/app")).body.decode()
    finally:
        client.close()
    session_id = re.search(r'"sessionid":\s*"([^"]+)"', html) or re.search(
        r"bokeh-session-id=([A-Za-z0-9_-]+)", html)
    token = re.search(r'"token":\s*"([^"]+)"', html)
    assert token, html[:500]
    if connect:
        request = HTTPRequest(base.replace("http", "ws", 1) + "/app/ws",
                              headers={"Origin": base})
        connection = await websocket_connect(request, subprotocols=["bokeh", token.group(1)])
        for _ in range(3):  # the ACK: header, metadata, content
            await connection.read_message()
        connection.close()
        while await asyncio.wait_for(connection.read_message(), 10) is not None:
            pass  # until the server has closed its end too
    from bokeh.util.token import get_session_id
    return session_id.group(1) if session_id else get_session_id(token.group(1))


class StallMeter:
    """Seconds this process stood still while it is entered: a thread that naps 50 ms adds up
    how much longer than that each nap took, beyond 0.2 s (a busy machine's GIL or scheduler
    stall holds the server's loop too; two suites at once stalled a worker for 15 s)."""

    NAP_S = 0.05

    def __init__(self) -> None:
        self.stalled_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        before = time.monotonic()
        while not self._stop.wait(self.NAP_S):
            now = time.monotonic()
            if now - before > 0.2:
                self.stalled_s += now - before - self.NAP_S
            before = now

    def __enter__(self) -> StallMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)


def test_a_closed_pages_session_is_destroyed_within_seconds(base_url):
    """Before: the session lived on for 15-32 s after its websocket closed."""
    with StallMeter() as stall:
        left = run_apart(open_page(base_url, connect=True))
        closed_at = time.monotonic()
        # Bokeh's own check is off here, so only the lab's discard destroys the session; it
        # must come before Bokeh's own lifetime (15 s) would have, counting only the time the
        # process ran (a stall of the whole process moves every clock alike).
        while left not in DESTROYED and time.monotonic() < closed_at + 120:
            time.sleep(0.1)
    assert left in DESTROYED, "the lab did not destroy the closed page's session in 120 s"
    ran_s = DESTROYED[left] - closed_at - stall.stalled_s
    assert ran_s < BOKEH_UNUSED_LIFETIME_S - 1.0, (
        f"the closed page's session was destroyed {ran_s:.1f} s after it closed (not counting "
        f"{stall.stalled_s:.1f} s the process stood still), not before Bokeh's own lifetime")
    assert DESTROYED[left] - closed_at >= LEFT_SESSION_LINGER_S * 0.9


def test_a_page_whose_websocket_has_not_come_yet_keeps_its_session(base_url):
    """A browser still loading the page's scripts connects later: the lab's discard keeps its
    session (Bokeh's own lifetime, 15 s unused, then applies; put off here)."""
    waiting = run_apart(open_page(base_url, connect=False))
    time.sleep(LEFT_SESSION_LINGER_S + 2.0)
    assert waiting not in DESTROYED
