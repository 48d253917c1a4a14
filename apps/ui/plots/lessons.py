"""The lesson drawn on an experiment's series charts, read from its page description.

Which variables are drawn, on which axis an input's current value sits, and the lines and
bands that matter are each experiment's own (:mod:`apps.ui.plots.page_descriptions`); this module
applies them and draws the marks: :func:`lesson_data`, :func:`chart_inputs`,
:func:`lesson_marks` (the marks for the current inputs in screen units, ms) and
:class:`MarkLayer`. It knows no experiment, and nothing about Panel or sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from bokeh.models import BoxAnnotation, Label, LogScale, Span
from bokeh.plotting import figure

from apps.ui.plots.charts import PADDING
from apps.ui.plots.page_descriptions import Mark, description
from apps.ui.shell.theme import NEUTRAL, OKABE_ITO
from lab.experiments.base import Experiment

MARK_COLOR = NEUTRAL
"""Colour of limit lines and their labels."""

BAND_COLOR = OKABE_ITO[2]
"""Fill of a shaded feasible range."""


def lesson_data(exp: Experiment, ds: xr.Dataset) -> xr.Dataset:
    """The variables of ``ds`` (``exp``'s chart data) drawn, in order, for ``exp``'s current
    inputs; ``ds`` itself when its page description has no lesson data."""
    lesson = description(exp.slug).lesson_data
    return ds if lesson is None else lesson(ds, exp.inputs())


def chart_inputs(exp: Experiment) -> dict:
    """The current inputs, also under the name of the chart axis they sit on."""
    inputs = exp.inputs()
    return {**inputs, **{axis: inputs[name]
                         for axis, name in description(exp.slug).axis_inputs.items()
                         if name in inputs}}


def lesson_marks(exp: Experiment) -> list[Mark]:
    """The limit lines, feasible bands and crossovers for the current inputs (screen units)."""
    marks = description(exp.slug).lesson_marks
    return [] if marks is None else marks(exp.inputs(), exp.result or {})


def band_label_place(mark: Mark, xs=None) -> dict:
    """Where a band's label goes, so it stays inside the plot: from the band's start
    rightwards when the band lies in the left half of the (log) x values ``xs``, else from
    its end leftwards; at the plot's left edge when there is no band."""
    if mark.start is None or mark.end is None:
        return {"x": 8, "x_units": "screen", "x_offset": 0, "text_align": "left"}
    finite = np.asarray(xs if xs is not None else [], dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    right_half = finite.size > 0 and mark.start > 0 and (
        np.log(mark.start) + np.log(mark.end) > np.log(finite.min()) + np.log(finite.max()))
    if right_half:
        return {"x": mark.end, "x_units": "data", "x_offset": -4, "text_align": "right"}
    return {"x": mark.start, "x_units": "data", "x_offset": 4, "text_align": "left"}


def band_label_height(mark: Mark, place: dict, points: tuple, log_x: bool, log_y: bool,
                      y_bounds: tuple = (None, None)) -> dict:
    """At the plot's bottom or top, whichever the drawn ``points`` ((xs, ys, weights)) leave
    emptiest under a band's label placed across by ``place`` (:func:`band_label_place`), the
    bottom first: at the bottom, experiment 5's label lay on the ITL curve (issue 37 item
    10)."""
    bottom = {"y": 8, "y_units": "screen", "y_offset": 0, "text_baseline": "bottom"}
    drawn = DrawnShares.of(points, log_x, log_y, y_bounds)
    if drawn is None or place["x_units"] == "screen":
        return bottom
    width, anchor = label_share(mark), drawn.x_share(place["x"])
    x0, x1 = (anchor - width, anchor) if place["text_align"] == "right" else (anchor,
                                                                              anchor + width)
    near = (drawn.fx >= x0) & (drawn.fx <= x1)
    below = drawn.weights[near & (drawn.fy <= LABEL_ROOM)].sum()
    above = drawn.weights[near & (drawn.fy >= 1 - LABEL_ROOM)].sum()
    return drawn.top if above < below else bottom


LABEL_CHAR_PX = 6.5
"""Average width of a character of a mark's label (11 px text), px."""
NARROW_PLOT_PX = 300
"""Width of a chart's plot area on a phone, px: a label's share of the width is taken there."""
LABEL_ROOM = 0.2
"""Share of the plot's height a label at its bottom or top may cover."""
MIDDLE_SHARES = (0.3, 0.4, 0.5, 0.6, 0.7)
"""Heights (shares of the plot's height) where a vertical line's label may sit when the
bottom and the top beside the line are both covered."""
MIDDLE_ROOM = 0.14
"""Share of the plot's height a label at a middle height covers."""
CURRENT_WEIGHT = 10
"""How much worse covering the current point is than covering a point of a curve."""


def _shares(values, lo: float, hi: float, log: bool) -> np.ndarray:
    """``values`` as shares (0 to 1) of the axis from ``lo`` to ``hi`` (log or linear)."""
    v = np.asarray(values, dtype=float)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            v, lo, hi = np.log(np.where(v > 0, v, np.nan)), np.log(lo), np.log(hi)
    return (v - lo) / (hi - lo) if hi > lo else np.full(v.shape, 0.5)


def label_share(mark: Mark) -> float:
    """The share of a phone's plot width ``mark``'s label covers (its longest line)."""
    return max(map(len, mark.label.splitlines() or [""])) * LABEL_CHAR_PX / NARROW_PLOT_PX


@dataclass(frozen=True)
class DrawnShares:
    """The drawn points as shares (0 to 1) of the plot's axes, with their weights, and the
    label place at the plot's top."""

    fx: np.ndarray
    fy: np.ndarray
    weights: np.ndarray
    top: dict
    x_range: tuple[float, float, bool]
    y_range: tuple[float, float, bool] = (0.0, 1.0, False)

    @classmethod
    def of(cls, points: tuple, log_x: bool, log_y: bool,
           y_bounds: tuple = (None, None)) -> DrawnShares | None:
        """``points`` ((xs, ys, weights)) on a plot of those scales whose y axis has the set
        range ``y_bounds``, if any; None when nothing drawable is drawn."""
        xs, ys, weights = (np.asarray(a, dtype=float) for a in points)
        ok = (np.isfinite(xs) & np.isfinite(ys) & ((xs > 0) | (not log_x))
              & ((ys > 0) | (not log_y)))
        xs, ys, weights = xs[ok], ys[ok], weights[ok]
        if xs.size == 0:
            return None
        lo_y, hi_y = (b if b is not None and np.isfinite(b) else f(ys)
                      for b, f in zip(y_bounds, (np.min, np.max), strict=True))
        x_range = (float(xs.min()), float(xs.max()), log_x)
        return cls(_shares(xs, *x_range), _shares(ys, float(lo_y), float(hi_y), log_y),
                   weights, {"y": float(hi_y), "y_units": "data", "y_offset": -2,
                             "text_baseline": "top"}, x_range,
                   (float(lo_y), float(hi_y), log_y))

    def x_share(self, x: float) -> float:
        """``x`` as a share of the x axis drawn."""
        return float(_shares([x], *self.x_range)[0])

    def y_at(self, share: float) -> float:
        """The y value (data units) at ``share`` of the y axis drawn."""
        lo, hi, log = self.y_range
        if log and lo > 0 and hi > 0:
            return float(np.exp(np.log(lo) + share * (np.log(hi) - np.log(lo))))
        return lo + share * (hi - lo)


def vline_label_place(mark: Mark, points: tuple, log_x: bool, log_y: bool,
                      y_bounds: tuple = (None, None)) -> dict:
    """Where a vertical line's label goes so that it covers neither the curves nor the current
    point: beside the line (left of it, else right of it where it fits) at the plot's bottom
    or top, whichever of those places the drawn ``points`` ((xs, ys, weights): the curves' and
    the current point's) leave emptiest, the bottom left first; at a height between them
    (:data:`MIDDLE_SHARES`) only when that is emptier still (experiment 10's curves fall
    through both ends beside its break-even line); ``y_bounds``: the y axis's set range, if
    any."""
    bottom = {"y": 28, "y_units": "screen", "y_offset": 0, "text_baseline": "bottom"}
    left = {"x_offset": -4, "text_align": "right"}
    drawn = DrawnShares.of(points, log_x, log_y, y_bounds)
    if drawn is None or mark.start is None:
        return {**bottom, **left}
    fx, fy, weights, top = drawn.fx, drawn.fy, drawn.weights, drawn.top
    line = drawn.x_share(mark.start)
    width = label_share(mark)
    right = {"x_offset": 4, "text_align": "left"}
    places, middles = [], []
    for side, (x0, x1), fits in ((left, (line - width, line), line - width >= -PADDING),
                                 (right, (line, line + width), line + width <= 1 + PADDING)):
        if not fits:
            continue
        near = (fx >= x0) & (fx <= x1)
        places += [(float(weights[near & (fy <= LABEL_ROOM)].sum()), {**bottom, **side}),
                   (float(weights[near & (fy >= 1 - LABEL_ROOM)].sum()), {**top, **side})]
        for centre in MIDDLE_SHARES:
            inside = near & (np.abs(fy - centre) <= MIDDLE_ROOM / 2)
            middles.append((float(weights[inside].sum()),
                            {"y": drawn.y_at(centre), "y_units": "data", "y_offset": 0,
                             "text_baseline": "middle", **side}))
    places += middles  # after every end: a middle height is taken only when emptier
    if not places:
        return {**bottom, **left}
    return min(places, key=lambda place: place[0])[1]  # the first of the emptiest


HLINE_LABEL_ROOM = 0.1
"""Share of the plot's height a horizontal line's label covers above or below the line."""


def hline_label_place(mark: Mark, points: tuple, log_x: bool, log_y: bool,
                      y_bounds: tuple = (None, None)) -> dict:
    """Where a horizontal line's label goes so that it covers neither the curves nor the
    current point: above or below the line, at the plot's left or right end, whichever of
    those places the drawn ``points`` ((xs, ys, weights)) leave emptiest, above on the left
    first (experiment 10's "1× (plain decoding)" lay on its speed-up curve near 1.15)."""
    above, below = ({"y_offset": 3, "text_baseline": "bottom"},
                    {"y_offset": -3, "text_baseline": "top"})
    left = {"x": 8, "x_units": "screen", "x_offset": 0, "text_align": "left"}
    drawn = DrawnShares.of(points, log_x, log_y, y_bounds)
    if drawn is None or mark.start is None:
        return {**left, **above}
    right = {"x": drawn.x_range[1], "x_units": "data", "x_offset": -8, "text_align": "right"}
    lo, hi, log = drawn.y_range
    line = float(_shares([mark.start], lo, hi, log)[0])
    if not np.isfinite(line):
        return {**left, **above}
    width = label_share(mark)
    places = []
    for vertical, (y0, y1) in ((above, (line, line + HLINE_LABEL_ROOM)),
                               (below, (line - HLINE_LABEL_ROOM, line))):
        for side, (x0, x1) in ((left, (-PADDING, width)), (right, (1 - width, 1 + PADDING))):
            inside = (drawn.fx >= x0) & (drawn.fx <= x1) & (drawn.fy >= y0) & (drawn.fy <= y1)
            places.append((float(drawn.weights[inside].sum()), {**side, **vertical}))
    return min(places, key=lambda place: place[0])[1]  # the first of the emptiest


class MarkLayer:
    """The Bokeh annotations of the marks on one figure, moved in place on each update."""

    def __init__(self, fig: figure, variable: str, axis: str):
        self.figure, self.variable, self.axis = fig, variable, axis
        self.models: dict[tuple[str, str | None], tuple] = {}

    def _models(self, mark: Mark) -> tuple:
        key = (mark.kind, mark.variable or mark.axis)
        key = (f"{key[0]}:{mark.label.split()[0]}", key[1])  # a label of two lines too
        if key not in self.models:
            label = Label(x=0, y=0, text="", text_font_size="11px", text_color=MARK_COLOR,
                          background_fill_color="white", background_fill_alpha=0.7)
            if mark.kind == "band":
                shape = BoxAnnotation(fill_color=BAND_COLOR, fill_alpha=0.15, line_alpha=0)
                label.update(y=8, y_units="screen", x_offset=4)
            else:
                shape = Span(dimension="width" if mark.kind == "hline" else "height",
                             line_color=MARK_COLOR, line_width=1.5, line_dash="dotted")
                if mark.kind == "hline":
                    label.update(x=8, x_units="screen", y_offset=3)
                else:
                    label.update(y=28, y_units="screen", x_offset=-4, text_align="right")
            self.figure.add_layout(shape)
            self.figure.add_layout(label)
            self.models[key] = (shape, label)
        return self.models[key]

    def show(self, marks: list[Mark], xs=None, points: tuple | None = None) -> None:
        """Place every mark that belongs on this figure (``xs``: the x values drawn, which
        say on which side of a band its label fits, :func:`band_label_place`; ``points``:
        (xs, ys, weights) of everything drawn, which say where a vertical line's label covers
        nothing, :func:`vline_label_place`)."""
        for mark in marks:
            if mark.kind == "yrange":
                if mark.variable == self.variable:
                    self.figure.y_range.update(start=mark.start, end=mark.end)
                continue
            if mark.kind == "hline" and mark.variable != self.variable:
                continue
            if mark.kind != "hline" and mark.axis != self.axis:
                continue
            shape, label = self._models(mark)
            label.text = mark.label
            if mark.kind == "band":
                shape.update(left=mark.start, right=mark.end, visible=mark.start is not None)
                place = band_label_place(mark, xs)
                if points is not None:
                    place |= band_label_height(mark, place, points, *self._scales())
                label.update(visible=True, **place)
            else:
                shape.location = mark.start
                label.visible = mark.start is not None  # a line that does not exist now
                if mark.start is None:
                    continue
                if mark.kind == "hline":
                    label.y = mark.start
                    if points is not None:
                        label.update(**hline_label_place(mark, points, *self._scales()))
                else:
                    label.x = mark.start
                    if points is not None:
                        label.update(**vline_label_place(mark, points, *self._scales()))

    def _scales(self) -> tuple[bool, bool, tuple]:
        """Whether the figure's x and y scales are logarithmic, and its y range's set ends."""
        y_range = self.figure.y_range
        return (isinstance(self.figure.x_scale, LogScale),
                isinstance(self.figure.y_scale, LogScale),
                (getattr(y_range, "start", None), getattr(y_range, "end", None)))
