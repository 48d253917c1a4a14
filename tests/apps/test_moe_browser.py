"""Experiment 1 with a mixture-of-experts model, in Chromium: the third chart (weight reads
against batch) is drawn with the routing assumption under it, and moving the batch moves its
current-point marker (the numbers themselves are checked in tests/apps/test_moe_pages.py).
Experiment 2 with Gemma 3 (sliding-window layers): the layer-mix card and KV per sequence
flattening against context."""

from __future__ import annotations

import pytest
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


KV_GROWTH = """(variable) => {
  for (const d of Bokeh.documents) for (const m of d._all_models.values()) {
    if (m.type !== 'ColumnDataSource' || !m.data[variable] || !m.data.context
        || m.data.context.length < 3) continue;
    const xs = Array.from(m.data.context), ys = Array.from(m.data[variable]);
    const at = (x) => ys[xs.indexOf(x)];
    return at(131072) / at(8192);
  }
  return null;
}"""
"""How many times a KV-per-sequence series grows from 8,192 to 131,072 tokens of context."""


def test_gemma_memory_page_shows_the_layer_mix_and_a_flattening_kv_chart(
        lab_url, lab_page, console_errors):
    """Experiment 2 with Gemma 3 27B: the layer-mix card, and KV per sequence against context
    flattening where the 52 window layers stop growing (10·(S+1) + 52·1,024 layer-tokens, paged:
    10.1× from 8,192 to 131,072 tokens) beside every layer held full length (16×)."""
    open_page(lab_page, f"{lab_url}/inference_lab?view=memory&model=gemma-3-27b&context=8192")
    expect(lab_page.locator(".lab-card .value",
                            has_text="52 sliding-window layers of 1,024 tokens, 10 full")
           ).to_be_visible()
    expect(lab_page.locator(".lab-chart")).to_have_count(4)
    own = lab_page.wait_for_function(
        f"() => ({KV_GROWTH})('kv_bytes_per_sequence')").json_value()
    full = lab_page.wait_for_function(
        f"() => ({KV_GROWTH})('kv_bytes_per_sequence_full_length')").json_value()
    # 16-token pages: full layers ⌈(S+1)/16⌉·16 slots, window layers 65 pages (1,040 slots)
    assert own == pytest.approx((10 * 131088 + 52 * 1040) / (10 * 8208 + 52 * 1040), rel=1e-9)
    assert full == pytest.approx(131088 / 8208, rel=1e-9)
    assert own < 10.1 < 15.9 < full
    assert console_errors == []
