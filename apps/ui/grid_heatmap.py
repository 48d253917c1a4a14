"""The grid explorer's charts: a heatmap over any two dimensions, small multiples, lines, and a
comparison of two slices, each styled for what it holds.

Positive quantities use a log colour scale; signed ones (memory remaining) a diverging scale
centred on 0 and clipped to the selection's own headroom (the largest positive value, or the
largest deficit when nothing is positive), so cells that fit are graded rather than washed out
by a deficit a thousand times larger; a flag variable with ``flag_values``/``flag_meanings``
(``reason``) is categorical, its colour bar labelled with the meanings. Cells over the memory
budget carry a cross; cells meeting the page's constraints a ring. Hover shows every variable
of the cell in the unit on screen. Every chart is a new element, so a change redraws
everything (colour bar included). Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from bokeh.models import (
    BasicTicker,
    ColorBar,
    ColumnDataSource,
    FactorRange,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    LogColorMapper,
)
from bokeh.palettes import Cividis256, RdBu11
from bokeh.plotting import figure

from apps.ui.charts import TOOLS, axis_label, capitalized, display_label, themed
from apps.ui.theme import OKABE_ITO

DIVERGING = tuple(reversed(RdBu11))
"""Diverging palette for signed variables and comparisons (red below the centre, blue above)."""

SEQUENTIAL = Cividis256
"""Palette of a quantity of one sign."""

NAN_COLOR = "#d9d9d9"
"""Colour of an invalid cell (no value)."""

FLAG_COLORS = ("#bdbdbd", *OKABE_ITO)
"""Colours of a flag variable's values: grey for the first (``valid``), then Okabe–Ito."""

OVER_LABEL = "× does not fit the memory budget"
"""Legend entry of the crosses on over-budget cells."""

MEETS_LABEL = "○ meets the constraints"
"""Legend entry of the rings on cells meeting the page's constraints."""

MAX_AXIS_CELLS = 64
"""Most values of one axis a heatmap draws; a longer axis is thinned (log-spaced when its
values span decades) and the chart says so. The screen has no more pixels to show."""

MAX_LINES = 12
"""Most lines of the line mode (a longer dimension is thinned the same way)."""

HEIGHT = 460
"""Height of a single heatmap, pixels."""


def shown_indices(values: np.ndarray, cap: int = MAX_AXIS_CELLS) -> np.ndarray:
    """Indices of ``values`` to draw: all when at most ``cap``, else ``cap`` of them spread
    evenly (geometrically for positive numbers spanning more than a decade), ends included."""
    n = len(values)
    if n <= cap:
        return np.arange(n)
    numeric = np.issubdtype(np.asarray(values).dtype, np.number)
    if numeric and np.all(values > 0) and values.max() / values.min() > 10:
        picked = np.unique(np.round(np.geomspace(1, n, cap * 2)).astype(int) - 1)
        if picked.size > cap:
            picked = picked[np.unique(np.round(np.linspace(0, picked.size - 1, cap)).astype(int))]
        return picked
    return np.unique(np.round(np.linspace(0, n - 1, cap)).astype(int))


def thinned(ds: xr.Dataset, dims: list[str], cap: int = MAX_AXIS_CELLS) -> xr.Dataset:
    """``ds`` with each of ``dims`` longer than ``cap`` thinned to ``cap`` values."""
    picks = {d: shown_indices(ds[d].values, cap) for d in dims if ds.sizes[d] > cap}
    return ds.isel(picks) if picks else ds


def labels(da: xr.DataArray) -> np.ndarray:
    """A coordinate's values as the axis shows them (thousands separated; text as it is)."""
    values = np.asarray(da.values)
    if not np.issubdtype(values.dtype, np.number) or values.dtype == bool:
        return np.array([str(v) for v in values], dtype=object)
    _, _, factor = display_label(da)
    scaled = values.astype(float) * factor
    whole = np.all(np.isfinite(scaled) & (scaled == np.round(scaled)))
    return np.array([f"{v:,.0f}" if whole else f"{v:,.4g}" for v in scaled], dtype=object)


