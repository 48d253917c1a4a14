"""How many pages the server lets load at once; the other readers wait their turn in line.

A page load costs the server about 0.5–0.9 s of CPU (build, send, answer the browser's first
messages) and the reader's browser some 3 s more (scripts, then every chart). When many
readers open the lab at the same moment, sharing the machine among all their loads at once
makes every load slow, and on a small machine that also hosts the browsers (two cores,
forty tabs) it makes each load dearer too: forty pages drawn at the same time cost about
60 % more CPU each than the same pages drawn a few at a time, and a browser tab whose page
request is pending keeps redrawing its loading indicator (forty such tabs kept 1.6 of two
cores busy). So all of them finish late, together.

The :class:`PageGate` admits at most ``limit`` page loads at a time, first come first served.
A load holds its place from its page request until its browser reports the page drawn
(Bokeh's ``document_ready`` event) or disconnects. A reader who arrives while ``limit`` loads
are under way gets at once a small waiting page (:mod:`apps.ui.server.waiting_page`) holding a
place in line (:meth:`PageGate.wait_in_line`); it asks the server for its turn
(:meth:`PageGate.turn`) and, when the turn comes, loads the page, which takes the place
reserved for it (:meth:`PageGate.claim`). A load whose browser does not connect within
:data:`CONNECT_S`, a reserved place not claimed within :data:`CONNECT_S`, and any load after
:data:`READY_S` give their place up, so a reader who closes the tab never blocks anyone for
long.

The gate knows nothing about Panel; :func:`apps.ui.panel_compat.gate_page_requests` wires it
to the server's page handler. See ``docs/operations.md`` (many readers at once).
"""

from __future__ import annotations

import asyncio
import collections
import os
import secrets
from dataclasses import dataclass, field

WATCH_S = 0.25
"""Interval at which an admitted load's connection is checked, s."""

CONNECT_S = 10.0
"""Seconds within which a load's browser must connect to its page (open its websocket) after
the page is sent, and within which a reader whose turn has come must load the page."""

READY_S = 30.0
"""Seconds after its admission at most that a load holds its place."""

MAX_WAITING = 1000
"""Readers in line at most; beyond it a reader is told to try again later."""

LIMIT_ENV = "INFERENCE_LAB_PAGES_AT_ONCE"
"""Environment variable with the limit (``inference-lab serve --pages-at-once`` sets it);
0 lets every load through at once."""


def default_limit() -> int:
    """Page loads at once when nothing is set: one per CPU core of the machine. (Forty
    loads of a three-chart page on two cores, with the browsers on the same machine: two at
    a time all loaded within 104 s, four at a time within 116 s; see
    ``docs/operations.md``.)"""
    return os.cpu_count() or 1


def configured_limit(environ: dict[str, str] | None = None) -> int:
    """The limit from :data:`LIMIT_ENV`, else :func:`default_limit`; a value that is not a
    whole number ≥ 0 is an error (``inference-lab serve`` checks it before starting)."""
    text = (os.environ if environ is None else environ).get(LIMIT_ENV, "").strip()
    if not text:
        return default_limit()
    if not text.isdigit():
        raise ValueError(f"{LIMIT_ENV}={text!r} is not a whole number of pages (0 or more).")
    return int(text)


@dataclass(eq=False)
class Ticket:
    """One admitted page load; its place is given back once, by :meth:`PageGate.leave`."""

    timer: asyncio.TimerHandle | None = None
    """When the load gives its place up at the latest."""
    done: bool = False
    reader: str | None = None
    """The reader the place is reserved for, until they claim it."""
    session: object | None = field(default=None, repr=False)
    """The Bokeh session built for the load (its ``connection_count`` is watched)."""
    connected: bool = False
    """Whether the load's browser has connected to its session."""
    sent_at: float = 0.0
    """Event-loop time at which the page was sent, s."""


