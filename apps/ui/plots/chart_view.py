"""An experiment's chart(s), updated in place as its inputs change, with a CSV download."""

from __future__ import annotations

from html import escape

import numpy as np
import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.parts.budget import with_fits
from apps.ui.parts.cards import error_html
from apps.ui.parts.downloads import chart_csv_button
from apps.ui.plots.batch_chart import BatchChart, batch_charts, power_of_two_rows
from apps.ui.plots.expert_chart import ExpertChart, expert_chart
from apps.ui.plots.lessons import (
    CURRENT_WEIGHT,
    MarkLayer,
    chart_inputs,
    lesson_data,
    lesson_marks,
)
from apps.ui.plots.page_descriptions import description
from apps.ui.plots.series_chart import SeriesChart, experiment_charts, update_charts
from apps.ui.shell.busy import BusyNote
from apps.ui.shell.plain_text import shown_error
from apps.ui.shell.theme import CARD_CSS
from lab.experiments.base import Experiment
from lab.models.moe import ROUTING_ASSUMPTION

CHART_HEIGHT = 340
"""Height of each chart pane in px (the plots are 320 px tall plus their margins)."""



SEGMENT_SAMPLES = 6
"""Points taken inside each segment of a drawn line, so a label is kept off the segments
between markers too (experiment 10's break-even label lay on a falling curve between two)."""


