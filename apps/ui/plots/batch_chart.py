"""Experiment 1's two charts, drawn directly with Bokeh and updated in place.

Step time and the aggregate ceiling against batch (log2 axis): the line and markers over the
powers of two (hollow where the configuration is over the memory budget), the ridge batch
``B*`` dashed, and the current batch as one large marker. Built with Bokeh rather than
HoloViews because this is the page most readers open first: two figures take about 20 ms of
server time this way against about 180 ms through HoloViews, and the page's first load is
measured (``benchmarks/bench_ui.py``). Nothing here knows about Panel or sessions.

The data sources keep the column names of the data (``batch``, the variable, ``fits``,
``fill_alpha``), in the units on screen, so tests and the browser read the figures shown.

With experiment 9's switch on, the step-time figure also shows the measured attention phase
(real H100 kernels × layers) beside the ideal one at the batches measured for the model's
shape (:class:`MeasuredMarkers`). Those renderers are added the first time it is switched on,
so with the switch off every figure is as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from bokeh.models import (
    ColumnDataSource,
    FixedTicker,
    GlyphRenderer,
    HoverTool,
    Label,
    Legend,
    LegendItem,
    Span,
    Title,
)
from bokeh.plotting import figure

from apps.ui.plots.charts import (
    HOVER_NUMBER,
    NOTE,
    axis_label,
    display_values,
    fit_columns,
    lean,
    new_figure,
    series_with_current,
    set_log2_ticks,
    themed,
)
from apps.ui.shell.theme import HIGHLIGHT, NEUTRAL, OKABE_ITO, PRIMARY

BATCH_SERIES = (("step_time_s", PRIMARY, "Step time"),
                ("aggregate_tokens_per_s", OKABE_ITO[1], "Aggregate ceiling"))
"""The two charts: variable, colour, title."""

RIDGE_COLOR = OKABE_ITO[2]
"""Colour of the dashed ridge-batch line."""

HEIGHT = 320
"""Figure height in px."""

MEASURED_COLOR = OKABE_ITO[4]
"""Colour of the measured attention markers (filled diamonds)."""
IDEAL_ATTENTION_COLOR = NEUTRAL
"""Colour of the ideal attention phase markers beside them (hollow circles)."""
MEASURED_LABEL = "◆ measured attention (real H100 SXM kernels × layers)"
"""Key of the measured markers (shown by the switch: a Bokeh legend added to a figure already
on screen is drawn empty)."""
IDEAL_ATTENTION_LABEL = "○ ideal attention phase (the lab's model)"
"""Key of the ideal attention markers."""
IDEAL_ATTENTION_SOURCE = "the lab's model: ideal phase cost, not a measurement"
"""What the hover gives as the source of an ideal attention marker."""
MS = 1e-3
"""One millisecond, s."""


PHASES = (("linear_time_s", OKABE_ITO[5], "dashed", "linear phase"),
          ("attention_time_s", NEUTRAL, "dotdash", "attention phase (KV reads)"))
"""The step-time figure's two phase lines (their sum is the step): variable, colour, dash,
legend label."""

SUBTITLE = NOTE.lower()
"""The second title line of every figure: what the curves are (a line of its own, so a
phone-wide figure shows both lines whole)."""


def chart_title(title: str) -> str:
    """A chart's first title line: what is drawn (short enough for a phone-wide figure)."""
    return title


