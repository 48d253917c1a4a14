"""Request traces for experiment 7: a CSV of arrivals and token counts, validated.

A trace file has the header ``request_id,arrival_s,prompt_tokens,output_tokens`` (extra
columns are ignored). Every problem is one :class:`~lab.errors.LabInputError` sentence naming
the file, the row (counting the non-blank rows, header = row 1) and the column. Arrivals out
of order are sorted (ties by request id) and :attr:`Trace.note` says so.

Loading is vectorised (:mod:`lab.models.goodput.trace_csv` splits the file with pyarrow; the checks
run on whole columns) so a million-row trace loads in about a second; the first bad row is
then checked cell by cell to word its message. Limits: arrivals up to
:data:`~lab.limits.MAX_ARRIVAL_S` s, token counts up to :data:`~lab.limits.MAX_REQUEST_TOKENS`,
at most :data:`~lab.limits.MAX_TRACE_REQUESTS` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lab.errors import LabInputError, shown
from lab.limits import MAX_ARRIVAL_S, MAX_REQUEST_TOKENS
from lab.models.goodput.trace_csv import COLUMNS, TraceCells, read_cells
from lab.units import fmt_count

__all__ = ["COLUMNS", "Trace", "load_trace", "make_trace"]

PLAIN_DECIMAL = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
"""Number text that pyarrow and Python's ``float`` read identically (pyarrow is used for it)."""
PLAIN_ID = r"^[0-9]{1,18}$"
"""Request ids that are integers fitting int64 (sorted as numbers without Python's ``int``)."""


@dataclass(frozen=True)
class Trace:
    """Requests sorted by arrival (ties by request id).

    Attributes
    ----------
    id_column : pyarrow.Array or tuple of str
        Request ids as written in the file (a compact column; :attr:`ids` as Python strings).
    arrival_s : numpy.ndarray
        Arrival times, seconds (float64, non-decreasing).
    prompt_tokens, output_tokens : numpy.ndarray
        Token counts (int64, ≥ 1).
    source : str
        Where the trace came from (a path, or ``"<memory>"``).
    note : str or None
        A sentence when the rows had to be sorted, else None.
    """

    id_column: pa.Array | tuple
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "<memory>"
    note: str | None = None

    @cached_property
    def ids(self) -> tuple[str, ...]:
        """Request ids as Python strings (built on first use: a million take ~60 MB)."""
        if isinstance(self.id_column, tuple):
            return self.id_column
        return tuple(self.id_column.to_pylist())

    def request_id(self, index: int) -> str:
        """The id of request ``index`` (without building :attr:`ids`)."""
        if isinstance(self.id_column, tuple):
            return self.id_column[index]
        return self.id_column[index].as_py()

    def __len__(self) -> int:
        return len(self.arrival_s)


def _python_ranks(ids: list[str]) -> np.ndarray:
    """Rank of each id for tie-breaking: numeric when every id is an integer, else text."""
    try:
        keys = [int(i) for i in ids]
    except ValueError:
        keys = list(ids)
    order = sorted(range(len(ids)), key=lambda k: keys[k])
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


def _id_keys(ids: pa.Array | list[str]) -> np.ndarray:
    """Keys ordering the ids as :func:`_python_ranks` does: the ids themselves as int64 when
    all are plain decimal integers (the common case, vectorised), else their ranks."""
    array = ids
    if not isinstance(array, pa.Array):
        try:
            array = pa.array(ids, type=pa.string())
        except (pa.ArrowException, UnicodeError):
            return _python_ranks(ids)
    numbers = _plain_integers(array)
    if numbers is not None:
        return numbers
    return _python_ranks(ids if isinstance(ids, list) else ids.to_pylist())


def _arrival_order(ids: pa.Array | list[str], arrival: np.ndarray) -> np.ndarray:
    """Indices sorting the requests by arrival, ties by request id."""
    order = np.argsort(arrival, kind="stable")
    ordered = arrival[order]
    if len(ordered) < 2 or not np.any(ordered[1:] == ordered[:-1]):
        return order  # no ties: the ids never decide
    return np.lexsort((_id_keys(ids), arrival))


