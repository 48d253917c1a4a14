"""Inputs that drive nothing are not shown: an experiment page offers only live controls.

Some inputs are shared by a family of experiments but do not change one page's result
(experiment 4 compares BF16 with FP8 whatever the precision input says; experiment 2 counts
sequences whatever the batch), and some count only while a switch is on (experiment 8's model,
GPU and precision derive a and c only with "derive from model"; the all-reduce latency only with
the all-reduce estimate). Such inputs stay in the URL and the experiment but get no widget, or
a widget shown only while it counts. Nothing here knows about the server.
"""

from __future__ import annotations

import panel as pn

from lab.experiments.base import Experiment

UNUSED = {
    "precision": ("precision",),  # experiment 4 draws BF16 and FP8 side by side
    "memory": ("batch",),  # experiment 2: the sequences that fit do not depend on the batch
}
"""Page slug → inputs its result never reads."""

SWITCHED = {
    "from_model": {True: ("model", "gpu", "precision"), False: ("a_ms", "c_ms")},
    "allreduce": {True: ("allreduce_latency_us",), False: ()},
}
"""Switch input → {switch value: the inputs that count only then}."""


def shown_inputs(exp: Experiment, names: list[str]) -> list[str]:
    """``names`` without the inputs the page's result never reads."""
    unused = UNUSED.get(exp.slug, ())
    return [n for n in names if n not in unused]


def live(exp: Experiment, name: str) -> bool:
    """True when ``name`` currently drives the result (its switch, if any, is set for it)."""
    for switch, groups in SWITCHED.items():
        if switch not in exp.param:
            continue
        for value, dependent in groups.items():
            if name in dependent and getattr(exp, switch) != value:
                return False
    return True


def follow_switches(exp: Experiment, widgets: pn.Param) -> None:
    """Show each switched input's widget only while its switch makes it count."""
    def update(*_events) -> None:
        for name, widget in widgets._widgets.items():
            if name in exp.param and name != "name":
                widget.visible = live(exp, name)

    switches = [s for s in SWITCHED if s in exp.param]
    if switches:
        exp.param.watch(update, switches)
        update()
