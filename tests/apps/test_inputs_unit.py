"""Issue 29 items 2-5, 15 and 16 without a browser: the sentences for typed text, the
prediction locked at the first choice, the sliders' labels, experiment 9's inputs per kind and
GPU names, the values sidebar links carry, the empty upload and the chart CSV's inputs block."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from apps.ui.parts.downloads import chart_csv, dataset_csv
from apps.ui.parts.input_extras import log2_slider
from apps.ui.parts.prediction import PredictionView
from apps.ui.parts.trace_upload import CappedFileInput
from apps.ui.plots.chart_view import ChartView
from apps.ui.shell.number_boxes import readable, typed_problem, watch_typed
from apps.ui.views.app import carried_values, navigation_markdown
from apps.ui.views.experiment_view import ExperimentView
from apps.ui.views.measured_page import MeasuredPage
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.context_growth_experiment import ContextGrowth
from lab.experiments.prefix_ownership import PrefixOwnership
from lab.measured.calc import gpu_label
from lab.measured.experiment import FloorsAgainstMeasurements


# -- item 2: what a number box could not read is said, and a later good value clears it ---
@pytest.mark.parametrize(("kind", "text", "ok"), [
    ("int", "16384", True), ("int", "+5", True), ("int", "3.5", False), ("int", "abc", False),
    ("int", "1,000", False), ("int", "+", False), ("float", "0.5", True), ("float", "5e-7", False),
    ("slider", "3.5", True), ("slider", "abc", False), ("slider", "inf", False)])
def test_readable_follows_the_boxes_own_rules(kind, text, ok):
    assert readable(kind, text) is ok


def test_typed_text_gets_a_sentence_or_clears_the_message():
    tokens = ContextGrowth.param.tokens
    assert typed_problem(tokens, "int", "abc") == (
        "Prompt (tokens) must be a whole number from 1 to 1,000,000,000, typed in digits; "
        "'abc' was not applied.")
    assert "'3.5' was not applied" in typed_problem(tokens, "int", "3.5")
    assert "'0' was not applied" in typed_problem(tokens, "int", "0")  # as the widget says
    assert typed_problem(tokens, "int", "1000000000") is None
    assert "one decimal point" in typed_problem(ContextGrowth.param.c_ms, "float", "5e-7")


def test_watch_typed_reports_only_its_boxes():
    said = []
    exp = ContextGrowth()
    typed = watch_typed(exp, {"tokens": "int", "window": "slider"}, said.append)
    typed.typed = {"name": "tokens", "text": "abc", "n": 1}
    typed.typed = {"name": "tokens", "text": "64", "n": 2}
    typed.typed = {"name": "tokens", "text": "", "n": 3}  # blank: the widget refuses None
    typed.typed = {"name": "a_ms", "text": "abc", "n": 4}  # not one of its boxes
    typed.typed = {"name": "window", "text": "7.5", "n": 5}  # a slider rounds a number
    typed.typed = {"name": "window", "text": "x" * 5000, "n": 6}
    assert said[0].endswith("'abc' was not applied.") and said[1] is None
    assert len(said) == 3 and said[2].endswith("…' was not applied.")
    assert exp.tokens == ContextGrowth().tokens  # nothing typed is applied from here


def test_every_input_panel_watches_its_number_boxes():
    view = ExperimentView(experiment=BatchBottleneck(), sync_url=False)
    typed = [o for o in view.inputs.layout if type(o).__name__ == "TypedText"]
    assert len(typed) == 1
    assert typed[0].boxes["batch"] == "int" and typed[0].boxes["budget"] == "float"


# -- item 3: the first choice is the answer ------------------------------------------------
def test_the_prediction_locks_on_the_first_choice():
    exp = BatchBottleneck()
    view = PredictionView(experiment=exp)
    choices, answer = exp.prediction.choices, exp.prediction.answer
    wrong = next(c for i, c in enumerate(choices) if i != answer)
    view.choice = wrong
    assert not view._choices.disabled and view._choices.sx and not view._button.disabled
    view.choice = choices[answer]  # a later choice sent anyway is set back
    assert view.choice == wrong
    view.param.trigger("reveal")
    assert view._answer_text(True, view.choice, exp.result).startswith("<p><strong>Not quite")


# -- item 4: a slider says what it shows; experiment 9 shows only its kind's inputs ---------
def test_a_powers_of_two_slider_is_labelled_nearest():
    exp = PrefixOwnership()
    slider = log2_slider(exp, "requests")
    assert exp.requests == 100 and slider.value == 128
    assert slider.label == "Requests N, nearest power of two"


def test_measured_page_shows_the_inputs_of_its_kind(document):
    page = MeasuredPage()
    widgets = page.sliders

    def shown() -> set[str]:
        return {n for n in ("tp", "batch", "context", "m") if widgets[n].visible}

    assert shown() == {"tp", "batch", "context"}
    page.experiment.kind = "gemm"
    assert shown() == {"m"}
    page.experiment.kind = "prefill"
    assert shown() == {"context"}


def test_measured_gpu_note_uses_catalog_names():
    assert gpu_label("h100-sxm") == "NVIDIA H100 SXM" and gpu_label("my-gpu") == "my-gpu"
    text = FloorsAgainstMeasurements(gpu="b200").regions()
    assert "measured on NVIDIA H100 SXM" in text and "h100-sxm" not in text
    assert "b200" not in text.replace("B200", "")


# -- item 5: the sidebar links carry the values in force ----------------------------------
def test_sidebar_links_carry_only_accepted_values():
    class Holder:
        experiment = BatchBottleneck(model="llama-3.1-70b")

    values = carried_values(Holder(), dark=True)
    assert values == {"model": "llama-3.1-70b", "gpu": "h100-sxm", "precision": "bf16",
                      "theme": "dark"}
    text = navigation_markdown("decode", values)
    assert ("[3. Tensor parallelism](?view=tp&model=llama-3.1-70b&gpu=h100-sxm&precision=bf16"
            "&theme=dark)") in text
    assert "[Home](?model=llama-3.1-70b&" in text

    class Path:  # a command-line path in the selector is not a page's value
        experiment = BatchBottleneck()

    Path.experiment.model = "/nonexistent/config.json"
    assert "model" not in carried_values(Path(), dark=False)
    assert carried_values(object(), dark=False) == {"theme": "default"}


# -- item 15: an empty upload is said -------------------------------------------------------
def test_an_empty_upload_gets_a_sentence():
    said = []
    widget = CappedFileInput()
    widget.on_refused = said.append
    widget._handle_msg({"status": "initializing", "type": "status"})
    widget._handle_msg({"status": "finished", "type": "status"})  # no chunk: 0 bytes
    assert said == ["The file chosen is empty (0 bytes), so nothing was loaded."]


# -- item 16: the chart CSV reads cleanly with pandas ---------------------------------------
def test_chart_csv_inputs_are_a_header_block_pandas_skips():
    view = ChartView(experiment=BatchBottleneck())
    ds, inputs = view.data[:2]
    text = chart_csv(ds, inputs)
    assert text.startswith("# inputs this chart was computed from:\n# model = llama-3.1-8b\n")
    frame = pd.read_csv(io.StringIO(text), comment="#")
    plain = pd.read_csv(io.StringIO(dataset_csv(ds)))
    pd.testing.assert_frame_equal(frame, plain)
    assert not frame.isna().all(axis=1).any()  # no junk rows
    assert list(frame["batch"])[:2] == [1, 2]



def test_a_text_input_fills_the_inputs_column_instead_of_panels_300_px():
    """Panel's default text box is 300 px wide plus its margins: wider than the 300 px inputs
    column, so experiment 11's inputs ran under its cards."""
    import param as _param

    from apps.ui.parts.input_widgets import widget_spec

    assert widget_spec(_param.String(default=""))["sizing_mode"] == "stretch_width"