def screen(da: xr.DataArray) -> tuple[np.ndarray, str, str]:
    """Values of ``da`` in screen units (floats), its long name and the screen unit."""
    long_name, unit, factor = display_label(da)
    return np.asarray(da.values, dtype=float) * factor, long_name, unit


def flag_meanings(da: xr.DataArray) -> dict[int, str] | None:
    """``{flag value: description}`` of a categorical variable, or None for a quantity."""
    values = da.attrs.get("flag_values")
    if values is None:
        return None
    names = da.attrs.get("flag_descriptions") or str(da.attrs.get("flag_meanings", "")).split()
    return {int(v): str(n) for v, n in zip(values, names, strict=False)}


def is_signed(da: xr.DataArray) -> bool:
    """True when ``da`` takes values on both sides of 0 (or is a 'remaining' quantity)."""
    values = np.asarray(da.values, dtype=float)
    finite = values[np.isfinite(values)]
    return bool(finite.size and finite.min() < 0) or "remaining" in str(da.name)


def signed_span(values: np.ndarray) -> float:
    """Half-width of a diverging scale centred on 0 for ``values``: the largest positive value
    (the selection's headroom), or the largest deficit when none is positive. Deeper values
    saturate at the end colour."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 1.0
    top = float(finite.max())
    span = top if top > 0 else float(np.abs(finite).max())
    return span if span > 0 else 1.0


def colour_range(values: np.ndarray, signed: bool) -> tuple[float, float] | None:
    """The shared colour range of several panels' ``values`` (None: each panel's own)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    if signed:
        span = signed_span(finite)
        return (-span, span)
    return (float(finite.min()), float(finite.max()))



def hover_label(da: xr.DataArray) -> str:
    """``Long name (unit)`` for a tooltip."""
    return axis_label(da)


def cells_source(ds: xr.Dataset, variable: str, x: str, y: str) -> tuple[dict, list]:
    """Columns of every cell of the 2-D ``ds`` (axis labels, every variable over ``x`` × ``y``
    in screen units, flags as text) and the hover's tooltips, ``variable`` first."""
    xs, ys = labels(ds[x]), labels(ds[y])
    data = {x: np.repeat(xs, len(ys)).tolist(), y: np.tile(ys, len(xs)).tolist()}
    tips = [(capitalized(display_label(ds[x])[0] or x), f"@{{{x}}}"),
            (capitalized(display_label(ds[y])[0] or y), f"@{{{y}}}")]
    for name in [variable, *[n for n in ds.data_vars if n != variable]]:
        arr = ds[name]
        if set(arr.dims) != {x, y}:
            continue
        arr = arr.transpose(x, y)
        if arr.dtype.kind in "iuf":
            data[name] = screen(arr)[0].ravel()
            tips.append((hover_label(ds[name]), f"@{{{name}}}{{0,0.[0000]}}"))
        else:
            data[name] = np.asarray(arr.values).ravel().astype(str).tolist()
            tips.append((capitalized(str(arr.attrs.get("long_name", name))), f"@{{{name}}}"))
    return data, tips


def mapper_for(da: xr.DataArray, values: np.ndarray, clim: tuple[float, float] | None):
    """The colour mapper ``da`` calls for: categorical for a flag, diverging about 0 (clipped to
    the selection's headroom) for a signed quantity, log for a positive one; and the colour bar's
    ticker and labels when they are not numbers."""
    meanings = flag_meanings(da)
    if meanings is not None:
        codes = sorted(meanings)
        colors = [FLAG_COLORS[i % len(FLAG_COLORS)] for i in range(len(codes))]
        return (LinearColorMapper(palette=colors, low=codes[0] - 0.5, high=codes[-1] + 0.5,
                                  nan_color=NAN_COLOR),
                {"ticker": FixedTicker(ticks=codes),
                 "major_label_overrides": {c: meanings[c] for c in codes},
                 "title": "Why invalid"})
    finite = values[np.isfinite(values)]
    if is_signed(da):
        span = clim[1] if clim is not None else signed_span(values)
        return LinearColorMapper(palette=DIVERGING, low=-span, high=span,
                                 nan_color=NAN_COLOR), {}
    lo, hi = clim if clim is not None else ((float(finite.min()), float(finite.max()))
                                            if finite.size else (0.0, 1.0))
    if finite.size and finite.min() > 0:
        return LogColorMapper(palette=SEQUENTIAL, low=lo, high=max(hi, lo * 1.0001),
                              nan_color=NAN_COLOR), {}
    return LinearColorMapper(palette=SEQUENTIAL, low=lo, high=hi if hi > lo else lo + 1,
                             nan_color=NAN_COLOR), {}


