"""Reading a file of measurements into a table: what experiments 9 and 11 share.

A file of measurements — shipped with the lab, uploaded, or named on the command line — is
untrusted: :class:`TableFile` reads its bytes (at most :data:`lab.limits.MAX_MEASUREMENT_BYTES`,
no NUL byte, UTF-8: :func:`checked_text`, which experiment 7's trace upload calls too) and its
CSV rows (a header naming the columns a kind of file needs, then at most ``max_rows`` rows of
as many cells), and the cell readers (:func:`whole_cell`, :func:`time_cell`) check one cell
each. Every problem is one
:class:`~lab.errors.LabInputError` sentence naming the file, the row and the column, e.g.
``Serving file a.csv, row 3, column isl: "x" is not a number.``. :func:`table_dataset` turns
the checked columns into a Dataset with a ``long_name`` (and ``units``) on every variable.
Experiment 9's loader is :mod:`lab.measured.measured_loader`, experiment 11's :mod:`lab.served.served_loader`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from lab.errors import LabInputError, shown
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.units import fmt_count
from lab.user_files import check_named, read_user_file

UPLOAD_NAME_CHARS = 80
"""Longest uploaded file name quoted in a sentence (characters; shortened, never opened)."""
PATH_NAME_CHARS = 200
"""Longest path on this machine quoted in a sentence (characters)."""


def upload_label(name: str) -> str:
    """An uploaded file's name as sentences quote it."""
    return shown(name, quoted=False, limit=UPLOAD_NAME_CHARS)


def own_source(label: str) -> str:
    """The ``source`` attribute of a table read from the reader's own file(s) ``label``."""
    return f"your measurements ({label})"


def checked_text(data: bytes, name: str, what: str, text_kind: str = "a text file",
                 max_bytes: int = MAX_MEASUREMENT_BYTES) -> str:
    """An untrusted file's bytes as text: at most ``max_bytes``, no NUL byte, UTF-8 (a BOM
    dropped). Each refusal is one sentence starting ``"{what} file {name}"``; ``text_kind`` is
    what a file holding NUL bytes is not ("a text CSV file")."""
    if len(data) > max_bytes:
        raise LabInputError(f"{what} file {name} is larger than the {max_bytes:,} bytes the "
                            "lab reads.")
    if b"\x00" in data:
        raise LabInputError(f"{what} file {name} is not {text_kind} (it holds NUL bytes).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LabInputError(f"{what} file {name} is not UTF-8 text.") from None


@dataclass(frozen=True)
class TableFile:
    """One kind of measurements file: how sentences name it and how much of it is read.

    ``what`` starts every sentence (``"Measurements"``: "Measurements file a.csv, row 2, …");
    ``text_kind`` is what a file holding NUL bytes is not ("a text CSV file").
    """

    what: str
    max_rows: int
    text_kind: str = "a text file"
    max_bytes: int = MAX_MEASUREMENT_BYTES

    def read_path(self, path: str | Path) -> tuple[bytes, str]:
        """The bytes of a file on this machine (a CLI path) and its name as sentences quote it."""
        check_named(path, self.what)
        path = Path(path)
        name = shown(str(path), quoted=False, limit=PATH_NAME_CHARS)
        return read_user_file(path, name, self.what, self.max_bytes), name

    def text(self, data: bytes, name: str) -> str:
        """The file's bytes as text: at most ``max_bytes``, no NUL byte, UTF-8 (a BOM dropped)."""
        return checked_text(data, name, self.what, self.text_kind, self.max_bytes)

    def rows(self, text: str, name: str,
             required: Callable[[list[str]], Iterable[str]]) -> Iterator[tuple[int, str, dict]]:
        """``(number, where, row)`` of every data row of one CSV's text, numbered from 1;
        ``where`` names the row as a spreadsheet shows it (the header's is row 1).

        Blank lines are skipped; the first other line is the header, ``required(header)`` the
        columns it must name. ``where`` starts the sentence about that row; ``row`` maps each
        header name to its cell (as written)."""
        header: list[str] | None = None
        count = 0
        try:
            reader = csv.reader(io.StringIO(text, newline=""))
            for cells in reader:
                if not any(cell.strip() for cell in cells):
                    continue
                if header is None:
                    header = [cell.strip() for cell in cells]
                    missing = [c for c in required(header) if c not in header]
                    if missing:
                        raise LabInputError(f"{self.what} file {name} lacks the "
                                            f"column{'s' if len(missing) > 1 else ''} "
                                            f"{', '.join(missing)}.")
                    continue
                count += 1
                # the row a spreadsheet shows it on (the header is row 1; a blank line is a
                # row), as a trace's sentences count
                where = f"{self.what} file {name}, row {reader.line_num}"
                if count > self.max_rows:
                    raise LabInputError(f"{self.what} file {name} has more than "
                                        f"{self.max_rows:,} rows, the most the lab reads.")
                if len(cells) != len(header):
                    raise LabInputError(f"{where}: it has {fmt_count(len(cells), 'value')} "
                                        f"where the header names {len(header)}.")
                yield count, where, dict(zip(header, cells, strict=True))
        except csv.Error as exc:
            raise LabInputError(f"{self.what} file {name} is not a readable CSV "
                                f"({shown(str(exc), quoted=False, limit=200)}).") from None
        if count == 0:
            raise LabInputError(f"{self.what} file {name} has no data rows; it needs a header "
                                "and at least one measurement.")


def _number(value: str, column: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise LabInputError(f"{where}, column {column}: {shown(value)} is not a number.") from None


def whole_cell(text: str, column: str, where: str, high: int, low: int = 1) -> int:
    """A whole number from ``low`` to ``high`` from one cell."""
    value = text.strip()
    number = _number(value, column, where)
    if not np.isfinite(number) or number != int(number) or not low <= number <= high:
        raise LabInputError(f"{where}, column {column}: {shown(value)} is not a whole number "
                            f"from {low} to {high:,}.")
    return int(number)


def time_cell(text: str, column: str, where: str, high: float, unit: str) -> float:
    """A time above 0 and at most ``high`` from one cell, in the cell's ``unit`` (µs, ms)."""
    value = text.strip()
    number = _number(value, column, where)
    if not np.isfinite(number) or not 0 < number <= high:
        raise LabInputError(f"{where}, column {column}: {shown(value)} is not a time above 0 "
                            f"and at most {high:,.0f} {unit}.")
    return number


def table_dataset(dim: str, size: int, variables: Mapping[str, tuple[str, str]],
                  values: Callable[[str], list], attrs: dict, *, text: Collection[str] = (),
                  floats: Collection[str] = ()) -> xr.Dataset:
    """Checked columns as a Dataset over ``dim`` (``0 … size − 1``).

    ``variables`` gives each variable's ``(long_name, units)`` in order (units "" for none),
    ``values(name)`` its ``size`` values; those named in ``text`` are strings, in ``floats``
    float64, every other int64."""
    data_vars = {}
    for name, (long_name, units) in variables.items():
        column = values(name)
        if name in text:
            array = np.array(column, dtype=object).astype(str)
        else:
            array = np.array(column, dtype=np.float64 if name in floats else np.int64)
        data_vars[name] = (dim, array, {"long_name": long_name, **({"units": units} if units
                                                                   else {})})
    return xr.Dataset(data_vars, coords={dim: np.arange(size, dtype=np.int64)}, attrs=attrs)
