"""Experiment 1 with a mixture-of-experts model, in Chromium: the third chart (weight reads
against batch) is drawn with the routing assumption under it, and moving the batch moves its
current-point marker (the numbers themselves are checked in tests/apps/test_moe_pages.py)."""

from __future__ import annotations

from lab_browser import open_page, screenshot, set_number
from playwright.sync_api import expect

EXPERT_POINT = """(batch) => {
  for (const d of Bokeh.documents) for (const m of d._all_models.values())
    if (m.type === 'ColumnDataSource' && m.data.experts_touched && m.data.batch.length === 1
        && m.data.batch[0] === batch) return Array.from(m.data.experts_touched)[0];
  return null;
}"""
"""The experts read per layer at the current-point marker of the expert chart, if it sits at
``batch``."""


def test_mixtral_page_draws_the_expert_reads(lab_url, lab_page, console_errors):
    open_page(lab_page, f"{lab_url}/inference_lab?view=decode&model=mixtral-8x7b&batch=8")
    expect(lab_page.locator(".lab-card .value", has_text="7.20 of 8")).to_be_visible()
    expect(lab_page.locator(".lab-chart")).to_have_count(3)
    expect(lab_page.get_by_text("Uniform routing assumed")).to_be_visible()
    touched = lab_page.wait_for_function(f"() => ({EXPERT_POINT})(8)").json_value()
    assert abs(touched - 8 * (1 - 0.75**8)) < 1e-9
    set_number(lab_page, "batch", 16)
    expect(lab_page.locator(".lab-card .value", has_text="7.92 of 8")).to_be_visible()
    touched = lab_page.wait_for_function(f"() => ({EXPERT_POINT})(16)").json_value()
    assert abs(touched - 8 * (1 - 0.75**16)) < 1e-9
    lab_page.locator(".lab-chart").nth(2).scroll_into_view_if_needed()
    screenshot(lab_page, "decode-mixtral-16")
    assert console_errors == []
