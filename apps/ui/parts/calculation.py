"""“Show the calculation”: the experiment's :class:`~lab.derivations.decode_steps.Step` rows, collapsed."""

from __future__ import annotations

from dataclasses import replace
from html import escape
from pathlib import Path

import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.parts.cards import error_html
from apps.ui.shell.plain_text import shown_error
from apps.ui.shell.theme import CARD_CSS, STEPS_CSS
from lab.derivations.decode_steps import Step
from lab.experiments.base import Experiment


def steps_html(steps: list[Step]) -> str:
    """The derivation as a table: label, substituted expression, result."""
    rows = []
    for step in steps:
        expr = step.expression if step.expression and step.expression != step.result else ""
        rows.append(f'<tr><td class="label">{escape(step.label)}</td>'
                    f'<td class="expr">{"= " + escape(expr) if expr else ""}</td>'
                    f'<td class="result">= {escape(step.result)}</td></tr>')
    return f'<table class="lab-steps">{"".join(rows)}</table>'


def without_paths(experiment: Experiment, steps: list[Step]) -> list[Step]:
    """``steps`` with the trace file named by its name, never by where the server keeps it."""
    if "trace" not in experiment.param:
        return steps
    trace = Path(str(experiment.trace))
    return [replace(s, label=s.label.replace(str(trace), trace.name),
                    expression=s.expression.replace(str(trace), trace.name),
                    result=s.result.replace(str(trace), trace.name)) for s in steps]


class CalculationView(Viewer):
    """A collapsed card holding the substituted derivation of the current inputs.

    While the card is collapsed its body keeps the last text: the derivation is rendered when
    the card opens, so a widget change does not send (and lay out) a hidden table.
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment shown.")

    def __init__(self, **params):
        super().__init__(**params)
        self._card = pn.Card(title="Show the calculation", collapsed=True,
                             sizing_mode="stretch_width", css_classes=["lab-calculation"])
        self._shown = self._html(self.experiment.result)
        body = pn.pane.HTML(pn.bind(self._visible_html, self.experiment.param.result,
                                    self._card.param.collapsed),
                            stylesheets=[STEPS_CSS, CARD_CSS], sizing_mode="stretch_width")
        self._card.append(body)

    def _visible_html(self, result, collapsed: bool) -> str:
        if not collapsed:
            self._shown = self._html(result)
        return self._shown

    def _html(self, _result) -> str:
        if self.experiment.error:
            return error_html(shown_error(self.experiment))
        return steps_html(without_paths(self.experiment, self.experiment.steps()))

    def __panel__(self):
        return self._card
