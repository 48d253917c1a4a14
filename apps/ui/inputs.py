"""Widgets for an experiment's inputs, built from its ``param`` parameters."""

from __future__ import annotations

from typing import ClassVar

import panel as pn
import panel_material_ui as pmui
import param

SLIDER_MAX_SPAN = 4096
"""Integer inputs with a range up to this many values get a slider; wider ones a number box."""


class IntSlider(pmui.EditableIntSlider):
    """An editable integer slider whose changes reach the server without Panel's debounce.

    Panel holds browser changes 50 ms to batch them (``_debounce``); the released value of a
    slider is one change, so it is processed on the next tick (``_priority_changes``).
    """

    _priority_changes: ClassVar[list[str]] = ["value", "value_throttled"]


def widget_spec(parameter: param.Parameter) -> dict:
    """The ``pn.Param`` widget spec for one input: type, throttling and sizing.

    Sliders report only the released value (``value_throttled``); number boxes commit on
    Enter or blur already.
    """
    if isinstance(parameter, param.Boolean):
        return {"type": pmui.Switch, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Selector):
        return {"type": pmui.Select, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Integer):
        lo, hi = parameter.bounds or (None, None)
        if lo is not None and hi is not None and hi - lo <= SLIDER_MAX_SPAN:
            return {"type": IntSlider, "throttled": True, "sizing_mode": "stretch_width"}
        return {"type": pmui.IntInput, "sizing_mode": "stretch_width"}
    if isinstance(parameter, param.Number):
        return {"type": pmui.FloatInput, "sizing_mode": "stretch_width"}
    return {}


def input_panel(experiment: param.Parameterized, names: list[str]) -> pn.Param:
    """A ``pn.Param`` of ``names`` with labels (and units) and doc tooltips from the params."""
    widgets = {name: {**spec, "css_classes": [f"lab-input-{name}"]} for name in names
               if (spec := widget_spec(experiment.param[name]))}
    return pn.Param(experiment, parameters=names, widgets=widgets, show_name=False,
                    sizing_mode="stretch_width", default_layout=pn.Column)
