"""Plotting functions and views without a browser: HoloViews options and Bokeh data."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pytest

from apps.ui.parts.calculation import CalculationView, steps_html
from apps.ui.parts.cards import CardsView, cards_html
from apps.ui.parts.downloads import dataset_csv
from apps.ui.parts.prediction import UNDECIDED, PredictionView, verdict
from apps.ui.plots.batch_chart import batch_charts
from apps.ui.plots.chart_view import ChartView
from apps.ui.plots.charts import heatmap, numeric_variables, sweep_axis
from apps.ui.plots.series_chart import experiment_charts, update_charts
from lab.experiments import all_experiments
from lab.experiments.batch_bottleneck import BatchBottleneck


def plot_of(element):
    return hv.renderer("bokeh").get_plot(element)


def point_sources(plot) -> list[dict]:
    """CDS data of every scatter layer of an overlay plot."""
    return [sub.handles["cds"].data for sub in plot.subplots.values()
            if "cds" in sub.handles and "fill_alpha" in sub.handles["cds"].data]


def test_batch_chart_axes_units_and_canvas():
    exp = BatchBottleneck()
    step, rate = (c.figure for c in batch_charts(exp.chart_data(), exp.batch,
                                                 exp.result["ridge_batch"]))
    assert step.xaxis[0].axis_label == "Batch (sequences)"
    assert step.yaxis[0].axis_label == "Ideal decode step time (ms)"
    assert step.output_backend == "canvas"
    assert type(step.x_scale).__name__ == "LogScale"
    assert step.title.text == "Step time"  # short enough for a phone; the note on line two
    assert "not a measurement" in step.above[0].text
    assert rate.yaxis[0].axis_label == "Aggregate decode ceiling (tokens/s)"
    assert step.xaxis[0].ticker.ticks[:4] == [1, 2, 4, 8]
    assert "fig.inner_width" in step.xaxis[0].formatter.code  # labels thinned to fit
    assert any(type(t).__name__ == "SaveTool" for t in step.toolbar.tools)


def test_batch_chart_highlights_current_point_in_ms():
    exp = BatchBottleneck()
    step, _ = batch_charts(exp.chart_data(), 8, exp.result["ridge_batch"])
    current = step.current.data
    assert list(current["batch"]) == [8]
    assert round(current["step_time_s"][0], 2) == 7.04
    assert step.ridge.location == exp.result["ridge_batch"]


def test_batch_chart_lines_are_the_powers_of_two():
    exp = BatchBottleneck(batch=24)
    step, _ = batch_charts(exp.chart_data(), exp.batch, exp.result["ridge_batch"])
    batches = list(step.series.data["batch"])
    assert 24 not in batches and batches[:5] == [1, 2, 4, 8, 16]
    assert list(step.current.data["batch"]) == [24]


def test_over_budget_points_are_hollow():
    exp = BatchBottleneck()
    ds = exp.chart_data()
    step, _ = batch_charts(ds, exp.batch, exp.result["ridge_batch"])
    series = step.series.data
    fits = np.asarray(ds.sel(batch=series["batch"])["fits"].values)
    assert (~fits).any() and fits.any()
    np.testing.assert_array_equal(series["fill_alpha"], np.where(fits, 1.0, 0.0))
    np.testing.assert_array_equal(series["fits"], fits)


def test_chart_view_moves_the_point_and_redraws_lines_when_they_change():
    exp = BatchBottleneck()
    view = ChartView(experiment=exp)
    step = view._batch[0]
    lines_before = step.series.data
    exp.batch = 16
    view._update()
    assert list(step.current.data["batch"]) == [16]
    assert step.series.data is lines_before  # only the marker moved
    exp.context = 32768
    view._update()
    assert step.series.data is not lines_before
    assert step.series.data["step_time_s"][0] > lines_before["step_time_s"][0]


@pytest.mark.parametrize("cls", all_experiments()[1:], ids=lambda c: c.slug)
def test_other_experiment_charts_render(cls):
    exp = cls()
    ds = exp.chart_data()
    charts = experiment_charts(ds, exp.inputs())
    assert 1 <= len(charts) <= 4
    axis = sweep_axis(ds[numeric_variables(ds)[0]])
    for chart in charts:
        fig = chart.figure
        assert fig.output_backend == "canvas"
        assert fig.xaxis[0].axis_label.lower().startswith(
            str(ds[axis].attrs.get("long_name", axis)).split()[0].lower()[:3])
        assert any(type(t).__name__ == "SaveTool" for t in fig.toolbar.tools)
        assert fig.toolbar.logo is None  # no link out of the lab, no Tab stop, on each chart
        data = chart.sources[0].data
        assert len(data[chart.layout.x]) == ds.sizes[chart.layout.x]
        # the first series is the dataset's own values along the axis, in one display unit
        da = ds[chart.variable]
        others = [d for d in da.dims if d != chart.layout.x]
        raw = np.asarray(da.transpose(*others, chart.layout.x).values, float)
        raw = raw.reshape(-1, raw.shape[-1])[0]
        drawn = np.asarray(data[chart.variable], float)
        assert np.array_equal(np.isfinite(drawn), np.isfinite(raw))
        both = np.isfinite(raw) & (raw != 0)
        scale = drawn[both] / raw[both]
        assert scale.size and np.allclose(scale, scale[0], rtol=1e-12)
        assert np.log10(scale[0]) == pytest.approx(round(np.log10(scale[0])))  # 1, 1e-9, 1e3…


def test_series_chart_units_legend_and_current_line():
    from lab.experiments.sequences_fit import SequencesFit

    exp = SequencesFit()
    ds = exp.chart_data()
    charts = {c.variable: c for c in experiment_charts(ds, exp.inputs())}
    kv = charts["kv_bytes_per_sequence"]
    assert kv.figure.yaxis[0].axis_label == "GB"  # the title names it
    assert kv.layout.log_x and kv.figure.xaxis[0].ticker.ticks[0] >= 1
    assert len(kv.sources) == ds.sizes["tp"] and len(kv.figure.legend[0].items) == ds.sizes["tp"]
    assert kv.current.location == exp.context
    gb = ds["kv_bytes_per_sequence"].sel(tp=1).values / 1e9
    np.testing.assert_allclose(kv.sources[0].data["kv_bytes_per_sequence"], gb)


def test_series_charts_update_in_place_and_rebuild_on_a_new_layout():
    from lab.experiments.tensor_parallel import TensorParallel

    exp = TensorParallel()
    charts = experiment_charts(exp.chart_data(), exp.inputs())
    step = charts[0]
    before = step.sources[0].data[step.variable].copy()
    exp.context = exp.context * 4
    assert update_charts(charts, exp.chart_data(), exp.inputs()) is None
    assert (step.sources[0].data[step.variable] > before).all()
    from lab.experiments.sequences_fit import SequencesFit

    fit = SequencesFit()
    ds = fit.chart_data()
    charts = experiment_charts(ds, fit.inputs())
    fewer = ds.isel(tp=[0, 1])  # two series instead of four: new legends, new figures
    new = update_charts(charts, fewer, fit.inputs())
    assert new is not None and all(n is not c for n, c in zip(new, charts, strict=True))
    assert len(new[0].sources) == 2


def test_chart_view_swaps_in_rebuilt_figures():
    from lab.experiments.tensor_parallel import TensorParallel

    exp = TensorParallel()
    view = ChartView(experiment=exp)
    first = view._series[0]
    pane_figures = [c[0].object for c in view._grid]
    exp.context = exp.context * 2
    view._update()
    assert view._series[0] is first and [c[0].object for c in view._grid] == pane_figures
    assert first.current.location is None or np.isfinite(first.current.location)


def test_heatmap_hover_shows_every_variable():
    import xarray as xr

    batch = xr.DataArray([1, 2, 4], dims="batch", attrs={"long_name": "batch",
                                                          "units": "sequences"})
    context = xr.DataArray([128, 256], dims="context", attrs={"long_name": "context",
                                                               "units": "tokens"})
    step = xr.DataArray(np.arange(6.0).reshape(3, 2) * 1e-3, dims=("batch", "context"),
                        coords={"batch": batch, "context": context},
                        attrs={"long_name": "ideal decode step time", "units": "s"})
    valid = step > 0
    ds = xr.Dataset({"step_time_s": step, "valid": valid.assign_attrs(long_name="valid")})
    el = heatmap(ds, "step_time_s")
    assert [d.name for d in el.vdims] == ["step_time_s", "valid"]
    plot = plot_of(el)
    data = plot.handles["cds"].data
    assert "valid" in data and "step_time_s" in data
    assert sorted(np.asarray(data["step_time_s"], dtype=float)) == [0, 1, 2, 3, 4, 5]
    assert plot.state.title.text.endswith("(ms)")
    assert plot.state.toolbar.logo is None  # the grid explorer's charts too


def test_cards_show_the_acceptance_figures():
    html = cards_html(BatchBottleneck().cards())
    for text in ("7.04 ms", "1,136 tok/s", "43.33 GB", "HBM"):
        assert text in html


@pytest.mark.parametrize("changes, words", [
    ({"model": "qwen2.5-7b", "tp": 8}, "does not divide"),
    ({"gpu": "a100-sxm-80gb", "precision": "fp8"}, "no FP8"),
])
def test_invalid_inputs_show_the_reason_not_numbers(changes, words):
    exp = BatchBottleneck()
    cards, calc, chart = CardsView(experiment=exp), CalculationView(experiment=exp), \
        ChartView(experiment=exp)
    exp.param.update(**changes)
    html = cards._html(exp.result)
    assert words in html and "ms" not in html
    assert words in calc._html(exp.result)
    assert chart._grid.visible is False
    exp.param.update(model="llama-3.1-8b", tp=1, gpu="h100-sxm", precision="bf16")
    assert "7.04 ms" in cards._html(exp.result)
    assert chart._grid.visible is True


def test_calculation_rows_follow_the_inputs():
    exp = BatchBottleneck()
    html = steps_html(exp.steps())
    assert "15.01 GB / GPU" in html and "= 7.04 ms" in html
    exp.batch = 16
    assert "9.61 ms" in steps_html(exp.steps())


def test_prediction_reveal_explains_with_live_numbers():
    exp = BatchBottleneck()
    view = PredictionView(experiment=exp)
    assert view._answer_text(view.revealed, view.choice, exp.result) == ""
    view.choice = exp.prediction.choices[exp.prediction.answer]
    view.param.trigger("reveal")
    text = view._answer_text(view.revealed, view.choice, exp.result)
    assert text.startswith("<p><strong>Right") and "7.04 ms" in text
    assert verdict(UNDECIDED, ("a", "b"), 1) == "The answer: b."
    assert verdict("a", ("a", "b"), 1).startswith("Not quite")


def test_chart_csv_holds_the_figures_on_screen():
    exp = BatchBottleneck()
    view = ChartView(experiment=exp)
    csv = dataset_csv(view.data[0])
    header, *rows = csv.strip().splitlines()
    cols = header.split(",")
    row = dict(zip(cols, next(r for r in rows if r.split(",")[0] == "8").split(","), strict=True))
    assert round(float(row["step_time_s"]) * 1e3, 2) == 7.04
    assert round(float(row["aggregate_tokens_per_s"])) == 1136
    exp.batch = 16
    assert ",16," not in csv and any(r.startswith("16,") for r in
                                        dataset_csv(view.data[0]).splitlines())


def test_chart_series_carry_no_unused_glyph_copies():
    """No chart has a selection tool and legends hide series rather than mute them, so each
    renderer's non-selection and muted glyphs were models built, sent and set up in the
    browser for nothing (48 of experiment 4's 343 models)."""
    from bokeh.models import GlyphRenderer

    from apps.ui.plots.lessons import chart_inputs
    from apps.ui.plots.series_chart import experiment_charts
    from apps.ui.views.pages import experiment_class

    exp = experiment_class("precision")()
    figures = [c.figure for c in experiment_charts(exp.chart_data(), chart_inputs(exp))]
    dense = experiment_class("decode")()
    ds = dense.chart_data()
    figures += [c.figure for c in batch_charts(ds, dense.batch, dense.result["ridge_batch"])]
    renderers = [r for fig in figures for r in fig.renderers if isinstance(r, GlyphRenderer)]
    assert len(renderers) >= 20
    assert all(r.nonselection_glyph is None and r.muted_glyph is None for r in renderers)


def test_holoviews_charts_drop_bokehs_logo_too():
    """The charts HoloViews draws (experiments 9, 11, 12) take ``CANVAS`` as their Bokeh options:
    no logo, so no link to bokeh.org and no Tab stop on them either."""
    from apps.ui.plots.charts import CANVAS

    fig = hv.render(hv.Curve([(1, 2), (2, 3)]).opts(backend_opts=CANVAS), backend="bokeh")
    assert fig.toolbar.logo is None and fig.output_backend == "canvas"
