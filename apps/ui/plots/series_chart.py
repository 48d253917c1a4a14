"""Experiments 2–8: one Bokeh figure per variable over the swept axis, updated in place.

Each figure draws one variable of an experiment's ``chart_data`` against its swept axis (the
dimension with the most points), one line with markers per value of any other dimension
(clicking a legend entry hides that series), and marks the current input with a dashed
vertical line. Drawn with Bokeh directly, like experiment 1's charts
(:mod:`apps.ui.plots.batch_chart`): a page of four figures costs about 0.1 s of server time this way
against 0.3–0.6 s through HoloViews. Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, Legend, LegendItem, Span
from bokeh.plotting import figure

from apps.ui.plots.charts import (
    HOVER_NUMBER,
    axis_label,
    capitalized,
    display_label,
    display_values,
    lean,
    new_figure,
    numeric_variables,
    set_log2_ticks,
    sweep_axis,
    themed,
)
from apps.ui.shell.theme import HIGHLIGHT, OKABE_ITO

MAX_PANELS = 4
"""Most charts one experiment shows (one per numeric variable)."""

HEIGHT = 300
"""Figure height in px."""

LOG_SPREAD = 32
"""A positive swept axis spanning at least this ratio is drawn on a log2 axis."""

LOG_Y = "chart_log_y"
"""A variable's attribute asking for a log y axis (set by a lesson of
:mod:`apps.ui.plots.page_descriptions`): values spanning orders of magnitude, where halving must be
seen at every size."""

STEP = "chart_step"
"""A variable's attribute asking for a step line without markers (set by a lesson of
:mod:`apps.ui.plots.page_descriptions`): an integer count that jumps at block boundaries."""


def power_of_two_axis(xs: np.ndarray) -> bool:
    """True when ``xs`` are at least three distinct powers of two (tensor-parallel degrees
    1, 2, 4, 8): drawn evenly spaced on a log2 axis with a tick at each value only."""
    values = np.unique(xs[np.isfinite(xs)])
    return bool(values.size >= 3 and np.all(values >= 1)
                and np.all(np.log2(values) == np.round(np.log2(values))))


@dataclass(frozen=True)
class SeriesLayout:
    """What fixes a figure's structure: axis, series names and axis type."""

    x: str
    keys: tuple[str, ...]
    log_x: bool
    log_y: bool = False
    step: bool = False


@dataclass(frozen=True)
class SeriesData:
    """One variable ready to draw: its layout, a data source's columns per series, marker."""

    layout: SeriesLayout
    columns: list[dict[str, np.ndarray]]
    current: float | None
    title: str
    x_label: str
    y_label: str
    """The y axis's label: the unit alone (the title names the variable), so a long name
    is never cut along a short axis."""
    hover_label: str = ""
    """``Long name (unit)`` of the variable, for the hover."""
    point: dict[str, np.ndarray] | None = None
    """The current input's point (x and y columns, one row; empty when the current value is
    not on the axis): on the series of the current values of the other dimensions."""


def series_data(ds: xr.Dataset, y: str, current: dict) -> SeriesData:
    """``y`` against the swept axis, one set of columns per value of any other dimension.

    Markers are filled where the configuration fits the memory budget (``fits``, when the
    dataset has it over the same dimensions) or, without it, where the value is defined.
    """
    da = ds[y]
    x = sweep_axis(da)
    others = [d for d in da.dims if d != x]
    xs = display_values(ds[x])[0]
    fits = ds["fits"] if "fits" in ds and ds["fits"].dims == da.dims else None
    stacked = da.transpose(*others, x) if others else da
    groups = ([{}] if not others else
              [dict(zip(others, idx, strict=True))
               for idx in np.ndindex(*[ds.sizes[d] for d in others])])
    keys, columns = [], []
    y_long, y_unit, _ = display_label(da)
    log_y, step = bool(da.attrs.get(LOG_Y)), bool(da.attrs.get(STEP))
    here = current.get(x)
    marker = (float(here) if here is not None and np.isscalar(here)
              and np.issubdtype(np.asarray(here).dtype, np.number) else None)
    point = {x: [], y: [], "fill_alpha": [], "series": []}
    for sel in groups:
        values = display_values(stacked.isel(sel) if sel else stacked)[0]
        if log_y:  # nothing at or below 0 on a log axis
            values = np.where(values > 0, values, np.nan)
        ok = (np.asarray(fits.transpose(*others, x).isel(sel).values, dtype=bool)
              if fits is not None else np.isfinite(values))
        key = ", ".join(f"{d} {ds[d].values[j]}" for d, j in sel.items()) or y_long
        keys.append(key)
        column = {x: xs, y: values, "fill_alpha": np.where(ok, 1.0, 0.0),
                  "series": np.full(len(xs), key, dtype=object)}
        columns.append(column)
        at = np.flatnonzero(xs == marker) if marker is not None else []
        if len(at) and is_current(ds, sel, current):
            for name in point:
                point[name].append(column[name][at[0]])
    finite = xs[np.isfinite(xs)]
    log_x = bool(finite.size > 2 and np.all(finite > 0)
                 and (finite.max() / finite.min() >= LOG_SPREAD or power_of_two_axis(finite)))
    return SeriesData(SeriesLayout(x, tuple(keys), log_x, log_y, step), columns, marker,
                      capitalized(y_long), axis_label(ds[x]), y_unit, axis_label(da),
                      {name: np.asarray(v, dtype=object if name == "series" else float)
                       for name, v in point.items()})


def is_current(ds: xr.Dataset, sel: dict[str, int], current: dict) -> bool:
    """True when the series ``sel`` (dimension → index) is at the current inputs: every
    dimension that is an input holds its current value (the others, e.g. prefix caching
    on/off, match any)."""
    return all(d not in current or ds[d].values[j] == current[d] for d, j in sel.items())


