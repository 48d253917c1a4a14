"""The grid explorer's charts: a heatmap over any two dimensions, small multiples, lines, and a
comparison of two slices, each styled for what it holds.

Positive quantities use a log colour scale; signed ones (memory remaining) a diverging scale
centred on 0 and clipped to the selection's own headroom (the largest positive value, or the
largest deficit when nothing is positive), so cells that fit are graded rather than washed out
by a deficit a thousand times larger; a flag variable with ``flag_values``/``flag_meanings``
(``reason``) is categorical, its colour bar labelled with the meanings. Cells over the memory
budget carry a cross; cells meeting the page's constraints a ring. Hover shows every variable
of the cell in the unit on screen. A heatmap is a :class:`Heatmap` kept across changes: a new
selection replaces its data, axes and colour scale in place (the browser gets data, not a new
figure). Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from bokeh.models import (
    BasicTicker,
    ColorBar,
    ColumnDataSource,
    CustomJSTickFormatter,
    FactorRange,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    LogColorMapper,
)
from bokeh.palettes import Cividis256, RdBu11
from bokeh.plotting import figure

from apps.ui.plots.charts import (
    TOOLS,
    axis_label,
    capitalized,
    display_label,
    plain_ticks,
    themed,
)
from apps.ui.shell.theme import OKABE_ITO

DIVERGING = tuple(reversed(RdBu11))
"""Diverging palette for signed variables and comparisons (red below the centre, blue above)."""

SEQUENTIAL = Cividis256
"""Palette of a quantity of one sign."""

NAN_COLOR = "#d9d9d9"
"""Colour of an invalid cell (no value)."""

FLAG_COLORS = ("#bdbdbd", *OKABE_ITO)
"""Colours of a flag variable's values: grey for the first (``valid``), then Okabe–Ito."""

OVER_LABEL = "over the memory budget"
"""Legend entry of the crosses on over-budget cells (the legend draws the cross itself: a "×"
in the text read "× × over")."""

MEETS_LABEL = "meets the constraints"
"""Legend entry of the rings on cells meeting the page's constraints."""

MAX_AXIS_CELLS = 64
"""Most values of one axis a heatmap draws; a longer axis is thinned (log-spaced when its
values span decades) and the chart says so. The screen has no more pixels to show."""

MAX_LINES = 12
"""Most lines of the line mode (a longer dimension is thinned the same way)."""

HEIGHT = 460
"""Height of a single heatmap, pixels."""

FACET_HEIGHT = 400
"""Height of one small multiple, pixels: each is as wide as the results column, one a row
(four side by side at 1440 px left a plot of 150 px square for 20 × 20 cells)."""

MARKER_SIZE = 9
"""Size of a cross on an over-budget cell, px (a ring is 2 px larger)."""

FACET_MARKER_SIZE = 7
"""Size of a cross on a small multiple's cell (its rows are lower), px."""


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
    return np.array([f"{v:,.0f}" if whole or abs(v) >= 1000 else f"{v:,.4g}" for v in scaled],
                    dtype=object)  # never 1.234e+04


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


X, Y, VALUE = "_x", "_y", "_value"
"""Columns of a heatmap's source: the cell's x and y labels and the coloured value (screen
units). Fixed names, so a change of axes or variable replaces the data only, never the glyph."""

LABEL_ROOM_PX = {"x": 17, "y": 14}
"""Least room one categorical tick label needs along the x axis (labels slanted) and the y
axis, pixels; a longer axis labels every k-th value so no two labels overlap."""


def thinned_factors_js(axis: str) -> str:
    """Tick label code of a heatmap's ``axis`` (``x`` or ``y``): every k-th value labelled, k
    read from the plot's width (height) in the browser at each render (a phone's heatmap is a
    third of a desktop's, a small multiple's height a fraction of a single heatmap's)."""
    side = "inner_width" if axis == "x" else "inner_height"
    return f"""
let room = NaN;
try {{ room = fig.{side}; }} catch (e) {{}}  // unset until the plot is first laid out
const keep = Math.max(1, Math.ceil({LABEL_ROOM_PX[axis]} / (room / Math.max(ticks.length, 1))));
return Number.isFinite(keep) && index % keep !== 0 ? "" : tick;
"""


