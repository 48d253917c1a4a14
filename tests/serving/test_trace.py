"""Trace CSV validation: every problem is one sentence naming the file, row and column."""

from __future__ import annotations

import pytest

from lab.calc_serving import DEFAULT_TRACE
from lab.errors import LabInputError
from lab.goodput import load_trace

HEADER = "request_id,arrival_s,prompt_tokens,output_tokens\n"


def _write(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("body", "fragment"), [
    ("", "is empty"),
    ("\n\n", "is empty"),
    (HEADER, "no requests"),
    ("request_id,arrival_s,prompt_tokens\n1,0,5\n", "lacks the column(s) output_tokens"),
    (HEADER + "1,abc,5,5\n", "row 2: arrival_s is not a number"),
    (HEADER + "1,0,5,5\n2,-1,5,5\n", "row 3: arrival_s must not be negative"),
    (HEADER + "1,0,-5,5\n", "row 2: prompt_tokens must not be negative"),
    (HEADER + "1,0,5.5,5\n", "row 2: prompt_tokens must be a whole number"),
    (HEADER + "1,0,5,0\n", "row 2: output_tokens must be at least 1"),
    (HEADER + "1,0,5,x\n", "row 2: output_tokens is not a number"),
    (HEADER + "1,nan,5,5\n", "row 2: arrival_s must be a finite number"),
    (HEADER + "1,0,5\n", "row 2: has 3 value(s)"),
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