def along_line(xs, ys, log_x: bool, log_y: bool,
               samples: int = SEGMENT_SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """The points of a line through ``xs``, ``ys`` (in x order) with ``samples`` more inside
    each segment, spaced as the axes draw them (log or linear)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & ((x > 0) | (not log_x)) & ((y > 0) | (not log_y))
    x, y = x[ok], y[ok]
    if x.size < 2:
        return x, y
    order = np.argsort(x, kind="stable")
    fx = np.log(x[order]) if log_x else x[order]
    fy = np.log(y[order]) if log_y else y[order]
    t = np.linspace(0.0, 1.0, samples + 2)[:-1]
    gx = np.append((fx[:-1, None] + np.diff(fx)[:, None] * t).ravel(), fx[-1])
    gy = np.append((fy[:-1, None] + np.diff(fy)[:, None] * t).ravel(), fy[-1])
    return (np.exp(gx) if log_x else gx), (np.exp(gy) if log_y else gy)


def drawn_points(chart: SeriesChart) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(xs, ys, weights)`` of what ``chart`` draws: every series' line, its markers and the
    segments between them (weight 1 a point, :func:`along_line`), and the current point
    (:data:`~apps.ui.plots.lessons.CURRENT_WEIGHT`), so that a line's label covers neither."""
    x, y = chart.layout.x, chart.variable
    parts = [(*along_line(source.data[x], source.data[y], chart.layout.log_x,
                          chart.layout.log_y), 1.0) for source in chart.sources]
    if chart.point is not None and len(chart.point.data.get(x, [])):
        parts.append((chart.point.data[x], chart.point.data[y], CURRENT_WEIGHT))
    xs = [np.asarray(px, dtype=float) for px, _py, _w in parts]
    return (np.concatenate(xs), np.concatenate([np.asarray(py, dtype=float)
                                                for _px, py, _w in parts]),
            np.concatenate([np.full(len(px), w) for px, (_a, _b, w) in zip(xs, parts,
                                                                            strict=True)]))

class ChartView(Viewer):
    """The chart(s) of an experiment over its swept axis, the current point highlighted.

    Every chart is a Bokeh figure whose data sources are updated in place, so zoom survives
    updates: experiment 1's two (:mod:`apps.ui.plots.batch_chart`), where moving only the batch
    moves only the current-point markers, plus, for a mixture-of-experts model, the weight
    reads against batch (:mod:`apps.ui.plots.expert_chart`) with the routing assumption under the
    charts; and one per variable for the others
    (:mod:`apps.ui.plots.series_chart`), rebuilt only if an update changes a figure's layout. On
    a server the chart update runs on the next tick, after the cards have been sent. While
    the inputs are invalid the last valid chart is hidden.

    Its busy note (:class:`~apps.ui.shell.busy.BusyNote`) covers the whole update: it is shown as
    the experiment starts computing (``computing``) and hidden once the calculation and the
    chart redraw that follows it have both finished.
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment drawn.")

    def __init__(self, **params):
        super().__init__(**params)
        exp = self.experiment
        source = exp if exp.error is None else type(exp)()
        self.data = (source.chart_data(), source.inputs(), source.result)
        """(chart dataset, inputs, result) of the last valid inputs: drawn and downloaded."""
        self._pending = False
        self._busy = BusyNote()
        self._busy.follow(exp, "computing")  # shown on a server before the calculation runs
        exp.param.watch(self._refresh, "result")
        ds, inputs, result = self.data
        if description(exp.slug).chart == "batch":
            self._lines = (power_of_two_rows(ds), result["ridge_batch"])
            self._batch: list[BatchChart] = batch_charts(ds, inputs["batch"],
                                                         result["ridge_batch"])
            self._experts: ExpertChart | None = None
            self._experts_drawn = None
            """(lines, ceiling, E) the expert figure last drew, or None (a dense model)."""
            figures = [chart.figure for chart in self._batch] + self._expert_figure(source)
        else:
            self._series: list[SeriesChart] = experiment_charts(self._drawn(ds, source),
                                                                chart_inputs(source))
            self._layers: dict[int, MarkLayer] = {}
            self._mark(source)
            figures = [chart.figure for chart in self._series]
        self._routing = pn.pane.HTML(f'<p class="lab-routing-note"><em>{escape(ROUTING_ASSUMPTION)}'
                                     '</em></p>', sizing_mode="stretch_width",
                                     visible=self._has_experts(),
                                     css_classes=["lab-routing-note"])
        """The expert-read figure's caption: the routing assumption (shown with that figure)."""
        visible = pn.bind(lambda _r: exp.error is None, exp.param.result)
        wide = True if description(exp.slug).chart == "batch" else None
        self._grid = pn.FlexBox(*self._panes(figures, wide), flex_wrap="wrap",
                                sizing_mode="stretch_width", visible=visible)
        self._download = chart_csv_button(lambda: self.data[:2], f"{exp.slug}-chart.csv",
                                          "Chart data (CSV)")
        self._download.visible = visible
        self._why = pn.pane.HTML(pn.bind(self._why_html, exp.param.result),
                                 stylesheets=[CARD_CSS], sizing_mode="stretch_width",
                                 visible=pn.bind(lambda _r: exp.error is not None,
                                                 exp.param.result),
                                 css_classes=["lab-chart-unavailable"])

    def _has_experts(self) -> bool:
        """True when experiment 1 draws the expert-read figure (a mixture-of-experts model)."""
        return description(self.experiment.slug).chart == "batch" and self._experts is not None

    def _expert_figure(self, exp: Experiment) -> list:
        """Experiment 1: draw (or update) the weight-read figure when the data hold the experts
        a batch touches, else forget it; returns ``[figure]`` or ``[]``."""
        ds, inputs, _result = self.data
        if "experts_touched" not in ds:
            self._experts = self._experts_drawn = None
            return []
        lines = power_of_two_rows(ds)
        drawn = (lines, exp.all_experts_weight_bytes(), exp.model_spec().experts)
        if self._experts is None:
            self._experts = expert_chart(lines, ds, inputs["batch"], *drawn[1:])
        elif not (drawn[1:] == self._experts_drawn[1:] and lines.identical(self._experts_drawn[0])):
            self._experts.show_series(*drawn)
        self._experts_drawn = drawn
        self._experts.show_point(ds, inputs["batch"], drawn[2])
        return [self._experts.figure]

    @staticmethod
    def _panes(figures: list, wide: bool | None = None) -> list[pn.Column]:
        """One pane per figure, full width for one or two (or when ``wide``) and two to a row
        for more (the Bokeh pane shares its figure's layout, so a column around it takes the
        flex share)."""
        wide = len(figures) <= 2 if wide is None else wide
        return [pn.Column(pn.pane.Bokeh(fig, sizing_mode="stretch_width", height=CHART_HEIGHT),
                          sizing_mode="stretch_width", min_width=None if wide else 300,
                          css_classes=["lab-chart"],
                          styles={"flex": "1 1 100%" if wide else "1 1 45%"})
                for fig in figures]

    def _why_html(self, _result) -> str:
        """Why there is no chart or chart data while the inputs are invalid."""
        if self.experiment.error is None:
            return ""
        return error_html("no chart and no chart data (CSV) for these inputs: "
                          + shown_error(self.experiment))

    @property
    def busy(self) -> BusyNote:
        """The page's busy note (shown by :meth:`__panel__`)."""
        return self._busy

    def _refresh(self, _event) -> None:
        if self.experiment.error is None and not self._pending:
            self._pending = True
            self._busy.begin()  # ended after the redraw, on the next tick
            pn.state.execute(self._update, schedule=True)

    def _update(self) -> None:
        self._pending = False
        try:
            self._draw()
        finally:
            self._busy.end()

    def _draw(self) -> None:
        if self.experiment.error is None:
            self.data = (self.experiment.chart_data(), self.experiment.inputs(),
                         self.experiment.result)
            if description(self.experiment.slug).chart == "batch":
                self._show_batch()
            else:
                self._show_series()

    def _show_batch(self) -> None:
        """Experiment 1: redraw the lines only when they change, the current point always.

        The lines are drawn over the powers of two, which do not depend on the batch, so
        moving the batch sends one marker per chart instead of every layer.
        """
        ds, inputs, result = self.data
        lines, ridge = power_of_two_rows(ds), result["ridge_batch"]
        if ridge != self._lines[1] or not lines.identical(self._lines[0]):
            self._lines = (lines, ridge)
            for chart in self._batch:
                chart.show_series(lines, ridge)
        for chart in self._batch:
            chart.show_point(ds, inputs["batch"])
        had = self._experts is not None
        figures = self._expert_figure(self.experiment)
        if had != (self._experts is not None):  # a model with experts came or went
            self._grid[:] = self._panes([c.figure for c in self._batch] + figures, wide=True)
        self._routing.visible = self._has_experts()

    def show_measured(self, series: dict | None) -> None:
        """Experiment 1: show experiment 9's measured attention markers on the step-time chart
        (``series`` from :func:`lab.measured.overlay.measured_attention_series`), or hide them
        (None). Other experiments draw nothing."""
        if description(self.experiment.slug).chart == "batch":
            self._batch[0].show_measured(series)

    def _show_series(self) -> None:
        """Experiments 2–8: update the figures in place; swap in any that were rebuilt."""
        ds = self.data[0]
        charts = update_charts(self._series, self._drawn(ds), chart_inputs(self.experiment))
        if charts is None:
            self._mark()
            return
        if len(charts) == len(self._series):
            for column, old, new in zip(self._grid, self._series, charts, strict=True):
                if new is not old:
                    column[0].object = new.figure
        else:
            self._grid[:] = self._panes([c.figure for c in charts])
        self._series = charts
        self._mark()

    def _drawn(self, ds, source: Experiment | None = None):
        """What the series charts draw: the lesson's variables, over-budget points flagged,
        for ``source``, the experiment whose data ``ds`` are (default: the page's). A page
        opened on invalid inputs draws the defaults' (hidden) chart from the defaults: the
        budget flags of invalid inputs raised and the page never loaded (``?view=tp&ep=2``)."""
        exp = source or self.experiment
        return lesson_data(exp, with_fits(exp, ds))

    def _mark(self, source: Experiment | None = None) -> None:
        """Draw the lesson's limit lines, bands and crossovers of ``source`` (default: the
        page's experiment) on the current figures."""
        marks = lesson_marks(source or self.experiment)
        for chart in self._series:
            layer = self._layers.get(id(chart.figure))
            if layer is None:
                layer = self._layers[id(chart.figure)] = MarkLayer(
                    chart.figure, chart.variable, chart.layout.x)
            layer.show(marks, chart.sources[0].data[chart.layout.x], drawn_points(chart))

    def parts(self) -> list:
        """The busy note, the charts, why there are none, the caption and the CSV download, in
        order: an experiment page places them in its own column (one layout level fewer)."""
        note = description(self.experiment.slug).caption
        return [self._busy, self._grid, self._routing, self._why,
                pn.pane.Markdown(f"*{note}* (Save a chart as PNG from its toolbar.)",
                                 sizing_mode="stretch_width"),
                self._download]

    def __panel__(self):
        return pn.Column(*self.parts(), sizing_mode="stretch_width")
