"""Experiment 11's page at the Bokeh-document level (no browser): the default row's cards, the
filters, the stacked terms of the selected row, an upload read in memory, a bad upload as one
escaped sentence, the metric definitions, and the inputs kept in the URL."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

import holoviews as hv
import numpy as np
import panel as pn
import pytest
from bokeh.document import Document
from panel.io.location import Location
from panel.io.state import set_curdoc

from apps.ui.parts.cards import cards_html
from apps.ui.views.served_page import DEFINITIONS, ServedPage

ROW = "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4_ep1_628"
TINY = (b"id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms,"
        b"silicon_tpot_ms\n"
        b"a,vllm,llama-3.1-8b,h100-sxm,agg,1024,1024,8,1,50,8\n"
        b"b,vllm,llama-3.1-8b,h100-sxm,agg,2048,1024,8,1,90,9\n")


@pytest.fixture(scope="module")
def view():
    doc = Document()
    with set_curdoc(doc):
        page = ServedPage()
        page.__panel__().get_root(doc)
        yield page
    pn.state._locations.pop(doc, None)


def test_served_page(view):
    exp = view.experiment
    assert exp.error is None and exp.result["selected"]["id"] == ROW
    html = cards_html(exp.cards())
    assert "16.07 ms" in html and "4,692 of 5,221" in html
    tpot, ttft = view._bar("tpot", None), view._bar("ttft", None)
    assert isinstance(tpot, hv.Bars) and isinstance(ttft, hv.Bars)  # an axis each (issue 37)
    assert {row[0] for row in tpot.data.itertuples(index=False)} == {"TPOT predicted",
                                                                     "TPOT measured"}
    terms = {row[1] for bars in (tpot, ttft) for row in bars.data.itertuples(index=False)}
    assert {"floor", "interleaved prefill", "fixed time × layers",
            "queue, (c − 1)/2 prefills", "measured"} <= terms
    assert "*inter-token\nlatency*" in DEFINITIONS and "*Concurrency*" in DEFINITIONS
    # a filter narrows the rows; a row the lab does not model says why
    exp.param.update(model="deepseek-v3", row="")
    assert exp.error is None and exp.result["selected"]["model"] == "deepseek-v3"
    exp.param.update(model="all", row="minimaxm2_5_b300_vllm_fp8_agg_8192x1024_c128_cfg733")
    assert view.flag.object == ""
    hybrid = next(i for i, r in zip(exp.table()["id"].values, exp.table()["reason"].values,
                                    strict=True) if "linear attention" in str(r))
    exp.row = str(hybrid)
    assert "Not modelled: hybrid Gated DeltaNet linear attention" in view.flag.object
    # your own rows, read in memory and refitted
    view.upload._file.filename = "mine.csv"
    view.upload._file.value = TINY
    assert exp.error is None and exp.result["rows"] == 2
    assert "mine.csv" in view.upload._status.object
    # a bad file: one sentence, escaped; the data in force stays
    view.upload._file.filename = "<img src=x onerror=alert(1)>.csv"
    view.upload._file.value = TINY.replace(b",agg,1024", b",both,1024")
    status = view.upload._status.object
    assert "row 2, column mode" in status and "<img" not in status
    assert exp.result["rows"] == 2
    view.upload._use_shipped(None)
    assert exp.measurements is None and exp.error is None and exp.result["rows"] == 5221


def test_a_click_on_a_point_selects_its_row_and_the_hover_names_it(view):
    """Issue 37 item 7: clicking a point of the scatter shows its row; the hover names the
    nearest run only, with its id, model, engine and GPU and the units."""
    exp = view.experiment
    exp.param.update(model="all", row="")
    plot = view._scatter(None)
    points = plot.values()[0]
    ids, runs = points.dimension_values("id"), points.dimension_values("run")
    k = int(np.flatnonzero(ids != exp.result["selected"]["id"])[0])
    view.tapped.event(index=[k])
    assert exp.row == ids[k] and exp.result["selected"]["id"] == ids[k]
    assert " · " in runs[k] and ("vLLM" in runs[k] or "SGLang" in runs[k]
                                 or "TensorRT-LLM" in runs[k])
    hover = next(t for t in points.opts.get().kwargs["tools"] if not isinstance(t, str))
    assert hover.limit == 1 and "Row id @id" in hover.tooltips
    assert hover.attachment == "vertical" and "max-width" in hover.tooltips
    for latency in ("measured", "predicted", "ttft_measured", "ttft_predicted"):
        assert re.search(rf"@{latency}\{{[0-9,.]+\}} ms", hover.tooltips), latency
    highlighted = view._scatter(None).values()[-1]  # the clicked row, drawn large
    assert len(highlighted) == 1


def _query(document) -> dict[str, str]:
    return dict(parse_qsl(pn.state._locations[document].search[1:]))


def test_a_link_sets_the_filters_and_a_bad_value_is_one_sentence(document):
    pn.state._locations[document] = Location(search="?view=served&model=qwen3-32b&gpu=h100-sxm")
    page = ServedPage()
    page.__panel__().get_root(document)
    exp = page.experiment
    assert (exp.model, exp.gpu) == ("qwen3-32b", "h100-sxm") and exp.error is None
    exp.engine = "vllm"
    assert _query(document)["engine"] == "vllm"
    pn.state._locations[document] = Location(search="?view=served&model=nope")
    page = ServedPage()
    page.__panel__().get_root(document)
    assert page.experiment.model == "all"
    assert "model=nope" in page.message.object


def test_the_calculation_names_no_internal_reference(view):
    """Issue 37 item 10: the page's calculation names docs/model.md's sections, never an issue
    number or a module path."""
    import dataclasses
    import re

    view.experiment.param.update(model="all", row="")
    text = " ".join(str(dataclasses.astuple(step)) for step in view.experiment.steps())
    assert "TPOT floor" in text
    assert re.findall(r"issue \d+|\blab\.\w+|\w+\.py\b", text) == []


def test_a_link_to_a_row_shows_that_row(document):
    """The plan page links to experiment 11's row view with ``&row=<id>``: the served page must
    show that row (it showed the default tp-4 row and said the id was "not a valid value", the
    page taking no text from a link), and a row id no row has is one sentence, shown escaped."""
    from lab.plan.plan_calc import calc_plan

    best = calc_plan()["best"]
    link, wanted = best["served_link"], best["served_row"]
    assert wanted and f"row={wanted}" in link
    pn.state._locations[document] = Location(search=link)
    page = ServedPage()
    page.__panel__().get_root(document)
    exp = page.experiment
    assert exp.row == wanted and exp.error is None and not page.message.object
    assert exp.result["selected"]["id"] == wanted and _query(document)["row"] == wanted
    hostile = "<img src=x onerror=alert(1)>"
    pn.state._locations[document] = Location(search="?view=served&" + urlencode({"row": hostile}))
    page = ServedPage()
    page.__panel__().get_root(document)
    assert page.experiment.row == hostile
    assert page.experiment.error.startswith("There is no row with id")
    shown = page.cards._html(None)
    assert "There is no row with id" in shown and "<img" not in shown and "&lt;img" in shown


@pytest.mark.parametrize("page_path", ["apps.ui.views.served_page.ServedPage",
                                       "apps.ui.views.measured_page.MeasuredPage",
                                       "apps.ui.views.plan_page.PlanPage"])
def test_a_page_given_its_experiment_makes_no_other(page_path, monkeypatch):
    """The app builds each page with its experiment; the page made a second one anyway (its
    default was evaluated before it was known to be unused), which computed experiment 11's
    whole table again on every page load (about 1 s of the server)."""
    import importlib

    module_name, class_name = page_path.rsplit(".", 1)
    page_class = getattr(importlib.import_module(module_name), class_name)
    experiment_class = page_class.param["experiment"].class_
    experiment = experiment_class()
    made = []
    original = experiment_class.__init__

    def counted(self, **params):
        made.append(self)
        original(self, **params)

    monkeypatch.setattr(experiment_class, "__init__", counted)
    doc = Document()
    with set_curdoc(doc):
        page = page_class(experiment=experiment)
    pn.state._locations.pop(doc, None)
    assert page.experiment is experiment and made == []


def test_the_chart_data_downloads_as_every_experiment_pages_does(view):
    """Experiment 11 had no "Chart data (CSV)"."""
    import io

    import pandas as pd

    buttons = [w for w in view.__panel__().select(pn.widgets.Widget)
               if getattr(w, "filename", None) == "served-chart.csv"]
    assert len(buttons) == 1 and buttons[0].label == "Chart data (CSV)"
    text = buttons[0].callback().getvalue()
    frame = pd.read_csv(io.StringIO(text), comment="#")
    assert len(frame) == view.experiment.chart_data().sizes["row"] > 1000
    assert "# engine = all" in text and "tpot_measured_ms" in frame


def test_a_negative_term_gets_the_predictions_net_bar():
    """Row 815's step term is −24.18 ms: stacked left of 0 while the others stack right of it,
    the predicted bar ended near 35 ms for a prediction of 10.86 ms."""
    from apps.ui.views.served_page import NET, terms_bar
    from lab.served.served_experiment import FromFloorToServed

    row = "2026_03_25_deepseek_r1_gb300_sglang_fp8_disagg_8192x1024_c2048_tp8_0_ep8_0_815"
    record = FromFloorToServed(row=row).result["selected"]
    bars = terms_bar(record, "tpot")
    net = bars.data[bars.data["term"] == NET]
    assert list(net["bar"]) == ["TPOT predicted, net"]
    assert round(float(net["ms"].iloc[0]), 2) == 10.86 == round(record["tpot_predicted_ms"], 2)
    assert "a negative term left of 0" in bars.opts.get().kwargs["title"]
    plain = terms_bar(FromFloorToServed().result["selected"], "tpot")  # no negative term
    assert NET not in set(plain.data["term"])


def test_every_terms_legend_name_is_whole():
    """A legend read "decode steps the queued pro…": every term has a short name of its own."""
    from apps.ui.views.served_page import BAR_NAME_LENGTH, bar_name
    from lab.served.served_calc import TERMS

    names = [bar_name(metric, term) for metric, terms in TERMS.items() for term in terms]
    assert all(not n.endswith("…") and len(n) <= BAR_NAME_LENGTH for n in names), names


def test_the_chart_csv_names_each_run_by_the_id_row_id_takes():
    """The CSV's ``row`` is the row's position in the data: typed into Row id it read "There is
    no row with id '2532'". Each line now carries the run's id too."""
    from apps.ui.parts.downloads import chart_csv
    from lab.served.served_experiment import FromFloorToServed

    exp = FromFloorToServed()
    lines = [line for line in chart_csv(exp.chart_data(), exp.inputs()).splitlines()
             if not line.startswith("#")]
    header, first = lines[0].split(","), lines[1].split(",")
    run = first[header.index("id")]
    exp.row = run
    assert exp.error is None and exp.result["selected"]["id"] == run
