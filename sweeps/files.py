"""Files the lab writes: what it may replace, temporary names, and OS errors as one sentence.

The lab replaces a path only when it holds something the lab wrote (:func:`lab_written`):
a Zarr store carrying a grid's provenance, an export whose content says so, or a CSV export
the lab recorded (:mod:`sweeps.export_record`). Anything else (a folder of the user's files,
someone else's CSV, an export edited since) is refused before any work starts.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import threading
import uuid
from pathlib import Path

from sweeps import metadata as md

TMP_PREFIX = ".inference-lab-"
"""Start of every temporary name an export writes beside its target (hidden, ends ``.tmp``)."""
ZARR_META = "zarr.json"
"""Zarr v3 metadata file of a group or an array."""
PARQUET_MAGIC = b"PAR1"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
OS_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "part of the path is a file, not a folder",
    errno.EEXIST: "part of the path is a file, not a folder",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file size limit was reached",
    errno.EISDIR: "it is a folder",
    errno.ENOENT: "a folder on the path does not exist",
    errno.EIO: "the disk reported an input/output error",
}
"""Plain words for the OS errors a write can meet."""


def os_reason(exc: OSError) -> str:
    """Why an OS call failed, in plain words (no errno numbers, no paths)."""
    if exc.errno in OS_REASONS:
        return OS_REASONS[exc.errno]
    return (exc.strerror or type(exc).__name__).rstrip(".").lower()


def is_disk_error(exc: BaseException) -> bool:
    """True for an OS error from the file system (not a network or timeout error)."""
    return (isinstance(exc, OSError) and exc.errno is not None
            and not isinstance(exc, ConnectionError | TimeoutError))


def temporary_name(target: Path) -> Path:
    """A fresh hidden name beside ``target`` whose length does not depend on ``target``'s."""
    return target.parent / f"{TMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"


def lab_names() -> frozenset[str]:
    """Every coordinate and variable name a lab dataset can hold (all experiments)."""
    from sweeps.grid_kinds import GRIDS

    names: set[str] = set()
    for kind in GRIDS.values():
        names.update(rule.name for rule in (*kind.schema.axes, *kind.schema.constants))
        names.update(kind.units)
    from sweeps.conventions import CODE_SUFFIX, FLAG_VARIABLES, OLD_TEXT_SUFFIX

    for name in FLAG_VARIABLES:  # reason_code in CSV/Parquet (reason_text in earlier exports)
        names.update((f"{name}{CODE_SUFFIX}", f"{name}{OLD_TEXT_SUFFIX}"))
    return frozenset(names)


def _has_provenance(attrs) -> bool:
    return isinstance(attrs, dict) and md.ATTR_EXPERIMENT in attrs and md.ATTR_HASH in attrs


def _zarr_files_only(path: Path) -> set[str] | None:
    """The array names of a directory holding nothing but Zarr v3 files, else None."""
    arrays = set()
    for folder, _dirs, files in os.walk(path):
        rel = Path(folder).relative_to(path).parts
        for name in files:
            if (name == ZARR_META and len(rel) <= 1) or (name == "c" and len(rel) == 1):
                arrays.update(rel)  # a group's or array's metadata, a scalar's one chunk
                continue
            if len(rel) < 2 or rel[1] != "c":
                return None
    return arrays


def lab_zarr(path: Path) -> bool:
    """True when ``path`` is a Zarr store this lab wrote (a sweep's dataset or an export).

    Its files are only Zarr metadata and chunks, and its root metadata carries the grid's
    provenance; a store whose root metadata was damaged still counts when every array in it
    is named as a lab coordinate or variable.
    """
    if path.is_symlink() or not path.is_dir():
        return False
    arrays = _zarr_files_only(path)
    if arrays is None:
        return False
    try:
        meta = json.loads((path / ZARR_META).read_text(encoding="utf-8"))
        if _has_provenance(meta.get("attributes")):
            return True
    except (OSError, ValueError, AttributeError):
        pass
    return bool(arrays) and arrays <= lab_names()


def _lab_csv(path: Path) -> bool:
    """A CSV is the lab's only when its export was recorded and the file is unchanged since
    (:mod:`sweeps.export_record`): its header alone cannot tell, since a user's own CSV can
    use the lab's column names."""
    from sweeps.export_record import written_here

    return written_here(path)


def _lab_parquet(path: Path) -> bool:
    try:
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
    except Exception:  # any unreadable file is simply not ours
        return False
    return b"inference_lab" in meta


def _lab_netcdf(path: Path) -> bool:
    try:
        import h5py

        with h5py.File(path, "r") as handle:
            return _has_provenance(dict(handle.attrs))
    except Exception:  # any unreadable file is simply not ours
        return False


def lab_written(path: Path) -> bool:
    """True when ``path`` holds a dataset or an export this lab wrote (safe to replace)."""
    if path.is_symlink():
        return False
    if path.is_dir():
        return lab_zarr(path)
    if not path.is_file():
        return False
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(PARQUET_MAGIC):
        return _lab_parquet(path)
    if head == HDF5_MAGIC:
        return _lab_netcdf(path)
    return _lab_csv(path)


def remove(path: Path) -> bool:
    """Delete a temporary file or folder this process made, as far as the file system allows.

    Never raises: it runs while another error is reported (on a read-only file system even
    removing a name that was never created fails). True when nothing is left at ``path``.
    """
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            path.unlink()
    return not os.path.lexists(path)


def replace(new: Path, target: Path) -> None:
    """Move the finished ``new`` to ``target``; an existing ``target`` (checked by the caller
    with :func:`lab_written`) is removed only once ``new`` is in its place."""
    if not target.is_dir() or target.is_symlink():
        os.replace(new, target)
        return
    backup = temporary_name(target)
    target.rename(backup)
    try:
        new.rename(target)
    except BaseException:
        backup.rename(target)
        raise
    remove(backup)


@contextlib.contextmanager
def interrupt_on_terminate():
    """While inside, ``SIGTERM`` (``kill``, ``timeout``, a scheduler ending a job) interrupts
    the command as Ctrl-C does, so its temporary output is removed and it says "interrupted."
    (a sweep stopped so left a 3.5 GB temporary store beside its target until the next sweep
    there). A second ``SIGTERM`` while that cleanup runs is ignored, and the previous handler
    comes back on leaving (a notebook calling ``main`` keeps its own). Only the main thread may
    set a handler; elsewhere this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum, _frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup is not cut short
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def ignore_file_size_signal() -> None:
    """Past a file size limit (``ulimit -f``) make writes fail with ``EFBIG`` instead of the
    process being killed by ``SIGXFSZ``, so a partial output is removed and the error is one
    sentence (Python ignores the signal at start-up; this keeps it so in an embedding that
    restored it). Only the main thread may set a handler; elsewhere this does nothing."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
