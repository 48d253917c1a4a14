"""“Work through the decode derivation”: weight bytes to the aggregate ceiling, live numbers."""

from __future__ import annotations

from html import escape

import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.parts.cards import error_html
from apps.ui.parts.input_widgets import InputMessage, input_panel
from apps.ui.shell.theme import CARD_CSS, FONT_STACK
from apps.ui.shell.url_sync import UrlInputs, url_inputs
from lab.derivations.decode_steps import Step
from lab.experiments.batch_bottleneck import BatchBottleneck

WHY = {
    "Linear weight reads": "Every decode step multiplies the new token of each sequence by every "
    "linear weight matrix (q, k, v, o, gate, up, down and the lm_head). Each GPU reads its shard "
    "of those weights from HBM once per step, whatever the batch.",
    "Linear FLOPs": "Each weight does one multiply-add (2 FLOP) per sequence in the batch, so the "
    "arithmetic grows with the batch while the bytes do not.",
    "HBM time": "Reading the weights takes at least their size over the memory bandwidth.",
    "Linear compute time": "Doing the arithmetic takes at least the FLOPs over the dense peak of "
    "the chosen precision.",
    "Linear phase": "Reads and arithmetic overlap in the ideal model, so the slower of the two "
    "sets the phase: that is the bottleneck.",
    "KV reads": "Attention reads every cached key and value of every sequence: batch × context × "
    "bytes per token (K and V, all layers, BF16), split over the tp GPUs.",
    "Attention FLOPs": "Scores and the weighted sum cost 4 FLOP per cached token, head dimension, "
    "head and layer.",
    "Attention phase": "Again the slower of reading the KV cache and computing on it, always at "
    "BF16.",
    "All-reduce (extension)": "An estimate the ideal model leaves out: two ring all-reduces per "
    "layer over the interconnect.",
    "Step floor": "The phases run one after the other, so the ideal step time is their sum.",
    "Aggregate ceiling": "Each step emits one token per sequence: batch over step time is the "
    "most tokens per second the GPU group can produce; one over step time is each user's rate.",
    "Memory remaining": "Independently of speed, everything must fit: the budget minus all "
    "parameters, the paged KV cache and the reserve.",
}
"""Why each step of the derivation is what it is (the numbers come from ``lab.derivations.decode_steps``)."""

DERIVATION_CSS = """
.lab-derive { font-family: FONT; max-width: 880px; line-height: 1.55; }
.lab-derive h3 { margin: 18px 0 4px; font-size: 1.1rem; }
.lab-derive .eq { font-variant-numeric: tabular-nums; padding: 6px 10px; margin: 6px 0;
  border-left: 3px solid #0072B2; background: rgba(0,114,178,0.06); }
""".replace("FONT", FONT_STACK)


def derivation_html(steps: list[Step]) -> str:
    """Each step as a short section: why, then the substituted equation."""
    parts = []
    for i, step in enumerate(steps, start=1):
        parts.append(f"<h3>{i}. {escape(step.label)}</h3>"
                     f"<p>{escape(WHY.get(step.label, ''))}</p>"
                     f'<div class="eq">{escape(step.text())}</div>')
    return f'<div class="lab-derive">{"".join(parts)}</div>'


class DerivationView(Viewer):
    """The derivation for a chosen configuration, following its inputs live."""

    experiment = param.ClassSelector(class_=BatchBottleneck, doc="The configuration derived.")

    def __init__(self, **params):
        if "experiment" not in params:
            params["experiment"] = BatchBottleneck()
        super().__init__(**params)
        names = url_inputs(self.experiment)
        self.message = InputMessage()
        self.url = UrlInputs(self.experiment, names, self.message.say)
        self._inputs = input_panel(self.experiment, names, report=self.message.say)
        self._body = pn.pane.HTML(pn.bind(self._html, self.experiment.param.result),
                                  stylesheets=[DERIVATION_CSS, CARD_CSS],
                                  sizing_mode="stretch_width")

    def _html(self, _result) -> str:
        if self.experiment.error:
            return error_html(self.experiment.error)
        return derivation_html(self.experiment.steps())

    def __panel__(self):
        intro = ("# Work through the decode derivation\n\nPick a configuration; every number "
                 "below is recomputed for it. The model is the shared decode model of "
                 "experiments 1–4: ideal phase costs, not a measurement.")
        return pn.Column(
            pn.pane.Markdown(intro, sizing_mode="stretch_width"),
            # Side by side where both fit; on a phone the derivation wraps below the inputs.
            pn.FlexBox(pn.Column(self.message, self._inputs, width=300,
                                 css_classes=["lab-inputs-column"], styles={"flex": "0 0 300px"}),
                       pn.Column(self._body, sizing_mode="stretch_width",
                                 css_classes=["lab-derivation-body"],
                                 styles={"flex": "1 1 340px", "min-width": "min(340px, 100%)"}),
                       flex_wrap="wrap", align_items="flex-start", sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
