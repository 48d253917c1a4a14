"""Experiment 9 in headless Chromium against the session's ``inference-lab serve``: a link's
bad shape, an uploaded measurements file (good: the cards change; a bad row: one sentence by
the upload control) and experiment 1's measured attention markers behind their switch.

Every wait is on an explicit condition (:mod:`lab_browser`), never a fixed sleep.
"""

from __future__ import annotations

import re

from lab_browser import open_page, screenshot, wait_idle
from playwright.sync_api import expect

CARD_VALUES = ".lab-card .value"

ATTENTION_MARKERS = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.attention_ms && m.data.what
          && m.data.what[0] === 'measured')
        return Array.from(m.data.batch);
  return null;
}"""


def test_measured_page_link_and_upload(lab_url, lab_page, console_errors, tmp_path):
    open_page(lab_page, f"{lab_url}/inference_lab?view=measured&kind=gemm&shape=32-8-128")
    expect(lab_page.locator(".lab-input-message")).to_contain_text(
        "The link's shape=32-8-128 is not one of 2048×6144")
    expect(lab_page).to_have_url(re.compile(r"shape=2048%C3%976144"))
    open_page(lab_page, f"{lab_url}/inference_lab?view=measured")
    expect(lab_page.locator(CARD_VALUES).first).to_have_text("1.14×")
    good = tmp_path / "mine.csv"
    good.write_bytes(b"m,k,n,latency_us\n8,2048,6144,8.988\n")
    lab_page.set_input_files("input[type=file]", files=str(good))
    expect(lab_page.locator(CARD_VALUES).first).to_have_text("1.19×")  # 8.988 µs / 7.55 µs
    expect(lab_page.locator(".lab-measured-status")).to_contain_text("mine.csv")
    expect(lab_page).to_have_url(re.compile(r"kind=gemm"))
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"m,k,n,latency_us\n8,2048,6144,-3\n")
    lab_page.set_input_files("input[type=file]", files=str(bad))
    problem = lab_page.locator(".lab-measured-status .lab-upload-problem")
    expect(problem).to_contain_text("row 2, column latency_us")
    assert problem.inner_text().count(".") >= 1 and "Traceback" not in problem.inner_text()
    expect(lab_page.locator(CARD_VALUES).first).to_have_text("1.19×")  # the data in force stays
    assert console_errors == []


def test_experiment_1_measured_attention_switch(lab_url, lab_page, console_errors):
    open_page(lab_page, f"{lab_url}/inference_lab?view=batch&batch=16")
    assert lab_page.evaluate(ATTENTION_MARKERS) is None  # off by default: nothing drawn
    lab_page.get_by_text("Show measured attention (H100 SXM data)").click()
    lab_page.wait_for_function(f"() => ({ATTENTION_MARKERS})() !== null")
    assert lab_page.evaluate(ATTENTION_MARKERS) == [1, 16, 32, 64, 128, 256, 512]
    expect(lab_page.locator(".lab-measured-attention")).to_contain_text(
        "Source: inference-sim/inference-sim")
    expect(lab_page.locator(".lab-measured-key")).to_contain_text(
        "◆ measured attention (real H100 SXM kernels × layers)")
    wait_idle(lab_page)
    screenshot(lab_page, "batch-measured-attention")
    assert console_errors == []
