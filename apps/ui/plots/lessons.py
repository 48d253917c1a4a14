"""The lesson drawn on an experiment's series charts, read from its page description.

Which variables are drawn, on which axis an input's current value sits, and the lines and
bands that matter are each experiment's own (:mod:`apps.ui.views.page_descriptions`); this module
applies them and draws the marks: :func:`lesson_data`, :func:`chart_inputs`,
:func:`lesson_marks` (the marks for the current inputs in screen units, ms) and
:class:`MarkLayer`. It knows no experiment, and nothing about Panel or sessions.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from bokeh.models import BoxAnnotation, Label, Span
from bokeh.plotting import figure

from apps.ui.shell.theme import OKABE_ITO
from apps.ui.views.page_descriptions import Mark, description
from lab.experiments.base import Experiment

MARK_COLOR = OKABE_ITO[7]
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


class MarkLayer:
    """The Bokeh annotations of the marks on one figure, moved in place on each update."""

    def __init__(self, fig: figure, variable: str, axis: str):
        self.figure, self.variable, self.axis = fig, variable, axis
        self.models: dict[tuple[str, str | None], tuple] = {}

    def _models(self, mark: Mark) -> tuple:
        key = (mark.kind, mark.variable or mark.axis)
        key = (f"{key[0]}:{mark.label.split(' ')[0]}", key[1])
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

    def show(self, marks: list[Mark], xs=None) -> None:
        """Place every mark that belongs on this figure (``xs``: the x values drawn, which
        say on which side of a band its label fits, :func:`band_label_place`)."""
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
                label.update(visible=True, **band_label_place(mark, xs))
            else:
                shape.location = mark.start
                label.visible = mark.start is not None  # a line that does not exist now
                if mark.start is None:
                    continue
                if mark.kind == "hline":
                    label.y = mark.start
                else:
                    label.x = mark.start
