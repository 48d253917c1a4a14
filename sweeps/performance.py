"""``inference-lab sweep --performance-report FILE``: Dask's HTML performance report of a sweep.

:func:`distributed.performance_report` records the task stream, worker profiles and bandwidth
of everything the client computes inside it and saves one standalone HTML file. It needs a
``distributed`` client, so it applies to the local cluster and ``--scheduler ADDRESS``, not to
``--scheduler threads``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.errors import LabInputError
from sweeps.runner import Runner


def checked_report_path(path: str | None, scheduler: str | None) -> Path | None:
    """``path`` as a :class:`~pathlib.Path`, or one sentence why a report cannot go there.

    Checked before any cluster starts: the scheduler must be a cluster, the folder must exist,
    and nothing may be at the path yet (a report never replaces a file of someone else's).
    """
    if path is None:
        return None
    from sweeps.runner import LOCAL_SCHEDULERS

    if scheduler in LOCAL_SCHEDULERS:
        raise LabInputError(f"--performance-report needs a Dask cluster (the default local "
                            f"cluster or --scheduler ADDRESS), not --scheduler {scheduler}.")
    target = Path(path).expanduser()
    if target.is_dir():
        raise LabInputError(f"--performance-report {path} is a folder; give a file name such "
                            "as sweep-report.html.")
    if target.exists() or target.is_symlink():
        raise LabInputError(f"--performance-report {path} already exists and is not replaced; "
                            "give a new file name.")
    if not target.parent.is_dir():
        raise LabInputError(f"--performance-report {path}: the folder {target.parent} does "
                            "not exist.")
    return target


@contextmanager
def performance_report(path: Path | None, run: Runner) -> Iterator[None]:
    """Record a Dask performance report of the work done inside into ``path`` (None: none)."""
    if path is None or run.client is None:
        yield
        return
    from distributed import performance_report as dask_report

    with dask_report(filename=str(path)):
        yield
