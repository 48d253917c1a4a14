"""Experiment 9's page at the Bokeh-document level (no browser): the default point's cards, the
GEMM flag below the floor, an upload read in memory, a bad upload as one escaped sentence, the
upload's own size limit, the inputs kept in the URL (a link's bad value is one sentence), and
inputs that offer only what was measured (a link or a shape off the data moves to the nearest
measured point and says so)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import numpy as np
import panel as pn
import pytest
from bokeh.document import Document
from panel.io.location import Location
from panel.io.state import set_curdoc

from apps.ui.panel_compat import param_widgets
from apps.ui.parts.cards import cards_html
from apps.ui.parts.measured_upload import MeasurementsUpload
from apps.ui.parts.trace_upload import UPLOAD_CHUNK_BYTES
from apps.ui.views.measured_page import MEASURED_AXES, MeasuredPage, measured_slider
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.measured.calc import POINT_AXES
from lab.measured.experiment import FloorsAgainstMeasurements


@pytest.fixture(scope="module")
def view():
    doc = Document()
    with set_curdoc(doc):
        page = MeasuredPage()
        page.__panel__().get_root(doc)
        yield page
    pn.state._locations.pop(doc, None)


@pytest.fixture
def throttled():
    """Panel as the lab serves it: sliders report only their released position."""
    with pn.config.set(throttled=True):
        yield


def upload(view: MeasuredPage, name: str, data: bytes) -> None:
    view.upload._file.filename = name
    view.upload._file.value = data


def test_measured_page(view):
    exp = view.experiment
    # Default: 32-8-128 tp 1, batch 16 × 8,192 → 182.171 µs over 160.26 µs (by hand, 1.1367×).
    html = cards_html(exp.cards())
    assert "1.14×" in html and "160.26 µs" in html and "2.95 TB/s" in html
    assert "up to 31.7×" in view.regions.object
    assert view.flag.object == ""
    # GEMM: the large-m points are below the BF16 floor, and the page says so.
    exp.param.update(kind="gemm")
    assert "8192×6144" in view.inputs._widgets["shape"].options  # the kind's shapes on offer
    exp.param.update(shape="8192×6144", m=8192)
    assert "0.77×" in cards_html(exp.cards())
    assert "83 points of this kind are below their floor" in view.flag.object
    assert "impossible under the stated peaks" in view.flag.object
    assert view.chart.object is not None
    # Your own file, read in memory: the same columns give the same numbers.
    upload(view, "mine.csv", b"m,k,n,latency_us\n8,2048,6144,8.988\n")
    assert exp.error is None and "1.19×" in cards_html(exp.cards())
    assert "mine.csv" in view.upload._status.object
    # A bad row: one sentence, escaped; the data in force stays.
    upload(view, "<img src=x onerror=alert(1)>.csv", b"m,k,n,latency_us\n8,2048,6144,-3\n")
    status = view.upload._status.object
    assert "row 2, column latency_us" in status and "<img" not in status
    assert "1.19×" in cards_html(exp.cards())
    view.upload._use_shipped(None)
    assert exp.measurements is None and exp.error is None


def test_experiment_1_overlay_is_off_by_default():
    from apps.ui.plots.measured_overlay import MeasuredOverlay
    from lab.experiments.batch_bottleneck import BatchBottleneck

    exp = BatchBottleneck(batch=16)
    overlay = MeasuredOverlay(experiment=exp)
    assert overlay.sentence() == ""
    overlay.show = True
    assert "5.83 ms against the ideal attention phase of 5.13 ms (1.14×)" in overlay.sentence()


# -- the upload's own size limit ------------------------------------------------------------
def test_upload_size_limit_is_the_measurements_own():
    experiment = FloorsAgainstMeasurements()
    widget = MeasurementsUpload(experiment=experiment)
    assert widget._file.max_file_size == MAX_MEASUREMENT_BYTES == 10 * 2**20  # MiB, as traces
    widget._file._handle_msg({"type": "status", "status": "initializing"})
    widget._file._handle_msg({"type": "status", "status": "upload_event", "chunk": 1,
                              "data": b"x" * UPLOAD_CHUNK_BYTES, "name": "big.csv",
                              "total_chunks": 50, "mime_type": "text/csv"})  # 50 MiB declared
    status = widget._status.object
    assert "big.csv is larger than 10 MiB; measurements up to 10 MiB are accepted." in status
    assert "trace" not in status and " MB" not in status
    widget._file._handle_msg({"type": "status", "status": "error", "error": "too big"})
    assert ("The browser did not send the file (too big); measurements up to 10 MiB are "
            "accepted.") in widget._status.object
    widget._file.filename = "held.csv"
    widget._file.value = b"m" * (MAX_MEASUREMENT_BYTES + 1)
    assert "held.csv is 10.0 MiB; measurements up to 10 MiB are accepted." in widget._status.object
    assert experiment.measurements is None and experiment.error is None


# -- the inputs in the URL ------------------------------------------------------------------
def linked(document, search: str) -> MeasuredPage:
    """The page as the server builds it for a request with ``search``."""
    pn.state._locations[document] = Location(search=search)
    page = MeasuredPage()
    page.__panel__().get_root(document)
    return page


def message(page: MeasuredPage) -> str:
    return page.message.object if page.message.visible else ""


def query(document) -> dict[str, str]:
    return dict(parse_qsl(pn.state._locations[document].search[1:]))


def test_a_link_sets_the_kind_then_its_shape(document):
    page = linked(document, "?view=measured&kind=gemm&shape=8192%C3%976144&m=8192")
    exp = page.experiment
    assert (exp.kind, exp.shape, exp.m) == ("gemm", "8192×6144", 8192)
    assert message(page) == "" and exp.error is None
    assert "0.77×" in cards_html(exp.cards())
    assert "8192×6144" in page.inputs._widgets["shape"].options
    assert query(document)["view"] == "measured"
    # A widget change goes back into the URL, with the shapes of the new kind.
    exp.kind = "decode"
    assert query(document)["kind"] == "decode" and exp.error is None
    assert query(document)["shape"] == exp.shape and exp.shape in exp.shapes()
    # A URL changed from the browser later (back/forward) is judged the same way.
    pn.state._locations[document].search = "?view=measured&kind=prefill&shape=8192%C3%976144"
    assert exp.kind == "prefill" and exp.shape in exp.shapes() and exp.error is None
    assert "The link&#x27;s shape=8192×6144 is not one of " in message(page)
    assert query(document)["shape"] == exp.shape


@pytest.mark.parametrize(("search", "name", "shown", "sentence"), [
    ("kind=gemm&shape=32-8-128", "shape", "2048×6144",
     "The link&#x27;s shape=32-8-128 is not one of 2048×6144, 2048×11008, "),
    ("shape=8192%C3%976144", "shape", "32-8-128",
     "The link&#x27;s shape=8192×6144 is not one of 28-4-128, 32-8-128, "),
    ("kind=attention", "kind", "decode",
     "The link&#x27;s kind=attention is not one of decode, prefill, gemm, so the page shows "
     "kind=decode."),
    ("tp=0", "tp", 1, "The link&#x27;s tp=0 is not a whole number from 1 to 64"),
    ("gpu=..%2Fetc%2Fpasswd", "gpu", "h100-sxm", "The link&#x27;s gpu=../etc/passwd is not one of"),
])
def test_bad_link_value_is_one_sentence_and_not_applied(document, search, name, shown, sentence):
    page = linked(document, f"?view=measured&{search}")
    assert sentence in message(page)
    assert getattr(page.experiment, name) == shown
    assert page.experiment.error is None
    assert query(document)[name] == str(shown)  # the URL shows the value in force


def test_script_in_a_link_is_shown_as_text(document):
    page = linked(document, "?view=measured&shape=%3Cscript%3Ealert(1)%3C/script%3E")
    assert "shape=&lt;script&gt;alert(1)&lt;/script&gt; is not one of" in message(page)
    assert "<script>" not in message(page)


@pytest.mark.parametrize(("search", "shown", "sentence"), [
    ("batch=17", {"batch": 16},
     "The link&#x27;s batch=17 was not measured (given the rest of the selection; measured: 1, "
     "16, 32, 64, 128, 256, 512), so the page shows batch=16."),
    ("tp=3", {"tp": 4}, "The link&#x27;s tp=3 was not measured (given the rest of the "
     "selection; measured: 1, 2, 4), so the page shows tp=4."),
    ("tp=2&context=256&batch=100", {"tp": 2, "batch": 128, "context": 1024},
     "so the page shows batch=128. The link&#x27;s context=256 was not measured"),
    ("kind=gemm&m=1000", {"m": 1024}, "so the page shows m=1024."),
])
def test_a_link_to_an_unmeasured_point_moves_to_the_nearest_measured(document, search, shown,
                                                                      sentence):
    """A link's tp=3 was taken: the page said no measurement was at tp 3 while the tp slider
    read 4 and the chart's title tp 1. Now it shows the nearest measured point and says so."""
    page = linked(document, f"?view=measured&{search}")
    exp = page.experiment
    assert {name: getattr(exp, name) for name in shown} == shown
    assert exp.error is None and sentence in message(page)
    assert {name: query(document)[name] for name in shown} == {
        name: str(value) for name, value in shown.items()}
    assert all(page.sliders[name].value == value for name, value in shown.items())


