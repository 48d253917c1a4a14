"""Experiment 12's page at the Bokeh-document level (no browser): the frontier of each mode
labelled, the target line, the measured rows and the pick; moving the target moves the pick; a
hostile candidates upload is one escaped sentence, a good one is ranked."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from apps.ui.views.plan_page import PlanPage

GOOD = (b"id,backend,model_path,system,mode,isl,osl,batch_size,tp_size\n"
        b"a,vllm,llama-3.1-70b,h200,agg,1024,1024,16,4\n"
        b"b,vllm,llama-3.1-70b,h200,agg,1024,1024,64,4\n"
        b"c,vllm,nosuch/model,h200,agg,1024,1024,8,4\n")


@pytest.fixture(scope="module")
def view():
    doc = Document()
    with set_curdoc(doc):
        page = PlanPage()
        page.__panel__().get_root(doc)
        yield page
    pn.state._locations.pop(doc, None)


def test_the_frontier_the_target_and_the_pick(view):
    exp = view.experiment
    assert exp.error is None
    chart = view._chart(None)
    kinds = [type(layer).__name__ for layer in chart]
    assert kinds.count("Curve") == 2 and "Labels" in kinds and "VLine" in kinds
    labels = next(layer for layer in chart if isinstance(layer, hv.Labels))
    first_label = str(labels.data["label"][0])
    assert first_label.startswith("tp") and ", c " in first_label
    assert any(layer.label == "measured" for layer in chart)  # the public rows overlaid
    assert "Best configuration" in view.best.object and "?view=served&amp;model=llama-3.1-70b" \
        in view.best.object
    first = exp.result["best"]["label"]
    exp.tokens_per_s_user = 20.0
    assert exp.result["best"]["label"] != first
    assert next(layer for layer in view._chart(None) if isinstance(layer, hv.VLine)).data == 20.0


def test_a_hostile_upload_is_one_sentence_and_a_good_one_is_ranked(view):
    view.upload._file.filename = "evil<script>.csv"
    view.upload._file.value = b"id,backend\n<script>alert(1)</script>,x\n"
    status = view.upload._status.object
    assert 'role="alert"' in status and "lacks the columns " in status and "<script>" not in status
    assert view.candidates.object == ""
    # the input no longer names the refused file (it did, as if that file were in force)
    assert view.upload._file.filename is None and view.upload._file.value is None
    view.upload._file.filename = "mine.csv"
    view.upload._file.value = GOOD
    html = view.candidates.object
    assert "Your candidates" in html and "refused: The model nosuch/model is not in" in html
    assert html.index(">a<") > 0 and html.index(">c<") > html.index(">b<")


def test_a_candidates_file_over_the_cap_is_told_in_the_candidates_words(view):
    """The candidates upload refused a large file saying "measurements up to 10 MiB"."""
    assert view.upload._file.limit_sentence() == "candidate files up to 10 MiB are accepted"
    view.upload._file.filename = "big.csv"
    view.upload._file.value = b"x" * (view.upload._file.max_file_size + 1)
    status = view.upload._status.object
    assert "candidate files up to 10 MiB are accepted" in status and "measurements" not in status


def test_the_page_shows_the_regret_study_with_the_picks_row_marked(view):
    """Validation in the product: the page shows how often the default planner's pick held
    (per engine × mode, the pick's own row marked, and at the plan's distance from the
    measured workloads), the figures of :func:`study_summary`."""
    from apps.ui.views.plan_study_view import STUDY_TITLE, study_html
    from lab.plan.plan_study import study_summary

    study = study_summary()
    view.experiment.param.update(tokens_per_s_user=50.0, isl=1024, osl=1024)
    html = view.study.object
    assert STUDY_TITLE in html
    best = view.experiment.result["best"]
    mine = f"{best['engine']} × {best['mode']}"
    row = study["default"]["per_engine_mode"][mine]
    assert f"{mine} (this pick)" in html and f"{row['cases']:,}" in html
    overall = study["default"]["overall"]
    assert f"{overall['misses'] * 100:.1f} % of {overall['cases']:,} cases" in html
    assert "This workload, 1024/1024, was itself measured" in html
    hostile = {"best": {**best, "engine": "<img src=x onerror=alert(1)>"},
               "inputs": view.experiment.result["inputs"]}
    assert "<img" not in study_html(hostile, study)


def test_the_chart_leaves_the_wheel_to_the_page_and_follows_the_theme(view, monkeypatch):
    """The frontier chart zoomed on the mouse wheel (HoloViews makes wheel-zoom active) while
    the page's other charts scroll the page; its labels started under their markers; its grey
    crosses and target line, and its background, follow the dark theme like the others."""
    from bokeh.models import WheelZoomTool

    from apps.ui.plots import charts

    fig = hv.render(view._chart(None))
    assert not isinstance(fig.toolbar.active_scroll, WheelZoomTool)
    assert any(isinstance(t, WheelZoomTool) for t in fig.toolbar.tools)  # still offered
    labels = [r.glyph for r in fig.renderers if type(getattr(r, "glyph", None)).__name__ == "Text"]
    assert labels and all(abs(g.x_offset) == 7 and g.text_baseline == "middle" for g in labels)
    assert {g.text_align for g in labels} == {"left", "right"}  # right of a point, or left of it
    themed = []
    monkeypatch.setattr(charts, "themed", lambda state: themed.append(state))
    hv.render(view._chart(None))
    assert themed  # the theme's hook ran on the figure


def _point(tp, precision, concurrency, mode="agg", ep=1, dp=1, workers=(1, 1)):
    return {"tp": tp, "moe_ep": ep, "attention_dp": dp, "precision": precision,
            "concurrency": concurrency, "mode": mode, "prefill_workers": workers[0],
            "decode_workers": workers[1]}


def test_chart_labels_name_a_layout_once_per_run_of_concurrencies():
    """On a phone the frontier's labels piled up: every point repeated "tp8×ep1×dp1, fp8". A
    label now names the layout (its parallelisms of 1 left out), precision and workers only
    where they change from the point to its left."""
    from apps.ui.views.plan_page import chart_labels

    assert chart_labels([_point(2, "fp8", 512), _point(4, "fp8", 128), _point(4, "fp8", 64),
                         _point(4, "bf16", 64), _point(1, "fp8", 1024, ep=8, dp=8)]) == [
        "tp2, fp8, c 512", "tp4, c 128", "c 64", "bf16, c 64", "tp1×ep8×dp8, fp8, c 1,024"]
    assert chart_labels([_point(4, "fp8", 256, "disagg", workers=(1, 2)),
                         _point(4, "fp8", 128, "disagg", workers=(1, 2)),
                         _point(4, "fp8", 64, "disagg", workers=(1, 1))]) == [
        "tp4, fp8, c 256, 1P+2D", "c 128", "c 64, 1P+1D"]


def test_the_legend_sits_below_the_plot_and_the_last_label_inside_it(view):
    """The legend covered the frontier's points on a phone (it sat inside the plot, top
    right); the rightmost point's label was cut at the plot's edge."""
    from bokeh.models import Legend

    view.experiment.param.update(tokens_per_s_user=50.0, isl=1024, osl=1024)
    chart = view._chart(None)
    fig = hv.render(chart)
    assert not any(isinstance(m, Legend) for m in fig.center)
    legend = next(m for m in fig.below if isinstance(m, Legend))
    assert legend.ncols >= 1 and len(legend.items) >= 3
    rightmost = max(max(layer.data["user"]) for layer in chart if isinstance(layer, hv.Labels))
    assert fig.x_range.end > rightmost * 1.1
    labels = next(layer for layer in chart if isinstance(layer, hv.Labels))
    assert any(str(s).startswith("c ") for s in labels.data["shown"])


@pytest.mark.parametrize("inputs", [{}, {"model": "deepseek-v3", "gpu": "b200", "budget": 32,
                                         "engine": "trtllm"}])
def test_no_two_frontier_labels_overlap_on_a_phone(inputs):
    """At the high-throughput end "tp2, fp8, c 512" printed over "tp1, c 128" and five labels
    piled into one block on a phone. Labels are now placed on a phone's plot area, right of
    their point or left of it, or left out (the hover keeps them); every mode keeps some."""
    from apps.ui.views import plan_page as pp
    from lab.plan.plan_experiment import PlanDeployment

    result = PlanDeployment(**inputs).result
    plotted = [*(p for ps in result["frontier"].values() for p in ps), *result["measured"]]
    xs = [p["tokens_per_s_user"] for p in plotted]
    ys = [p["tokens_per_s_gpu"] for p in plotted]
    placed = pp.placed_labels(result["frontier"], xs, ys)
    x0, x1 = min(xs), max(xs)
    x0, x1 = x0 - 0.03 * (x1 - x0), x1 + pp.LABEL_ROOM * (x1 - x0)
    ly = np.log10(ys)
    y0, y1 = ly.min() - 0.05 * np.ptp(ly), ly.max() + 0.05 * np.ptp(ly)
    width, height = pp.LABEL_FRAME_PX
    boxes = []
    for mode, points in result["frontier"].items():
        right, left = placed[mode]
        assert any(right) or any(left), f"no label on the {mode} frontier"
        for p, r, le in zip(points, right, left, strict=True):
            assert not (r and le)
            x = (p["tokens_per_s_user"] - x0) / (x1 - x0) * width
            y = (np.log10(p["tokens_per_s_gpu"]) - y0) / (y1 - y0) * height
            for text, sign in ((r, 1), (le, -1)):
                if text:
                    near, far = x + sign * pp.LABEL_GAP_PX, x + sign * (
                        pp.LABEL_GAP_PX + pp.LABEL_CHAR_PX * len(text))
                    boxes.append((min(near, far), max(near, far), y - 6, y + 6, text))
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[1] <= width, f"{a[4]!r} runs out of the plot"
        for b in boxes[i + 1:]:
            assert not (a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]), \
                f"{a[4]!r} overlaps {b[4]!r}"


def test_the_chart_data_downloads_as_every_experiment_pages_does(view):
    """Experiments 11 and 12 had no "Chart data (CSV)": the planner's frontier could not leave
    the page."""
    import io

    import pandas as pd

    buttons = [w for w in view.__panel__().select(pn.widgets.Widget)
               if getattr(w, "filename", None) == "plan-chart.csv"]
    assert len(buttons) == 1 and buttons[0].label == "Chart data (CSV)"
    text = buttons[0].callback().getvalue()
    assert "# model = llama-3.1-70b" in text and "# isl = 1024" in text
    frame = pd.read_csv(io.StringIO(text), comment="#")
    result = view.experiment.result
    frontier = frame[frame["source"] == "frontier"]
    assert len(frontier) == sum(len(p) for p in result["frontier"].values())
    assert len(frame[frame["source"] == "measured"]) == len(result["measured"])
    pick = frame[frame["source"] == "pick"].iloc[0]
    assert pick["tokens_per_s_gpu"] == pytest.approx(result["best"]["tokens_per_s_gpu"])
    assert pick["label"] == result["best"]["label"]


def test_a_plan_that_cannot_be_made_draws_a_labelled_empty_chart():
    """DeepSeek-V3 on one H100 drew an empty chart with axes "x" and "y"."""
    from lab.plan.plan_experiment import PlanDeployment

    doc = Document()
    with set_curdoc(doc):
        page = PlanPage(experiment=PlanDeployment(model="deepseek-v3", gpu="h100-sxm", budget=1))
        page.__panel__().get_root(doc)
        chart = page._chart(None)
    assert page.experiment.result is None and "do not fit" in page.experiment.error
    assert chart.opts.get().kwargs["title"] == "No plan to draw: see the sentence by the inputs"
    assert [d.label for d in (*chart.kdims, *chart.vdims)] == [
        "Output tokens/s per user", "Output tokens/s per GPU"]
    pn.state._locations.pop(doc, None)


def test_hovers_name_their_figures_with_units(view):
    """A frontier point's hover read "user: 87.227 / gpu: 692.649 / tpot: 11.464" (and "gpu:
    1.025e+3"), the chart's field names without units."""
    from bokeh.models import HoverTool

    fig = hv.render(view._chart(None), backend="bokeh")
    tips = [dict(t.tooltips) for t in fig.tools if isinstance(t, HoverTool) and t.tooltips]
    frontier = next(t for t in tips if "Configuration" in t)
    assert frontier["Output tokens/s per GPU"] == "@{gpu}{0,0}"
    assert frontier["TPOT predicted"].endswith(" ms") and frontier["GPUs"] == "@{gpus}"
    assert any("Measured run" in t for t in tips)
    assert not any(name in t for t in tips for name in ("user", "gpu", "tpot"))
