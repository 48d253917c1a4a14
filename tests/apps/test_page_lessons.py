"""Bokeh-document checks that each page teaches its lesson (issue 11), without a browser."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest

from apps.ui.parts.calculation import CalculationView
from apps.ui.parts.cards import CardsView
from apps.ui.plots.chart_view import ChartView
from apps.ui.plots.page_descriptions import BUDGET_NOTE
from apps.ui.views.experiment_view import ExperimentView
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.context_growth_experiment import ContextGrowth
from lab.experiments.goodput_contract import GoodputContract
from lab.experiments.precision_switch import PrecisionSwitch
from lab.experiments.prefill_deadline import PrefillDeadline
from lab.experiments.prefix_ownership import PrefixOwnership
from lab.experiments.sequences_fit import SequencesFit
from lab.experiments.tensor_parallel import TensorParallel

OVER = {"model": "llama-3.1-70b", "gpu": "l40s", "precision": "bf16", "batch": 64}
"""Llama 3.1 70B BF16 at batch 64 on one L40S: far over its memory."""


def chart_alphas(view: ChartView) -> list[float]:
    """Every marker's fill alpha across the view's series charts."""
    return [a for chart in view._series for source in chart.sources
            for a in source.data["fill_alpha"]]


def caption(view: ChartView) -> str:
    return next(p.object for p in view.__panel__() if isinstance(p, pn.pane.Markdown))


def test_over_budget_is_hollow_and_carded_on_experiments_3_and_4():
    for cls in (TensorParallel, PrecisionSwitch):
        exp = cls(**OVER)
        view = ChartView(experiment=exp)
        alphas = chart_alphas(view)
        assert alphas and 0.0 in alphas, cls.__name__
        html = CardsView(experiment=exp)._html(exp.result)
        assert "does not fit" in html and "lab-card-over" in html, cls.__name__
        assert BUDGET_NOTE in caption(view)
        fine = cls()
        assert "does not fit" not in CardsView(experiment=fine)._html(fine.result)


def test_tensor_parallel_fills_the_degrees_that_fit():
    exp = TensorParallel(**OVER)
    view = ChartView(experiment=exp)
    source = view._series[0].sources[0].data
    ds = exp.sweep(tp=exp.chart_data()["tp"])
    np.testing.assert_array_equal(source["fill_alpha"] == 1.0, np.asarray(ds["fits"].values))


def test_budget_caption_only_on_pages_with_a_budget():
    view = ChartView(experiment=ContextGrowth())
    assert BUDGET_NOTE not in caption(view)
    assert 0.0 not in chart_alphas(view)


def annotations(chart, kind: str) -> list:
    return [m for m in chart.figure.center if type(m).__name__ == kind]


def chart_of(view: ChartView, variable: str):
    return next(c for c in view._series if c.variable == variable)


def test_prefill_marks_chunk_limits_and_the_feasible_range():
    exp = PrefillDeadline()
    view = ChartView(experiment=exp)
    ttft = chart_of(view, "ttft_s")
    assert ttft.current.location == exp.chunk
    assert exp.deadline_ms in [s.location for s in annotations(ttft, "Span")]
    itl = chart_of(view, "itl_during_prefill_s")
    assert exp.itl_ms in [s.location for s in annotations(itl, "Span")]
    band = annotations(ttft, "BoxAnnotation")[0]
    r = exp.result
    assert (band.left, band.right) == (r["smallest_chunk_meeting_deadline"],
                                       r["largest_chunk_meeting_itl"])
    exp.deadline_ms = 3000.0
    view._update()
    assert 3000.0 in [s.location for s in annotations(ttft, "Span")]
    assert band.left == exp.result["smallest_chunk_meeting_deadline"]


def test_context_growth_plots_the_doubling_ratio_and_the_crossover():
    exp = ContextGrowth()
    view = ChartView(experiment=exp)
    ratio = chart_of(view, "doubling_ratio")
    values = ratio.sources[0].data["doubling_ratio"]
    assert values.min() >= 2.0 and values.max() <= 4.0
    spans = [s.location for s in annotations(ratio, "Span")]
    assert 2.0 in spans and 4.0 in spans and exp.result["crossover_tokens"] in spans
    assert (ratio.figure.y_range.start, ratio.figure.y_range.end) == (1.9, 4.3)
    assert any("crossover" in label.text for label in annotations(ratio, "Label"))


def test_prefix_caching_one_scale_and_the_block_sawtooth():
    exp = PrefixOwnership()
    view = ChartView(experiment=exp)
    kv = chart_of(view, "kv_bytes")
    assert kv.layout.keys == ("prefix caching on", "prefix caching off")  # one chart, one scale
    saw = chart_of(view, "private_blocks_per_request_by_prefix")
    blocks = saw.sources[0].data["private_blocks_per_request_by_prefix"]
    steps = np.diff(blocks)
    assert (steps > 0).any() and (steps < 0).any()  # it rises and falls back: a sawtooth
    assert saw.current.location == exp.prefix


def test_ridge_line_is_labelled_and_goodput_draws_each_curve_once():
    view = ChartView(experiment=BatchBottleneck())
    assert all(c.ridge_label.text.startswith("ridge batch") for c in view._batch)
    goodput = ChartView(experiment=GoodputContract())
    drawn = [c.variable for c in goodput._series]
    # attainment and good requests are goodput scaled: drawn once, as goodput (issue 29 #9)
    assert drawn == ["goodput_rps", "throughput_tokens_per_s", "ttft_p50_s", "tpot_p50_s"]


def test_inputs_that_drive_nothing_are_not_shown():
    four = ExperimentView(experiment=PrecisionSwitch(), sync_url=False)
    assert "precision" not in four.inputs._widgets and "batch" in four.inputs._widgets
    two = ExperimentView(experiment=SequencesFit(), sync_url=False)
    assert "batch" not in two.inputs._widgets and "context" in two.inputs._widgets
    eight = ExperimentView(experiment=ContextGrowth(), sync_url=False)
    widgets = eight.inputs._widgets
    assert not widgets["model"].visible and not widgets["gpu"].visible
    assert widgets["a_ms"].visible
    eight.experiment.from_model = True
    assert widgets["model"].visible and widgets["precision"].visible
    assert not widgets["a_ms"].visible and not widgets["c_ms"].visible
    three = ExperimentView(experiment=TensorParallel(), sync_url=False)
    assert not three.inputs._widgets["allreduce_latency_us"].visible


def test_each_page_description_names_only_inputs_of_its_experiment():
    """A description is the one place of its page's knowledge: every input it hides, switches
    or places on a chart axis is an input of its experiment, and a switch is a Boolean."""
    import param

    from apps.ui.plots.page_descriptions import DESCRIPTIONS
    from apps.ui.views.pages import experiment_class

    for slug, page in DESCRIPTIONS.items():
        cls = experiment_class(slug)
        named = [*page.unused_inputs, *page.axis_inputs.values()]
        for switch in page.switches:
            assert isinstance(cls.param[switch.input], param.Boolean), slug
            named += [*switch.on, *switch.off]
        assert set(named) <= set(cls.input_names()), slug


def test_a_page_without_a_description_draws_its_data_as_they_are(monkeypatch):
    """The lessons and the shown inputs follow the page description, keyed by slug, not the
    experiment's class or data: without its description, the tensor-parallel page shows
    every input live; without theirs, the prefix caching page draws its chart data unchanged
    and the context growth page marks nothing."""
    from apps.ui.plots.lessons import chart_inputs, lesson_data, lesson_marks
    from apps.ui.plots.page_descriptions import DESCRIPTIONS
    from apps.ui.views.live_inputs import live, shown_inputs

    three, six, eight = TensorParallel(), PrefixOwnership(), ContextGrowth()
    assert not live(three, "allreduce_latency_us") and lesson_marks(eight)
    assert chart_inputs(six)["prefix_window"] == six.prefix
    for slug in ("tp", "prefix", "context"):
        monkeypatch.delitem(DESCRIPTIONS, slug)
    names = list(three.input_names())
    assert shown_inputs(three, names) == names and live(three, "allreduce_latency_us")
    ds = six.chart_data()
    assert lesson_data(six, ds) is ds and chart_inputs(six) == six.inputs()
    assert lesson_marks(eight) == []


def test_invalid_inputs_say_why_there_is_no_chart_data_or_calculation():
    exp = BatchBottleneck()
    view = ChartView(experiment=exp)
    assert not view._why.visible and view._download.visible
    exp.gpu = "a100-sxm-80gb"
    exp.precision = "fp8"
    assert exp.error
    assert view._why.visible and not view._download.visible
    why = view._why_html(exp.result)
    assert "no chart data (CSV)" in why and "FP8" in why
    calc = CalculationView(experiment=exp)
    assert "FP8" in calc._html(exp.result)


def test_prediction_reveals_after_a_choice_and_judges_the_first_one():
    from apps.ui.parts.prediction import PredictionView

    exp = BatchBottleneck()
    view = PredictionView(experiment=exp)
    assert view._button.disabled
    view.param.trigger("reveal")
    assert not view.revealed  # nothing chosen: nothing revealed
    wrong = next(c for i, c in enumerate(exp.prediction.choices) if i != exp.prediction.answer)
    view.choice = wrong
    assert not view._button.disabled
    view.param.trigger("reveal")
    assert view.revealed and view._choices.sx  # locked (dimmed), not disabled: keeps focus
    view.choice = exp.prediction.choices[exp.prediction.answer]
    assert view.choice == wrong
    assert view._answer_text(True, view.choice, exp.result).startswith("<p><strong>Not quite")


def test_wide_counts_have_a_powers_of_two_slider_and_exact_typing():
    view = ExperimentView(experiment=BatchBottleneck(), sync_url=False)
    layout = list(view.inputs.layout)
    box = view.inputs._widgets["batch"]
    slider = layout[layout.index(box) + 1]
    assert slider.options[:4] == [1, 2, 4, 8] and slider.options[-1] == 1024
    view.experiment.batch = 24  # typed exactly
    assert view.experiment.batch == 24 and slider.value == 32
    slider.value = 128
    assert view.experiment.batch == 128 and box.value == 128


def test_dropdowns_show_names_and_small_coefficients_keep_their_digits():
    view = ExperimentView(experiment=BatchBottleneck(), sync_url=False)
    assert view.inputs._widgets["model"].options["Llama 3.1 8B"] == "llama-3.1-8b"
    assert view.inputs._widgets["gpu"].options["NVIDIA H100 SXM"] == "h100-sxm"
    eight = ExperimentView(experiment=ContextGrowth(), sync_url=False)
    fmt = eight.inputs._widgets["c_ms"].format.format
    from bokeh.models import NumeralTickFormatter  # noqa: F401  (the format is numeral.js)
    assert fmt.count("0") >= 7  # 5e-7 ms shows as 0.0000005, not 0.0


def test_ticks_are_plain_numbers_and_legends_sit_below_the_data():
    view = ChartView(experiment=GoodputContract())
    for chart in view._series:
        assert "toLocaleString" in chart.figure.yaxis[0].formatter.code
    prefix = ChartView(experiment=PrefixOwnership())
    kv = chart_of(prefix, "kv_bytes").figure
    assert kv.legend[0] in kv.below and kv.legend[0] not in kv.center


def test_sources_legend_gib_parts_and_chart_csv_inputs():
    from apps.ui.parts.downloads import chart_csv
    from apps.ui.parts.source_tables import LEGEND_TEXT, gpu_frame

    assert "**P** primary" in LEGEND_TEXT and "*K* KV heads" in LEGEND_TEXT
    gpus = gpu_frame().set_index("id")
    assert "GiB" in gpus.loc["mi300x", "memory label"]
    assert gpus.loc["h100-sxm", "memory label"] == "GB"
    exp = BatchBottleneck()
    view = ChartView(experiment=exp)
    text = chart_csv(*view.data[:2])
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    assert lines[header].startswith("batch,") and all(line.startswith("#") for line in lines[:header])
    assert "# model = llama-3.1-8b" in text and "# batch = 8" in text
    goodput = ChartView(experiment=GoodputContract())
    text = chart_csv(*goodput.data[:2])
    assert "# trace = default.csv" in text and "/" not in text.split("# trace = ")[1]


def test_busy_note_shows_while_the_charts_catch_up(monkeypatch):
    from apps.ui.shell.busy import BUSY_CSS

    scheduled = []
    monkeypatch.setattr(pn.state, "execute", lambda fn, schedule=False: scheduled.append(fn))
    exp = ContextGrowth()
    view = ChartView(experiment=exp)
    assert not view._busy.visible
    exp.tokens = 1024
    assert view._busy.visible and len(scheduled) == 1
    scheduled[0]()
    assert not view._busy.visible
    assert "0.3s" in BUSY_CSS  # it appears only after 300 ms


def test_marks_added_to_a_served_document_are_valid():
    from bokeh.document import Document

    exp = PrefillDeadline()
    view = ChartView(experiment=exp)
    doc = Document()
    for chart in view._series:
        doc.add_root(chart.figure)
    exp.chunk = 512
    view._update()
    for chart in view._series:
        for model in chart.figure.center:
            if type(model).__name__ == "Label":
                assert model.x is not None and model.y is not None
    doc.validate()


def test_step_buttons_use_the_theme_text_colour():
    view = ExperimentView(experiment=ContextGrowth(), sync_url=False)
    for name in ("a_ms", "c_ms", "tokens"):
        assert view.inputs._widgets[name].sx["& .MuiIconButton-root, & button"]["color"] == (
            "text.primary")


def test_experiment_6_offers_dense_models_only(document):
    """Experiment 6 uses the dense formulas: its model dropdown holds the dense catalog models
    only (a MoE id would only ever be refused), while the CLI and a config.json path still get
    the one-sentence refusal (tests/core/test_moe_decode.py)."""
    from lab.catalog.lookup import dense_model_catalog, moe_model_catalog

    exp = PrefixOwnership()
    view = ExperimentView(experiment=exp, sync_url=False)
    view.__panel__().get_root(document)
    options = view.inputs._widgets["model"].options
    values = list(options.values()) if isinstance(options, dict) else list(options)
    assert values == list(dense_model_catalog())
    assert not set(values) & set(moe_model_catalog())
    assert "Mixtral 8x7B v0.1" not in options and "Llama 3.1 8B" in options
    with pytest.raises(ValueError):
        exp.model = "mixtral-8x7b"
    assert exp.error is None and exp.result


def test_experiment_8_offers_every_model_and_shows_the_layer_mix(document):
    """Issue 26: experiment 8 derives a and c from any catalog model (a mixture of experts at
    its active weights) and counts a model's own sliding-window and chunked layers, shown in a
    "Layer mix" card."""
    from lab.catalog import model_catalog

    exp = ContextGrowth(from_model=True)
    view = ExperimentView(experiment=exp, sync_url=False)
    view.__panel__().get_root(document)
    options = view.inputs._widgets["model"].options
    values = list(options.values()) if isinstance(options, dict) else list(options)
    assert values == list(model_catalog())
    exp.model = "gemma-3-27b"
    assert exp.error is None
    mix = [card for card in exp.cards() if card.label == "Layer mix"]
    assert [card.value for card in mix] == ["52 sliding-window layers of 1,024 tokens, 10 full"]
    assert "7,086,467,072 over all 62 layers" in mix[0].caption
    exp.model = "llama-3.1-8b"
    assert exp.error is None and not [c for c in exp.cards() if c.label == "Layer mix"]


def test_goodput_ttft_is_on_a_log_axis_and_the_speed_up_axis_is_labelled():
    """Issue 37 item 10: experiment 7's TTFT median runs from milliseconds to minutes, so its
    axis is logarithmic (its 1,000 ms limit lay on a linear axis's baseline); experiment 10's
    speed-up axis reads ×."""
    from apps.ui.plots.lessons import lesson_data
    from apps.ui.plots.series_chart import series_data
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    goodput = GoodputContract()
    ttft = series_data(lesson_data(goodput, goodput.chart_data()), "ttft_p50_s",
                       goodput.inputs())
    assert ttft.layout.log_y and ttft.y_label == "ms"
    spec = SpeculativeDecoding()
    assert series_data(lesson_data(spec, spec.chart_data()), "speedup",
                       spec.inputs()).y_label == "×"


def test_a_line_label_moves_off_the_current_point_and_the_curves():
    """Issue 37 item 10: a vertical line's label goes where the curves and the current point
    leave room (experiment 8's crossover label covered the current point)."""
    from apps.ui.plots.lessons import CURRENT_WEIGHT, vline_label_place
    from apps.ui.plots.page_descriptions import Mark

    mark = Mark("vline", "crossover n* = 8,192", 8192.0, axis="tokens")
    xs = np.array([1024.0, 2048, 4096, 8192, 16384, 32768, 4096])
    rising = np.array([1.0, 1.1, 1.2, 1.5, 3.0, 9.0, 1.2])  # current point last, bottom left
    weights = np.array([1, 1, 1, 1, 1, 1, CURRENT_WEIGHT])
    place = vline_label_place(mark, (xs, rising, weights), log_x=True, log_y=False)
    assert place["y_units"] == "data" and place["text_baseline"] == "top"  # at the top
    falling = rising[::-1].copy()
    falling[-1], xs[-1] = 9.0, 1024.0  # the current point high on the left, far from the line
    place = vline_label_place(mark, (xs, falling, weights), log_x=True, log_y=False)
    # The top right of the line is empty (the axis's padding gives the label room there);
    # the bottom left holds the curve's point at the line.
    assert place["y_units"] == "data" and place["text_align"] == "left"


def test_a_band_label_moves_off_the_curves():
    """Issue 37 item 10: experiment 5's "feasible" label lay on the ITL curve at the plot's
    bottom; it goes to the top when the curves leave the top emptier under it."""
    from apps.ui.plots.lessons import CURRENT_WEIGHT, band_label_height, band_label_place
    from apps.ui.plots.page_descriptions import Mark

    mark = Mark("band", "feasible: chunks meeting both", 400.0, 600.0, axis="chunk_size")
    xs = np.array([1.0, 8, 64, 512, 4096, 16384, 2048])
    itl = np.array([12.0, 12.5, 14, 40, 140, 160, 135])  # rising; the current point last
    weights = np.array([1, 1, 1, 1, 1, 1, CURRENT_WEIGHT])
    place = band_label_place(mark, xs)
    assert place["text_align"] == "right"  # from the band's end leftwards, over the low ITL
    height = band_label_height(mark, place, (xs, itl, weights), log_x=True, log_y=False)
    assert height["y_units"] == "data" and height["text_baseline"] == "top"
    ttft = np.array([60000.0, 30000, 4400, 1500, 1050, 1000, 1100])  # falling past the top
    height = band_label_height(mark, place, (xs, ttft, weights), log_x=True, log_y=False,
                               y_bounds=(0.0, 4500.0))
    assert height["y_units"] == "screen"


def test_break_even_labels_sit_off_every_curve_and_legends_fit_a_phone():
    """Issue 37 item 10: experiment 10's break-even label lay on the curves (between their
    markers: a label is kept off the segments too), and its legend of four entries ran past
    a phone's chart on one row."""
    from bokeh.models import Label

    from apps.ui.plots.chart_view import along_line, drawn_points
    from apps.ui.plots.lessons import DrawnShares, label_share, lesson_marks
    from apps.ui.plots.series_chart import LEGEND_ROOM_PX, legend_columns
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    xs, ys = along_line([1, 4, 16], [1.0, 3.0, 2.0], log_x=True, log_y=False, samples=1)
    assert np.allclose(xs, [1, 2, 4, 8, 16]) and np.allclose(ys, [1, 2, 3, 2.5, 2])
    exp = SpeculativeDecoding()
    view = ChartView(experiment=exp)
    mark = next(m for m in lesson_marks(exp) if m.kind == "vline")
    assert mark.start and label_share(mark) < 0.25  # two short lines
    for chart in view._series:
        label = next(m for m in chart.figure.center
                     if isinstance(m, Label) and m.text.startswith("break-even"))
        drawn = DrawnShares.of(drawn_points(chart), chart.layout.log_x, chart.layout.log_y)
        line, width = drawn.x_share(mark.start), label_share(mark)
        x0, x1 = (line - width, line) if label.text_align == "right" else (line, line + width)
        if label.y_units == "screen":
            rows = drawn.fy <= 0.2
        else:
            share = (label.y - drawn.y_range[0]) / (drawn.y_range[1] - drawn.y_range[0])
            rows = (drawn.fy >= share - 0.2) if label.text_baseline == "top" else (
                np.abs(drawn.fy - share) <= 0.07)
        assert not ((drawn.fx >= x0) & (drawn.fx <= x1) & rows).any(), chart.variable
        legends = [m for m in chart.figure.below if type(m).__name__ == "Legend"]
        for legend in legends:
            assert legend.ncols == legend_columns(legend.items) == 2  # 2 × 2, not 1 × 4
            assert legend.ncols * (9 * 7.5 + 30) <= LEGEND_ROOM_PX


def test_a_horizontal_line_label_moves_off_the_curves():
    """Experiment 10's "1× (plain decoding)" label sat above its line at the left, on the
    α 0.5 speed-up curve near 1.15; it goes where the curves leave room (above on the left
    when that is empty, as before)."""
    from apps.ui.plots.lessons import hline_label_place
    from apps.ui.plots.page_descriptions import Mark

    mark = Mark("hline", "1× (plain decoding)", 1.0, variable="speedup")
    xs = np.array([1.0, 4, 16, 64, 256, 1024])
    just_above = np.array([1.15, 1.15, 1.14, 1.1, 0.6, 0.55])
    weights = np.ones(xs.size)
    y_bounds = (0.5, 2.5)
    place = hline_label_place(mark, (xs, just_above, weights), True, False, y_bounds)
    assert place["x_units"] == "screen" and place["text_baseline"] == "top"  # below, left
    high = np.array([2.0, 2.0, 1.9, 1.8, 1.7, 1.6])  # nothing near the line
    place = hline_label_place(mark, (xs, high, weights), True, False, y_bounds)
    assert place["x_units"] == "screen" and place["text_baseline"] == "bottom"  # above, left


def test_page_10s_plain_decoding_label_covers_no_curve():
    from bokeh.models import Label

    from apps.ui.plots.chart_view import drawn_points
    from apps.ui.plots.lessons import HLINE_LABEL_ROOM, DrawnShares, label_share, lesson_marks
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    exp = SpeculativeDecoding()
    view = ChartView(experiment=exp)
    mark = next(m for m in lesson_marks(exp) if m.kind == "hline")
    chart = next(c for c in view._series if c.variable == mark.variable)
    label = next(m for m in chart.figure.center if isinstance(m, Label) and m.text == mark.label)
    drawn = DrawnShares.of(drawn_points(chart), chart.layout.log_x, chart.layout.log_y)
    line = (mark.start - drawn.y_range[0]) / (drawn.y_range[1] - drawn.y_range[0])
    width = label_share(mark)
    x0, x1 = (0.0, width) if label.x_units == "screen" else (1 - width, 1.0)
    y0, y1 = ((line, line + HLINE_LABEL_ROOM) if label.text_baseline == "bottom"
              else (line - HLINE_LABEL_ROOM, line))
    assert not ((drawn.fx >= x0) & (drawn.fx <= x1) & (drawn.fy >= y0) & (drawn.fy <= y1)).any()


@pytest.mark.parametrize("slug,changes", [("goodput", {"ttft_ms": 1_000_000, "tpot_ms": 1000}),
                                          ("context", {"window": 20}),
                                          ("plan", {"model": "llama-3.1-8b", "budget": 16})])
def test_the_answer_is_worked_at_the_questions_inputs_when_the_reader_changed_them(slug,
                                                                                     changes):
    """The question names the page's starting inputs ("Llama 3.1 70B on 8 H200"); a reader who
    changed them first was judged against an explanation of other numbers that could
    contradict the verdict (goodput "rises, then falls" with a goodput that never fell)."""
    from html import unescape

    from apps.ui.parts.prediction import PredictionView
    from apps.ui.views.pages import experiment_class

    cls = experiment_class(slug)
    at_defaults = cls().explanation()
    exp = cls()
    exp.param.update(**changes)
    assert exp.error is None and exp.changed_inputs() == list(changes)
    view = PredictionView(experiment=exp)
    view.choice = exp.prediction.choices[exp.prediction.answer]
    view.param.trigger("reveal")
    text = unescape(view._answer_text(True, view.choice, exp.result))
    assert text.startswith("<p><strong>Right")
    assert "The question is asked at the page's starting inputs and yours differ (" in text
    assert at_defaults in text and exp.explanation() not in text
    exp.param.update(**{name: cls.param[name].default for name in changes})
    assert unescape(view._answer_text(True, view.choice, exp.result)).endswith(
        f"{at_defaults}</p>")


def test_each_caption_says_what_its_curves_are():
    """Memory, prefix and goodput said their curves were "ideal phase costs", and every page
    said "ideal" twice. Memory's markers are hollow where nothing fits, so it says so."""
    for cls, words in ((PrefixOwnership, "blocks exactly"), (GoodputContract, "a simulation"),
                       (ContextGrowth, "analytical model")):
        text = caption(ChartView(experiment=cls()))
        assert words in text and "phase costs" not in text and BUDGET_NOTE not in text, text
    memory = ChartView(experiment=SequencesFit(budget=0.05))
    assert 0.0 in chart_alphas(memory)
    assert "memory accounting" in caption(memory) and BUDGET_NOTE in caption(memory)
    text = caption(ChartView(experiment=BatchBottleneck()))
    assert "ideal phase costs" in text and BUDGET_NOTE in text and text.count("deal") == 1
