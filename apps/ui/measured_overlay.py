"""Experiment 1's “Show measured attention” switch (off by default): the real decode attention
kernel beside the ideal attention phase, where the shipped H100 data has the model's shape."""

from __future__ import annotations

from html import escape

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from lab.experiments.decode_inputs import DecodeExperiment
from lab.measured.overlay import measured_attention


class MeasuredOverlay(Viewer):
    """A switch and, when on, one labelled, sourced sentence about the measured kernel."""

    experiment = param.ClassSelector(class_=DecodeExperiment,
                                     doc="Experiment 1 (batch and the bottleneck).")
    show = param.Boolean(default=False, label="Show measured attention (H100 SXM data)",
                         doc="The measured decode attention kernel beside the ideal phase.")

    def __init__(self, **params):
        super().__init__(**params)
        self._switch = pmui.Switch.from_param(self.param.show)
        self._pane = pn.pane.HTML(pn.bind(self._html, self.param.show,
                                          self.experiment.param.result),
                                  sizing_mode="stretch_width", css_classes=["lab-measured-overlay"])

    def sentence(self) -> str:
        """What the overlay says for the experiment's current inputs ('' when off or invalid)."""
        exp = self.experiment
        if not self.show or exp.result is None:
            return ""
        model, gpu = exp.config().resolved()
        return measured_attention(model, gpu, exp.tp, exp.batch, exp.context,
                                  exp.result["attention_time_s"])["sentence"]

    def _html(self, _show, _result) -> str:
        text = self.sentence()
        return f'<p class="lab-measured-attention">{escape(text)}</p>' if text else ""

    def __panel__(self):
        return pn.Column(self._switch, self._pane, sizing_mode="stretch_width")
