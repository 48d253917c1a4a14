"""Files the lab ships inside its package, found with :mod:`importlib.resources`.

The default trace of experiment 7 is authored in the repository as
``datasets/traces/default.csv`` (by ``datasets/traces/make_default_trace.py``, which writes
the packaged copy ``lab/data/default_trace.csv`` too). A clone or an editable install reads
the repository file; a wheel install has no repository, so it reads the packaged copy. The
two are byte-identical (``tests/serving/test_shipped_files.py``), so a dataset's trace
checksum is the same either way.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib.resources import as_file, files
from pathlib import Path

REPO_TRACE = Path(__file__).resolve().parents[1] / "datasets" / "traces" / "default.csv"
"""The authored trace in a source tree (absent in a wheel install)."""
PACKAGED_TRACE = ("data", "default_trace.csv")
"""Where the packaged copy of the trace lives inside the ``lab`` package."""

_extracted = ExitStack()
atexit.register(_extracted.close)


def packaged_file(*parts: str) -> Path:
    """A file of the ``lab`` package as a filesystem path.

    An ordinary install gives the file itself; a zipped install (a zipapp or an egg) gives a
    temporary copy that lives until the interpreter exits.
    """
    resource = files("lab").joinpath(*parts)
    if isinstance(resource, Path):
        return resource
    return _extracted.enter_context(as_file(resource))


def default_trace() -> Path:
    """The shipped trace of experiment 7: the repository's file, else the packaged copy."""
    return REPO_TRACE if REPO_TRACE.is_file() else packaged_file(*PACKAGED_TRACE)
