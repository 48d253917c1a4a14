"""Experiment 9's page at the Bokeh-document level (no browser): the default point's cards, the
GEMM flag below the floor, an upload read in memory, and a bad upload as one escaped sentence."""

from __future__ import annotations

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from apps.ui.cards import cards_html
from apps.ui.measured_page import MeasuredPage


@pytest.fixture(scope="module")
def view():
    doc = Document()
    with set_curdoc(doc):
        page = MeasuredPage()
        page.__panel__().get_root(doc)
        yield page
    pn.state._locations.pop(doc, None)


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
    assert "83 point(s) of this kind are below their floor" in view.flag.object
    assert "impossible under the stated peaks" in view.flag.object
    assert view.chart.object is not None
    # Your own file, read in memory: the same columns give the same numbers.
    upload(view, "mine.csv", b"m,k,n,latency_us\n8,2048,6144,8.988\n")
    assert exp.error is None and "1.19×" in cards_html(exp.cards())
    assert "mine.csv" in view.upload._status.object
    # A bad row: one sentence, escaped; the data in force stays.
    upload(view, "<img src=x onerror=alert(1)>.csv", b"m,k,n,latency_us\n8,2048,6144,-3\n")
    status = view.upload._status.object
    assert "row 1, column latency_us" in status and "<img" not in status
    assert "1.19×" in cards_html(exp.cards())
    view.upload._use_shipped(None)
    assert exp.measurements is None and exp.error is None


def test_experiment_1_overlay_is_off_by_default():
    from apps.ui.measured_overlay import MeasuredOverlay
    from lab.experiments.batch_bottleneck import BatchBottleneck

    exp = BatchBottleneck(batch=16)
    overlay = MeasuredOverlay(experiment=exp)
    assert overlay.sentence() == ""
    overlay.show = True
    assert "5.83 ms against the ideal attention phase of 5.13 ms (1.14×)" in overlay.sentence()
