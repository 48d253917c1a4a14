"""Headline cards (3–5 figures) of an experiment, or why its inputs are invalid."""

from __future__ import annotations

from html import escape

import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.parts.budget import budget_card
from apps.ui.shell.plain_text import shown_error
from apps.ui.shell.theme import CARD_CSS
from lab.experiments.base import Card, Experiment

OVER_LABEL = "Does not fit"
"""Label of the card that flags an over-budget configuration."""


def cards_html(cards: list[Card]) -> str:
    """The cards as HTML (values exactly as :meth:`Experiment.cards` formats them)."""
    items = "".join(
        f'<div class="lab-card{" lab-card-over" if c.label == OVER_LABEL else ""}">'
        f'<div class="label">{escape(c.label)}</div>'
        f'<div class="value">{escape(c.value)}</div>'
        f'<div class="caption">{escape(c.caption)}</div></div>'
        for c in cards)
    return f'<div class="lab-cards">{items}</div>'


def error_html(message: str) -> str:
    """The invalid-input sentence shown in place of the numbers."""
    return f'<div class="lab-error" role="alert"><b>Not available:</b> {escape(message)}</div>'


class CardsView(Viewer):
    """The experiment's cards; its ``error`` sentence instead when the inputs are invalid."""

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment shown.")

    def __init__(self, **params):
        super().__init__(**params)
        self._pane = pn.pane.HTML(pn.bind(self._html, self.experiment.param.result),
                                  stylesheets=[CARD_CSS], sizing_mode="stretch_width",
                                  css_classes=["lab-cards-pane"])

    def _html(self, _result) -> str:
        if self.experiment.error:
            return error_html(shown_error(self.experiment))
        cards = self.experiment.cards()
        warning = budget_card(self.experiment, cards)
        return cards_html([warning, *cards] if warning else cards)

    def __panel__(self):
        return self._pane