THINNED_FACTORS_JS = thinned_factors_js("x")
"""Tick label code of a heatmap's x axis (see :func:`thinned_factors_js`)."""


def cells_source(ds: xr.Dataset, variable: str, x: str, y: str) -> tuple[dict, list]:
    """Columns of every cell of the 2-D ``ds`` (axis labels as ``_x``/``_y``, ``variable`` as
    ``_value`` and every variable over ``x`` × ``y`` by name, in screen units, flags as text)
    and the hover's tooltips, ``variable`` first."""
    xs, ys = labels(ds[x]), labels(ds[y])
    data = {X: np.repeat(xs, len(ys)).tolist(), Y: np.tile(ys, len(xs)).tolist()}
    tips = [(capitalized(display_label(ds[x])[0] or x), f"@{{{X}}}"),
            (capitalized(display_label(ds[y])[0] or y), f"@{{{Y}}}")]
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
    data[VALUE] = data.get(variable, np.full(len(data[X]), np.nan))
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


class Heatmap:
    """A heatmap figure kept across changes: :meth:`show` puts a new selection into it in
    place (the cells' data, the axes' factors and labels, the colour scale, the crosses and
    rings, the hover), so the browser receives the new data, not a new figure. Used for one
    kind of view (a single heatmap, or one of several small multiples); a change of layout
    makes new ones."""

    def __init__(self, *, width: int | None = None, height: int = HEIGHT,
                 marker_size: float = MARKER_SIZE):
        self.width, self.height = width, height
        sizing = {"width": width} if width else {"sizing_mode": "stretch_width"}
        fig = figure(x_range=FactorRange(), y_range=FactorRange(), height=height, title="",
                     tools=TOOLS, output_backend="canvas", **sizing)
        self.figure = fig
        self.source = ColumnDataSource({X: [], Y: [], VALUE: []})
        self.mapper = LinearColorMapper(palette=SEQUENTIAL, nan_color=NAN_COLOR)
        self.cells = fig.rect(x=X, y=Y, width=1, height=1, source=self.source, line_color=None,
                              fill_color={"field": VALUE, "transform": self.mapper})
        self.hover = HoverTool(renderers=[self.cells], tooltips=[])
        fig.add_tools(self.hover)
        # plain numbers with separators (the bar read "8.000e+13" and "14000")
        self.bar = ColorBar(color_mapper=self.mapper, ticker=BasicTicker(),
                            formatter=plain_ticks())
        fig.add_layout(self.bar, "right")
        self.crosses = fig.scatter(x=X, y=Y, source=ColumnDataSource({X: [], Y: []}),
                                   legend_label=OVER_LABEL, marker="x", color="black",
                                   size=marker_size, line_width=1.5)
        self.rings = fig.scatter(x=X, y=Y, source=ColumnDataSource({X: [], Y: []}),
                                 legend_label=MEETS_LABEL, marker="circle", fill_alpha=0,
                                 line_color="#009E73", line_width=2,
                                 size=marker_size + 2)
        legend = fig.legend[0]
        legend.update(location="top_left", orientation="horizontal", background_fill_alpha=0.6)
        fig.add_layout(legend, "above")
        fig.xaxis.major_label_orientation = 0.8
        fig.xaxis.formatter = CustomJSTickFormatter(code=THINNED_FACTORS_JS, args={"fig": fig})
        # The y labels thinned in the browser too: ``major_label_overrides`` of a categorical
        # axis never reached the canvas, and small multiples printed 20 labels in 150 px.
        fig.yaxis.formatter = CustomJSTickFormatter(code=thinned_factors_js("y"),
                                                    args={"fig": fig})
        legend.ncols = 1  # one entry a line: a phone's width holds each
        fig.grid.visible = False
        fig.min_border_left = 70
        themed(fig)

    def show(self, ds: xr.Dataset, variable: str, x: str = "batch", y: str = "context", *,
             clim: tuple[float, float] | None = None, marks: xr.DataArray | None = None,
             title: str | None = None, mapper=None) -> figure:
        """Draw ``variable`` of the 2-D ``ds`` over ``x`` × ``y``: one cell per value, the
        colour scale its values call for (``clim``: shared with other panels; ``mapper``: a
        ``(mapper, colour bar settings)`` pair chosen by the caller), over-budget cells crossed
        (when ``fits`` is there), the cells in ``marks`` ringed. Returns the figure."""
        ds = ds.load()
        data, tips = cells_source(ds, variable, x, y)
        xs, ys = labels(ds[x]).tolist(), labels(ds[y]).tolist()
        fig = self.figure
        fig.x_range.factors, fig.y_range.factors = xs, ys
        self.source.data = data
        self._colour(mapper or mapper_for(ds[variable], np.asarray(data[VALUE], dtype=float),
                                          clim))
        self.hover.tooltips = tips
        fig.title.text = title or axis_label(ds[variable])
        fig.xaxis.axis_label, fig.yaxis.axis_label = axis_label(ds[x]), axis_label(ds[y])
        crosses = None
        if "fits" in ds and set(ds["fits"].dims) == {x, y}:
            fits = np.asarray(ds["fits"].transpose(x, y).values, dtype=bool)
            valid = (np.asarray(ds["valid"].transpose(x, y).values, dtype=bool)
                     if "valid" in ds else np.ones_like(fits))
            crosses = valid & ~fits
        rings = None if marks is None else np.asarray(marks.transpose(x, y).values, dtype=bool)
        if rings is not None and "valid" in ds and set(ds["valid"].dims) == {x, y}:
            deployable = np.asarray(ds["valid"].transpose(x, y).values, dtype=bool)
            if crosses is not None:  # a crossed cell (over budget) never meets
                deployable = deployable & ~crosses
            if deployable.any() and rings[deployable].all():
                rings = None  # every cell meets: a ring in each says nothing (the summary does)
        items = fig.legend[0].items
        for renderer, item, mask in ((self.crosses, items[0], crosses),
                                     (self.rings, items[1], rings)):
            i, j = np.nonzero(mask) if mask is not None else ([], [])
            renderer.data_source.data = {X: np.asarray(xs, dtype=object)[i].tolist(),
                                         Y: np.asarray(ys, dtype=object)[j].tolist()}
            renderer.visible = item.visible = mask is not None
        fig.legend[0].visible = crosses is not None or rings is not None
        return fig

    def _colour(self, chosen) -> None:
        """Use the colour mapper and colour bar settings ``chosen``: the mapper in place
        changes only its range when it is of the same kind, else it is replaced."""
        mapper, bar = chosen
        same = (type(mapper) is type(self.mapper) and list(mapper.palette)
                == list(self.mapper.palette))
        if same:
            self.mapper.update(low=mapper.low, high=mapper.high)
        else:
            self.mapper = mapper
            self.cells.glyph.fill_color = {"field": VALUE, "transform": mapper}
            self.bar.color_mapper = mapper
        ticker = bar.get("ticker")
        if ticker is None and type(self.bar.ticker) is not BasicTicker:
            self.bar.ticker = BasicTicker()
        elif ticker is not None and (not isinstance(self.bar.ticker, FixedTicker)
                                     or list(self.bar.ticker.ticks) != list(ticker.ticks)):
            self.bar.ticker = ticker
        self.bar.major_label_overrides = bar.get("major_label_overrides", {})
        self.bar.title = bar.get("title")


