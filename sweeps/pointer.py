"""Replace a dataset in object storage without a rename: versions and a pointer written last.

Object stores have no atomic rename, but writing one small object is atomic (a reader gets the
old object or the new one, never a part). A dataset at ``URL`` is therefore laid out as::

    URL/inference-lab-pointer.json     {"format": …, "current": "versions/<id>", …}
    URL/versions/<id>/zarr.json …       each sweep's complete Zarr store, never changed again

A sweep writes a new version under a fresh ``<id>`` (UTC time, process id, random), finishes it
(checksums, root metadata), and only then writes the pointer naming it: until that one PUT, every
reader follows the pointer to the previous version. After the pointer moved, the version it
replaced is deleted, and so are versions no pointer ever named (sweeps killed before their
pointer) once they are :data:`ABANDONED_AFTER_S` old, so a live sweep's version is never
touched. Only names this module makes (``versions/<id>`` with an id of that shape, the pointer)
are ever deleted.

=========================================  =====================================================
a sweep killed …                            what readers see
=========================================  =====================================================
before or while writing its version         the previous version (the pointer did not move)
after the pointer moved, before cleanup     the new version; the old one is deleted by the next
                                            sweep's cleanup (it is named in ``replaced``)
=========================================  =====================================================

This module imports nothing heavy so a test can kill a process at any step.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from datetime import UTC, datetime

POINTER = "inference-lab-pointer.json"
"""The pointer object's name inside a dataset's prefix."""
VERSIONS = "versions"
"""The folder of a dataset's versions inside its prefix."""
FORMAT = "inference-lab dataset pointer 1"
"""The pointer's ``format``: a pointer this lab wrote says so."""
VERSION_ID = re.compile(r"\d{8}T\d{6}\d{6}Z-\d+-[0-9a-f]{8}")
"""A version id this module makes: ``<UTC time to the microsecond>Z-<pid>-<random>``."""
ABANDONED_AFTER_S = 24 * 3600.0
"""Age after which a version no pointer names is a killed sweep's, not a live one's (s)."""


def _step(name: str) -> None:
    """A point between two store operations of a sweep (``name`` says which).

    Does nothing; tests replace it to stop the process there, as a kill would.
    """


def new_version() -> str:
    """A fresh version id for this process."""
    now = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{now}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def version_time(version: str) -> float:
    """When ``version`` was started (seconds since the epoch)."""
    stamp = datetime.strptime(version.split("-", 1)[0], "%Y%m%dT%H%M%S%fZ")
    return stamp.replace(tzinfo=UTC).timestamp()


def version_path(version: str) -> str:
    """The version's folder relative to the dataset's prefix."""
    return f"{VERSIONS}/{version}"


def pointer_bytes(version: str, replaced: list[str]) -> bytes:
    """The pointer naming ``version`` (``replaced``: versions it supersedes, to delete)."""
    return json.dumps({"format": FORMAT, "current": version_path(version),
                       "replaced": [version_path(v) for v in replaced],
                       "written": datetime.now(UTC).isoformat(timespec="seconds")},
                      indent=1).encode()


def parse_pointer(raw: bytes) -> dict:
    """The pointer's content, checked; ValueError when it is not one this lab wrote."""
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("it is not a pointer this lab wrote")
    current = data.get("current")
    if not isinstance(current, str) or not current.startswith(f"{VERSIONS}/") \
            or not VERSION_ID.fullmatch(current.split("/", 1)[1]):
        raise ValueError("it names no version")
    replaced = data.get("replaced", [])
    if not isinstance(replaced, list) or not all(isinstance(r, str) for r in replaced):
        raise ValueError("its list of replaced versions is malformed")
    return data


def current_version(pointer: dict) -> str:
    """The version id the pointer names."""
    return pointer["current"].split("/", 1)[1]


def versions_to_delete(present: list[str], current: str, replaced: list[str],
                       now: float | None = None) -> list[str]:
    """Which of the ``present`` version ids to delete once the pointer names ``current``: every
    version it replaced, and versions no pointer named that are older than
    :data:`ABANDONED_AFTER_S` (a live sweep's version is younger)."""
    now = time.time() if now is None else now
    out = []
    for version in present:
        if version == current or not VERSION_ID.fullmatch(version):
            continue
        if version in replaced or now - version_time(version) > ABANDONED_AFTER_S:
            out.append(version)
    return out
