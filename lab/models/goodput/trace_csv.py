"""Read a trace CSV into its four required columns as text, fast when the file is plain.

A plain file — UTF-8, no quotes, no NUL, ``\\n`` or ``\\r\\n`` line ends, every row as wide as
the header — is split by pyarrow's multi-threaded CSV reader (about 0.1 s for a million rows).
Anything else is read by Python's :mod:`csv` module row by row, which knows every dialect
detail the fast path skips and finds the first row that is too short. Both give the same
:class:`TraceCells`: the request ids stripped, the other three columns as text, one entry per
non-blank row (a row is blank when every cell is), in file order.

Every problem is one :class:`~lab.errors.LabInputError` sentence naming the file.
"""

from __future__ import annotations

import codecs
import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from lab.errors import LabInputError, shown
from lab.limits import MAX_TRACE_BYTES, MAX_TRACE_REQUESTS
from lab.user_files import check_named, read_user_file

COLUMNS = ("request_id", "arrival_s", "prompt_tokens", "output_tokens")
"""Required columns, in the order the shipped traces use."""

NUMBER_COLUMNS = COLUMNS[1:]
"""The required columns that hold numbers."""
_CHECK_BYTES = 1 << 20
"""Bytes decoded at a time when checking that a file is UTF-8."""

_BOM = b"\xef\xbb\xbf"
PLAIN_TEXT = r"^[!-~]+$"
"""Cells of printable ASCII without spaces: nothing to strip (checked without Python strings)."""


def stripped(column: pa.Array) -> pa.Array:
    """``column`` with each cell stripped as Python's ``str.strip`` does."""
    if not len(column) or pc.all(pc.match_substring_regex(column, PLAIN_TEXT)).as_py():
        return column
    return pa.array([cell.strip() for cell in column.to_pylist()], pa.string())


@dataclass(frozen=True)
class TraceCells:
    """The required cells of a trace's data rows (blank rows left out), as text.

    Attributes
    ----------
    ids : pyarrow.Array
        ``request_id`` of each row (strings), stripped of surrounding whitespace.
    numbers : dict
        ``arrival_s``, ``prompt_tokens`` and ``output_tokens`` as pyarrow string arrays.
    header_width : int
        Columns the header names.
    short_row : tuple of int, or None
        ``(row, values)`` of the first row with fewer values than the header, where ``row``
        counts data rows from 0; the rows from it on are not read.
    """

    ids: pa.Array
    numbers: dict
    header_width: int
    short_row: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def row_text(self, row: int) -> dict[str, str]:
        """The three number cells of data row ``row`` as Python strings."""
        return {col: self.numbers[col][row].as_py() for col in NUMBER_COLUMNS}


def _checked_header(header: list[str], name: str) -> dict[str, int]:
    """Index of each required column in ``header`` (its first occurrence)."""
    missing = [col for col in COLUMNS if col not in header]
    if missing:
        raise LabInputError(f"Trace file {name} lacks the "
                            f"column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
                            f"the header must name {','.join(COLUMNS)}.")
    return {col: header.index(col) for col in COLUMNS}


def _too_many(name: str) -> LabInputError:
    return LabInputError(f"Trace file {name} has more than {MAX_TRACE_REQUESTS:,} requests, "
                         "the most the lab simulates.")


def _empty(name: str) -> LabInputError:
    return LabInputError(f"Trace file {name} is empty; it needs the header "
                         f"{','.join(COLUMNS)} and at least one request.")


def _fast_cells(data: bytes, name: str) -> TraceCells | None:
    """The cells via pyarrow, or None when the file is not plain enough for it."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    if b'"' in data or b"\x00" in data or data.count(b"\r") != data.count(b"\r\n"):
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(data), _CHECK_BYTES):  # in pieces: no copy of the whole file
            decoder.decode(data[at:at + _CHECK_BYTES])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    header = [cell.strip() for cell in data[start:end].decode().rstrip("\r").split(",")]
    if not any(header):
        return None  # blank lines before the header: the csv module skips them exactly
    index = _checked_header(header, name)
    names = [f"f{i}" for i in range(len(header))]
    try:
        table = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)[end + 1:]),
            # One thread: on a busy or small machine it is faster, and it holds ~30 MB less.
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(quote_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                include_columns=sorted({names[i] for i in index.values()}),
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):  # a short or long row: the csv module decides
        return None
    if table.num_rows > MAX_TRACE_REQUESTS:
        raise _too_many(name)
    ids = stripped(table.column(names[index["request_id"]]).combine_chunks())
    numbers = {col: table.column(names[index[col]]).combine_chunks() for col in NUMBER_COLUMNS}
    del table
    no_id = np.flatnonzero(pc.equal(ids, "").to_numpy(zero_copy_only=False))
    blank = [row for row in no_id.tolist()
             if not any(numbers[col][row].as_py().strip() for col in NUMBER_COLUMNS)]
    if blank:
        if len(set(index.values())) < len(header):
            return None  # a blank row must be blank in the other columns too
        keep = np.ones(len(ids), dtype=bool)
        keep[blank] = False
        mask = pa.array(keep)
        ids = ids.filter(mask)
        numbers = {col: values.filter(mask) for col, values in numbers.items()}
    return TraceCells(ids, numbers, len(header))


def _csv_cells(data: bytes, name: str) -> TraceCells:
    """The cells via Python's csv module, row by row (any dialect detail, any error)."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    header: list[str] | None = None
    index: dict[str, int] = {}
    ids: list[str] = []
    numbers: dict[str, list[str]] = {col: [] for col in NUMBER_COLUMNS}
    short_row = None
    try:
        for row in csv.reader(text):
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip() for cell in row]
                index = _checked_header(header, name)
                continue
            if len(row) < len(header):
                short_row = (len(ids), len(row))
                break
            if len(ids) >= MAX_TRACE_REQUESTS:
                raise _too_many(name)
            ids.append(row[index["request_id"]].strip())
            for col in NUMBER_COLUMNS:
                numbers[col].append(row[index[col]])
    except (csv.Error, UnicodeDecodeError) as exc:
        detail = (f"a cell is longer than {csv.field_size_limit():,} characters"
                  if "field larger than field limit" in str(exc)
                  else shown(str(exc), quoted=False, limit=200))
        raise LabInputError(f"Trace file {name} is not a readable CSV ({detail}).") from None
    if header is None:
        raise _empty(name)
    return TraceCells(pa.array(ids, pa.string()), {col: pa.array(values, pa.string())
                                                   for col, values in numbers.items()},
                      len(header), short_row)


def read_cells(path: str | Path) -> TraceCells:
    """The required cells of the trace CSV at ``path``.

    Raises
    ------
    LabInputError
        A missing, unreadable, irregular or oversized file, a file that is not UTF-8 CSV, no
        header, a header without the required columns, more than
        :data:`~lab.limits.MAX_TRACE_REQUESTS` rows.
    """
    check_named(path, "Trace")
    path = Path(path)
    name = str(path)
    data = read_user_file(path, name, "Trace", MAX_TRACE_BYTES)
    if b"\x00" in data:  # before any parse (900 MB of NULs cost 8.7 s and 2.9 GB to refuse)
        raise LabInputError(f"Trace file {name} is not a text CSV file (it holds NUL bytes).")
    cells = _fast_cells(data, name)
    return cells if cells is not None else _csv_cells(data, name)
