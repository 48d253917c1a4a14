"""The page gate: at most ``limit`` page loads at a time, the others in line, first come
first served, and no place held by a reader who has gone (``apps.ui.server.page_gate``)."""

from __future__ import annotations

import asyncio
import html.parser

import pytest

from apps.ui.server import page_gate
from apps.ui.server.page_gate import PageGate, configured_limit, default_limit
from apps.ui.server.waiting_page import TURN_COOKIE, TURN_HEADER, waiting_page
from tests.apps.thread_server import run_apart


class FakeSession:
    """What the gate reads of a Bokeh session: how many browsers are connected to it."""

    def __init__(self) -> None:
        self.connection_count = 0


def test_loads_beyond_the_limit_wait_in_line_and_are_admitted_in_order():
    async def scenario():
        gate = PageGate(2)
        first, second = gate.enter(), gate.enter()
        assert first is not None and second is not None
        assert gate.enter() is None  # both places taken
        (a, place_a), (b, place_b) = gate.wait_in_line(), gate.wait_in_line()
        assert (place_a, place_b) == (1, 2) and a != b
        turns = [asyncio.create_task(gate.turn(reader)) for reader in (a, b)]
        await asyncio.sleep(0.01)
        assert not any(t.done() for t in turns)
        gate.leave(first)
        await asyncio.sleep(0.01)
        assert turns[0].done() and turns[0].result() is True and not turns[1].done()
        assert gate.enter() is None  # a newcomer does not jump the line
        claimed = gate.claim(a)
        assert claimed is not None and gate.claim(a) is None  # a place is claimed once
        gate.leave(second)
        assert await turns[1] is True
        assert len(gate.loading) == 2 and gate.admitted == 4

    run_apart(scenario())


def test_a_place_is_given_back_once_and_a_newcomer_enters_when_nobody_waits():
    async def scenario():
        gate = PageGate(1)
        ticket = gate.enter()
        gate.leave(ticket)
        gate.leave(ticket)  # a second call changes nothing
        assert gate.loading == set()
        assert gate.enter() is not None

    run_apart(scenario())


def test_a_load_leaves_when_its_browser_disconnects_or_never_connects(monkeypatch):
    monkeypatch.setattr(page_gate, "WATCH_S", 0.01)

    async def scenario():
        gate = PageGate(2, connect_s=0.2)
        gone, silent = gate.enter(), gate.enter()
        gone.session, silent.session = FakeSession(), FakeSession()
        gone.session.connection_count = 1
        gate.sent(gone)
        gate.sent(silent)
        await asyncio.sleep(0.03)
        assert gone in gate.loading  # connected: keeps its place
        gone.session.connection_count = 0  # the reader closed the tab
        await asyncio.sleep(0.03)
        assert gone not in gate.loading and silent in gate.loading
        await asyncio.sleep(0.25)
        assert silent not in gate.loading  # never connected within connect_s

    run_apart(scenario())


def test_a_request_that_built_no_session_leaves_at_once():
    async def scenario():
        gate = PageGate(1)
        ticket = gate.enter()
        gate.sent(ticket)  # e.g. a redirect to the login page
        assert gate.loading == set()

    run_apart(scenario())


def test_a_reserved_place_not_claimed_lapses_and_the_next_reader_gets_it():
    async def scenario():
        gate = PageGate(1, connect_s=0.05)
        ticket = gate.enter()
        (a, _), (b, _) = gate.wait_in_line(), gate.wait_in_line()
        gate.leave(ticket)
        assert a in gate.reserved
        assert await asyncio.wait_for(gate.turn(b), 1) is True  # a never came back
        assert gate.claim(a) is None and gate.claim(b) is not None
        assert await gate.turn("never-waited") is False

    run_apart(scenario())


def test_every_load_leaves_after_ready_s_at_the_latest():
    async def scenario():
        gate = PageGate(1, ready_s=0.02)
        ticket = gate.enter()
        ticket.session = FakeSession()
        ticket.session.connection_count = 1
        await asyncio.sleep(0.05)
        assert ticket.done and gate.loading == set()

    run_apart(scenario())


def test_the_line_is_bounded(monkeypatch):
    monkeypatch.setattr(page_gate, "MAX_WAITING", 2)

    async def scenario():
        gate = PageGate(1)
        gate.enter()
        assert gate.wait_in_line() is not None and gate.wait_in_line() is not None
        assert gate.wait_in_line() is None

    run_apart(scenario())


def test_no_limit_lets_every_load_through():
    async def scenario():
        gate = PageGate(0)
        assert all(gate.enter() is not None for _ in range(100))

    run_apart(scenario())


def test_the_limit_comes_from_the_environment_or_the_cores():
    assert configured_limit({}) == default_limit() >= 1
    assert configured_limit({page_gate.LIMIT_ENV: "3"}) == 3
    assert configured_limit({page_gate.LIMIT_ENV: "0"}) == 0
    with pytest.raises(ValueError, match="whole number"):
        configured_limit({page_gate.LIMIT_ENV: "-1"})
    with pytest.raises(ValueError):
        PageGate(-1)


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.parts.append(data)


def test_the_waiting_page_says_what_happens_and_asks_for_its_turn():
    page = waiting_page("abc_DEF-123", 3)
    parser = _Text()
    parser.feed(page)
    text = " ".join("".join(parser.parts).split())
    assert "3 readers' pages are loading ahead of yours" in text
    assert "opens by itself" in text
    assert parser.tags.count("script") == 1 and "iframe" not in parser.tags
    assert f'"{TURN_HEADER}": reader' in page and f'"{TURN_COOKIE}" + reader + "=1;' in page
    assert 'const reader = "abc_DEF-123";' in page
    assert 'http-equiv="refresh"' in page  # without JavaScript it retries
    assert "one reader's page is loading ahead" in waiting_page("x", 1)