def _id_column(ids) -> pa.Array | tuple:
    """Request ids as a pyarrow string column (a tuple when pyarrow cannot hold them)."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if isinstance(ids, pa.Array):
        return ids.cast(pa.string())
    texts = [str(i) for i in ids]
    try:
        return pa.array(texts, type=pa.string())
    except (pa.ArrowException, UnicodeError):  # e.g. lone surrogates
        return tuple(texts)


def make_trace(ids, arrival_s, prompt_tokens, output_tokens, *, source: str = "<memory>"
               ) -> Trace:
    """A :class:`Trace` from already-validated columns, sorted by (arrival, request id).

    ``ids`` may be any iterable (each item becomes a string) or a pyarrow string array.
    """
    column = _id_column(ids)
    arrival = np.asarray(arrival_s, dtype=np.float64)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    order = _arrival_order(list(column) if isinstance(column, tuple) else column, arrival)
    if bool(np.all(order == np.arange(len(order)))):
        return Trace(id_column=column, arrival_s=arrival, prompt_tokens=prompt,
                     output_tokens=output, source=source)
    note = (f"The rows of {source} were not in arrival order; the {len(order):,} requests "
            "were sorted by arrival (ties by request id).")
    ordered = (tuple(map(column.__getitem__, order.tolist())) if isinstance(column, tuple)
               else column.take(pa.array(order)))
    return Trace(id_column=ordered, arrival_s=arrival[order], prompt_tokens=prompt[order],
                 output_tokens=output[order], source=source, note=note)


def _number(text: str, where: str, column: str, high: float) -> float:
    """One cell as a number in ``[0, high]``; the sentence for the first check it fails."""
    try:
        value = float(text)
    except ValueError:
        raise LabInputError(f"{where}: {column} is not a number "
                            f"({shown(text.strip())}).") from None
    if not math.isfinite(value):
        raise LabInputError(f"{where}: {column} must be a finite number, "
                            f"not {shown(text.strip(), quoted=False)}.")
    if value < 0:
        raise LabInputError(f"{where}: {column} must not be negative "
                            f"({shown(text.strip(), quoted=False)}).")
    if value > high:
        limit = f"{int(high):,}" if float(high).is_integer() else f"{high:,g}"
        raise LabInputError(f"{where}: {column} must be at most {limit}, "
                            f"not {shown(text.strip(), quoted=False)}.")
    return value


def _tokens(text: str, where: str, column: str) -> int:
    value = _number(text, where, column, MAX_REQUEST_TOKENS)
    if value != int(value):
        raise LabInputError(f"{where}: {column} must be a whole number of tokens, "
                            f"not {shown(text.strip(), quoted=False)}.")
    if value < 1:
        raise LabInputError(f"{where}: {column} must be at least 1 token, "
                            f"not {shown(text.strip(), quoted=False)}.")
    return int(value)


def _floats(text: pa.Array) -> np.ndarray:
    """A column of number text as float64, exactly as Python's ``float`` reads each cell
    (NaN where it cannot)."""
    if len(text) and pc.all(pc.match_substring_regex(text, PLAIN_DECIMAL)).as_py():
        try:
            return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowException:
            pass

    def parse(cell: str) -> float:
        try:
            return float(cell)
        except ValueError:
            return math.nan

    return np.fromiter(map(parse, text.to_pylist()), dtype=np.float64, count=len(text))


def _first(mask: np.ndarray) -> int | None:
    """Index of the first True in ``mask``, or None."""
    hit = int(np.argmax(mask)) if mask.size else 0
    return hit if mask.size and mask[hit] else None


def _plain_integers(ids: pa.Array) -> np.ndarray | None:
    """The ids as int64 when every one is a plain decimal integer, else None."""
    if len(ids) and pc.all(pc.match_substring_regex(ids, PLAIN_ID)).as_py():
        return pc.cast(ids, pa.int64()).to_numpy()
    return None


def _first_repeat(ids: pa.Array) -> int | None:
    """Index of the first id that an earlier row already used, or None."""
    numbers = _plain_integers(ids)
    if numbers is not None:
        numbers = np.sort(numbers)
        if not np.any(numbers[1:] == numbers[:-1]):
            return None  # distinct numbers: distinct texts ("01" and "1" are checked below)
    if not len(ids) or pc.count_distinct(ids).as_py() == len(ids):
        return None
    seen: set[str] = set()
    for row, rid in enumerate(ids.to_pylist()):
        if rid in seen:
            return row
        seen.add(rid)
    return None


def _raise_row_error(cells: TraceCells, row: int, name: str) -> None:
    """Raise the sentence for data row ``row``: the first check it fails, in column order."""
    where = f"{name}, row {row + 2}"
    if cells.short_row is not None and row == cells.short_row[0]:
        raise LabInputError(f"{where}: has {fmt_count(cells.short_row[1], 'value')} but the "
                            f"header names {cells.header_width} columns.")
    rid = cells.ids[row].as_py()
    if not rid:
        raise LabInputError(f"{where}: request_id is empty.")
    earlier = cells.ids.to_pylist().index(rid)
    if earlier < row:
        raise LabInputError(f"{where}: request_id {shown(rid, quoted=False)} repeats row "
                            f"{earlier + 2}.")
    text = cells.row_text(row)
    _number(text["arrival_s"], where, "arrival_s", MAX_ARRIVAL_S)
    _tokens(text["prompt_tokens"], where, "prompt_tokens")
    _tokens(text["output_tokens"], where, "output_tokens")
    raise LabInputError(f"{where}: is not a valid request.")  # not reached: a check failed


def _bad_tokens(values: np.ndarray) -> np.ndarray:
    """True where a token count fails :func:`_tokens`."""
    with np.errstate(invalid="ignore"):
        return ~((values >= 1) & (values <= MAX_REQUEST_TOKENS) & (values == np.floor(values)))


def load_trace(path: str | Path) -> Trace:
    """Read and validate a trace CSV.

    Raises
    ------
    LabInputError
        Missing file or columns, an empty trace, a non-numeric, negative, non-finite or too
        large value (limits in :mod:`lab.limits`), a token count that is not a whole number or
        is zero, a duplicate request id.
    """
    name = str(path)
    cells = read_cells(path)
    if not len(cells) and cells.short_row is None:
        raise LabInputError(f"Trace file {name} has a header but no requests.")
    arrival = _floats(cells.numbers["arrival_s"])
    prompt = _floats(cells.numbers["prompt_tokens"])
    output = _floats(cells.numbers["output_tokens"])
    with np.errstate(invalid="ignore"):
        bad_arrival = ~((arrival >= 0) & (arrival <= MAX_ARRIVAL_S))
    empty = _first(pc.equal(cells.ids, "").to_numpy(zero_copy_only=False))
    candidates = [empty, _first_repeat(cells.ids), _first(bad_arrival),
                  _first(_bad_tokens(prompt)), _first(_bad_tokens(output)),
                  cells.short_row[0] if cells.short_row is not None else None]
    found = [row for row in candidates if row is not None]
    if found:
        _raise_row_error(cells, min(found), name)
    return make_trace(cells.ids, arrival, prompt.astype(np.int64), output.astype(np.int64),
                      source=name)
