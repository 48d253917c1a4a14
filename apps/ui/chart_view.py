"""An experiment's chart(s), updated in place as its inputs change, with a CSV download."""

from __future__ import annotations

import holoviews as hv
import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.charts import NOTE, batch_charts, experiment_charts
from apps.ui.downloads import csv_button
from lab.experiments.base import Experiment

CHART_NOTE = ("Hollow markers exceed the chosen memory budget. The curves describe ideal phase "
              "costs, not measured performance.")
"""Caption under every decode-family chart."""


def charts_for(experiment: Experiment, data) -> list[hv.Overlay]:
    """The experiment's charts for ``data`` = (chart dataset, inputs, result)."""
    ds, inputs, result = data
    if experiment.slug == "batch":
        return batch_charts(ds, inputs["batch"], result["ridge_batch"])
    return experiment_charts(ds, inputs)


class ChartView(Viewer):
    """The chart(s) of an experiment over its swept axis, the current point highlighted.

    Each chart is a ``hv.DynamicMap`` bound to ``data``, so updates stream into the existing
    Bokeh plot (zoom survives). While the inputs are invalid the last valid chart is hidden.
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment drawn.")
    data = param.Parameter(default=None, precedence=-1,
                           doc="(chart dataset, inputs, result) of the last valid inputs.")

    def __init__(self, **params):
        super().__init__(**params)
        exp = self.experiment
        source = exp if exp.error is None else type(exp)()
        self.data = (source.chart_data(), source.inputs(), source.result)
        exp.param.watch(self._refresh, "result")
        count = len(charts_for(exp, self.data))
        self._panes = [
            pn.pane.HoloViews(hv.DynamicMap(pn.bind(self._chart, self.param.data, i)),
                              sizing_mode="stretch_width", min_height=320, linked_axes=False)
            for i in range(count)]
        self._grid = pn.GridBox(*self._panes, ncols=2 if count > 1 else 1,
                                sizing_mode="stretch_width",
                                visible=pn.bind(lambda _r: exp.error is None,
                                                exp.param.result))
        self._download = csv_button(lambda: self.data[0], f"{exp.slug}-chart.csv",
                                    "Chart data (CSV)")

    def _refresh(self, _event) -> None:
        if self.experiment.error is None:
            self.data = (self.experiment.chart_data(), self.experiment.inputs(),
                         self.experiment.result)

    def _chart(self, data, index: int) -> hv.Overlay:
        return charts_for(self.experiment, data)[index]

    def __panel__(self):
        return pn.Column(self._grid,
                         pn.pane.Markdown(f"*{CHART_NOTE}* ({NOTE}; save a chart as PNG from "
                                          "its toolbar.)", sizing_mode="stretch_width"),
                         self._download, sizing_mode="stretch_width")
