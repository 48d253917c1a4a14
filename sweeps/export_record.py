"""The CSV exports this lab wrote, so that a later export replaces them and nothing else.

Parquet, NetCDF and Zarr exports carry the lab's provenance inside them
(:func:`sweeps.files.lab_written`); a CSV carries nothing but its header, and a user's own CSV
can use the lab's column names (``model,batch,step_time_s``). So each CSV export is recorded
once it is in place: its resolved path with the file's size, modification time (ns) and inode.
A CSV at a path is the lab's only while the record holds that path with the same three: an
edit, a copy over it or a ``touch`` changes one of them, and the file is then the user's.

The record is one small JSON file in the user's state directory
(:func:`platformdirs.user_state_dir`: ``~/.local/state/inference-lab/exports.json`` on Linux,
``$XDG_STATE_HOME`` honoured). Losing it (another machine, a cleaned home, two exports
recording at the same instant) costs only a refusal: the next export to that path is told to
choose another name. Nothing is ever replaced on a guess.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path

MAX_ENTRIES = 10_000
"""Most exports remembered; the oldest are forgotten first (their files then count as the
user's)."""
MAX_RECORD_BYTES = 4 * 2**20
"""Largest record read, bytes (a larger file is not the lab's record and is ignored)."""
FILE_NAME = "exports.json"


def record_path() -> Path:
    """Where the record of CSV exports lives (the user's state directory)."""
    from platformdirs import user_state_dir

    return Path(user_state_dir("inference-lab", appauthor=False)) / FILE_NAME


def _fingerprint(path: Path) -> list[int] | None:
    """``[size, mtime_ns, inode]`` of the regular file at ``path`` (not a link), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _key(path: Path) -> str:
    return str(Path(os.path.abspath(path)).resolve())


def _read() -> dict[str, list[int]]:
    """The record, or an empty one when it is missing, too large or not the lab's JSON."""
    try:
        with open(record_path(), "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
        entries = json.loads(data) if len(data) <= MAX_RECORD_BYTES else {}
    except (OSError, ValueError):
        return {}
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items()
            if isinstance(k, str) and isinstance(v, list) and len(v) == 3
            and all(isinstance(x, int) for x in v)}


def remember(path: Path) -> None:
    """Record the CSV this lab has just written at ``path``. Never raises: an export whose
    record could not be kept is complete; only its later replacement is refused."""
    fingerprint = _fingerprint(path)
    if fingerprint is None:
        return
    with contextlib.suppress(OSError):
        entries = _read()
        entries.pop(_key(path), None)
        entries[_key(path)] = fingerprint
        while len(entries) > MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        target = record_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{FILE_NAME}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text(json.dumps(entries), encoding="utf-8")
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()


def changed_since(path: Path) -> bool:
    """True when ``path`` is a CSV this lab exported that has changed since (edited, or
    replaced by another file): the reader's now."""
    recorded = _read().get(_key(path))
    return recorded is not None and _fingerprint(path) != recorded


def written_here(path: Path) -> bool:
    """True when ``path`` is a CSV this lab exported and nobody has changed since."""
    fingerprint = _fingerprint(path)
    return fingerprint is not None and _read().get(_key(path)) == fingerprint
