"""Where a sweep's dask graph runs: the threaded scheduler, a local cluster, or a given one.

:func:`runner` yields a :class:`Runner` for a ``--scheduler`` value: ``None`` starts a local
``distributed`` cluster of ``workers`` single-threaded worker processes (closed afterwards);
``"threads"`` uses dask's threaded scheduler in this process (what first use of
:func:`lab.open_dataset` does: no cluster start-up); anything else is the address of a running
scheduler (``tcp://host:8786``), whose workers must reach the output (a path they all see,
or an object store URL: :mod:`sweeps.remote_grid`).

On a cluster, losing every worker would leave the tasks waiting forever: when the scheduler
has had no worker for :data:`WORKER_LOSS_TIMEOUT_S`, the work is cancelled and
:class:`WorkersLostError` says so in one sentence.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import Any

import dask

from lab.errors import LabInputError
from lab.limits import MAX_LOCAL_WORKERS

CONNECT_TIMEOUT = "10s"
"""How long to try reaching a ``--scheduler`` address before giving up."""
LOCAL_SCHEDULERS = ("threads", "synchronous")
"""``--scheduler`` values that run in this process without ``distributed``."""
WORKER_LOSS_TIMEOUT_S = 30.0
"""Seconds a cluster may have no worker at all before the work is given up (s)."""
POLL_S = 0.25
"""How often the futures and the worker count are checked while a cluster computes (s)."""
BAR_WIDTH = 40
"""Characters of the progress bar."""
DRAIN_TIMEOUT_S = 60.0
"""After a failure, how long to wait for the workers to finish the tasks they had started
before cleaning up the output anyway (s)."""
WORKER_LOG_LEVEL = logging.CRITICAL
"""Log level of a local cluster's workers and scheduler: a failed task comes back as an
exception, reported once in one sentence, not as the workers' error logs and tracebacks."""


def _running_tasks(keys: set, dask_worker=None) -> list:
    """Which of ``keys`` the worker is executing now (run on every worker by ``Client.run``)."""
    return [ts.key for ts in dask_worker.state.executing if ts.key in keys]


class WorkersLostError(LabInputError):
    """Every worker of the cluster was lost (or kept dying) and the work cannot finish."""


class _TextBar:
    """A one-line progress bar on standard error: ``[####    ] | 50% Completed | 1.2s``."""

    def __init__(self, total: int):
        from sweeps.progress import PlainSteps, is_terminal

        self.total = max(total, 1)
        self.start = time.monotonic()
        self.plain = None if is_terminal() else PlainSteps()  # no \r into a file or a pipe

    def show(self, done: int) -> None:
        share = done / self.total
        filled = "#" * round(share * BAR_WIDTH)
        line = (f"[{filled:<{BAR_WIDTH}}] | {share:4.0%} Completed | "
                f"{time.monotonic() - self.start:.1f}s")
        if self.plain is None:
            sys.stderr.write(f"\r{line}")
        elif self.plain.due(round(share * 100)):
            sys.stderr.write(f"{line}\n")
        sys.stderr.flush()

    def close(self, done: int) -> None:
        self.show(done)
        self.end_line()

    def end_line(self) -> None:
        """End the bar's line on a terminal (a file or pipe gets whole lines already)."""
        if self.plain is None:
            sys.stderr.write("\n")


