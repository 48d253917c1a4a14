"""The prediction a reader commits to before the reveal."""

from __future__ import annotations

from html import escape

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from apps.ui.shell.held_size import BUTTON_WIDTH
from apps.ui.shell.plain_text import shown_error
from lab.experiments.base import Experiment

LOCKED_CHOICES = {"& .MuiFormControlLabel-root:not(:has(.Mui-checked))": {"opacity": 0.45}}
"""How the choices look once the first is the answer: the others dimmed (Material UI ``sx``)."""

UNDECIDED = "Not sure yet"
"""The choice selected before the reader commits to one."""


def verdict(choice: str | None, choices: tuple[str, ...], answer: int) -> str:
    """``Right.``, ``Not quite.`` or just the answer when nothing was chosen."""
    if choice in (None, UNDECIDED):
        return f"The answer: {choices[answer]}."
    if choice == choices[answer]:
        return f"Right: {choices[answer]}."
    return f"Not quite. The answer: {choices[answer]}."


_AT_DEFAULTS: dict[type, tuple[str | None, str]] = {}
"""Per experiment class: (error, explanation) at its default inputs, computed once."""


def explained_at_defaults(cls: type[Experiment]) -> tuple[str | None, str]:
    """The prediction's explanation with the numbers of ``cls``'s default inputs, where its
    question is asked (or the reason those inputs are invalid)."""
    if cls not in _AT_DEFAULTS:
        exp = cls()
        _AT_DEFAULTS[cls] = (shown_error(exp) or "", "") if exp.error else (None,
                                                                             exp.explanation())
    return _AT_DEFAULTS[cls]


def changed_note(experiment: Experiment, changed: list[str]) -> str:
    """Why the answer shows other numbers than the cards: the inputs the reader changed."""
    labels = [experiment.param[name].label or name for name in changed]
    named = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    return (f"The question is asked at the page's starting inputs and yours differ ({named}), "
            "so the answer is worked there; the cards show your inputs.")


class PredictionView(Viewer):
    """Question, choices and a reveal button; the answer explains itself with live numbers."""

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment asked about.")
    choice = param.Selector(default=UNDECIDED, objects=[UNDECIDED], label="Your prediction",
                            doc="Pick an answer before revealing it.")
    reveal = param.Event(label="Reveal the answer", doc="Reveal the answer, and why it holds.")
    revealed = param.Boolean(default=False, doc="Whether the answer is shown.")
    committed = param.String(default=None, allow_None=True,
                             doc="The reader's first choice: the choices lock on it and the "
                                 "verdict is for it.")

    def __init__(self, **params):
        super().__init__(**params)
        prediction = self.experiment.prediction
        self.param.choice.objects = [UNDECIDED, *prediction.choices]
        # As wide as the column and the button fixed, from the start (apps.ui.shell.held_size).
        self._choices = pmui.RadioBoxGroup.from_param(self.param.choice, inline=True,
                                                      sizing_mode="stretch_width")
        self._button = pmui.Button.from_param(self.param.reveal, variant="contained",
                                              color="primary", disabled=True,
                                              width=BUTTON_WIDTH)
        self.param.watch(self._lock, ["choice", "revealed"])
        # HTML, every text escaped: an explanation or error may quote a reader's file (a
        # model's name from its config.json, a trace cell), which Markdown would read as links,
        # headings or lists
        self._answer = pn.pane.HTML(
            pn.bind(self._answer_text, self.param.revealed, self.param.choice,
                    self.experiment.param.result),
            sizing_mode="stretch_width", css_classes=["lab-answer"])

    def _lock(self, *_events) -> None:
        """The first choice is the answer: the choices lock on it (a later one sent anyway is
        set back; the others dim) and the reveal opens. Neither control is disabled once used:
        a disabled control drops the keyboard's focus, and an arrow key's choice, or Enter on
        the reveal, left a keyboard reader on the page's body. Pressing the reveal again
        changes nothing."""
        if self.committed is None and self.choice != UNDECIDED:
            self.committed = self.choice
        elif self.committed is not None and self.choice != self.committed:
            self.choice = self.committed
        self._button.disabled = self.committed is None
        if self.committed is not None and not self._choices.sx:
            self._choices.sx = LOCKED_CHOICES

    @param.depends("reveal", watch=True)
    def _on_reveal(self) -> None:
        if self.revealed or self.committed is None:
            return
        self.revealed = True

    def _answer_text(self, revealed: bool, choice, _result) -> str:
        if not revealed:
            return ""
        prediction = self.experiment.prediction
        head = verdict(self.committed, prediction.choices, prediction.answer)
        changed = self.experiment.changed_inputs()
        if changed:  # the question's inputs are the defaults: the answer is worked there
            error, text = explained_at_defaults(type(self.experiment))
            note = changed_note(self.experiment, changed)
            return (f"<p><strong>{escape(head)}</strong> {escape(note)} "
                    f"{escape(text or error or '')}</p>")
        if self.experiment.error:
            reason = escape(shown_error(self.experiment) or "")
            return (f"<p><strong>{escape(head)}</strong> (The explanation needs valid inputs: "
                    f"{reason})</p>")
        return f"<p><strong>{escape(head)}</strong> {escape(self.experiment.explanation())}</p>"

    def parts(self) -> list:
        """The question, the choices, the button and the answer, for a page's own column."""
        return [pn.pane.Markdown(f"**Predict first.** {self.experiment.prediction.question} "
                                 "(Your first choice is your answer.)",
                                 sizing_mode="stretch_width"),
                self._choices, self._button, self._answer]

    def __panel__(self):
        return pn.Column(*self.parts(), sizing_mode="stretch_width")
