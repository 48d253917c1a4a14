"""The grid explorer's dataset reads, off the server's event loop (issue 38).

A reader's input change runs on the server's event loop, which also answers every other
reader's messages and ``/liveness``; a read of a dataset (a slice of a ``large`` store, a query
over all of it, the metadata of a folder on a slow disk) can take seconds. :class:`LatestReads`
runs such a read on one of :data:`READ_THREADS` worker threads and then hands its result to the
page in its session (document locked), only if no newer read of the same kind was asked
meanwhile: a slow, stale read never overwrites the answer to a later change. Built outside a
served page's callbacks (the page's first build, which the server already runs off the loop,
a notebook, a test) a read runs at once, where it is asked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import panel as pn
from panel.io.state import set_curdoc

from apps.ui.shell.busy import BusyNote
from lab.errors import LabInputError

T = TypeVar("T")

READ_THREADS = 2
"""Threads reading datasets for every page of a server process (a long query of one page
leaves the other thread to the rest)."""

_READERS = concurrent.futures.ThreadPoolExecutor(max_workers=READ_THREADS,
                                                 thread_name_prefix="lab-grid-read")
_SKIPPED = object()
"""What a read that was outdated before it started returns."""

log = logging.getLogger("bokeh")


def on_server_loop() -> bool:
    """Whether this runs in a served page's callback on the server's event loop, where a
    read must not run (False while the page is first built, in a notebook, in a test)."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LatestReads:
    """One page's reads, each of a kind (``"draw"``, ``"query"``, ``"open"``): the latest
    asked of a kind is the one whose result the page gets."""

    def __init__(self, busy: BusyNote) -> None:
        self.busy = busy
        self._asked: dict[str, int] = {}

    def latest(self, kind: str) -> int:
        """How many reads of ``kind`` were asked (the number of the latest)."""
        return self._asked.get(kind, 0)

    def drop(self, *kinds: str) -> None:
        """Reads of ``kinds`` under way are outdated: their results will not be applied (the
        page's dataset changed under them)."""
        for kind in kinds:
            if kind in self._asked:
                self._asked[kind] += 1

    def run(self, kind: str, read: Callable[[], T] | None, apply: Callable[[T], Any],
            fail: Callable[[LabInputError], Any]) -> None:
        """Read with ``read()`` (None: nothing to read) and give the result to ``apply``, or
        its sentence (a :class:`~lab.errors.LabInputError`) to ``fail``; the busy note shows
        meanwhile. On a served page's loop the read runs on a worker thread and ``apply`` or
        ``fail`` later in the page's session, unless another read of ``kind`` was asked
        since; elsewhere everything runs now."""
        number = self._asked[kind] = self.latest(kind) + 1
        self.busy.begin()
        if read is None or not on_server_loop():
            try:
                result = read() if read is not None else None
            except LabInputError as error:
                fail(error)
            else:
                apply(result)
            finally:
                pn.state.execute(self.busy.end, schedule=True)
            return
        doc = pn.state.curdoc

        def read_if_latest():
            return _SKIPPED if self.latest(kind) != number else read()

        future = asyncio.get_running_loop().run_in_executor(
            _READERS, contextvars.copy_context().run, read_if_latest)

        def deliver() -> None:  # in the page's session, document locked
            with set_curdoc(doc):
                try:
                    if self.latest(kind) != number:
                        return  # a later change asked for another read: this one is stale
                    error = future.exception()
                    if isinstance(error, LabInputError):
                        fail(error)
                    elif error is not None:
                        raise error
                    elif future.result() is not _SKIPPED:
                        apply(future.result())
                finally:
                    self.busy.end()

        def done(_future) -> None:  # on the loop
            if doc.session_context is None:
                return  # the page was closed meanwhile
            try:
                doc.add_next_tick_callback(deliver)
            except Exception as error:  # a document being destroyed takes no callback
                log.debug("Inference Lab: a grid read's result had no page to go to: %r",
                          error)

        future.add_done_callback(done)