@dataclass
class SeriesChart:
    """One figure and the parts that move: a source per series, the current line, ticks."""

    variable: str
    layout: SeriesLayout
    figure: figure
    sources: list[ColumnDataSource]
    current: Span
    ticker: FixedTicker | None
    point: ColumnDataSource | None = None
    """The current input's marker (:attr:`SeriesData.point`)."""

    def show(self, data: SeriesData) -> bool:
        """Draw ``data`` in place; False (nothing changed) when its layout differs."""
        if data.layout != self.layout:
            return False
        for source, columns in zip(self.sources, data.columns, strict=True):
            source.data = columns
        here = data.current
        self.current.location = here if here is not None and math.isfinite(here) else None
        if self.point is not None and data.point is not None:
            self.point.data = data.point
        if self.ticker is not None:
            set_log2_ticks(self.figure, self.ticker, data.columns[0][data.layout.x],
                           max_ticks=6)
        return True


LEGEND_ROOM_PX = 300
"""Width a series legend must fit in, px (a phone's chart: one row of four "alpha 0.5"
entries ran past both edges)."""
LEGEND_CHAR_PX = 7.5
"""Width of a legend label's character, px; each entry adds :data:`LEGEND_GLYPH_PX`."""
LEGEND_GLYPH_PX = 30
"""Width of a legend entry's glyph and the gaps around it, px."""


def legend_columns(items: list[LegendItem]) -> int:
    """Columns of a legend of ``items`` so that a row fits :data:`LEGEND_ROOM_PX`, its rows
    as even as they can be (four entries in two rows of two, not three and one)."""
    longest = max(len(str(getattr(item.label, "value", item.label))) for item in items)
    fit = max(1, int(LEGEND_ROOM_PX // (longest * LEGEND_CHAR_PX + LEGEND_GLYPH_PX)))
    rows = -(-len(items) // fit)
    return -(-len(items) // rows)


def series_chart(ds: xr.Dataset, y: str, current: dict) -> SeriesChart:
    """The figure of ``y`` over the swept axis, ``current`` inputs marked."""
    data = series_data(ds, y, current)
    layout = data.layout
    fig, ticker = new_figure(data.title, data.x_label, data.y_label, HEIGHT, layout.log_x,
                             layout.log_y)
    sources, markers, items = [], [], []
    for i, (key, columns) in enumerate(zip(layout.keys, data.columns, strict=True)):
        color = OKABE_ITO[i % len(OKABE_ITO)]
        source = ColumnDataSource(columns)
        if layout.step:  # a count that jumps at boundaries: the step, no marker per point
            line = lean(fig.step(layout.x, y, source=source, color=color, line_width=2,
                                 mode="after"))
            dots = lean(fig.scatter(layout.x, y, source=source, color=color, size=7,
                                    alpha=0))  # hover targets only
        else:
            line = lean(fig.line(layout.x, y, source=source, color=color, line_width=2))
            dots = lean(fig.scatter(layout.x, y, source=source, color=color,
                                    fill_alpha="fill_alpha", size=7))
        sources.append(source)
        markers.append(dots)
        items.append(LegendItem(label=key, renderers=[line, dots]))
    if len(items) > 1:
        # Below the plot, not over it: a legend never covers the data.
        # Its fonts and spacing are the page theme's (set by themed() below).
        fig.add_layout(Legend(items=items, click_policy="hide", orientation="horizontal",
                              padding=2, margin=2, ncols=legend_columns(items)), "below")
    current = Span(dimension="height", line_color=HIGHLIGHT, line_width=2, line_dash="dashed")
    fig.add_layout(current)
    point = ColumnDataSource(data.point)
    markers.append(lean(fig.scatter(layout.x, y, source=point, color=HIGHLIGHT, size=13,
                                    fill_alpha="fill_alpha", line_width=3)))
    tooltips = [(data.x_label, f"@{{{layout.x}}}{HOVER_NUMBER}"),
                (data.hover_label, f"@{{{y}}}{HOVER_NUMBER}")]
    if len(items) > 1:
        tooltips.insert(0, ("Series", "@series"))
    fig.add_tools(HoverTool(renderers=markers, tooltips=tooltips))
    themed(fig)  # the legend too, as the page's theme would restyle it
    chart = SeriesChart(y, layout, fig, sources, current, ticker, point)
    chart.show(data)
    return chart


def chart_variables(ds: xr.Dataset) -> list[str]:
    """The variables an experiment charts: its numeric ones, at most :data:`MAX_PANELS`."""
    return numeric_variables(ds)[:MAX_PANELS]


def experiment_charts(ds: xr.Dataset, current: dict) -> list[SeriesChart]:
    """One figure per charted variable of an experiment's ``chart_data``."""
    return [series_chart(ds, y, current) for y in chart_variables(ds)]


def update_charts(charts: list[SeriesChart], ds: xr.Dataset,
                  current: dict) -> list[SeriesChart] | None:
    """Draw ``ds`` into ``charts`` in place where their layout allows.

    Returns None when every chart was updated in place, else the full new list, in which
    the charts whose layout changed (or every chart, if the variables did) are new figures.
    """
    variables = chart_variables(ds)
    if variables != [c.variable for c in charts]:
        return experiment_charts(ds, current)
    out, rebuilt = [], False
    for chart, y in zip(charts, variables, strict=True):
        if chart.show(series_data(ds, y, current)):
            out.append(chart)
        else:
            out.append(series_chart(ds, y, current))
            rebuilt = True
    return out if rebuilt else None
