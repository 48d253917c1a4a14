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
    assert "lacks the column(s) output_tokens" in experiment.error


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
