"""Hostile measurements CSVs (experiment 9): every file either loads and gives finite floors or is
one sentence, never a traceback."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import LabInputError
from lab.measured.calc import measured_table
from lab.measured.measured_loader import USER_COLUMNS, parse_measurements

CELLS = st.one_of(st.integers(-5, 2**70).map(str), st.floats(allow_nan=True).map(repr),
                  st.sampled_from(["", " ", "bf16", "fp8", "1e309", "nan", "0", "1.5", "x"]),
                  st.text(max_size=6))


@st.composite
def csv_bytes(draw) -> bytes:
    """A header of one kind (sometimes with a column missing or extra) and a few hostile rows."""
    columns = list(draw(st.sampled_from(list(USER_COLUMNS.values()))))
    if draw(st.booleans()):
        columns.append("dtype")
    if draw(st.booleans()) and len(columns) > 1:
        columns.pop(draw(st.integers(0, len(columns) - 1)))
    rows = draw(st.lists(st.lists(CELLS, min_size=len(columns) - 1, max_size=len(columns) + 1),
                         max_size=4))
    text = ",".join(columns) + "\n" + "\n".join(",".join(r) for r in rows)
    return text.encode("utf-8", errors="surrogatepass") if draw(st.booleans()) else (
        text.encode("utf-8", errors="replace") + draw(st.binary(max_size=8)))


@settings(max_examples=150, deadline=None)
@given(csv_bytes())
def test_hostile_measurements_are_one_sentence_or_finite(data):
    try:
        table = measured_table(parse_measurements(data, "fuzz.csv"))
    except LabInputError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    assert np.isfinite(table["ratio"].values).all()
    assert (table["floor_s"].values > 0).all()
