"""Material UI inputs hold their drawn height from the start (``apps.ui.shell.held_size``), so that
React drawing them does not resize the page and re-lay out every chart."""

from __future__ import annotations

import panel as pn
import panel_material_ui as pmui

from apps.ui.shell.held_size import BUTTON_WIDTH, HELD_HEIGHT, held_height, hold_sizes
from apps.ui.views.app import build_page


def test_each_widget_class_holds_its_own_or_its_base_class_height():
    assert held_height(pmui.Select(options=["a"])) == HELD_HEIGHT[pmui.Select]
    assert held_height(pmui.IntInput()) == 56 and held_height(pmui.Switch()) == 38
    assert held_height(pn.pane.Markdown("x")) is None


def test_hold_sizes_reaches_nested_layouts_and_keeps_a_height_already_set():
    select, switch = pmui.Select(options=["a"]), pmui.Switch(min_height=50)
    layout = hold_sizes(pn.Column(pn.Row(select), switch, pn.pane.Markdown("x")))
    assert select.min_height == 56 and switch.min_height == 50
    assert layout.objects[2].min_height is None


def test_every_input_of_an_experiment_page_holds_its_height():
    page = build_page("precision")
    widgets = [w for w in page.select(pn.widgets.Widget) if held_height(w) is not None]
    assert len(widgets) >= 8
    for widget in widgets:
        assert widget.min_height is not None and widget.min_height >= held_height(widget) - 20
    buttons = [w for w in widgets if isinstance(w, pmui.FileDownload | pmui.Button)]
    assert buttons and all(b.width == BUTTON_WIDTH or b.sizing_mode for b in buttons)
