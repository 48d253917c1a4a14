"""Each experiment's page in headless Chromium, one page load per page for what every page
must do: load cleanly at desktop size, move its result when its main input moves, and let its
first number box take two values in a row (a page load costs Chromium about 2 s of a core, so
the checks share it)."""

from __future__ import annotations

import re

import param
import pytest
from lab_browser import loads_cleanly, open_page, set_number, type_in
from lab_browser import page_url as url
from playwright.sync_api import expect

from apps.ui.parts.input_widgets import widget_spec
from apps.ui.plots.charts import numeric_variables, sweep_axis
from apps.ui.views.live_inputs import shown_inputs
from apps.ui.views.pages import DERIVATION, experiment_class
from lab.experiments import all_experiments
from lab.experiments.batch_bottleneck import BatchBottleneck


def main_field(slug: str) -> tuple[str, int, int]:
    """The page's first whole-number box (its main number field) and two values to type: one
    not in force, then the default."""
    cls = BatchBottleneck if slug == DERIVATION.slug else experiment_class(slug)
    exp = cls()
    names = [n for n in shown_inputs(exp, list(cls.input_names()))
             if isinstance(cls.param[n], param.Integer)
             and widget_spec(cls.param[n]).get("type").__name__ == "IntInput"]
    name = names[0]
    default = getattr(exp, name)
    lo, hi = cls.param[name].bounds
    first = default * 2 if default * 2 <= hi else max(default // 2, lo)
    return name, first, default


PAGES = [c.slug for c in all_experiments()] + [DERIVATION.slug]

NO_BOXES = {"measured": ("batch", 512)}
"""Pages with no number box, their main input a slider over the values measured: the input
and its last value (experiment 9: batch 1, 16, … 512)."""


def main_input(cls) -> str:
    """The integer input that drives the experiment's chart (else its first integer input)."""
    exp = cls()
    ints = [n for n in cls.input_names() if isinstance(cls.param[n], param.Integer)]
    ds = exp.chart_data()
    axis = sweep_axis(ds[numeric_variables(ds)[0]])
    return axis if axis in ints else ints[0]


def moves_the_result(page, cls) -> None:
    """Set ``cls``'s main input (:func:`main_input`) to another value: its URL value and the
    page's cards change."""
    name = main_input(cls)
    cards = page.locator(".lab-cards").first
    expect(page.locator(".lab-card .value").first).to_be_visible()
    before = cards.inner_text()
    default = getattr(cls(), name)
    lo, hi = cls.param[name].bounds or (None, None)
    new = default * 2 if hi is None or default * 2 <= hi else max(default // 2, lo or 1)
    set_number(page, name, new)
    expect(page).to_have_url(re.compile(rf"{name}={new}\b"))
    expect(cards).not_to_have_text(before)


@pytest.mark.parametrize("slug", PAGES)
def test_an_experiment_page_loads_cleanly_moves_and_takes_two_values_in_a_box(
        lab_url, lab_page, console_errors, slug):
    """Each experiment's page loads cleanly at 1440×900 (:func:`lab_browser.loads_cleanly`),
    its main input moves the result, then its first number box takes two values in a row
    (issue 29 item 1: after Enter the box went on showing the value in force and ignored
    every keystroke until the reader left it). One page load for all three: a page load costs
    Chromium about 2 s of a core."""
    lab_page.set_viewport_size({"width": 1440, "height": 900})
    open_page(lab_page, url(lab_url, slug))
    cls = experiment_class(slug)
    if slug in NO_BOXES:  # its slider moves the result; there is no box to type in
        name, last = NO_BOXES[slug]
        expect(lab_page.locator(".bk-Canvas, canvas").first).to_be_visible()
        loads_cleanly(lab_page, slug)
        cards = lab_page.locator(".lab-cards").first
        before = cards.inner_text()
        lab_page.locator(f".lab-input-{name} input[type=range]").first.focus()
        lab_page.keyboard.press("End")
        expect(lab_page).to_have_url(re.compile(rf"[?&]{name}={last}(&|$)"))
        expect(cards).not_to_have_text(before)
        expect(lab_page.locator(f".lab-input-{name} input")).to_have_count(1)  # no box
        assert console_errors == []
        return
    name, first, second = main_field(slug)
    if cls is not None and slug != DERIVATION.slug:
        expect(lab_page.locator(".bk-Canvas, canvas").first).to_be_visible()
        loads_cleanly(lab_page, slug)
        moves_the_result(lab_page, cls)
        if main_input(cls) == name:  # the box holds ``first`` now: type the default first
            first, second = second, first
    box = lab_page.locator(f".lab-input-{name} input").first
    box.click()
    type_in(box, str(first))
    expect(lab_page).to_have_url(re.compile(rf"[?&]{name}={first}(&|$)"))
    type_in(box, str(second))  # no click, no Tab: straight on, as a reader types
    expect(lab_page).to_have_url(re.compile(rf"[?&]{name}={second}(&|$)"))
    assert console_errors == []