def walk(exp: FloorsAgainstMeasurements, sliders: list) -> int:
    """Every position of ``sliders[0]`` and, at each, every one of the rest; asserts each
    combination names a measured point. The points reached."""
    if not sliders:
        assert exp.error is None, (exp.selection(), exp.error)
        return 1
    slider, name, reached = sliders[0], sliders[0].css_classes[0].removeprefix("lab-input-"), 0
    for index in range(len(slider.options)):
        slider._process_events({"value_throttled": index})
        assert getattr(exp, name) == slider.options[index]
        reached += walk(exp, sliders[1:])
    return reached


def test_every_slider_position_is_a_measured_point(throttled):
    """Experiment 9's batch, context and m had a number box (−/+ by 1) and a powers-of-two
    slider (1, 2, 4, 8…), and its tp a box: most of their positions were points nobody
    measured ("Not available"). Every position of every slider, for every shape of every
    kind, now names a measured point. (The page's sliders alone: its chart would redraw at
    each of the 897 points.)"""
    exp = FloorsAgainstMeasurements()
    sliders = {axis: measured_slider(exp, axis) for axis in MEASURED_AXES}
    checked = 0
    for kind in ("decode", "prefill", "gemm"):
        exp.kind = kind
        for shape in exp.shapes():
            exp.shape = shape
            checked += walk(exp, [sliders[axis] for axis in POINT_AXES[kind]])
    assert checked == exp.table().sizes["point"]  # each measured point reached exactly once