def _compute_on_own_threads(collections: tuple) -> tuple:
    """Compute ``collections`` on dask's threaded scheduler with a pool of this call's own (one
    thread per core, as dask gives the main thread), drained before returning or raising: after
    a task fails, dask raises at once while other tasks may still be writing their chunks, and
    the caller then removes the output they write into (a straggler would recreate it)."""
    from dask.system import CPU_COUNT
    from dask.threaded import ContextAwareThreadPoolExecutor

    pool = ContextAwareThreadPoolExecutor(max_workers=CPU_COUNT, thread_name_prefix="lab-sweep")
    try:
        return dask.compute(*collections, scheduler="threads", pool=pool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class Runner:
    """Computes dask collections on one scheduler, optionally with a progress bar.

    Attributes
    ----------
    client : distributed.Client or None
        The cluster's client, or None for an in-process scheduler.
    scheduler : str
        In-process scheduler name when ``client`` is None.
    progress : bool
        Show a progress bar on standard error (``dask.diagnostics.ProgressBar`` in process,
        a text bar of finished tasks with a client).
    """

    client: Any = None
    scheduler: str = "threads"
    progress: bool = False

    def compute(self, *collections) -> tuple:
        """Compute ``collections`` and return their results."""
        if self.client is None:
            from sweeps.progress import in_process_bar

            bar = in_process_bar() if self.progress else nullcontext()
            with bar:
                if self.scheduler in ("threads", "threading"):
                    return _compute_on_own_threads(collections)
                return dask.compute(*collections, scheduler=self.scheduler)
        from distributed import KilledWorker

        futures = self.client.compute(list(collections))
        try:
            self._wait(futures)
            return tuple(self.client.gather(futures))
        except BaseException as exc:
            self._stop(futures)
            if isinstance(exc, KilledWorker):
                raise WorkersLostError("Dask workers kept dying while running the same part "
                                       "of the work (out of memory?); it was stopped.") from None
            raise

    def _stop(self, futures: list) -> None:
        """After a failure: summarise the failed tasks (one line, with the progress bar),
        cancel the others and wait until no worker still runs one, so that nothing writes
        into the output once the caller cleans it up."""
        with suppress(Exception):  # the client or the cluster may be closing already
            failed = [f for f in futures if f.status == "error"]
            if failed and self.progress:
                first = failed[0].exception()
                sys.stderr.write(f"{len(failed)} of {len(futures)} tasks failed on the "
                                 f"workers (the first: {type(first).__name__}: {first}).\n")
            keys = {f.key for f in futures}
            self.client.cancel(futures)
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while time.monotonic() < deadline:
                running = self.client.run(_running_tasks, keys)
                if not any(running.values()):
                    return
                time.sleep(POLL_S)

    def _workers(self) -> int:
        return len(self.client.scheduler_info(n_workers=-1).get("workers", {}))

    def _wait(self, futures: list) -> None:
        """Wait for ``futures`` (drawing the bar), raising :class:`WorkersLostError` when the
        cluster has had no worker for :data:`WORKER_LOSS_TIMEOUT_S`."""
        from distributed import wait

        bar = _TextBar(len(futures)) if self.progress else None
        without_workers_since = None
        while True:
            try:
                wait(futures, timeout=POLL_S)
                break
            except TimeoutError:
                pass
            statuses = [f.status for f in futures]
            if "error" in statuses:
                if bar:
                    bar.end_line()
                break
            if bar:
                bar.show(statuses.count("finished"))
            if self._workers():
                without_workers_since = None
            elif without_workers_since is None:
                without_workers_since = time.monotonic()
            elif time.monotonic() - without_workers_since > WORKER_LOSS_TIMEOUT_S:
                if bar:
                    sys.stderr.write("\n")
                raise WorkersLostError(
                    f"Every Dask worker was lost and none joined within "
                    f"{WORKER_LOSS_TIMEOUT_S:g} s; the work was stopped.")
        if bar:
            bar.close(sum(f.status == "finished" for f in futures))

    @property
    def dashboard_link(self) -> str | None:
        """URL of the cluster's Dask dashboard, or None (in process, or no dashboard)."""
        return None if self.client is None else self.client.dashboard_link

    @property
    def description(self) -> str:
        """Where the work runs, for messages."""
        if self.client is None:
            return f"dask's {self.scheduler} scheduler in this process"
        workers = len(self.client.scheduler_info(n_workers=-1).get("workers", {}))
        return f"the Dask cluster at {self.client.scheduler.address} ({workers} workers)"


def default_workers() -> int:
    """Local worker processes by default: one per CPU, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


@contextmanager
def runner(scheduler: str | None = None, workers: int | None = None, *,
           progress: bool = False) -> Iterator[Runner]:
    """A :class:`Runner` for ``scheduler`` (see the module docstring), closed on exit.

    Raises
    ------
    LabInputError
        When ``workers`` is outside 1 to :data:`~lab.limits.MAX_LOCAL_WORKERS` or the
        scheduler address cannot be reached.
    """
    if workers is not None and workers < 1:
        raise LabInputError(f"--workers must be at least 1, not {workers}.")
    if workers is not None and workers > MAX_LOCAL_WORKERS:
        raise LabInputError(f"--workers is at most {MAX_LOCAL_WORKERS} worker processes of the "
                            f"local cluster, not {workers}.")
    if workers is not None and scheduler is not None:
        raise LabInputError("--workers sizes the local cluster only; an existing scheduler "
                            "or 'threads' brings its own workers.")
    if scheduler in LOCAL_SCHEDULERS:
        yield Runner(None, scheduler, progress)
        return
    from distributed import Client, LocalCluster

    if scheduler is None:
        with LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                          processes=True, dashboard_address=":0",
                          silence_logs=WORKER_LOG_LEVEL) as cluster, \
                Client(cluster) as client:
            yield Runner(client, progress=progress)
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise LabInputError(f"Could not connect to the Dask scheduler at '{scheduler}' "
                            f"({type(exc).__name__}); is `dask scheduler` running there?") \
            from None
    with client:
        yield Runner(client, progress=progress)
