"""Experiment 7's trace upload, without a browser: a good file changes the numbers, a bad one
shows its reason, and the shipped trace comes back on request."""

from __future__ import annotations

from apps.ui.parts.trace_upload import TraceUpload
from lab.experiments.goodput_contract import GoodputContract

GOOD = b"request_id,arrival_s,prompt_tokens,output_tokens\n1,0.0,100,5\n2,0.1,200,3\n"
BAD = b"request_id,arrival_s,prompt_tokens\n1,0.0,100\n"


def upload(widget: TraceUpload, name: str, data: bytes) -> None:
    widget._file.filename = name
    widget._file.value = data


def test_good_upload_is_served():
    experiment = GoodputContract()
    shipped = experiment.result["requests"]
    widget = TraceUpload(experiment=experiment)
    upload(widget, "mine.csv", GOOD)
    assert experiment.error is None
    assert experiment.result["requests"] == 2 != shipped
    assert "mine.csv" in widget._status.object
    widget._use_default(None)
    assert experiment.result["requests"] == shipped


def test_bad_upload_shows_one_sentence():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "broken.csv", BAD)
    assert experiment.result is None
    assert "lacks the column output_tokens" in experiment.error


MISSING_ARRIVAL = b"request_id,prompt_tokens,output_tokens\n1,100,5\n"
UNSORTED = b"request_id,arrival_s,prompt_tokens,output_tokens\n1,1.0,100,5\n2,0.5,200,3\n"


def test_second_bad_file_replaces_the_first_error_next_to_the_upload():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "broken.csv", BAD)
    assert "output_tokens" in widget._status.object
    upload(widget, "broken.csv", MISSING_ARRIVAL)  # same name, another fault
    assert "arrival_s" in experiment.error and "arrival_s" in widget._status.object
    assert "lab-upload-problem" in widget._status.object


def test_a_binary_file_is_refused_by_its_own_name_and_the_trace_in_force_kept():
    """A PNG reached the trace loader once uploads stopped filtering by type in the browser:
    it was refused as "Trace file evil_script_.png.csv is not a readable CSV ('utf-8' codec
    …)", the name it is stored under, and the page lost its numbers."""
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "mine.csv", GOOD)
    upload(widget, "evil<script>.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    status = widget._status.object
    assert "Trace file evil&lt;script&gt;.png is not a text CSV file (it holds NUL bytes)." \
        in status and "<script>" not in status
    assert experiment.error is None and experiment.result["requests"] == 2  # mine.csv kept
    upload(widget, "latin.csv", GOOD.replace(b"request_id", b"r\xe9quest_id"))
    assert "Trace file latin.csv is not UTF-8 text." in widget._status.object


def test_empty_file_is_an_error():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "empty.csv", b"")
    assert "empty.csv is empty" in widget._status.object


def test_sorted_rows_note_and_no_server_path():
    from apps.ui.parts.calculation import CalculationView

    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "late.csv", UNSORTED)
    folder = str(widget._dir)
    note = experiment.result["trace_note"]
    assert note and f"Note: {note}".replace(f"{folder}/upload-1/", "") in widget._note.object
    assert "The rows of late.csv were" in widget._note.object and folder not in widget._note.object
    html = CalculationView(experiment=experiment)._html(experiment.result)
    assert "late.csv" in html and folder not in html
    assert folder not in widget._status.object
