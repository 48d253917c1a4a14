"""Each chart shows its lesson and keeps its labels whole (issue 29, items 6–11 and 13): the
Bokeh figures the pages send, checked without a browser (``test_layout_browser.py`` checks
the same figures on served pages)."""

from __future__ import annotations

import holoviews as hv
import numpy as np
from bokeh.models import FixedTicker, Legend, LogScale, Scatter, Span, Step

from apps.ui.plots.batch_chart import batch_charts
from apps.ui.plots.chart_view import ChartView
from apps.ui.plots.page_descriptions import SAWTOOTH_BLOCKS
from apps.ui.views.measured_page import BELOW_LABEL, MeasuredPage, ratio_lines
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.context_growth_experiment import ContextGrowth
from lab.experiments.goodput_contract import GoodputContract
from lab.experiments.prefill_deadline import PrefillDeadline
from lab.experiments.prefix_ownership import PrefixOwnership
from lab.experiments.sequences_fit import SequencesFit
from lab.experiments.tensor_parallel import TensorParallel
from lab.measured.experiment import FloorsAgainstMeasurements

PHONE_TITLE_CHARS = 36
"""Most characters a chart title may hold: a phone-wide figure (~290 px of plot) shows
about that many at the title's size."""


def chart(view: ChartView, variable: str):
    return next(c for c in view._series if c.variable == variable)


def glyphs(fig, kind) -> list:
    return [r for r in fig.renderers if isinstance(getattr(r, "glyph", None), kind)]


def test_private_blocks_are_a_step_line_around_the_current_prefix():
    """Item 6: a step line without a marker per token, over a few blocks either side of the
    prefix, so the sawtooth shows; the current prefix marked on it."""
    exp = PrefixOwnership()
    saw = chart(ChartView(experiment=exp), "private_blocks_per_request_by_prefix")
    assert glyphs(saw.figure, Step)
    xs = np.asarray(saw.sources[0].data["prefix_window"])
    reach = SAWTOOTH_BLOCKS * exp.block
    assert xs.min() >= exp.prefix - reach and xs.max() <= exp.prefix + reach
    blocks = np.asarray(saw.sources[0].data["private_blocks_per_request_by_prefix"])
    steps = np.diff(blocks)
    assert (steps > 0).sum() >= 2 and (steps < 0).sum() >= 2  # several teeth in view
    dots = [r.glyph for r in glyphs(saw.figure, Scatter) if r.data_source is not saw.point]
    assert dots and all(g.line_alpha == 0 and g.fill_alpha == 0 for g in dots)  # hover only
    assert list(saw.point.data["prefix_window"]) == [exp.prefix]
    assert saw.current.location == exp.prefix


def test_sequences_that_fit_on_a_log_axis_with_the_current_point():
    """Item 7: halving reads the same at every context: log y; the current point marked."""
    exp = SequencesFit()
    view = ChartView(experiment=exp)
    fit = chart(view, "max_sequences")
    assert isinstance(fit.figure.y_scale, LogScale)
    assert list(fit.point.data["context"]) == [exp.context]
    expected = exp.chart_data()["max_sequences"].sel(context=exp.context, tp=exp.tp)
    assert fit.point.data["max_sequences"][0] == float(expected)
    assert isinstance(chart(view, "kv_bytes_per_sequence").figure.y_scale, LogScale)


def test_gemm_legend_below_and_below_floor_points_of_their_own():
    """Item 8: the legend sits under the plot (never over m ≈ 10⁵) and every point below its
    floor has a cross and a legend entry."""
    exp = FloorsAgainstMeasurements(kind="gemm")
    ds = exp.chart_data()
    fig = hv.renderer("bokeh").get_plot(ratio_lines(ds, "m")).state
    legends = [m for m in fig.below if isinstance(m, Legend)]
    assert legends and not [m for m in fig.center if isinstance(m, Legend)]
    labels = [item.label.value for item in legends[0].items]
    assert BELOW_LABEL in labels
    crosses = [r for r in glyphs(fig, Scatter) if r.glyph.marker == "x"]
    below = int((ds["ratio"] < 1).sum())
    assert below > 0 and sum(len(r.data_source.data["ratio"]) for r in crosses) == below


def test_goodput_page_draws_no_rescaled_copy_of_goodput():
    """Item 9: attainment (goodput scaled, a fraction where the card says %) is not drawn a
    second time; the fourth chart is the TPOT median against its limit."""
    exp = GoodputContract()
    view = ChartView(experiment=exp)
    assert [c.variable for c in view._series] == ["goodput_rps", "throughput_tokens_per_s",
                                                  "ttft_p50_s", "tpot_p50_s"]
    tpot = chart(view, "tpot_p50_s").figure
    limits = [s.location for s in tpot.center if isinstance(s, Span)
              and s.dimension == "width"]
    assert limits == [exp.tpot_ms]


