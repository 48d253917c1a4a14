"""Room held for each Material UI widget before React draws it, so that drawing it does not
resize the page.

A Material UI widget's Bokeh element is placed empty, 0 px tall, and React draws the widget
into it a little later. Each widget drawn made its column taller, and Bokeh answers any
resized element by laying out the whole page again, every chart included: a layout request
climbs to the page's root. On an experiment page that meant about 15 full re-layouts while
the inputs appeared one after another, each re-laying out three or four charts and their
toolbars. That cost about a tenth of the browser's main-thread time per page load
(see ``docs/operations.md``).

Holding each widget's drawn height as its minimum height (``min_height``) from the start
keeps the element the same size when React draws into it. Heights are those drawn in
headless Chromium with the lab's theme, light or dark: a widget drawn taller, e.g. a switch
whose label wraps, still grows, at the cost of one re-layout. The buttons that are not as
wide as their column get a fixed width (:data:`BUTTON_WIDTH`) where they are built.
"""

from __future__ import annotations

import panel as pn
import panel_material_ui as pmui
from panel.layout.base import ListLike

HELD_HEIGHT: dict[type, int] = {
    pmui.Select: 56,
    pmui.IntInput: 56,
    pmui.FloatInput: 56,
    pmui.DiscreteSlider: 76,  # label and value on two lines when they are long
    pmui.Switch: 38,
    pmui.RadioBoxGroup: 36,
    pmui.FileInput: 37,
    pmui.FileDownload: 37,
    pmui.Button: 37,
}
"""Drawn height in px of each Material UI widget class the pages use (a label on one line;
a slider's label and value on two lines, so that moving it never makes it taller)."""

BUTTON_WIDTH = 200
"""Width in px of a button that does not fill its column (room for a label of about 20
characters): drawn as wide as this from the start, so drawing its label does not widen it."""


def held_height(widget: object) -> int | None:
    """The height held for ``widget`` in px (its class's or its nearest base class's entry in
    :data:`HELD_HEIGHT`), None for anything else."""
    for cls in type(widget).__mro__:
        if cls in HELD_HEIGHT:
            return HELD_HEIGHT[cls]
    return None


def hold_sizes(layout: pn.viewable.Viewable) -> pn.viewable.Viewable:
    """Give every Material UI widget in ``layout`` (searched through nested Panel layouts;
    components that build their own layout hold their own) its :func:`held_height` as its
    minimum height, unless one is set; returns ``layout``."""
    pending = [layout]
    while pending:
        item = pending.pop()
        if isinstance(item, ListLike):
            pending.extend(item.objects)
            continue
        height = held_height(item)
        if height is not None and item.min_height is None:
            item.min_height = height
    return layout
