"""Widgets for an experiment's inputs, built from its ``param`` parameters."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

import panel as pn
import panel_material_ui as pmui
import param

from apps.ui.panel_compat import CheckedInput, IntSlider, param_widgets
from apps.ui.parts.input_extras import improve, is_wide_count
from apps.ui.shell.number_boxes import watch_typed
from apps.ui.shell.url_values import page_value_problem
from lab.errors import without_bidi

SLIDER_MAX_SPAN = 4096
"""Integer inputs with a range up to this many values get a slider; wider ones a number box."""


class Switch(CheckedInput, pmui.Switch):
    """A switch whose browser value is checked before it reaches the experiment."""


class Select(CheckedInput, pmui.Select):
    """A select whose browser value must be one of its parameter's listed values."""


class IntInput(CheckedInput, pmui.IntInput):
    """A whole-number box whose typed value must be within its parameter's bounds."""


class FloatInput(CheckedInput, pmui.FloatInput):
    """A number box whose typed value must be within its parameter's bounds."""


def widget_spec(parameter: param.Parameter) -> dict:
    """The ``pn.Param`` widget spec for one input: type, throttling and sizing.

    Sliders report only the released value (``value_throttled``); number boxes commit on
    Enter or blur already.
    """
    if isinstance(parameter, param.Boolean):
        return {"type": Switch, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Selector):
        return {"type": Select, "sizing_mode": "stretch_width"}
    if is_wide_count(parameter):  # typed exactly; a powers-of-two slider goes under it
        return {"type": IntInput, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Integer):
        lo, hi = parameter.bounds or (None, None)
        if lo is not None and hi is not None and hi - lo <= SLIDER_MAX_SPAN:
            return {"type": IntSlider, "throttled": True, "sizing_mode": "stretch_width"}
        return {"type": IntInput, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Number):
        return {"type": FloatInput, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.String):  # Panel's default text box is 300 px wide
        return {"sizing_mode": "stretch_width"}
    return {}


def input_panel(experiment: param.Parameterized, names: list[str],
                report: Callable[[str | None], None] | None = None) -> pn.Param:
    """A ``pn.Param`` of ``names`` with labels (and units) and doc tooltips from the params.

    Each widget checks a browser value against its parameter (:class:`CheckedInput`); a
    refused value's sentence goes to ``report``, and so does the reason a number box dropped
    a typed text (:mod:`apps.ui.shell.number_boxes`, which also keeps the boxes editable after
    Enter).
    """
    widgets = {name: {**spec, "css_classes": [f"lab-input-{name}"]} for name in names
               if (spec := widget_spec(experiment.param[name]))}
    panel = pn.Param(experiment, parameters=names, widgets=widgets, show_name=False,
                     sizing_mode="stretch_width", default_layout=pn.Column)
    for name, widget in param_widgets(panel).items():
        if isinstance(widget, CheckedInput):
            parameter = experiment.param[name]
            widget.check = lambda value, parameter=parameter: page_value_problem(parameter, value)
            widget.report = report
    improve(panel, experiment)
    boxes = {name: box_kind(widget) for name, widget in param_widgets(panel).items()
             if box_kind(widget) is not None}
    panel.layout.append(watch_typed(experiment, boxes, report or (lambda _sentence: None)))
    return panel


def box_kind(widget: object) -> str | None:
    """The kind of number box ``widget`` has (``int``, ``float``, ``slider``), None for none."""
    if isinstance(widget, pmui.IntInput):
        return "int"
    if isinstance(widget, pmui.FloatInput):
        return "float"
    if isinstance(widget, pmui.EditableIntSlider):
        return "slider"
    return None


class InputMessage(pn.pane.HTML):
    """The sentence about a refused input (from the URL or a widget), shown by the inputs.

    Hidden while there is nothing to say; the text is escaped, never read as HTML.
    """

    def __init__(self, **params):
        super().__init__("", visible=False, css_classes=["lab-input-message"],
                         sizing_mode="stretch_width", **params)

    def say(self, sentence: str | None) -> None:
        """Show ``sentence`` (None or '' hides the message)."""
        text = (f'<div class="lab-input-problem" role="alert">'
                f'{escape(without_bidi(sentence))}</div>' if sentence else "")
        self.param.update(object=text, visible=bool(sentence))