def test_step_time_shows_its_two_phases():
    """Item 10: the linear and attention phases drawn under the step (their sum)."""
    exp = BatchBottleneck()
    step, rate = batch_charts(exp.chart_data(), exp.batch, exp.result["ridge_batch"])
    phases = step.phases.data
    np.testing.assert_allclose(phases["linear_time_s"] + phases["attention_time_s"],
                               step.series.data["step_time_s"], rtol=1e-12)
    assert phases["attention_time_s"][-1] > 10 * phases["attention_time_s"][0]  # rises
    labels = [item.label.value for item in step.figure.legend[0].items]
    assert labels == ["step = linear + attention", "linear phase", "attention phase (KV reads)"]
    assert rate.phases is None


def test_labels_fit_their_axes_and_titles_fit_a_phone():
    """Items 11 and 13: the y axes of experiments 2 and 3 give their unit (the title names the
    variable); tp is ticked at 1, 2, 4, 8 only, evenly spaced; titles fit a phone; the ridge
    label sits on the side of its line that has room."""
    for exp in (SequencesFit(), TensorParallel()):
        for c in ChartView(experiment=exp)._series:
            assert len(c.figure.yaxis[0].axis_label or "") <= 12, c.figure.yaxis[0].axis_label
            assert len(c.figure.title.text) <= PHONE_TITLE_CHARS
    tp = ChartView(experiment=TensorParallel())._series[0]
    assert isinstance(tp.figure.x_scale, LogScale)
    assert tp.figure.xaxis[0].ticker.ticks == [1, 2, 4, 8]
    exp = BatchBottleneck()
    for c in batch_charts(exp.chart_data(), exp.batch, exp.result["ridge_batch"]):
        assert len(c.figure.title.text) <= PHONE_TITLE_CHARS
        assert c.ridge_label.text_align == "right"  # B* = 295 is in the right half of 1–1,024
    low = BatchBottleneck(precision="fp8", gpu="l40s")
    charts = batch_charts(low.chart_data(), low.batch, low.result["ridge_batch"])
    side = "left" if low.result["ridge_batch"] < 32 else "right"
    assert charts[0].ridge_label.text_align == side


def test_feasible_band_label_stays_inside_the_plot():
    """Item 11: the band in the right half of the chunk axis is labelled leftwards from its
    end; the sliding-window input's label is short enough for its box."""
    exp = PrefillDeadline()
    view = ChartView(experiment=exp)
    ttft = chart(view, "ttft_s").figure
    label = next(m for m in ttft.center if getattr(m, "text", "").startswith("feasible"))
    assert (label.text_align, label.x) == ("right", exp.result["largest_chunk_meeting_itl"])
    assert len(ContextGrowth.param.window.label) <= 24


def test_prefill_ticks_powers_of_two_thinned_to_the_width():
    """Issue 37: on a phone Bokeh's own log ticks of the prefill chart ran together
    ("10000150002000030000"): the ticks are the powers of two of the data, labelled as many
    as the drawn width holds."""
    ds = FloorsAgainstMeasurements(kind="prefill").chart_data()
    fig = hv.renderer("bokeh").get_plot(ratio_lines(ds, "context")).state
    axis = fig.xaxis[0]
    assert isinstance(axis.ticker, FixedTicker)
    assert list(axis.ticker.ticks) == [2.0**k for k in range(10, 16)]  # 1,024 … 32,768
    assert "inner_width" in axis.formatter.code and axis.formatter.args["fig"] is fig


def test_measured_heatmap_legend_sits_outside_the_cells(document):
    """Issue 37: the "selected point" legend covered the top-left cell on a phone (and a
    corner cell on a desktop): it sits under the plot."""
    fig = hv.renderer("bokeh").get_plot(MeasuredPage()._plot(None)).state
    legends = [m for m in fig.below if isinstance(m, Legend)]
    assert legends and not [m for m in fig.center if isinstance(m, Legend)]
    assert [item.label.value for item in legends[0].items] == ["selected point"]


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_lines_that_name_no_series_read_on_both_themes():
    """Experiment 1's attention phase, its ideal attention markers, the limit lines and the
    expert ceiling were Okabe & Ito's black, invisible on the dark theme (#121212)."""
    from apps.ui.plots.batch_chart import IDEAL_ATTENTION_COLOR, PHASES
    from apps.ui.plots.expert_chart import CEILING_COLOR
    from apps.ui.plots.lessons import MARK_COLOR

    for colour in (IDEAL_ATTENTION_COLOR, PHASES[1][1], CEILING_COLOR, MARK_COLOR):
        assert _contrast(colour, "#ffffff") >= 3 and _contrast(colour, "#121212") >= 3, colour
