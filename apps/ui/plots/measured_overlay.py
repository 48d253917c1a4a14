"""Experiment 1's “Show measured attention” switch (off by default): the real decode attention
kernel beside the ideal attention phase, where the shipped H100 data has the model's shape.

When on it says so in one sentence for the selected point and, given experiment 1's chart,
draws the measured attention phase beside the ideal one on the step-time figure at every
batch measured for the model's shape, tp and context (:mod:`apps.ui.plots.batch_chart`)."""

from __future__ import annotations

from html import escape

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from apps.ui.plots.batch_chart import IDEAL_ATTENTION_LABEL, MEASURED_LABEL
from apps.ui.plots.chart_view import ChartView
from lab.experiments.decode_inputs import DecodeExperiment, batch_axis, labelled
from lab.measured.overlay import measured_attention, measured_attention_series


class MeasuredOverlay(Viewer):
    """A switch and, when on, one labelled, sourced sentence about the measured kernel."""

    experiment = param.ClassSelector(class_=DecodeExperiment,
                                     doc="Experiment 1 (batch and the bottleneck).")
    show = param.Boolean(default=False, label="Show measured attention (H100 SXM data)",
                         doc="The measured decode attention kernel beside the ideal phase.")
    chart = param.ClassSelector(class_=ChartView, default=None, allow_None=True,
                                doc="Experiment 1's charts, to draw the measured markers on.")

    def __init__(self, **params):
        super().__init__(**params)
        self._switch = pmui.Switch.from_param(self.param.show)
        self._pane = pn.pane.HTML(pn.bind(self._html, self.param.show,
                                          self.experiment.param.result),
                                  sizing_mode="stretch_width", css_classes=["lab-measured-overlay"])
        self.param.watch(self._draw, "show")
        self.experiment.param.watch(self._draw, "result")

    def series(self) -> dict | None:
        """The measured and ideal attention phase over the chart's batches (None when off or
        invalid; empty arrays where nothing was measured for this model, tp and context)."""
        exp = self.experiment
        if not self.show or exp.result is None:
            return None
        model, gpu = exp.config().resolved()
        ideal = exp.sweep(batch=labelled(batch_axis(exp.batch), "batch", "batch",
                                         "sequences"))["attention_time_s"]
        return measured_attention_series(model, gpu, exp.tp, ideal["batch"].values, exp.context,
                                         ideal.values)

    def _draw(self, _event) -> None:
        if self.chart is not None and (not self.show or self.experiment.result is not None):
            self.chart.show_measured(self.series())

    def sentence(self) -> str:
        """What the overlay says for the experiment's current inputs ('' when off or invalid)."""
        exp = self.experiment
        if not self.show or exp.result is None:
            return ""
        model, gpu = exp.config().resolved()
        return measured_attention(model, gpu, exp.tp, exp.batch, exp.context,
                                  exp.result["attention_time_s"])["sentence"]

    def key(self) -> str:
        """What the markers on the step-time chart are, or '' when none are drawn."""
        series = self.series() if self.chart is not None else None
        if series is None or not len(series["batch"]):
            return ""
        batches = ", ".join(f"{b:,}" for b in series["batch"])
        return (f"On the step-time chart, at batch {batches}: {MEASURED_LABEL}; "
                f"{IDEAL_ATTENTION_LABEL}. Hover a marker for its value and source.")

    def _html(self, _show, _result) -> str:
        text = self.sentence()
        if not text:
            return ""
        key = self.key()
        shown = f'<p class="lab-measured-key">{escape(key)}</p>' if key else ""
        return f'<p class="lab-measured-attention">{escape(text)}</p>{shown}'

    def parts(self) -> list:
        """The switch and the sentence, for a page's own column."""
        return [self._switch, self._pane]

    def __panel__(self):
        return pn.Column(*self.parts(), sizing_mode="stretch_width")