class PageGate:
    """At most ``limit`` page loads at a time, admitted first come first served
    (``limit`` 0: no limit)."""

    def __init__(self, limit: int, connect_s: float = CONNECT_S, ready_s: float = READY_S):
        if limit < 0:
            raise ValueError(f"limit {limit} is negative")
        self.limit, self.connect_s, self.ready_s = limit, connect_s, ready_s
        self.loading: set[Ticket] = set()
        self.line: collections.OrderedDict[str, asyncio.Future] = collections.OrderedDict()
        """Readers waiting, by their id, in order of arrival; each future is set to the
        :class:`Ticket` reserved for that reader when its turn comes."""
        self.reserved: dict[str, Ticket] = {}
        """Places reserved for readers whose turn has come, until they claim them."""
        self.admitted = 0
        """Loads admitted since start (for the tests and the log)."""

    def has_room(self) -> bool:
        """Whether a new load can start now (a place is free and nobody waits)."""
        return not self.limit or (len(self.loading) < self.limit and not self.line)

    def enter(self) -> Ticket | None:
        """A place for a load that arrives now, or None if it has to wait in line."""
        return self._admit(self.ready_s) if self.has_room() else None

    def wait_in_line(self) -> tuple[str, int] | None:
        """Put a new reader in line: its id (unguessable) and its place (1 = next), or None
        when :data:`MAX_WAITING` readers wait already."""
        if len(self.line) >= MAX_WAITING:
            return None
        reader = secrets.token_urlsafe(16)
        self.line[reader] = asyncio.get_running_loop().create_future()
        return reader, len(self.line)

    async def turn(self, reader: str) -> bool:
        """Wait until ``reader``'s turn has come (True), False for an unknown id (one that
        never waited, or whose reserved place has lapsed)."""
        if reader in self.reserved:
            return True
        future = self.line.get(reader)
        if future is None:
            return False
        await asyncio.shield(future)
        return reader in self.reserved

    def claim(self, reader: str) -> Ticket | None:
        """The place reserved for ``reader`` (now its load's), None if there is none."""
        ticket = self.reserved.pop(reader, None)
        if ticket is not None:
            ticket.reader = None
            self._hold(ticket, self.ready_s)
        return ticket

    def _admit(self, hold_s: float) -> Ticket:
        ticket = Ticket()
        self.loading.add(ticket)
        self.admitted += 1
        self._hold(ticket, hold_s)
        return ticket

    def _hold(self, ticket: Ticket, seconds: float) -> None:
        """Give ``ticket``'s place up ``seconds`` from now at the latest."""
        if ticket.timer is not None:
            ticket.timer.cancel()
        ticket.timer = asyncio.get_running_loop().call_later(seconds, self.leave, ticket)

    def sent(self, ticket: Ticket) -> None:
        """The load's page has been sent. A request that built no session (a redirect, a
        refusal) leaves at once; otherwise the load leaves when its browser, once connected,
        disconnects, or when it has not connected within :attr:`connect_s`."""
        if ticket.session is None:
            self.leave(ticket)
            return
        loop = asyncio.get_running_loop()
        ticket.sent_at = loop.time()
        loop.call_later(WATCH_S, self._watch, ticket)

    def _watch(self, ticket: Ticket) -> None:
        if ticket.done:
            return
        loop = asyncio.get_running_loop()
        if getattr(ticket.session, "connection_count", 0) > 0:
            ticket.connected = True
        elif ticket.connected or loop.time() - ticket.sent_at > self.connect_s:
            self.leave(ticket)
            return
        loop.call_later(WATCH_S, self._watch, ticket)

    def leave(self, ticket: Ticket) -> None:
        """Give ``ticket``'s place to the next reader in line (a second call does
        nothing)."""
        if ticket.done:
            return
        ticket.done = True
        if ticket.timer is not None:
            ticket.timer.cancel()
        ticket.session = None
        self.loading.discard(ticket)
        if ticket.reader is not None:  # a reserved place that lapsed
            del self.reserved[ticket.reader]
        while self.line and (not self.limit or len(self.loading) < self.limit):
            reader, future = self.line.popitem(last=False)
            ticket = self._admit(self.connect_s)
            ticket.reader = reader
            self.reserved[reader] = ticket
            future.set_result(ticket)
