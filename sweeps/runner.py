"""Where a sweep's dask graph runs: the threaded scheduler, a local cluster, or a given one.

:func:`runner` yields a :class:`Runner` for a ``--scheduler`` value: ``None`` starts a local
``distributed`` cluster of ``workers`` single-threaded worker processes (closed afterwards);
``"threads"`` uses dask's threaded scheduler in this process (what first use of
:func:`lab.open_dataset` does: no cluster start-up); anything else is the address of a running
scheduler (``tcp://host:8786``), whose workers must see the output path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, redirect_stdout
from dataclasses import dataclass
from typing import Any

import dask

from lab.errors import LabInputError

CONNECT_TIMEOUT = "10s"
"""How long to try reaching a ``--scheduler`` address before giving up."""
LOCAL_SCHEDULERS = ("threads", "synchronous")
"""``--scheduler`` values that run in this process without ``distributed``."""


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
        Show a progress bar (``dask.diagnostics.ProgressBar`` in process,
        ``distributed.progress`` with a client), on standard error.
    """

    client: Any = None
    scheduler: str = "threads"
    progress: bool = False

    def compute(self, *collections) -> tuple:
        """Compute ``collections`` and return their results."""
        if self.client is None:
            from dask.diagnostics import ProgressBar

            bar = ProgressBar(out=sys.stderr) if self.progress else nullcontext()
            with bar:
                return dask.compute(*collections, scheduler=self.scheduler)
        futures = self.client.compute(list(collections))
        if self.progress:
            from distributed import progress

            with redirect_stdout(sys.stderr):
                progress(futures)
                sys.stderr.write("\n")
        return tuple(self.client.gather(futures))

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
        When ``workers`` is not positive or the scheduler address cannot be reached.
    """
    if workers is not None and workers < 1:
        raise LabInputError(f"--workers must be at least 1, not {workers}.")
    if workers is not None and scheduler is not None:
        raise LabInputError("--workers sizes the local cluster only; an existing scheduler "
                            "or 'threads' brings its own workers.")
    if scheduler in LOCAL_SCHEDULERS:
        yield Runner(None, scheduler, progress)
        return
    from distributed import Client, LocalCluster

    if scheduler is None:
        with LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                          processes=True, dashboard_address=":0") as cluster, \
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