def test_a_shape_whose_contexts_differ_moves_the_context_and_says_so(document):
    page = MeasuredPage()
    exp = page.experiment
    exp.param.update(shape="28-4-128", tp=1, batch=1, context=256)
    assert exp.error is None and not page.message.visible
    # Chosen in the dropdown, as a reader does (its widget reports after the change).
    param_widgets(page.inputs)["shape"]._process_events({"value": "32-8-128"})
    assert exp.shape == "32-8-128" and exp.context == 1024 and exp.error is None
    assert message(page) == ('<div class="lab-input-problem" role="alert">At shape 32-8-128, '
                             'context 256 was not measured, so it moved to 1,024.</div>')
    exp.context = 16384  # a move that needs no other: the note goes
    assert not page.message.visible
    exp.param.update(batch=512)  # measured to 8,192 tokens at batch 512
    assert exp.context == 8192 and "At batch 512, context 16,384 was not measured" in message(
        page)


# -- experiment 1's chart with the measured attention -----------------------------------------
def test_experiment_1_chart_draws_measured_attention_only_when_on():
    from apps.ui.plots.batch_chart import IDEAL_ATTENTION_LABEL, MEASURED_LABEL
    from apps.ui.plots.chart_view import ChartView
    from apps.ui.plots.measured_overlay import MeasuredOverlay
    from lab.experiments.batch_bottleneck import BatchBottleneck

    exp = BatchBottleneck(batch=16)
    chart = ChartView(experiment=exp)
    step = chart._batch[0]
    before = len(step.figure.renderers), len(step.figure.tools)
    overlay = MeasuredOverlay(experiment=exp, chart=chart)
    exp.batch = 32  # off: nothing is added to the figure
    assert step.measured is None and (len(step.figure.renderers), len(step.figure.tools)) == before
    overlay.show = True
    marks = step.measured
    assert all(r.visible for r in marks.renderers)
    assert overlay.key() == (f"On the step-time chart, at batch 1, 16, 32, 64, 128, 256, 512: "
                             f"{MEASURED_LABEL}; {IDEAL_ATTENTION_LABEL}. Hover a marker for "
                             "its value and source.")
    assert "lab-measured-key" in overlay._html(True, None)
    measured, ideal = marks.measured.data, marks.ideal.data
    # 32-8-128 at tp 1 and 8,192 tokens is measured at batch 1, 16, 32, ..., 512.
    assert list(measured["batch"]) == [1, 16, 32, 64, 128, 256, 512] == list(ideal["batch"])
    # Batch 16: 182.171 µs per layer × 32 layers = 5.8295 ms; ideal 5.1283 ms (the sentence's).
    at16 = list(measured["batch"]).index(16)
    assert measured["attention_ms"][at16] == pytest.approx(0.182171 * 32)
    assert ideal["attention_ms"][at16] == pytest.approx(5.12832, rel=1e-5)
    assert set(measured["unit"]) == {"ms"} and "Apache License 2.0" in measured["source"][0]
    assert "not a measurement" in ideal["source"][0]
    hover = step.figure.tools[-1]
    assert [name for name, _ in hover.tooltips] == ["Attention phase", "Batch (sequences)",
                                                    "Value", "Source"]
    # A context with no measurement for this shape: the markers go, the sentence says why.
    exp.context = 8000
    assert not any(r.visible for r in marks.renderers) and len(marks.measured.data["batch"]) == 0
    assert "no real kernel was measured" in overlay.sentence() and overlay.key() == ""
    exp.context = 8192
    assert all(r.visible for r in marks.renderers)
    overlay.show = False
    assert not any(r.visible for r in marks.renderers) and overlay.key() == ""


