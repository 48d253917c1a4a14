"""Event loops apart from the test's thread: a server running in the test's own process on a
thread with its own loop, and a coroutine run to its end on a thread of its own (the browser
tests' sync Playwright keeps a loop running in the main thread, where ``asyncio.run`` fails)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from tornado.ioloop import IOLoop


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def server_on_a_thread(make: Callable[[IOLoop], Any]) -> Iterator[None]:
    """Start the server ``make(loop)`` returns (not yet started; anything with ``start()`` and
    ``stop()``, e.g. a Bokeh ``Server``) on a daemon thread's new event loop; on exit stop it
    and end the thread."""
    ready = threading.Event()
    running: dict = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        server = make(IOLoop.current())
        server.start()
        running["loop"] = loop
        ready.set()
        loop.run_forever()
        server.stop()
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "the server did not start"
    try:
        yield
    finally:
        running["loop"].call_soon_threadsafe(running["loop"].stop)
        thread.join(30)


def run_apart(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """The result of ``coroutine`` run to its end on a new event loop in a thread of its own."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