def heatmap_figure(ds: xr.Dataset, variable: str, x: str = "batch", y: str = "context", *,
                   clim: tuple[float, float] | None = None, title: str | None = None,
                   width: int | None = None, height: int = HEIGHT):
    """``variable`` over ``x`` × ``y`` of a 2-D selection as a Bokeh heatmap: one cell per
    value, the colour scale its values call for (``clim``: shared with other panels), hover
    with every variable and its unit."""
    data, tips = cells_source(ds, variable, x, y)
    xs, ys = labels(ds[x]).tolist(), labels(ds[y]).tolist()
    sizing = {"width": width} if width else {"sizing_mode": "stretch_width"}
    fig = figure(x_range=FactorRange(*xs), y_range=FactorRange(*ys), height=height,
                 title=title or axis_label(ds[variable]), tools=TOOLS,
                 output_backend="canvas", x_axis_label=axis_label(ds[x]),
                 y_axis_label=axis_label(ds[y]), **sizing)
    mapper, bar = mapper_for(ds[variable], np.asarray(data.get(variable, []), dtype=float),
                             clim)
    source = ColumnDataSource(data)
    cells = fig.rect(x=x, y=y, width=1, height=1, source=source, line_color=None,
                     fill_color={"field": variable, "transform": mapper})
    fig.add_tools(HoverTool(renderers=[cells], tooltips=tips))
    fig.add_layout(ColorBar(color_mapper=mapper, ticker=bar.pop("ticker", BasicTicker()),
                            **bar), "right")
    fig.xaxis.major_label_orientation = 0.8
    fig.grid.visible = False
    fig.min_border_left = 70
    return fig


def mark_cells(fig, ds: xr.Dataset, mask: np.ndarray, x: str, y: str, label: str,
               **style) -> None:
    """Draw a marker on every cell of ``fig`` where ``mask`` (``x`` × ``y``) holds."""
    i, j = np.nonzero(mask)
    points = {x: labels(ds[x])[i].tolist(), y: labels(ds[y])[j].tolist()}
    fig.scatter(x=x, y=y, source=ColumnDataSource(points), legend_label=label, **style)


def grid_figure(ds: xr.Dataset, variable: str, x: str = "batch", y: str = "context", *,
                clim: tuple[float, float] | None = None, marks: xr.DataArray | None = None,
                title: str | None = None, width: int | None = None, height: int = HEIGHT):
    """The heatmap of ``variable`` with the over-budget cells crossed (when ``fits`` is there)
    and the cells in ``marks`` ringed."""
    ds = ds.load()
    fig = heatmap_figure(ds, variable, x, y, clim=clim, title=title, width=width,
                         height=height)
    if "fits" in ds and set(ds["fits"].dims) == {x, y}:
        fits = np.asarray(ds["fits"].transpose(x, y).values, dtype=bool)
        valid = (np.asarray(ds["valid"].transpose(x, y).values, dtype=bool)
                 if "valid" in ds else np.ones_like(fits))
        mark_cells(fig, ds, valid & ~fits, x, y, OVER_LABEL, marker="x", color="black",
                   size=9, line_width=1.5)
    if marks is not None:
        mark_cells(fig, ds, np.asarray(marks.transpose(x, y).values, dtype=bool), x, y,
                   MEETS_LABEL, marker="circle", fill_alpha=0, line_color="#009E73",
                   line_width=2, size=11)
    if fig.legend:
        fig.legend.location = "top_left"
        fig.legend.orientation = "horizontal"
        fig.legend.background_fill_alpha = 0.6
        fig.add_layout(fig.legend[0], "above")
    return themed(fig)


