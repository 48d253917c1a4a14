"""The server reads datasets from worker threads with one pool of dask threads (issue 38,
memory after a burst): dask's threaded scheduler otherwise starts a pool of cores + 4 threads
for each thread that reads, and they stay for the life of the process."""

from __future__ import annotations

import concurrent.futures
import threading

import dask
import numpy as np
import xarray as xr

from apps.ui.server import dask_threads


def read_on_threads(readers: concurrent.futures.ThreadPoolExecutor, count: int) -> None:
    """Load a small chunked dataset once on each of ``count`` threads of ``readers`` (threads
    that live on, as a server's page builder and grid readers do)."""
    data = xr.Dataset({"v": (("a", "b"), np.arange(4000.0).reshape(200, 20))}).chunk({"a": 2})
    together = threading.Barrier(count)

    def read() -> None:
        together.wait(10)  # each read on a thread of its own
        data.copy().load()

    for future in [readers.submit(read) for _ in range(count)]:
        future.result(30)


def test_reads_from_many_threads_share_one_pool_of_dask_threads(monkeypatch):
    """Before: three reading threads that live on kept 3 x (cores + 4) dask threads."""
    with dask.config.set(pool=None), concurrent.futures.ThreadPoolExecutor(3) as readers:
        monkeypatch.setattr(dask_threads, "_pool", None)
        pool = dask_threads.share_dask_threads()
        assert dask_threads.share_dask_threads() is pool
        together = threading.Barrier(3)
        for future in [readers.submit(together.wait, 10) for _ in range(3)]:
            future.result(30)  # the readers' own three threads have started
        before = threading.active_count()
        read_on_threads(readers, 3)
        assert threading.active_count() - before <= dask_threads.DASK_THREADS
        names = [t.name for t in threading.enumerate() if t.name.startswith("lab-dask")]
        assert 1 <= len(names) <= dask_threads.DASK_THREADS
