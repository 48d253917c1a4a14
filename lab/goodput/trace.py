"""Request traces for experiment 7: a CSV of arrivals and token counts, validated.

A trace file has the header ``request_id,arrival_s,prompt_tokens,output_tokens`` (extra
columns are ignored). Every problem is one :class:`~lab.errors.LabInputError` sentence naming
the file, the row (the file's line number, header = line 1) and the column. Arrivals out of
order are sorted (ties by request id) and :attr:`Trace.note` says so.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab.errors import LabInputError

COLUMNS = ("request_id", "arrival_s", "prompt_tokens", "output_tokens")
"""Required columns, in the order the shipped traces use."""


@dataclass(frozen=True)
class Trace:
    """Requests sorted by arrival (ties by request id).

    Attributes
    ----------
    ids : tuple of str
        Request ids as written in the file.
    arrival_s : numpy.ndarray
        Arrival times, seconds (float64, non-decreasing).
    prompt_tokens, output_tokens : numpy.ndarray
        Token counts (int64, ≥ 1).
    source : str
        Where the trace came from (a path, or ``"<memory>"``).
    note : str or None
        A sentence when the rows had to be sorted, else None.
    """

    ids: tuple[str, ...]
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "<memory>"
    note: str | None = None

    def __len__(self) -> int:
        return len(self.ids)


def _id_order(ids: list[str]) -> np.ndarray:
    """Rank of each id for tie-breaking: numeric when every id is an integer, else text."""
    try:
        keys = [int(i) for i in ids]
    except ValueError:
        keys = list(ids)
    order = sorted(range(len(ids)), key=lambda k: keys[k])
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


def make_trace(ids, arrival_s, prompt_tokens, output_tokens, *, source: str = "<memory>"
               ) -> Trace:
    """A :class:`Trace` from already-validated columns, sorted by (arrival, request id)."""
    ids = [str(i) for i in ids]
    arrival = np.asarray(arrival_s, dtype=np.float64)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    order = np.lexsort((_id_order(ids), arrival))
    in_order = bool(np.all(order == np.arange(len(ids))))
    note = None
    if not in_order:
        note = (f"The rows of {source} were not in arrival order; the {len(ids):,} requests "
                "were sorted by arrival (ties by request id).")
    return Trace(ids=tuple(ids[i] for i in order), arrival_s=arrival[order],
                 prompt_tokens=prompt[order], output_tokens=output[order], source=source,
                 note=note)


def _number(text: str, where: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise LabInputError(f"{where}: {column} is not a number ({text.strip()!r}).") from None
    if not math.isfinite(value):
        raise LabInputError(f"{where}: {column} must be a finite number, not {text.strip()}.")
    if value < 0:
        raise LabInputError(f"{where}: {column} must not be negative ({text.strip()}).")
    return value


def _tokens(text: str, where: str, column: str) -> int:
    value = _number(text, where, column)
    if value != int(value):
        raise LabInputError(f"{where}: {column} must be a whole number of tokens, "
                            f"not {text.strip()}.")
    if value < 1:
        raise LabInputError(f"{where}: {column} must be at least 1 token, not {text.strip()}.")
    return int(value)


def load_trace(path: str | Path) -> Trace:
    """Read and validate a trace CSV.

    Raises
    ------
    LabInputError
        Missing file or columns, an empty trace, a non-numeric, negative or non-finite value,
        a token count that is not a whole number or is zero, a duplicate request id.
    """
    path = Path(path)
    name = str(path)
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        raise LabInputError(f"Trace file {name} does not exist.") from None
    except IsADirectoryError:
        raise LabInputError(f"Trace path {name} is a directory, not a CSV file.") from None
    except OSError as exc:
        raise LabInputError(f"Trace file {name} cannot be read ({exc.strerror}).") from None
    with handle:
        try:
            rows = list(csv.reader(handle))
        except (csv.Error, UnicodeDecodeError) as exc:
            raise LabInputError(f"Trace file {name} is not a readable CSV ({exc}).") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise LabInputError(f"Trace file {name} is empty; it needs the header "
                            f"{','.join(COLUMNS)} and at least one request.")
    header = [cell.strip() for cell in rows[0]]
    missing = [col for col in COLUMNS if col not in header]
    if missing:
        raise LabInputError(f"Trace file {name} lacks the column(s) {', '.join(missing)}; "
                            f"the header must name {','.join(COLUMNS)}.")
    if len(rows) == 1:
        raise LabInputError(f"Trace file {name} has a header but no requests.")
    index = {col: header.index(col) for col in COLUMNS}
    ids, arrival, prompt, output = [], [], [], []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows[1:], start=2):
        where = f"{name}, row {line}"
        if len(row) < len(header):
            raise LabInputError(f"{where}: has {len(row)} value(s) but the header names "
                                f"{len(header)} columns.")
        rid = row[index["request_id"]].strip()
        if not rid:
            raise LabInputError(f"{where}: request_id is empty.")
        if rid in seen:
            raise LabInputError(f"{where}: request_id {rid} repeats row {seen[rid]}.")
        seen[rid] = line
        ids.append(rid)
        arrival.append(_number(row[index["arrival_s"]], where, "arrival_s"))
        prompt.append(_tokens(row[index["prompt_tokens"]], where, "prompt_tokens"))
        output.append(_tokens(row[index["output_tokens"]], where, "output_tokens"))
    return make_trace(ids, arrival, prompt, output, source=name)
