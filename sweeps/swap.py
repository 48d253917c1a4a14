"""Replace a dataset folder by a finished one, and recover from a writer killed at any instant.

A writer builds the new store under ``<target>.tmp-<writer>-<random>`` beside the target, then
:func:`swap_into_place` moves the old store aside (``.old-``), the new one into place, and the
old one to the bin (``.del-``) before deleting it. Every name carries its writer (process id
and start time), so a leftover can be told from the work of a live process even when the
process id was reused (a container restarted). Each step is one rename; a kill between two
of them leaves one of four states, and :func:`recover` turns each into "the target holds the
old or the new store":

=====================================  ===========================================
left behind by a dead writer            recovery
=====================================  ===========================================
``.tmp-`` (finished or not)             deleted (it never was the dataset)
``.old-`` and no target                 renamed back to the target (the old store)
``.old-`` and a target                  moved to the bin, then deleted (the new store is in place)
``.del-``                               deleted (only ever an old store already replaced)
=====================================  ===========================================

Recovery only renames and deletes: it never computes a dataset and never touches a target
that exists. This module imports nothing heavy so a test can kill a process at any step.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

TMP_MARK = ".tmp-"
"""A store being written."""
OLD_MARK = ".old-"
"""The previous store, moved aside while the new one is renamed into place."""
BIN_MARK = ".del-"
"""A replaced store being deleted (never restored)."""


def _step(name: str) -> None:
    """A point between two file operations of a swap or a recovery (``name`` says which).

    Does nothing; tests replace it to stop the process there, as a kill would.
    """


def _start_stamp(pid: int) -> str | None:
    """When process ``pid`` started, in hundredths of a second since the epoch (None if it
    is gone): with the process id, names a writer even across process id reuse."""
    import psutil

    try:
        return str(round(psutil.Process(pid).create_time() * 100))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def writer_path(target: Path, mark: str) -> Path:
    """A fresh name beside ``target`` for this process: ``<name><mark><pid>-<start>-<random>``."""
    pid = os.getpid()
    return target.with_name(f"{target.name}{mark}{pid}-{_start_stamp(pid)}-{uuid.uuid4().hex[:8]}")


def writer_alive(pid: int, stamp: str | None) -> bool:
    """Whether the writer (process ``pid``, started at ``stamp`` when the name records it) runs."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
    return stamp is None or _start_stamp(pid) == stamp


def leftovers(target: Path, mark: str, *, dead_only: bool = True) -> list[Path]:
    """Paths beside ``target`` named with ``mark`` (by writers no longer running unless
    ``dead_only`` is false), oldest first."""
    found = []
    for path in target.parent.glob(f"{target.name}{mark}*"):
        parts = path.name[len(target.name) + len(mark):].split("-")
        try:
            pid = int(parts[0])
        except ValueError:
            continue
        stamp = parts[1] if len(parts) >= 3 else None  # names before stamps: <pid>-<random>
        if not dead_only or not writer_alive(pid, stamp):
            found.append(path)
    return sorted(found, key=_mtime)


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _discard(path: Path, target: Path) -> None:
    """Delete ``path``, an old store of ``target``: renamed to the bin first, so a kill
    half-way leaves a name recovery deletes, never one it would restore."""
    _step("bin")
    binned = writer_path(target, BIN_MARK)
    path.rename(binned)
    _step("delete")
    shutil.rmtree(binned, ignore_errors=True)


def swap_into_place(tmp: Path, target: Path) -> None:
    """Move the finished store ``tmp`` to ``target``; the old ``target`` (checked by the
    caller as one this lab wrote) is deleted only once ``tmp`` is in its place."""
    backup = None
    if target.exists():
        backup = writer_path(target, OLD_MARK)
        _step("aside")
        target.rename(backup)
    try:
        _step("in place")
        tmp.rename(target)
    except BaseException:
        if backup is not None:
            backup.rename(target)
        raise
    if backup is not None:
        _discard(backup, target)


def recover(target: Path) -> None:
    """Undo what writers killed mid-write left beside ``target`` (see the module docstring):
    afterwards ``target`` holds the old or the new store, or nothing if it held nothing.

    Safe to run at any time and to be killed at any instant (the next run finishes the work);
    the work of live writers is left alone.
    """
    for path in leftovers(target, BIN_MARK) + leftovers(target, TMP_MARK):
        _step("delete")
        shutil.rmtree(path, ignore_errors=True)
    backups = leftovers(target, OLD_MARK)
    if backups and not target.exists():
        _step("restore")
        backups.pop().rename(target)  # the newest: the last store that was in place
    for path in backups:
        _discard(path, target)


def has_leftovers(target: Path) -> bool:
    """Whether anything a writer leaves beside ``target`` is there (live writers included)."""
    return any(next(target.parent.glob(f"{target.name}{mark}*"), None) is not None
               for mark in (TMP_MARK, OLD_MARK, BIN_MARK))