def test_the_heatmap_hover_is_in_the_cards_units(view):
    """The hover read times in ms and bandwidth in B/s beside cards in µs and TB/s."""
    import holoviews as hv

    exp = view.experiment
    exp.param.update(kind="decode", shape="32-8-128", tp=1, batch=16, context=8192)
    grid = next(e for e in view._plot(None) if isinstance(e, hv.HeatMap))
    assert {d.name: d.unit for d in grid.vdims[1:]} == {
        "latency_s": "µs", "floor_s": "µs", "achieved_bandwidth": "TB/s"}
    row = grid.data[(grid.data["batch"] == "16") & (grid.data["context"] == "8,192")].iloc[0]
    point = exp.result["selected"]
    assert row["latency_s"] == pytest.approx(point["latency_s"] * 1e6)  # 182.171 µs
    assert row["achieved_bandwidth"] == pytest.approx(point["achieved_bandwidth"] / 1e12)
    assert f"{row['latency_s']:.2f} µs measured" in cards_html(exp.cards())


def test_each_slider_keeps_its_inputs_help():
    """The number boxes carried each input's doc as their help; the sliders that replaced them
    carry it too, and say what they offer."""
    page = MeasuredPage()
    for axis, slider in page.sliders.items():
        doc = FloorsAgainstMeasurements.param[axis].doc
        assert slider.description == f"{doc} Offers only the values measured."


def test_a_gpu_without_the_datas_peak_moves_nothing_and_raises_nothing(throttled):
    """FP8 GEMMs uploaded, then a GPU without FP8: the table cannot be built there, and a
    shape change or a slider move raised from the page's follow-ups (a server error); a
    slider position past its options (they changed while the move was on its way) is
    ignored too."""
    from lab.measured.measured_loader import shipped_measurements

    page = MeasuredPage()
    exp = page.experiment
    data = shipped_measurements().copy(deep=True)
    dtype = np.asarray(data["dtype"].values).astype(object)
    dtype[np.asarray(data["kind"].values).astype(str) == "gemm"] = "fp8"
    data["dtype"] = ("point", dtype.astype(str))
    exp.measurements = data
    exp.gpu = "a100-sxm-80gb"
    assert "has no FP8 peak" in exp.error
    exp.shape = "28-4-128"
    batch = page.sliders["batch"]
    batch._process_events({"value_throttled": len(batch.options) + 2})  # past its options
    assert "has no FP8 peak" in exp.error


def test_the_browser_slider_shows_the_value_in_force_after_its_options_change(document):
    """New options, the value unchanged: the browser kept its old position, now another
    option's. 28-4-128 at tp 1 is measured from 256 tokens, at tp 2 from 1,024: 4,096 moves
    from position 3 to 1, and the slider read 16,384 while the page computed 4,096 (prefill →
    decode read context 512 and batch 1 the same way)."""
    page = MeasuredPage()
    models = {axis: slider.get_root(document) for axis, slider in page.sliders.items()}
    exp = page.experiment
    exp.param.update(shape="28-4-128", tp=1, context=4096)
    exp.tp = 2
    assert (exp.batch, exp.context) == (16, 4096) and exp.error is None
    for axis in page.sliders:
        data = models[axis].data  # what the browser holds: the labels and an index
        assert data.options[data.value] == f"{getattr(exp, axis):,}", (axis, data.value)


def test_a_kind_chosen_again_returns_to_its_last_point():
    """Decode at batch 64 × 16,384, then GEMM, then decode: the page came back at 28-4-128,
    batch 1, context 1,024, with nothing said."""
    exp = FloorsAgainstMeasurements()
    exp.param.update(shape="56-8-128", tp=2, batch=64, context=16384)
    exp.kind = "gemm"
    exp.m = 4096
    exp.kind = "prefill"
    exp.kind = "decode"
    assert (exp.shape, exp.tp, exp.batch, exp.context) == ("56-8-128", 2, 64, 16384)
    assert exp.error is None
    exp.kind = "gemm"
    assert exp.m == 4096 and exp.error is None
