"""Give the memory of closed sessions back to the operating system once a burst is over.

A page's session holds 5-10 MB (its Bokeh models, its charts' data). Measured after a burst of
sixty readers (``benchmarks/bench_burst.py``, 2026-12-06), every one of those Python objects is
freed (no document or session is left, the interpreter's allocated blocks are back at their
start), yet the server kept ~110 MB more than at its start, for two reasons:

- CPython's small-object allocator (``pymalloc``) holds memory in 1 MiB arenas and returns an
  arena only when every object in it is freed. A burst fills new arenas with its documents;
  a few hundred small objects made meanwhile that live on (timers, cache entries, weak
  references) pin most of them, so what stays is about the burst's *peak* of live documents
  (~80 of the ~110 MB). Bokeh kept a closed page's session 15-32 s, so twenty documents were
  alive at once; the server now discards a session :data:`LEFT_SESSION_LINGER_S` after its
  reader closed it (:func:`apps.ui.panel_compat.discard_left_sessions`), which lowers that
  peak and with it what stays.
- The C allocator (glibc's ``malloc``) keeps freed pages mapped for later. :func:`session_closed`
  (registered with ``pn.state.on_session_destroyed`` by ``apps/ui/views/serve_setup.py``) waits
  until no session has closed for :data:`QUIET_S`, then collects garbage once and asks the
  allocator to return its free pages (``malloc_trim(0)``; a no-op where the C library has no
  such call), and logs the resident memory before and after.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import time

QUIET_S = 3.0
"""Seconds without a closed session after which memory is returned."""
LEFT_SESSION_LINGER_S = 2.0
"""Seconds a session is kept after its last websocket closed (Bokeh's default: 15-32 s); a
page that loses its connection shows it and is opened again by reloading."""

_last_closed = 0.0
_pending = False
_closed_since_release = 0


def _trim_function():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _trim_function()


def resident_mb() -> float | None:
    """This process's resident memory, MB (None where ``/proc`` is not available)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        return None


def release_memory() -> None:
    """Collect garbage, then return the allocator's free pages to the operating system."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def session_closed(session_context) -> None:
    """A session was destroyed: release memory once no session has closed for
    :data:`QUIET_S` (one release per burst, run on the event loop between requests)."""
    global _last_closed, _pending, _closed_since_release
    _last_closed = time.monotonic()
    _closed_since_release += 1
    if _pending:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (a notebook, a test): nothing to schedule
        return
    _pending = True

    def check() -> None:
        global _pending, _closed_since_release
        quiet_for = time.monotonic() - _last_closed
        if quiet_for < QUIET_S:
            loop.call_later(QUIET_S - quiet_for, check)
            return
        _pending = False
        closed, _closed_since_release = _closed_since_release, 0
        before, started = resident_mb(), time.perf_counter()
        release_memory()
        after = resident_mb()
        if before is not None and after is not None:
            logging.getLogger("bokeh").info(
                "Inference Lab: %d closed sessions; memory returned in %.2f s "
                "(resident %.0f -> %.0f MB).", closed, time.perf_counter() - started,
                before, after)

    loop.call_later(QUIET_S, check)
