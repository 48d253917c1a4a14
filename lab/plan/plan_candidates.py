"""A reader's own candidate configurations: experiment 11's CSV with the measurements optional.

The columns are experiment 11's (:mod:`lab.served.served_loader`); ``silicon_ttft_ms`` and
``silicon_tpot_ms`` may be absent or empty (a configuration not run yet). Such a file is read by
experiment 11's own loader — every check its own, its sentences naming the file a candidates
file — with a placeholder time where none is given, which is then set back to NaN: a candidate
without a measurement is ranked, never compared with one.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import xarray as xr

from lab.errors import LabInputError
from lab.served.served_loader import FILE, parse_served

MEASURED = ("silicon_ttft_ms", "silicon_tpot_ms")
"""The measured columns a candidates file may leave out or empty."""
PLACEHOLDER = "1"
"""A valid time (ms) put where no measurement is given, then replaced by NaN."""


def _filled(text: str) -> tuple[str, list[str]] | None:
    """``text`` with the measured columns present and filled, and the ids of the rows that
    had no measurement; None when the text is not a plain CSV this can fill."""
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return None
    if not rows or not rows[0]:
        return None
    header = [h.strip() for h in rows[0]]
    for column in MEASURED:
        if column not in header:
            header.append(column)
    index = {c: header.index(c) for c in MEASURED}
    where_id = header.index("id") if "id" in header else None
    missing = []
    out = [header]
    for row in rows[1:]:
        if not any(cell.strip() for cell in row):
            out.append(row)
            continue
        row = row + [""] * (len(header) - len(row))
        if all(not row[i].strip() for i in index.values()):
            if where_id is not None:
                missing.append(row[where_id].strip())
            for i in index.values():
                row[i] = PLACEHOLDER
        out.append(row)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(out)
    return buffer.getvalue(), missing


FILE_WORDS = (f"{FILE.what} ", "Candidates ")
"""How experiment 11's loader begins a sentence on the file it reads ("Serving file …",
"Serving path …"), and how a candidates file's begins."""


NEEDS_WORDS = ("at least one measurement.", "at least one configuration (measurements are "
               "optional).")
"""What the loader says a file with no rows needs, and what a candidates file needs."""


def _as_candidates(error: LabInputError) -> LabInputError:
    """``error``'s sentence naming the file a candidates file (the loader says "Serving file")
    and, for a file with no rows, asking for a configuration, not a measurement."""
    message = str(error)
    old, new = FILE_WORDS
    if message.startswith(old):
        message = new + message[len(old):]
    return type(error)(message.replace(*NEEDS_WORDS))


def parse_candidates(data: bytes, name: str = "candidates.csv") -> xr.Dataset:
    """A candidates file given as bytes as experiment 11's table (measurements NaN where the
    file gives none); a bad file is experiment 11's one sentence, naming it a candidates file."""
    try:
        return _parse_candidates(data, name)
    except LabInputError as error:
        raise _as_candidates(error) from None


def _parse_candidates(data: bytes, name: str) -> xr.Dataset:
    text = FILE.text(data, name)  # the loader's own checks of size, encoding and NUL bytes
    filled = _filled(text)
    if filled is None:
        return parse_served(data, name)
    new_text, missing = filled
    table = parse_served(new_text.encode(), name)
    if missing:
        ids = np.asarray(table["id"].values).astype(str)
        blank = xr.DataArray(np.isin(ids, missing), dims="row")
        for variable in ("ttft_measured_ms", "tpot_measured_ms"):
            table[variable] = table[variable].where(~blank)
    return table


def read_candidates(path: str | Path) -> xr.Dataset:
    """A candidates file on this machine (``--candidates FILE``)."""
    try:
        data, name = FILE.read_path(path)
    except LabInputError as error:
        raise _as_candidates(error) from None
    return parse_candidates(data, name)
