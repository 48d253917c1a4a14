"""Checks of a dataset kept in a local folder before and while it is read (issue 38 item 2).

A datasets folder may hold what its operator, or anyone who can write to it, left there. So a
local store is read only when every entry inside it is a regular file or a folder (no symbolic
link, FIFO, device or socket: a FIFO blocks the reader that opens it until someone writes to
it), every file read is opened without following a link and without blocking, and its size is
bounded; and before Zarr reads a chunk, each array's metadata must claim chunks of at most
:data:`MAX_CHUNK_BYTES` decoded and coordinates of at most :data:`MAX_COORDINATE_VALUES`
values (a 48 KB chunk that claims ``[2000000, 20, 5]`` float64 values decodes to 1.6 GB).

Each check raises :class:`LocalStoreError` with the detail of a sentence; :mod:`sweeps.store`
turns it into its one sentence (:func:`sweeps.store.corrupt`). Only local paths come here.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from lab.units import MIB

MAX_CHUNK_BYTES = 256 * MIB
"""Largest chunk a store may claim, decoded, bytes (the ``large`` preset's are 4 MB)."""
MAX_FILE_BYTES = MAX_CHUNK_BYTES + MIB
"""Largest file of a store read, bytes (a compressed chunk is at most about its decoded size)."""
MAX_METADATA_BYTES = 64 * MIB
"""Largest metadata file (``zarr.json``) read, bytes (the root one lists every file's checksum:
about 100 bytes per file)."""
MAX_COORDINATE_VALUES = 10_000_000
"""Most values a coordinate may claim (the ``large`` preset's longest axis has 1,024)."""
META = "zarr.json"


class LocalStoreError(ValueError):
    """What is wrong with a local store, as the detail of a sentence (no path in it)."""


def read_regular_file(path: Path, limit: int, key: str) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``); ``key`` names it in the
    problem. Never follows a symbolic link and never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        if os.path.islink(path):
            raise LocalStoreError(f"its file {key} is a symbolic link, which the lab does "
                                    "not follow") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LocalStoreError(f"its file {key} is not a regular file")
        if info.st_size > limit:
            raise LocalStoreError(f"its file {key} holds {info.st_size / MIB:,.0f} MiB, more "
                                    f"than the {limit // MIB} MiB the lab reads")
        with os.fdopen(fd, "rb", closefd=True) as file:
            fd = -1
            return file.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def check_entries(store: Path) -> None:
    """Every entry inside ``store`` is a regular file or a folder (no link, FIFO, device or
    socket). Reads directory entries only (no file is opened)."""
    stack = [store]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                key = os.path.relpath(entry.path, store)
                if entry.is_symlink():
                    raise LocalStoreError(f"its file {key} is a symbolic link, which the lab "
                                            "does not follow")
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif not entry.is_file(follow_symlinks=False):
                    raise LocalStoreError(f"its file {key} is not a regular file")


def check_chunk_file(store: Path, key: str) -> None:
    """The file ``key`` of ``store``, about to be read, is a regular file of at most
    :data:`MAX_FILE_BYTES` (a missing one is left to the reader)."""
    try:
        info = os.lstat(store / key)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise LocalStoreError(f"its file {key} is a symbolic link, which the lab does not "
                                "follow")
    if not stat.S_ISREG(info.st_mode):
        raise LocalStoreError(f"its file {key} is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise LocalStoreError(f"its file {key} holds {info.st_size / MIB:,.0f} MiB, more than "
                                f"the {MAX_FILE_BYTES // MIB} MiB the lab reads")


def check_arrays(store: Path) -> None:
    """Each array of ``store`` (a folder with a ``zarr.json`` beside the root's) claims chunks
    of at most :data:`MAX_CHUNK_BYTES` decoded, and a coordinate (an array named as its one
    dimension) at most :data:`MAX_COORDINATE_VALUES` values."""
    with os.scandir(store) as entries:
        folders = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    for name in folders:
        if not os.path.lexists(store / name / META):
            continue
        key = f"{name}/{META}"
        try:
            meta = json.loads(read_regular_file(store / name / META, MAX_METADATA_BYTES, key))
        except ValueError as error:
            if isinstance(error, LocalStoreError):
                raise
            raise LocalStoreError(f"its file {key} is not JSON") from None
        if not isinstance(meta, dict) or meta.get("node_type") != "array":
            continue
        shape, chunks = meta.get("shape"), _chunk_shape(meta)
        itemsize = _itemsize(meta.get("data_type"))
        if not _whole_numbers(shape) or not _whole_numbers(chunks) or len(shape) != len(chunks):
            raise LocalStoreError(f"its array {name} has a malformed shape or chunk shape")
        dims = meta.get("dimension_names") or []
        if len(shape) == 1 and dims == [name] and shape[0] > MAX_COORDINATE_VALUES:
            raise LocalStoreError(f"its coordinate '{name}' claims {shape[0]:,} values, more "
                                    f"than the {MAX_COORDINATE_VALUES:,} the lab reads")
        decoded = math.prod(chunks) * itemsize
        if decoded > MAX_CHUNK_BYTES:
            raise LocalStoreError(f"its variable '{name}' claims chunks of "
                                    f"{decoded / MIB:,.0f} MiB each when decoded, more than the "
                                    f"{MAX_CHUNK_BYTES // MIB} MiB the lab reads")


def _chunk_shape(meta: dict) -> object:
    grid = meta.get("chunk_grid")
    if isinstance(grid, dict) and isinstance(grid.get("configuration"), dict):
        return grid["configuration"].get("chunk_shape")
    return None


def _whole_numbers(values: object) -> bool:
    return isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)


def _itemsize(data_type: object) -> int:
    """Bytes per value of a Zarr v3 data type (8 for one not known here: the dearest kind)."""
    digits = "".join(c for c in str(data_type) if c.isdigit())
    return max(1, int(digits) // 8) if digits and int(digits) <= 128 else 8
