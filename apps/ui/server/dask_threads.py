"""One pool of dask threads for the whole server process.

Reading a dataset's chunks (``xarray``'s ``.load()``) and the grid explorer's queries
(:mod:`sweeps.query`) run on dask's threaded scheduler, which keeps one pool of threads *per
calling thread*: from the main thread, one thread per core; from any other thread, a pool of its
own of cores + 4 threads. On a server the reads are made by worker threads (the page builder,
the grid explorer's reading threads), so a burst of readers started six more threads per such
thread, each with its own stack and C-allocator arena, which stayed for the life of the
process (measured on 2 cores: 9 threads at start, 18 after the first burst).
:func:`share_dask_threads` gives every caller the same pool of :data:`DASK_THREADS` threads.
"""

from __future__ import annotations

import concurrent.futures
import os

import dask
from dask.threaded import ContextAwareThreadPoolExecutor

DASK_THREADS = os.cpu_count() or 1
"""Threads of the shared pool: one per core, as dask gives the main thread."""

_pool: concurrent.futures.ThreadPoolExecutor | None = None


def share_dask_threads() -> concurrent.futures.ThreadPoolExecutor:
    """Make dask's threaded scheduler use one pool of :data:`DASK_THREADS` threads for every
    calling thread (process-wide, through dask's ``pool`` setting; idempotent)."""
    global _pool
    if _pool is None:
        _pool = ContextAwareThreadPoolExecutor(max_workers=DASK_THREADS,
                                               thread_name_prefix="lab-dask")
        dask.config.set(pool=_pool)
    return _pool