def phase_columns(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """The step's two phases against batch (ms), as the phase lines' data source holds them."""
    columns = {"batch": display_values(ds["batch"])[0]}
    for name, *_ in PHASES:
        columns[name] = display_values(ds[name])[0]
    return columns


def phase_lines(fig: figure, lines: xr.Dataset, step_line: GlyphRenderer) -> ColumnDataSource:
    """Draw the linear and attention phases under the step line, with a legend at the top
    left (where the step is still small); returns their data source."""
    source = ColumnDataSource(phase_columns(lines))
    items = [LegendItem(label="step = linear + attention", renderers=[step_line])]
    for name, color, dash, label in PHASES:
        line = lean(fig.line("batch", name, source=source, color=color, line_width=2,
                             line_dash=dash))
        items.append(LegendItem(label=label, renderers=[line]))
    fig.add_layout(Legend(items=items, location="top_left", padding=4, margin=4))
    themed(fig)  # the page theme's legend style: the browser then leaves it alone
    return source


def source_data(ds: xr.Dataset, y: str) -> dict[str, np.ndarray]:
    """Columns of ``y`` against batch as a data source holds them (screen units)."""
    return fit_columns(ds, "batch", y)


def attention_columns(batch: np.ndarray, seconds: np.ndarray, what: str,
                      source: str) -> dict[str, np.ndarray]:
    """Attention-phase markers as a data source holds them: ``batch``, ``attention_ms`` (ms),
    ``unit``, ``what`` (measured or ideal) and ``source``."""
    n = len(batch)
    return {"batch": np.asarray(batch, dtype=float), "attention_ms": np.asarray(seconds) / MS,
            "unit": np.full(n, "ms"), "what": np.full(n, what, dtype=object),
            "source": np.full(n, source, dtype=object)}


@dataclass
class MeasuredMarkers:
    """The measured and ideal attention markers on the step-time figure."""

    measured: ColumnDataSource
    ideal: ColumnDataSource
    renderers: list[GlyphRenderer]

    def show(self, series: dict | None) -> None:
        """Draw ``series`` (:func:`lab.measured.overlay.measured_attention_series`); hide the
        markers when it is None or holds no measured batch."""
        on = series is not None and len(series["batch"]) > 0
        if on:
            self.measured.data = attention_columns(series["batch"], series["measured_s"],
                                                   "measured", series["source"])
            self.ideal.data = attention_columns(series["batch"], series["ideal_s"],
                                                "ideal", IDEAL_ATTENTION_SOURCE)
        else:  # emptied too, so hidden markers do not stretch the axes
            empty = attention_columns(np.array([]), np.array([]), "", "")
            self.measured.data, self.ideal.data = dict(empty), dict(empty)
        for renderer in self.renderers:
            renderer.visible = on


def measured_markers(fig: figure) -> MeasuredMarkers:
    """Add the (empty) attention markers and their hover to ``fig``."""
    empty = attention_columns(np.array([]), np.array([]), "", "")
    measured, ideal = ColumnDataSource(dict(empty)), ColumnDataSource(dict(empty))
    ideal_marks = fig.scatter("batch", "attention_ms", source=ideal, marker="circle", size=11,
                              line_color=IDEAL_ATTENTION_COLOR, fill_alpha=0, line_width=2)
    measured_marks = fig.scatter("batch", "attention_ms", source=measured, marker="diamond",
                                 size=13, color=MEASURED_COLOR, line_color="black",
                                 line_width=1)
    fig.add_tools(HoverTool(renderers=[measured_marks, ideal_marks], tooltips=[
        ("Attention phase", "@what"),
        ("Batch (sequences)", "@batch{0,0}"),
        ("Value", f"@attention_ms{HOVER_NUMBER} @unit"),
        ("Source", "@source")]))
    return MeasuredMarkers(measured, ideal, [measured_marks, ideal_marks])


@dataclass
class BatchChart:
    """One of experiment 1's figures and the parts that move: sources, ridge line, ticks."""

    variable: str
    figure: figure
    series: ColumnDataSource
    current: ColumnDataSource
    ridge: Span
    ticker: FixedTicker
    ridge_label: Label | None = None
    phases: ColumnDataSource | None = None
    """The linear and attention phase lines' data (step time only)."""
    measured: MeasuredMarkers | None = None
    """The measured attention markers, added the first time they are shown (step time only)."""

    def show_series(self, lines: xr.Dataset, ridge_batch: float) -> None:
        """Redraw the line and markers over ``lines`` and move the ridge line."""
        self.series.data = source_data(lines, self.variable)
        if self.phases is not None:
            self.phases.data = phase_columns(lines)
        batches = display_values(lines["batch"])[0]
        set_log2_ticks(self.figure, self.ticker, batches)
        self.ridge.location = float(ridge_batch) if math.isfinite(ridge_batch) else None
        if self.ridge_label is not None:
            shown = self.ridge.location is not None
            self.ridge_label.update(x=self.ridge.location if shown else 1, visible=shown,
                                    text=f"ridge batch B* = {ridge_batch:,.0f}" if shown else "",
                                    **ridge_label_side(ridge_batch, batches))

    def show_point(self, ds: xr.Dataset, batch: int) -> None:
        """Move the current-point marker to ``batch`` (hollow when over budget)."""
        self.current.data = source_data(ds.sel(batch=[batch]), self.variable)

    def show_measured(self, series: dict | None) -> None:
        """Show the measured attention beside the ideal (``series`` from
        :func:`lab.measured.overlay.measured_attention_series`), or hide it (None)."""
        if self.measured is None:
            if series is None:
                return
            self.measured = measured_markers(self.figure)
        self.measured.show(series)


def batch_chart(lines: xr.Dataset, ds: xr.Dataset, batch: int, ridge_batch: float,
                variable: str, color: str, title: str) -> BatchChart:
    """One figure of ``variable``: ``lines`` drawn, ``batch`` (in ``ds``) highlighted."""
    fig, ticker = new_figure(chart_title(title), axis_label(ds["batch"]),
                             axis_label(ds[variable]), HEIGHT, log_x=True)
    fig.add_layout(Title(text=SUBTITLE), "above")
    themed(fig)  # the second line styled as the first, as the page's theme would
    series = ColumnDataSource(source_data(lines, variable))
    current = ColumnDataSource(source_data(ds.sel(batch=[batch]), variable))
    markers, point = series_with_current(fig, series, current, variable, color, HIGHLIGHT)
    phases = (phase_lines(fig, lines, markers)
              if variable == "step_time_s" and PHASES[0][0] in lines else None)
    ridge = Span(dimension="height", line_color=RIDGE_COLOR, line_dash="dashed",
                 line_width=1.5)
    fig.add_layout(ridge)
    ridge_label = Label(x=1, y=8, y_units="screen", x_offset=4, text="ridge batch",
                        text_color=RIDGE_COLOR, text_font_size="11px",
                        background_fill_color="white", background_fill_alpha=0.7)
    fig.add_layout(ridge_label)
    fig.add_tools(HoverTool(renderers=[markers, point], tooltips=[
        (axis_label(ds["batch"]), "@batch{0,0}"),
        (axis_label(ds[variable]), f"@{{{variable}}}{HOVER_NUMBER}"),
        ("Fits the memory budget", "@fits")]))
    chart = BatchChart(variable, fig, series, current, ridge, ticker, ridge_label, phases)
    chart.show_series(lines, ridge_batch)
    return chart


def ridge_label_side(ridge_batch: float, batches: np.ndarray) -> dict:
    """Where the ridge label sits: right of the line in the left half of the (log) batch
    axis, left of it in the right half, so the label stays inside the plot."""
    finite = batches[np.isfinite(batches) & (batches > 0)]
    middle = (math.log(finite.min()) + math.log(finite.max())) / 2 if finite.size else 0.0
    right_half = math.isfinite(ridge_batch) and ridge_batch > 0 and math.log(ridge_batch) > middle
    return {"text_align": "right", "x_offset": -4} if right_half else {"text_align": "left",
                                                                          "x_offset": 4}


def power_of_two_rows(ds: xr.Dataset) -> xr.Dataset:
    """The rows of ``ds`` whose batch is a power of two: what the lines are drawn over."""
    batch = ds["batch"].values
    return ds.sel(batch=batch[(batch & (batch - 1)) == 0])


def batch_charts(ds: xr.Dataset, batch: int, ridge_batch: float) -> list[BatchChart]:
    """Experiment 1's two figures for ``ds`` (its chart data) with ``batch`` highlighted."""
    lines = power_of_two_rows(ds)
    return [batch_chart(lines, ds, batch, ridge_batch, y, color, title)
            for y, color, title in BATCH_SERIES]