def lines_figure(ds: xr.Dataset, variable: str, x: str, by: str):
    """``variable`` against ``x``, one line per value of ``by`` (2-D ``ds``), hover with units."""
    ds = ds.load()
    numeric = ds[x].dtype.kind in "iuf"
    xs = screen(ds[x])[0] if numeric else labels(ds[x])
    ys = screen(ds[variable].transpose(by, x))[0]
    finite = ys[np.isfinite(ys)]
    logx = bool(numeric and np.all(xs > 0) and xs.max() / max(xs.min(), 1e-300) > 30)
    logy = bool(finite.size and finite.min() > 0 and finite.max() / finite.min() > 30)
    ranges = {} if numeric else {"x_range": FactorRange(*xs.tolist())}
    fig = figure(**ranges, x_axis_type="log" if logx else "linear",
                 y_axis_type="log" if logy else "linear", height=HEIGHT,
                 sizing_mode="stretch_width", title=axis_label(ds[variable]), tools=TOOLS,
                 output_backend="canvas", x_axis_label=axis_label(ds[x]),
                 y_axis_label=axis_label(ds[variable]))
    colors = (*OKABE_ITO, "#000000")
    renderers = []
    for k, name in enumerate(labels(ds[by])):
        keep = np.isfinite(ys[k]) & ((ys[k] > 0) if logy else True)
        source = ColumnDataSource({x: np.asarray(xs)[keep].tolist(), variable: ys[k][keep],
                                   by: [name] * int(keep.sum())})
        renderers.append(fig.line(x=x, y=variable, source=source, line_width=2,
                                  color=colors[k % len(colors)], legend_label=f"{by} {name}"))
    fig.add_tools(HoverTool(renderers=renderers, tooltips=[
        (capitalized(display_label(ds[by])[0] or by), f"@{{{by}}}"),
        (axis_label(ds[x]), f"@{{{x}}}{{0,0.[00]}}" if numeric else f"@{{{x}}}"),
        (axis_label(ds[variable]), f"@{{{variable}}}{{0,0.[0000]}}")]))
    fig.legend.click_policy = "hide"
    fig.add_layout(fig.legend[0], "right")
    return themed(fig)


def compared(a: xr.Dataset, b: xr.Dataset, variable: str, how: str) -> xr.DataArray:
    """``variable`` of ``a`` over that of ``b``: their ratio, or their difference (stored
    units), as a variable of its own."""
    va, vb = a[variable].astype(float), b[variable].astype(float)
    out = va / vb.where(vb != 0) if how == "ratio" else va - vb
    long_name = display_label(a[variable])[0]
    attrs = ({"long_name": f"ratio of {long_name}", "units": "1"} if how == "ratio" else
             {"long_name": f"difference of {long_name}", "units": a[variable].attrs.get(
                 "units", "1")})
    return out.rename(f"{how}_{variable}").assign_attrs(attrs)


def compare_figure(a: xr.Dataset, b: xr.Dataset, variable: str, how: str, x: str, y: str,
                   title: str):
    """The ratio (colour centred on 1, log scale) or difference (centred on 0) of ``variable``
    between two slices over ``x`` × ``y``; hover shows both values and the result."""
    a, b = a.load(), b.load()
    result = compared(a, b, variable, how)
    long_name = display_label(a[variable])[0]
    cells = xr.Dataset({result.name: result,
                        "a": a[variable].assign_attrs(long_name=f"{long_name}, A"),
                        "b": b[variable].assign_attrs(long_name=f"{long_name}, B")})
    fig = heatmap_figure(cells, result.name, x, y, title=title)
    values = screen(result)[0]
    finite = values[np.isfinite(values)]
    mapper = fig.right[0].color_mapper
    if how == "ratio":
        positive = finite[finite > 0]
        spread = float(np.exp(np.abs(np.log(positive)).max())) if positive.size else 2.0
        spread = max(spread, 1.01)
        log = LogColorMapper(palette=DIVERGING, low=1 / spread, high=spread,
                             nan_color=NAN_COLOR)
        fig.renderers[0].glyph.fill_color = {"field": result.name, "transform": log}
        fig.right[0].color_mapper = log
    else:
        span = float(np.abs(finite).max()) if finite.size else 1.0
        mapper.update(palette=DIVERGING, low=-(span or 1.0), high=span or 1.0)
    return themed(fig)
