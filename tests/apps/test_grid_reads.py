"""The grid explorer reads no dataset on the server's event loop (issue 38): while a reader's
input change waits for a slow read, the server answers ``/liveness`` and everyone else; the
latest change's answer is the one drawn; a failed read is one sentence.

A Panel server runs in this process on a thread of its own (its own event loop), serving a
grid explorer of a small store; the test connects the page's websocket as a browser does, then
changes an input on the server's loop, as a browser's message would. Reads are made slow by
patching ``xarray.Dataset.load``, which every read of a slice goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator

import panel as pn
import pytest
import xarray as xr
from panel.io.server import get_server
from panel.io.state import set_curdoc
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.ioloop import IOLoop
from tornado.websocket import websocket_connect

from apps.ui.views.grid import GridExplorer
from sweeps.store import open_grid
from tests.apps.thread_server import free_port, server_on_a_thread
from tests.sweeps.conftest import write_small

SLOW_READ_S = 2.0
"""How long a patched read takes, s."""


class Page:
    """The served page: its explorer and its document, once the session is built."""

    def __init__(self) -> None:
        self.view: GridExplorer | None = None
        self.doc = None
        self.built = threading.Event()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_small(tmp_path_factory.mktemp("grid-reads") / "small.zarr")


@pytest.fixture
def served(store) -> Iterator[tuple[str, Page]]:
    """``(base URL, page)``: a Panel server (``/liveness`` on) serving the explorer at
    ``/grid`` on a thread, and the page its one session built."""
    page = Page()

    def app():
        page.view = GridExplorer(dataset=open_grid(store))
        page.doc = pn.state.curdoc
        page.built.set()
        return page.view

    port = free_port()

    def make(loop: IOLoop):
        return get_server({"grid": app}, port=port, address="127.0.0.1",
                          websocket_origin=[f"127.0.0.1:{port}"], loop=loop, liveness=True,
                          start=False)

    with server_on_a_thread(make):
        yield from _held_open(f"http://127.0.0.1:{port}", page)


def _held_open(base: str, page: Page) -> Iterator[tuple[str, Page]]:
    """Yield ``(base, page)`` while a reader holds the page open."""
    stop = threading.Event()
    opened = threading.Event()
    connection = threading.Thread(target=asyncio.run, args=(hold_page(base, opened, stop),),
                                  daemon=True)
    connection.start()
    assert opened.wait(60) and page.built.is_set(), "the page did not open"
    yield base, page
    stop.set()
    connection.join(30)


async def hold_page(base: str, opened: threading.Event, stop: threading.Event) -> None:
    """A reader's browser: the page, its websocket and document, kept open until ``stop``."""
    client = AsyncHTTPClient(force_instance=True)
    try:
        html = (await client.fetch(f"{base}/grid", request_timeout=60)).body.decode()
    finally:
        client.close()
    token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
    # 60 s, as the page's own fetch: tornado's default 20 s was passed under two suites at once
    request = HTTPRequest(base.replace("http", "ws", 1) + "/grid/ws", headers={"Origin": base},
                          connect_timeout=60, request_timeout=60)
    connection = await websocket_connect(request, subprotocols=["bokeh", token])

    async def message() -> dict:
        header = json.loads(await connection.read_message())
        for _ in range(2 + 2 * header.get("num_buffers", 0)):
            await connection.read_message()
        return header

    await message()  # ACK
    for part in ({"msgid": "1", "msgtype": "PULL-DOC-REQ"}, {}, {}):
        await connection.write_message(json.dumps(part))
    await message()
    opened.set()
    while not stop.is_set():  # keep reading what the server sends (the page's updates)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connection.read_message(), 0.2)
    connection.close()
    while await asyncio.wait_for(connection.read_message(), 10) is not None:
        pass


def change(page: Page, **values) -> None:
    """Set the explorer's inputs on the server's loop, as a browser's message does."""
    def apply() -> None:
        with set_curdoc(page.doc):
            page.view.choices.param.update(**values)

    page.doc.add_next_tick_callback(apply)


def liveness_s(base: str) -> float:
    """Seconds ``/liveness`` takes to answer."""
    started = time.monotonic()
    with urllib.request.urlopen(f"{base}/liveness", timeout=30) as response:
        assert response.status == 200
    return time.monotonic() - started


def wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def slow_loads(monkeypatch, slow: Callable[[], bool], fail: bool = False) -> list[float]:
    """Make ``xarray.Dataset.load`` take :data:`SLOW_READ_S` (or raise) while ``slow()``;
    returns the list of times the slow reads started."""
    original = xr.Dataset.load
    started: list[float] = []

    def load(self, *args, **kwargs):
        if slow():
            started.append(time.monotonic())
            time.sleep(SLOW_READ_S)
            if fail:
                raise ValueError("chunk 0.0 decodes to 40 bytes, the metadata says 4000")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(xr.Dataset, "load", load)
    return started


def test_liveness_answers_while_a_grid_change_waits_for_its_read(served, monkeypatch):
    """Before: the slice was read in the input's callback, on the event loop, so
    ``/liveness`` waited the whole read (2 s here; minutes for a slow store)."""
    base, page = served
    assert page.view.choices.tp != 2
    slow = threading.Event()
    started = slow_loads(monkeypatch, slow.is_set)
    slow.set()
    change(page, tp=2)
    assert wait_for(lambda: bool(started), 10), "no read started"
    assert liveness_s(base) < 0.5
    assert wait_for(lambda: page.view._drawn is not None and page.view.choices.tp == 2
                    and page.view._slice[1]["tp"].item() == 2)
    slow.clear()
    assert not page.view.message.visible


def test_a_stale_read_never_overwrites_a_later_change(served, monkeypatch):
    """tp 2 (a slow read) then tp 8 (a quick one): tp 8 is drawn and stays drawn."""
    _, page = served
    first = threading.Event()
    first.set()

    def slow() -> bool:
        if first.is_set() and threading.current_thread() is not threading.main_thread():
            first.clear()
            return True
        return False

    started = slow_loads(monkeypatch, slow)
    change(page, tp=2)
    assert wait_for(lambda: bool(started), 10)
    change(page, tp=8)
    time.sleep(SLOW_READ_S + 1.0)  # the slow read has ended meanwhile
    assert wait_for(lambda: page.view._drawn is not None
                    and page.view._slice[1]["tp"].item() == 8)
    assert page.view.choices.tp == 8 and page.view._drawn == page.view._draw_key()


def test_a_failed_read_is_one_sentence(served, monkeypatch):
    _, page = served
    slow = threading.Event()
    slow.set()
    slow_loads(monkeypatch, slow.is_set, fail=True)
    change(page, tp=2)
    assert wait_for(lambda: page.view.message.visible)
    slow.clear()
    text = page.view._said
    assert text.startswith("The dataset is corrupt: a read of its variable ")
    assert "write it again with inference-lab sweep." in text
    assert text.count(". ") == 0 and "Traceback" not in text
