"""Browser checks of issue 11's layout and state items: every page at phone size (390×844),
and the theme and inputs carried across pages; issue 37's taps and menu on a phone. Uses the
session's served lab."""

from __future__ import annotations

import pytest
from lab_browser import NAVIGATION_TIMEOUT_MS, open_page, overflow, unreachable
from playwright.sync_api import expect

from apps.ui.views.pages import GRID, all_pages, experiment_pages

PHONE = {"width": 390, "height": 844}
"""An iPhone-sized viewport, CSS px."""


def url(base: str, slug: str, query: str = "") -> str:
    return f"{base}/?view={slug}{query}" if slug else f"{base}/?{query.lstrip('&')}"


@pytest.mark.parametrize("info", all_pages(), ids=lambda info: info.slug or "home")
def test_every_page_at_phone_size(lab_url, lab_page, console_errors, info):
    """The menu starts closed, nothing is wider than the screen, a tap at the centre of each
    control reaches it and no two blocks overlap (issue 37 item 2), and on experiment pages the
    inputs sit above the results and every chart is (nearly) the screen's width. One test per
    page: a failure names its page, and the pages after it are still checked."""
    lab_page.set_viewport_size(PHONE)
    experiments = {p.slug for p in experiment_pages()}
    open_page(lab_page, url(lab_url, info.slug))
    expect(lab_page.locator(".lab-nav")).to_have_count(0)  # the drawer starts closed
    assert unreachable(lab_page) == [], info.slug
    width = lab_page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, (info.slug, width)
    # Nor is the main area the document scrolls (the grid explorer's test checks its own).
    if info is not GRID:
        assert overflow(lab_page, f"overflow-{info.slug or 'home'}-phone") is None, info.slug
    if info.slug in experiments:
        inputs = lab_page.locator(".lab-inputs-column").first.bounding_box()
        cards = lab_page.locator(".lab-cards-pane").first.bounding_box()
        assert inputs["y"] + inputs["height"] <= cards["y"] + 1, info.slug
        for chart in lab_page.locator(".lab-chart").all():
            box = chart.bounding_box()
            assert box["width"] >= 0.85 * PHONE["width"], (info.slug, box)
    assert console_errors == []


SIDEBAR_OPEN = ("() => [...Bokeh.documents].flatMap(d => [...d._all_models.values()])"
                ".find(m => m.data && 'sidebar_open' in m.data).data.sidebar_open")
"""Whether the template's menu is open, as the page's model holds it."""


def test_the_menu_opens_on_a_phone(lab_url, lab_page):
    """Issue 37 item 3: on a phone the menu button opens the menu (the menu's own component,
    drawn again as the drawer opens, used to close it at once), and a link in it leads on."""
    lab_page.set_viewport_size(PHONE)
    open_page(lab_page, url(lab_url, "decode"))
    expect(lab_page.locator(".lab-nav")).to_have_count(0)
    lab_page.get_by_role("button", name="Open drawer").click()
    link = lab_page.get_by_role("link", name="2. How many sequences fit")
    expect(link).to_be_visible()
    assert lab_page.evaluate(SIDEBAR_OPEN) is True
    link.click()
    lab_page.wait_for_url("**view=memory**")


def test_theme_and_inputs_follow_the_reader_across_pages(lab_url, browser):
    """The browser's dark preference is honoured, and a sidebar link keeps it and the model."""
    context = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 900})
    # A click that starts a page load waits for it: the navigation's 60 s, not 30 s (passed
    # under two suites at once).
    context.set_default_timeout(NAVIGATION_TIMEOUT_MS)
    page = context.new_page()  # loopback only, as every context (lab_browser.CHROMIUM_ARGS)
    try:
        open_page(page, url(lab_url, "batch", "&model=llama-3.1-70b"))
        page.wait_for_function("() => [...Bokeh.documents].flatMap(d => [..."
                               "d._all_models.values()]).some(m => m.data && m.data.dark_theme)")
        page.get_by_role("link", name="3. Tensor parallelism").click()
        page.wait_for_url("**view=tp**")
        assert "model=llama-3.1-70b" in page.url and "theme=dark" in page.url
        open_page(page, page.url)
        expect(page.locator(".lab-cards-pane")).to_contain_text("does not fit")
    finally:
        context.close()
