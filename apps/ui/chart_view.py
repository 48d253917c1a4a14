"""An experiment's chart(s), updated in place as its inputs change, with a CSV download."""

from __future__ import annotations

import holoviews as hv
import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.batch_chart import BatchChart, batch_charts, power_of_two_rows
from apps.ui.charts import NOTE, experiment_charts
from apps.ui.downloads import csv_button
from lab.experiments.base import Experiment

CHART_HEIGHT = 340
"""Height of each chart pane in px (the plots are 320 px tall plus their margins)."""

CHART_NOTE = ("Hollow markers exceed the chosen memory budget. The curves describe ideal phase "
              "costs, not measured performance.")
"""Caption under every decode-family chart."""


class ChartView(Viewer):
    """The chart(s) of an experiment over its swept axis, the current point highlighted.

    Experiment 1 draws two Bokeh figures (:mod:`apps.ui.batch_chart`) whose sources are
    updated in place: when only the batch moves, only the current-point markers change.
    Every other experiment has one ``hv.DynamicMap`` per chart bound to ``data``, so updates
    stream into the existing plot and the charts of one update are built once for all panes.
    Zoom survives updates. On a server the chart update runs on the next tick, after the
    cards have been sent. While the inputs are invalid the last valid chart is hidden.
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment drawn.")
    data = param.Parameter(default=None, precedence=-1,
                           doc="(chart dataset, inputs, result) of the last valid inputs.")

    def __init__(self, **params):
        super().__init__(**params)
        exp = self.experiment
        source = exp if exp.error is None else type(exp)()
        self.data = (source.chart_data(), source.inputs(), source.result)
        self._pending = False
        exp.param.watch(self._refresh, "result")
        if exp.slug == "batch":
            ds, inputs, result = self.data
            self._lines = (power_of_two_rows(ds), result["ridge_batch"])
            self._batch: list[BatchChart] = batch_charts(ds, inputs["batch"],
                                                         result["ridge_batch"])
            self._panes = [pn.pane.Bokeh(chart.figure, sizing_mode="stretch_width",
                                         height=CHART_HEIGHT) for chart in self._batch]
        else:
            self._built: tuple = (self.data, experiment_charts(*self.data[:2]))
            count = len(self._built[1])
            wide = count <= 2
            self._panes = [
                pn.pane.HoloViews(hv.DynamicMap(pn.bind(self._chart, self.param.data, i)),
                                  sizing_mode="stretch_width", height=CHART_HEIGHT,
                                  min_width=None if wide else 380, linked_axes=False,
                                  styles={} if wide else {"flex": "1 1 45%"})
                for i in range(count)]
        wide = len(self._panes) <= 2
        visible = pn.bind(lambda _r: exp.error is None, exp.param.result)
        self._grid = (pn.Column(*self._panes, sizing_mode="stretch_width", visible=visible)
                      if wide else
                      pn.FlexBox(*self._panes, flex_wrap="wrap", sizing_mode="stretch_width",
                                 visible=visible))
        self._download = csv_button(lambda: self.data[0], f"{exp.slug}-chart.csv",
                                    "Chart data (CSV)")

    def _refresh(self, _event) -> None:
        if self.experiment.error is None and not self._pending:
            self._pending = True
            pn.state.execute(self._update, schedule=True)

    def _update(self) -> None:
        self._pending = False
        if self.experiment.error is None:
            self.data = (self.experiment.chart_data(), self.experiment.inputs(),
                         self.experiment.result)
            if self.experiment.slug == "batch":
                self._show_batch()

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

    def _chart(self, data, index: int) -> hv.Overlay:
        if self._built[0] is not data:
            self._built = (data, experiment_charts(*data[:2]))
        return self._built[1][index]

    def __panel__(self):
        return pn.Column(self._grid,
                         pn.pane.Markdown(f"*{CHART_NOTE}* ({NOTE}; save a chart as PNG from "
                                          "its toolbar.)", sizing_mode="stretch_width"),
                         self._download, sizing_mode="stretch_width")
