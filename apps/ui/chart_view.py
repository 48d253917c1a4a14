"""An experiment's chart(s), updated in place as its inputs change, with a CSV download."""

from __future__ import annotations

from functools import partial

import holoviews as hv
import numpy as np
import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.charts import (
    NOTE,
    batch_charts,
    batch_point_data,
    batch_points,
    batch_series,
    batch_titles,
    display_values,
    experiment_charts,
    finish,
)
from apps.ui.downloads import csv_button
from lab.experiments.base import Experiment

CHART_HEIGHT = 340
"""Height of each chart pane in px (the plots are 320 px tall plus their margins)."""

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
    On a server the chart update runs on the next tick, after the cards have been sent, and
    the charts of one update are built once for all panes. On experiment 1, when only the
    batch moves, the current-point markers are moved by replacing the data of their Bokeh
    sources (kept by a plot hook) instead of re-rendering the overlays.
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment drawn.")
    data = param.Parameter(default=None, precedence=-1,
                           doc="(chart dataset, inputs, result) of the last valid inputs.")
    series = param.Parameter(default=None, precedence=-1,
                             doc="Experiment 1: (dataset over powers of two, ridge batch).")
    point = param.Parameter(default=None, precedence=-1,
                            doc="Experiment 1: (chart dataset, current batch).")

    def __init__(self, **params):
        super().__init__(**params)
        exp = self.experiment
        source = exp if exp.error is None else type(exp)()
        self.data = (source.chart_data(), source.inputs(), source.result)
        self._built: tuple = (self.data, charts_for(exp, self.data))
        self._pending = False
        self._point_sources: dict[int, tuple[int, object]] = {}
        exp.param.watch(self._refresh, "result")
        self._split_batch()
        count = len(self._built[1])
        wide = count <= 2
        self._panes = [
            pn.pane.HoloViews(self._dynamic(i), sizing_mode="stretch_width", height=CHART_HEIGHT,
                              min_width=None if wide else 380, linked_axes=False,
                              styles={} if wide else {"flex": "1 1 45%"})
            for i in range(count)]
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
            self._split_batch()

    def _split_batch(self) -> None:
        """Experiment 1: update the lines only when they change, the current point always.

        The lines are drawn over the powers of two, which do not depend on the batch, so
        moving the batch repaints one marker per chart instead of every layer.
        """
        if self.experiment.slug != "batch":
            return
        ds, inputs, result = self.data
        batch = ds["batch"].values
        powers = batch[(batch & (batch - 1)) == 0]
        lines = ds.sel(batch=powers)
        previous = self.series
        if (previous is None or previous[1] != result["ridge_batch"]
                or not lines.identical(previous[0])):
            self.series = (lines, result["ridge_batch"])
        elif self._move_points(ds, inputs["batch"]):
            # The DynamicMaps read the new point the next time they render.
            with param.discard_events(self):
                self.point = (ds, inputs["batch"])
            return
        self.point = (ds, inputs["batch"])

    def _keep_source(self, index: int, plot, _element) -> None:
        """Plot hook: remember the Bokeh source of chart ``index``'s current point."""
        cds = plot.handles.get("cds")
        if cds is not None:
            self._point_sources[id(cds)] = (index, cds)

    def _move_points(self, ds, batch: int) -> bool:
        """Move the current-point markers of every served chart in place; False if none."""
        live = [(i, cds) for i, cds in self._point_sources.values()
                if cds.document is not None and cds.document.session_context is not None]
        self._point_sources = {id(cds): (i, cds) for i, cds in live}
        if not live:
            return False
        columns = batch_point_data(ds, batch)
        for i, cds in live:
            cds.data = {k: columns[i][k] for k in cds.data}
        return True

    def _dynamic(self, index: int):
        """The live chart ``index``: one DynamicMap, or lines × current point for exp. 1."""
        if self.experiment.slug != "batch":
            return hv.DynamicMap(pn.bind(self._chart, self.param.data, index))
        lines = hv.DynamicMap(pn.bind(lambda s: batch_series(*s)[index], self.param.series))
        point = hv.DynamicMap(pn.bind(lambda p: batch_points(*p)[index], self.param.point))
        point = point.opts(hooks=[partial(self._keep_source, index)])
        xs = np.asarray(display_values(self.series[0]["batch"])[0])
        return finish(lines * point, xs, batch_titles()[index])

    def _chart(self, data, index: int) -> hv.Overlay:
        if self._built[0] is not data:
            self._built = (data, charts_for(self.experiment, data))
        return self._built[1][index]

    def __panel__(self):
        return pn.Column(self._grid,
                         pn.pane.Markdown(f"*{CHART_NOTE}* ({NOTE}; save a chart as PNG from "
                                          "its toolbar.)", sizing_mode="stretch_width"),
                         self._download, sizing_mode="stretch_width")
