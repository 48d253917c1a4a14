"""The grid explorer's heatmap styled for what it holds, and the cells that do not fit.

Positive quantities keep the log colour scale of :func:`apps.ui.charts.heatmap`; signed ones
(memory remaining) use a diverging scale centred on 0, so the fit boundary is where the colour
turns; a flag variable with ``flag_values``/``flag_meanings`` (``reason``) is categorical, its
colour bar labelled with the meanings. Cells over the memory budget carry a cross. Every
heatmap is a new element, so switching variable redraws everything (colour bar included).
Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import xarray as xr
from bokeh.models import FixedTicker

from apps.ui.charts import display_values, heatmap, themed_hook
from apps.ui.theme import OKABE_ITO

DIVERGING = "RdBu"
"""Diverging colour map for signed variables (red below 0, blue above)."""

FLAG_COLORS = ("#bdbdbd", *OKABE_ITO)
"""Colours of a flag variable's values: grey for the first (``valid``), then Okabe–Ito."""

OVER_LABEL = "× does not fit the memory budget"
"""Legend entry of the crosses on over-budget cells."""


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


def styled_heatmap(ds: xr.Dataset, variable: str) -> hv.HeatMap:
    """:func:`heatmap` of ``variable`` with the colour scale its values call for."""
    el = heatmap(ds, variable)
    da = ds[variable]
    meanings = flag_meanings(da)
    if meanings is not None:
        codes = sorted(meanings)
        lo, hi = codes[0] - 0.5, codes[-1] + 0.5
        colors = [FLAG_COLORS[i % len(FLAG_COLORS)] for i in range(len(codes))]
        return el.opts(cmap=colors, logz=False, clim=(lo, hi), color_levels=len(codes),
                       colorbar_opts={"ticker": FixedTicker(ticks=codes),
                                      "major_label_overrides": {c: meanings[c] for c in codes},
                                      "title": "Why invalid"})
    if is_signed(da):
        shown = display_values(da)[0]
        finite = np.abs(shown[np.isfinite(shown)])
        span = float(finite.max()) if finite.size else 1.0
        return el.opts(cmap=DIVERGING, logz=False, clim=(-span, span), symmetric=True)
    return el


def over_budget_cells(ds: xr.Dataset, x: str = "batch", y: str = "context") -> hv.Points:
    """A cross on every valid cell whose configuration exceeds the memory budget."""
    xs = display_values(ds[x])[0]
    ys = display_values(ds[y])[0]
    fits = np.asarray(ds["fits"].transpose(x, y).values, dtype=bool)
    valid = (np.asarray(ds["valid"].transpose(x, y).values, dtype=bool)
             if "valid" in ds else np.ones_like(fits))
    i, j = np.nonzero(valid & ~fits)
    points = {x: [f"{v:,.0f}" for v in xs[i]], y: [f"{v:,.0f}" for v in ys[j]]}
    return hv.Points(points, [x, y], label=OVER_LABEL).opts(
        marker="x", color="black", size=9, line_width=1.5, show_legend=True)


def grid_view(ds: xr.Dataset, variable: str) -> hv.Overlay | hv.HeatMap:
    """The heatmap of ``variable`` with the over-budget cells crossed (when ``fits`` is there)."""
    ds = ds.load()
    el = styled_heatmap(ds, variable)
    if "fits" not in ds:
        return el
    return (el * over_budget_cells(ds)).opts(legend_position="top", legend_opts={
        "orientation": "horizontal", "background_fill_alpha": 0.0}, hooks=[themed_hook])
