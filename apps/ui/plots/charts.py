"""What every chart shares, and the grid explorer's heatmap (a HoloViews element).

Labelled xarray data in: axis labels and units come from the data's ``long_name``/``units``
attrs (read back as the lab's labels, "tokens" and "GB", by :func:`lab.unit_attrs.unit_label`
from a file's CF units), and SI data is converted to the units shown on screen (ms, GB, GFLOP) here and only
here. The experiments' charts are Bokeh figures built from these helpers
(:mod:`apps.ui.plots.batch_chart`, :mod:`apps.ui.plots.series_chart`). Nothing here knows about Panel or
sessions, so every chart can be built and checked without a browser.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # registers the Bokeh backend used by .opts
import numpy as np
import pandas as pd
import xarray as xr
from bokeh.models import (
    Axis,
    ColorBar,
    CustomJSTickFormatter,
    FixedTicker,
    GlyphRenderer,
    Grid,
    Legend,
    Title,
)
from bokeh.plotting import figure

from apps.ui.shell.theme import CHART_LIGHT_STYLE
from lab.unit_attrs import unit_label
from lab.units import GB, GFLOP, MS

CANVAS = {"plot.output_backend": "canvas", "plot.toolbar.logo": None}
"""Canvas output: in headless Chromium WebGL renders in software and repaints slower. And no
Bokeh logo in the toolbar: a link to bokeh.org, a Tab stop on every chart leading out of the
lab (:func:`themed` drops it from the figures the lab builds itself)."""

DISPLAY_UNITS = {"s": ("ms", 1 / MS), "B": ("GB", 1 / GB), "FLOP": ("GFLOP", 1 / GFLOP)}
"""SI unit in the data → (unit on screen, factor)."""

CHOSEN_UNITS = {("s", "µs"): 1e6, ("s", "ms"): 1e3, ("B/s", "TB/s"): 1e-12, ("B/s", "GB/s"): 1e-9}
"""(SI unit in the data, unit a chart chose for a variable) → factor: a variable whose attrs
name ``display_units`` is shown in it (experiment 9's hover in the µs and TB/s of its cards)."""


NOTE = "Ideal phase cost, not a measurement"
"""What every decode curve is, stated on the chart."""

COORDINATE_ATTRS = {
    "batch": ("batch", "sequences"),
    "context": ("context", "tokens"),
    "tp": ("tensor parallel", "GPUs"),
}
"""Fallback ``(long_name, units)`` for decode coordinates whose attrs were lost upstream."""

MAX_TICKS = 11
"""Most labelled ticks on a log2 axis (every other power of two beyond that)."""

TOOLS = "pan,wheel_zoom,box_zoom,save,reset"
"""Every figure's toolbar (save gives the PNG); each chart adds a hover tool for its markers."""

PADDING = 0.06
"""Share of the data range left empty at each end of both axes."""

HOVER_NUMBER = "{0,0.[000]}"
"""Hover format of a number: thousands separated, up to three decimals."""


def display_label(da: xr.DataArray) -> tuple[str, str, float]:
    """``(long name, screen unit, factor from stored to screen units)`` of ``da``, from its
    attributes alone (its values are not read)."""
    fallback = COORDINATE_ATTRS.get(str(da.name), (str(da.name or ""), ""))
    units = unit_label(da.attrs) if "units" in da.attrs else fallback[1]
    long_name = str(da.attrs.get("long_name", fallback[0])).strip()
    chosen = da.attrs.get("display_units")
    if (units, chosen) in CHOSEN_UNITS:
        return long_name, str(chosen), CHOSEN_UNITS[(units, chosen)]
    shown, factor = DISPLAY_UNITS.get(units, (units, 1.0))
    return long_name, "" if shown in ("1", "") else shown, factor


def display_values(da: xr.DataArray) -> tuple[np.ndarray, str, str]:
    """Values of ``da`` in screen units, with its long name and the screen unit."""
    long_name, shown, factor = display_label(da)
    return np.asarray(da.values, dtype=float) * factor, long_name, shown


def capitalized(text: str) -> str:
    """``text`` with its first letter upper-case (a long name as a label or title)."""
    return text[:1].upper() + text[1:]


def axis_label(da: xr.DataArray) -> str:
    """``Long name (unit)`` of ``da`` in the units on screen (from its attributes alone: a
    lazy variable of a whole grid is not read)."""
    long_name, unit, _ = display_label(da)
    return f"{capitalized(long_name)} ({unit})" if unit else capitalized(long_name)


def dimension(name: str, long_name: str, unit: str) -> hv.Dimension:
    """A HoloViews dimension whose axis label reads ``long name (unit)``."""
    return hv.Dimension(name, label=capitalized(long_name) or name, unit=unit or None)


def power_of_two_ticks(values: np.ndarray, max_ticks: int = MAX_TICKS) -> list[tuple[float, str]]:
    """Ticks at the powers of two spanning ``values`` (for a log2 axis)."""
    finite = values[np.isfinite(values) & (values > 0)]
    if finite.size == 0:
        return [(1.0, "1")]
    lo, hi = int(np.floor(np.log2(finite.min()))), int(np.ceil(np.log2(finite.max())))
    step = max(1, -(-(hi - lo + 1) // max_ticks))
    return [(float(2**k), f"{2**k:,}") for k in range(lo, hi + 1, step)]


def fit_columns(ds: xr.Dataset, x: str, y: str) -> dict[str, np.ndarray]:
    """The points of ``y`` against ``x`` (screen units) with ``fits`` and ``fill_alpha``.

    ``fill_alpha`` is 1 where the point fits the memory budget and 0 where it does not, so
    over-budget points draw as hollow markers; without a ``fits`` variable every point fits.
    """
    xs, _, _ = display_values(ds[x])
    ys, _, _ = display_values(ds[y])
    ok = (np.asarray(ds["fits"].values, dtype=bool) if "fits" in ds
          else np.ones(len(xs), dtype=bool))
    return {x: xs, y: ys, "fits": ok, "fill_alpha": np.where(ok, 1.0, 0.0)}


PLAIN_NUMBER_JS = """
if (tick === 0) { return "0"; }
const a = Math.abs(tick);
if (a >= 1e-3 && a < 1e15) { return tick.toLocaleString("en-US", {maximumSignificantDigits: 6}); }
return tick.toPrecision(2);
"""
"""Tick label code: plain numbers with thousands separators (200,000, never 2.000e+5)."""


def plain_ticks() -> CustomJSTickFormatter:
    """A tick formatter writing plain numbers (see :data:`PLAIN_NUMBER_JS`)."""
    return CustomJSTickFormatter(code=PLAIN_NUMBER_JS)


TICK_LABEL_PX = 44
"""Room one label of a fixed x tick needs, px ("1,024" and a gap): with less, every other
label (or every third, …) is left blank."""

THINNED_JS = f"""
let width = NaN;
try {{ width = fig.inner_width; }} catch (e) {{}}  // unset until the plot is first laid out
const room = width / Math.max(ticks.length, 1);
const keep = Math.max(1, Math.ceil({TICK_LABEL_PX} / room));
if (Number.isFinite(keep) && index % keep !== 0) {{ return ""; }}
""" + PLAIN_NUMBER_JS
"""Tick label code of a fixed-tick x axis: plain numbers, as many as the plot's width holds
(read in the browser at each render, so a phone shows 1, 4, 16, … where a desktop shows every
power of two)."""


def thinned_ticks(fig: figure) -> CustomJSTickFormatter:
    """A formatter of ``fig``'s fixed x ticks that never lets labels run together
    (see :data:`THINNED_JS`)."""
    return CustomJSTickFormatter(code=THINNED_JS, args={"fig": fig})


def series_with_current(fig: figure, series, current, variable: str, color: str,
                        highlight: str) -> tuple:
    """Draw ``variable`` against batch from the ``series`` data source as a line with markers
    (hollow where ``fill_alpha`` says the point is over the budget) and the ``current`` source
    as one large marker in ``highlight``; returns ``(markers, current marker)`` renderers."""
    lean(fig.line("batch", variable, source=series, color=color, line_width=2))
    markers = lean(fig.scatter("batch", variable, source=series, color=color,
                               fill_alpha="fill_alpha", size=8, line_width=2))
    point = lean(fig.scatter("batch", variable, source=current, color=highlight,
                             fill_alpha="fill_alpha", size=15, line_width=3))
    return markers, point


def lean(renderer: GlyphRenderer) -> GlyphRenderer:
    """``renderer`` without its non-selection and muted copies of the glyph: the charts have
    no selection tool, and their legends hide a series rather than mute it, so the copies
    are never drawn; two models fewer per series for the server to build and send and for
    the browser to decode and set up."""
    renderer.nonselection_glyph = None
    renderer.muted_glyph = None
    return renderer


def new_figure(title: str, x_label: str, y_label: str, height: int,
               log_x: bool, log_y: bool = False) -> tuple[figure, FixedTicker | None]:
    """A canvas figure as wide as its pane, with the lab's toolbar and padding (a log y axis
    when ``log_y``: its labels stay plain numbers, 10, 100, 1,000).

    On a log x axis the ticks are fixed (set them with :func:`set_log2_ticks`); the ticker is
    returned for that, else None.
    """
    fig = figure(x_axis_type="log" if log_x else "linear",
                 y_axis_type="log" if log_y else "linear", height=height,
                 sizing_mode="stretch_width", title=title, tools=TOOLS, output_backend="canvas",
                 x_axis_label=x_label, y_axis_label=y_label)
    fig.x_range.range_padding = fig.y_range.range_padding = PADDING
    fig.yaxis[0].formatter = plain_ticks()
    fig.min_border_left = 70  # room for the y label beside long tick labels
    themed(fig)  # the minor ticks of the log axis are hidden too (alpha 0)
    if not log_x:
        fig.xaxis[0].formatter = plain_ticks()
        return fig, None
    ticker = FixedTicker()
    fig.xaxis[0].ticker = ticker
    fig.xaxis[0].formatter = thinned_ticks(fig)
    return fig, ticker


def themed(fig: figure) -> figure:
    """``fig`` styled as the page's light theme styles it in the browser
    (:data:`apps.ui.shell.theme.CHART_LIGHT_STYLE`), so the page need not restyle it on load,
    and its toolbar without Bokeh's logo.

    Styles what ``fig`` holds now: call it again after adding a legend or a colour bar."""
    style = CHART_LIGHT_STYLE
    fig.update(**style["figure"])
    # Bokeh's logo in the toolbar is a link to bokeh.org: a Tab stop on every chart that
    # leads out of the lab.
    fig.toolbar.logo = None
    if fig.title is not None:
        fig.title.update(**style["title"])
    kinds = ((Axis, "axis"), (Grid, "grid"), (Legend, "legend"), (ColorBar, "colorbar"),
             (Title, "title"))  # a title's second line (batch_chart) too
    # The figure's side panels and centre hold these; ``fig.select`` would walk every model
    # the figure references (about 10 ms a call).
    for model in (*fig.above, *fig.below, *fig.left, *fig.right, *fig.center):
        for kind, name in kinds:
            if isinstance(model, kind):
                model.update(**style[name])
    return fig


def themed_hook(plot, _element) -> None:
    """HoloViews hook: :func:`themed` on the Bokeh figure a plot draws into."""
    themed(plot.state)


def set_log2_ticks(fig: figure, ticker: FixedTicker, xs: np.ndarray,
                   max_ticks: int = MAX_TICKS) -> None:
    """Tick the powers of two spanning ``xs`` on ``fig``'s log x axis (labelled by its
    formatter, :func:`thinned_ticks`)."""
    ticker.ticks = [t for t, _ in power_of_two_ticks(xs, max_ticks)]


def numeric_variables(ds: xr.Dataset) -> list[str]:
    """Data variables that are numbers (not flags or text), in order."""
    return [name for name, da in ds.data_vars.items()
            if np.issubdtype(da.dtype, np.number) and not np.issubdtype(da.dtype, np.bool_)]


def sweep_axis(data: xr.Dataset | xr.DataArray) -> str:
    """The swept axis: the dimension with the most points (the first on ties)."""
    dims = list(data.dims)
    return max(dims, key=lambda d: (data.sizes[d], -dims.index(d)))


def heatmap(ds: xr.Dataset, variable: str, x: str = "batch", y: str = "context") -> hv.HeatMap:
    """``variable`` over ``x`` × ``y`` of a 2-D selection, hover showing every variable.

    Invalid cells (NaN) stay blank. Booleans and text are shown in the hover as they are.
    """
    ds = ds.load()  # one read of a lazy selection, not one per variable
    xs, x_long, x_unit = display_values(ds[x])
    ys, y_long, y_unit = display_values(ds[y])
    da = ds[variable].transpose(x, y)
    gx, gy = np.meshgrid(np.arange(len(xs)), np.arange(len(ys)), indexing="ij")
    frame = pd.DataFrame({x: pd.Series([f"{v:,.0f}" for v in xs[gx.ravel()]], dtype=object),
                          y: pd.Series([f"{v:,.0f}" for v in ys[gy.ravel()]], dtype=object)})
    shown, long_name, unit = display_values(da)
    vdims = [dimension(variable, long_name, unit)]
    frame[variable] = np.asarray(shown).ravel()
    for name, other in ds.data_vars.items():
        if name == variable or set(other.dims) != {x, y}:
            continue
        arr = other.transpose(x, y)
        if np.issubdtype(arr.dtype, np.number) and not np.issubdtype(arr.dtype, np.bool_):
            shown, o_long, o_unit = display_values(arr)
            frame[name] = shown.ravel()
            vdims.append(dimension(name, o_long, o_unit))
        else:
            frame[name] = pd.Series(np.asarray(arr.values).ravel().astype(str), dtype=object)
            vdims.append(hv.Dimension(name, label=str(other.attrs.get("long_name", name))))
    el = hv.HeatMap(frame, [dimension(x, x_long, x_unit), dimension(y, y_long, y_unit)], vdims)
    positive = np.nanmin(frame[variable]) > 0 if np.isfinite(frame[variable]).any() else False
    return el.opts(cmap="cividis", colorbar=True, logz=bool(positive), tools=["hover"],
                   responsive=True, height=460,
                   xrotation=45, backend_opts=CANVAS, clipping_colors={"NaN": "#d9d9d9"},
                   title=axis_label(ds[variable]), hooks=[themed_hook])
