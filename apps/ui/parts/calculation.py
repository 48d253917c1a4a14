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

    The derivation is rendered when the card opens, so a widget change does not send (and lay
    out) a hidden table. While the card is collapsed its body keeps the last text only as long
    as that text is of the inputs in force: a change of inputs empties it (issue 37 item 5: a
    collapsed body kept a link's "Not available" reason after another draft was chosen, and
    showed it for a moment when opened).
    """

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment shown.")

    def __init__(self, **params):
        super().__init__(**params)
        self._card = pn.Card(title="Show the calculation", collapsed=True,
                             sizing_mode="stretch_width", css_classes=["lab-calculation"])
        self._shown = self._html(self.experiment.result)
        self._shown_for = self._outcome(self.experiment.result)
        body = pn.pane.HTML(pn.bind(self._visible_html, self.experiment.param.result,
                                    self._card.param.collapsed),
                            stylesheets=[STEPS_CSS, CARD_CSS], sizing_mode="stretch_width")
        self._card.append(body)

    def _outcome(self, result) -> tuple:
        """What a body's text is made of: the result record itself (a new one per
        calculation) and the reason (a new reason may keep ``result`` None)."""
        return result, self.experiment.error

    def _is_current(self, result) -> bool:
        """Whether the body's text was made for ``result`` and the reason in force."""
        shown_result, shown_error = self._shown_for
        return shown_result is result and shown_error == self.experiment.error

    def _visible_html(self, result, collapsed: bool) -> str:
        """The body: rendered when open; while collapsed, the last text if it is still of the
        inputs in force, else nothing."""
        if not collapsed:
            self._shown, self._shown_for = self._html(result), self._outcome(result)
        elif not self._is_current(result):
            self._shown, self._shown_for = "", self._outcome(result)
        return self._shown

    def _html(self, _result) -> str:
        if self.experiment.error:
            return error_html(shown_error(self.experiment))
        return steps_html(without_paths(self.experiment, self.experiment.steps()))

    def __panel__(self):
        return self._card
