"""Trace CSV validation: every problem is one sentence naming the file, row and column."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import LabInputError
from lab.models.goodput import load_trace, make_trace
from lab.models.goodput.trace import _floats
from lab.points.serving_points import DEFAULT_TRACE

HEADER = "request_id,arrival_s,prompt_tokens,output_tokens\n"


def _write(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("body", "fragment"), [
    ("", "is empty"),
    ("\n\n", "is empty"),
    (HEADER, "no requests"),
    ("request_id,arrival_s,prompt_tokens\n1,0,5\n", "lacks the column output_tokens"),
    (HEADER + "1,abc,5,5\n", "row 2: arrival_s is not a number"),
    (HEADER + "1,0,5,5\n2,-1,5,5\n", "row 3: arrival_s must not be negative"),
    (HEADER + "1,0,-5,5\n", "row 2: prompt_tokens must not be negative"),
    (HEADER + "1,0,5.5,5\n", "row 2: prompt_tokens must be a whole number"),
    (HEADER + "1,0,5,0\n", "row 2: output_tokens must be at least 1"),
    (HEADER + "1,0,5,x\n", "row 2: output_tokens is not a number"),
    (HEADER + "1,nan,5,5\n", "row 2: arrival_s must be a finite number"),
    (HEADER + "1,0,5\n", "row 2: has 3 values but"),
    (HEADER + "1,0,5,5\x00\n", "is not a text CSV file (it holds NUL bytes)"),
    (HEADER + '"' + "x" * 200_000 + '",0,1,1\n', "a cell is longer than 131,072 characters"),
    (HEADER + "1,0,5,5\n1,1,5,5\n", "row 3: request_id 1 repeats row 2"),
    (HEADER + ",0,5,5\n", "row 2: request_id is empty"),
])
def test_bad_traces(tmp_path, body, fragment):
    path = _write(tmp_path, body)
    with pytest.raises(LabInputError) as info:
        load_trace(path)
    message = str(info.value)
    assert fragment in message
    assert str(path) in message
    assert "\n" not in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LabInputError, match="does not exist"):
        load_trace(tmp_path / "nope.csv")
    with pytest.raises(LabInputError, match="is a directory"):
        load_trace(tmp_path)


def test_unsorted_arrivals_sorted_with_note(tmp_path):
    path = _write(tmp_path, HEADER + "a,2.0,5,5\nb,1.0,6,6\nc,1.0,7,7\n")
    trace = load_trace(path)
    assert trace.ids == ("b", "c", "a")
    assert list(trace.prompt_tokens) == [6, 7, 5]
    assert "sorted by arrival" in trace.note


def test_sorted_trace_has_no_note_and_extra_columns_ignored(tmp_path):
    path = _write(tmp_path, "note," + HEADER.strip() + "\nx,1,0,5,5\ny,2,0.5,6.0,6\n")
    trace = load_trace(path)
    assert trace.note is None
    assert list(trace.prompt_tokens) == [5, 6]


def test_default_trace_is_valid():
    trace = load_trace(DEFAULT_TRACE)
    assert 200 <= len(trace) <= 1000
    assert trace.note is None


# -- the vectorised loader reads exactly what the row-by-row reader reads -----------------------
number_texts = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.from_regex(r"\A[+-]?[0-9]{0,25}\.?[0-9]{0,25}([eE][+-]?[0-9]{1,4})?\Z"),
    st.sampled_from(["1_000", " 7 ", "٣", "0x10", "", "inf", "-Infinity", "nan", "1e400"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(number_texts, min_size=1, max_size=20))
def test_column_numbers_match_python_float(texts):
    got = _floats(pa.array(texts, pa.string()))
    for text, value in zip(texts, got.tolist(), strict=True):
        try:
            expected = float(text)
        except ValueError:
            expected = math.nan
        assert (math.isnan(value) and math.isnan(expected)) or value == expected, text
        assert math.copysign(1, value) == math.copysign(1, expected) or math.isnan(value)


def _same_trace(a, b):
    assert a.ids == b.ids
    assert (a.note or "").replace(a.source, "") == (b.note or "").replace(b.source, "")
    for name in ("arrival_s", "prompt_tokens", "output_tokens"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize("quoted", [False, True])
def test_quoted_file_takes_the_csv_module_path_with_the_same_result(tmp_path, quoted):
    rows = ["b,2.0,5,5", "a,1.0,6,6", "c,1.0,7,7", ",,,", "10,1.5,1e1,2"]
    plain = _write(tmp_path, HEADER + "\n".join(rows) + "\n", "plain.csv")
    text = "\n".join(",".join(f'"{cell}"' if quoted else cell for cell in row.split(","))
                     for row in rows)
    other = _write(tmp_path, HEADER.replace("request_id", '"request_id"') + text + "\n",
                   "quoted.csv")
    expected = load_trace(plain)
    _same_trace(expected, load_trace(other))
    assert expected.ids == ("a", "c", "10", "b")


def test_ids_equal_as_numbers_are_still_different_ids(tmp_path):
    trace = load_trace(_write(tmp_path, HEADER + "01,0,5,5\n1,0,5,5\n"))
    assert trace.ids == ("01", "1")
    with pytest.raises(LabInputError, match="row 4: request_id 1 repeats row 3"):
        load_trace(_write(tmp_path, HEADER + "01,0,5,5\n1,0,5,5\n1,1,5,5\n", "dup.csv"))


def test_request_id_without_building_every_id(tmp_path):
    trace = load_trace(_write(tmp_path, HEADER + "x,1,5,5\ny,0,5,5\n"))
    assert trace.request_id(0) == "y" and "ids" not in vars(trace)
    assert trace.ids == ("y", "x") and len(trace) == 2


def test_make_trace_keeps_ids_pyarrow_cannot_hold():
    trace = make_trace(["\ud800", "b"], [1.0, 0.0], [5, 5], [5, 5])
    assert trace.ids == ("b", "\ud800") and trace.request_id(1) == "\ud800"
