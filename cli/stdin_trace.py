"""``calc goodput --trace -``: the trace CSV read from standard input.

The bytes (at most :data:`~lab.limits.MAX_TRACE_BYTES`, one more to tell that a stream is too
long) go to a private temporary file that the ordinary loader reads, so a trace from a pipe
is checked exactly as a file is. Messages and the record name it ``standard input``, never the
temporary path.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lab.errors import LabInputError
from lab.limits import MAX_TRACE_BYTES

STDIN = "-"
"""The ``--trace`` value that means standard input."""
STDIN_NAME = "standard input"
"""What messages call a trace read from standard input."""


def _read_stdin() -> bytes:
    data = sys.stdin.buffer.read(MAX_TRACE_BYTES + 1)
    if len(data) > MAX_TRACE_BYTES:
        raise LabInputError(f"The trace on {STDIN_NAME} is larger than the "
                            f"{MAX_TRACE_BYTES:,} bytes the lab reads.")
    return data


@contextmanager
def trace_source(trace: str) -> Iterator[str]:
    """The path to load for ``--trace`` (standard input copied to a temporary file)."""
    if trace != STDIN:
        yield trace
        return
    with tempfile.TemporaryDirectory(prefix="inference-lab-") as folder:
        path = str(Path(folder) / "stdin.csv")
        Path(path).write_bytes(_read_stdin())
        try:
            yield path
        except LabInputError as exc:
            raise LabInputError(str(exc).replace(path, STDIN_NAME)) from None


def named_source(record: dict, trace: str, loaded_from: str) -> dict:
    """``record`` with the temporary copy of standard input named as the user gave it."""
    if trace != STDIN:
        return record
    inputs = {**record["inputs"], "trace": STDIN}
    note = record.get("trace_note")
    return {**record, "inputs": inputs,
            "trace_note": note.replace(loaded_from, STDIN_NAME) if note else note}