def grid_figure(ds: xr.Dataset, variable: str, x: str = "batch", y: str = "context", *,
                clim: tuple[float, float] | None = None, marks: xr.DataArray | None = None,
                title: str | None = None, width: int | None = None, height: int = HEIGHT):
    """A new heatmap figure of ``variable`` (see :meth:`Heatmap.show`)."""
    return Heatmap(width=width, height=height).show(ds, variable, x, y, clim=clim,
                                                    marks=marks, title=title)


LINE_DASHES = ("solid", "dashed", "dotted", "dashdot")
"""Dash patterns of the lines: each round of the palette's colours gets the next, so no two of
up to 32 lines look alike (12 context lines shared 4 colours, 128 and 12,288 both dark
blue)."""


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
    colors = tuple(dict.fromkeys((*OKABE_ITO, "#000000")))  # each colour once
    # a point over its memory budget is hollow, as on the experiment pages (the lines drew
    # configurations that cannot be deployed as if they could)
    known = "fits" in ds and set(ds["fits"].dims) == {by, x}  # else: not said either way
    fits = (np.asarray(ds["fits"].transpose(by, x).values, dtype=bool) if known
            else np.ones(ys.shape, bool))
    renderers = []
    for k, name in enumerate(labels(ds[by])):
        keep = np.isfinite(ys[k]) & ((ys[k] > 0) if logy else True)
        source = ColumnDataSource({x: np.asarray(xs)[keep].tolist(), variable: ys[k][keep],
                                   by: [name] * int(keep.sum()),
                                   "fill_alpha": np.where(fits[k][keep], 1.0, 0.0),
                                   "fits": np.where(fits[k][keep], "yes", "no (hollow)")})
        color, legend = colors[k % len(colors)], f"{by} {name}"
        fig.line(x=x, y=variable, source=source, line_width=2, color=color,
                 line_dash=LINE_DASHES[k // len(colors) % len(LINE_DASHES)], legend_label=legend)
        renderers.append(fig.scatter(x=x, y=variable, source=source, size=6, line_width=1.5,
                                     color=color, fill_alpha="fill_alpha", legend_label=legend))
    fig.add_tools(HoverTool(renderers=renderers, tooltips=[
        (capitalized(display_label(ds[by])[0] or by), f"@{{{by}}}"),
        (axis_label(ds[x]), f"@{{{x}}}{{0,0.[00]}}" if numeric else f"@{{{x}}}"),
        (axis_label(ds[variable]), f"@{{{variable}}}{{0,0.[0000]}}"),
        *([("Fits the memory budget", "@fits")] if known else [])]))
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


def compare_cells(a: xr.Dataset, b: xr.Dataset, variable: str, how: str) -> xr.Dataset:
    """The compared ``variable`` (its ratio or difference) with both slices' values, as the
    comparison heatmap draws them."""
    a, b = a.load(), b.load()
    result = compared(a, b, variable, how)
    long_name = display_label(a[variable])[0]
    return xr.Dataset({result.name: result,
                       "a": a[variable].assign_attrs(long_name=f"{long_name}, A"),
                       "b": b[variable].assign_attrs(long_name=f"{long_name}, B")})


def compare_mapper(result: xr.DataArray, how: str):
    """The colour scale of a comparison: a ratio on a log diverging scale centred on 1, a
    difference on a linear one centred on 0 (as a ``(mapper, colour bar settings)`` pair)."""
    values = screen(result)[0]
    finite = values[np.isfinite(values)]
    if how == "ratio":
        positive = finite[finite > 0]
        spread = float(np.exp(np.abs(np.log(positive)).max())) if positive.size else 2.0
        spread = max(spread, 1.01)
        return LogColorMapper(palette=DIVERGING, low=1 / spread, high=spread,
                              nan_color=NAN_COLOR), {}
    span = float(np.abs(finite).max()) if finite.size else 1.0
    return LinearColorMapper(palette=DIVERGING, low=-(span or 1.0), high=span or 1.0,
                             nan_color=NAN_COLOR), {}


def compare_figure(a: xr.Dataset, b: xr.Dataset, variable: str, how: str, x: str, y: str,
                   title: str, heatmap: Heatmap | None = None):
    """The ratio (colour centred on 1, log scale) or difference (centred on 0) of ``variable``
    between two slices over ``x`` × ``y`` (drawn into ``heatmap`` when given); hover shows both
    values and the result."""
    cells = compare_cells(a, b, variable, how)
    name = f"{how}_{variable}"
    return (heatmap or Heatmap()).show(cells, name, x, y, title=title,
                                       mapper=compare_mapper(cells[name], how))
