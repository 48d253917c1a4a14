"""Inputs that drive nothing are not shown: an experiment page offers only live controls.

Some inputs are shared by a family of experiments but do not change one page's result, and
some count only while a switch is on; each experiment's page description names them
(:class:`apps.ui.plots.page_descriptions.PageDescription`: ``unused_inputs``, ``switches``). Such
inputs stay in the URL and the experiment but get no widget, or a widget shown only while it
counts. This module applies the descriptions and knows no experiment, nor the server.
"""

from __future__ import annotations

import panel as pn

from apps.ui.panel_compat import param_widgets
from apps.ui.plots.page_descriptions import description
from lab.experiments.base import Experiment


def shown_inputs(exp: Experiment, names: list[str]) -> list[str]:
    """``names`` without the inputs the page's result never reads."""
    unused = description(exp.slug).unused_inputs
    return [n for n in names if n not in unused]


def live(exp: Experiment, name: str) -> bool:
    """True when ``name`` currently drives the result (its switch, if any, is set for it)."""
    for switch in description(exp.slug).switches:
        value = getattr(exp, switch.input)
        if (name in switch.on and value is not True) or (name in switch.off
                                                         and value is not False):
            return False
    return True


def follow_switches(exp: Experiment, widgets: pn.Param) -> None:
    """Show each switched input's widget only while its switch makes it count."""
    def update(*_events) -> None:
        for name, widget in param_widgets(widgets).items():
            if name in exp.param and name != "name":
                widget.visible = live(exp, name)

    switches = [switch.input for switch in description(exp.slug).switches]
    if switches:
        exp.param.watch(update, switches)
        update()
