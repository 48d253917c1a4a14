"""Give the memory of closed sessions back to the operating system once a burst is over.

A page's session holds a few MB (its Bokeh models, its charts' data). When sixty readers
leave, Python frees those objects, but the C allocator (glibc's ``malloc``) keeps most of the
freed pages mapped for later, so the server's resident memory stayed ~110 MB above its start
45 s after a burst. :func:`session_closed` (registered with ``pn.state.on_session_destroyed``
by ``apps/ui/views/serve_setup.py``) waits until no session has closed for :data:`QUIET_S`,
then collects garbage once and asks the allocator to return its free pages
(``malloc_trim(0)``; a no-op where the C library has no such call).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import time

QUIET_S = 3.0
"""Seconds without a closed session after which memory is returned."""

_last_closed = 0.0
_pending = False


def _trim_function():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _trim_function()


def release_memory() -> None:
    """Collect garbage, then return the allocator's free pages to the operating system."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def session_closed(session_context) -> None:
    """A session was destroyed: release memory once no session has closed for
    :data:`QUIET_S` (one release per burst, run on the event loop between requests)."""
    global _last_closed, _pending
    _last_closed = time.monotonic()
    if _pending:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (a notebook, a test): nothing to schedule
        return
    _pending = True

    def check() -> None:
        global _pending
        quiet_for = time.monotonic() - _last_closed
        if quiet_for < QUIET_S:
            loop.call_later(QUIET_S - quiet_for, check)
            return
        _pending = False
        started = time.perf_counter()
        release_memory()
        logging.getLogger("bokeh").debug("Inference Lab: memory released in %.2f s.",
                                         time.perf_counter() - started)

    loop.call_later(QUIET_S, check)
