"""Experiment 1 with a mixture-of-experts model: the weights a decode step reads against batch.

One Bokeh figure beside experiment 1's two (:mod:`apps.ui.plots.batch_chart`), drawn only when the
chart data hold ``experts_touched`` (a mixture-of-experts model): the weight reads per GPU over
the powers of two (log2 batch axis, hollow markers over the memory budget), a dotted line where
every expert is read (the ceiling the reads rise to), and the current batch as one large marker.
The hover gives the batch, the weight reads in GB and the distinct experts read per MoE layer.
Every number comes from the experiment's chart data and
:meth:`~lab.experiments.batch_bottleneck.BatchBottleneck.all_experts_weight_bytes`; nothing is
computed here but the unit on screen. Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Label, Span
from bokeh.plotting import figure

from apps.ui.plots.charts import (
    HOVER_NUMBER,
    axis_label,
    display_values,
    fit_columns,
    new_figure,
    series_with_current,
    set_log2_ticks,
)
from apps.ui.shell.theme import HIGHLIGHT, NEUTRAL, OKABE_ITO

VARIABLE = "linear_weight_bytes"
"""The variable drawn: linear weight reads per GPU (B in the data, GB on screen)."""

EXPERT_COLOR = OKABE_ITO[5]
"""Colour of the weight-read line."""
CEILING_COLOR = NEUTRAL
"""Colour of the every-expert line and its label."""

HEIGHT = 320
"""Figure height in px (as experiment 1's other two)."""

TITLE = "Weight reads per step: more experts touched as the batch grows"
"""The figure's title."""


def expert_columns(ds: xr.Dataset, experts: int) -> dict[str, np.ndarray]:
    """Weight reads against batch as the data source holds them: ``batch``, the reads (GB),
    ``experts_touched`` (per MoE layer), ``experts`` (E), ``fits`` and ``fill_alpha``."""
    columns = fit_columns(ds, "batch", VARIABLE)
    columns["experts_touched"] = np.asarray(ds["experts_touched"].values, dtype=float)
    columns["experts"] = np.full(len(columns["batch"]), experts, dtype=np.int64)
    return columns


def ceiling_text(ceiling_gb: float, experts: int) -> str:
    """The label of the every-expert line."""
    return f"every expert read ({experts} of {experts} per layer): {ceiling_gb:,.2f} GB"


@dataclass
class ExpertChart:
    """The weight-read figure and the parts that move: sources, the every-expert line, ticks."""

    figure: figure
    series: ColumnDataSource
    current: ColumnDataSource
    ceiling: Span
    ceiling_label: Label
    ticker: FixedTicker

    def show_series(self, lines: xr.Dataset, ceiling_bytes: float, experts: int) -> None:
        """Redraw the line and markers over ``lines`` and move the every-expert line to
        ``ceiling_bytes`` (B per GPU)."""
        self.series.data = expert_columns(lines, experts)
        set_log2_ticks(self.figure, self.ticker, display_values(lines["batch"])[0])
        gb = float(display_values(xr.DataArray(ceiling_bytes, attrs={"units": "B"}))[0])
        self.ceiling.location = gb
        self.ceiling_label.update(y=gb, text=ceiling_text(gb, experts))

    def show_point(self, ds: xr.Dataset, batch: int, experts: int) -> None:
        """Move the current-point marker to ``batch`` (hollow when over budget)."""
        self.current.data = expert_columns(ds.sel(batch=[batch]), experts)


def expert_chart(lines: xr.Dataset, ds: xr.Dataset, batch: int, ceiling_bytes: float,
                 experts: int) -> ExpertChart:
    """The weight-read figure: ``lines`` drawn, ``batch`` (in ``ds``) highlighted, the
    every-expert line at ``ceiling_bytes`` (B per GPU)."""
    x_label, y_label = axis_label(ds["batch"]), axis_label(ds[VARIABLE])
    fig, ticker = new_figure(TITLE, x_label, y_label, HEIGHT, log_x=True)
    series = ColumnDataSource(expert_columns(lines, experts))
    current = ColumnDataSource(expert_columns(ds.sel(batch=[batch]), experts))
    markers, point = series_with_current(fig, series, current, VARIABLE, EXPERT_COLOR, HIGHLIGHT)
    ceiling = Span(dimension="width", line_color=CEILING_COLOR, line_dash="dotted",
                   line_width=1.5)
    fig.add_layout(ceiling)
    # Below the line, at the left: the curve is low there, and above it the title would clip.
    label = Label(x=8, x_units="screen", y=0, y_offset=-4, text_baseline="top", text="",
                  text_color=CEILING_COLOR,
                  text_font_size="11px", background_fill_color="white",
                  background_fill_alpha=0.7)
    fig.add_layout(label)
    fig.add_tools(HoverTool(renderers=[markers, point], tooltips=[
        (x_label, "@batch{0,0}"),
        (y_label, f"@{{{VARIABLE}}}{HOVER_NUMBER}"),
        (axis_label(ds["experts_touched"]), "@experts_touched{0,0.00} of @experts"),
        ("Fits the memory budget", "@fits")]))
    chart = ExpertChart(fig, series, current, ceiling, label, ticker)
    chart.show_series(lines, ceiling_bytes, experts)
    return chart
