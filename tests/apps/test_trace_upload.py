"""Experiment 7's trace upload, without a browser: a good file changes the numbers, a bad one
shows its reason, and the shipped trace comes back on request."""

from __future__ import annotations

from apps.ui.trace_upload import TraceUpload
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
