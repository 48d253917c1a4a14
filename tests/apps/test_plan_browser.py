"""Experiment 12 in headless Chromium against the session's ``inference-lab serve``: the
frontier drawn, the regret study shown with the pick's row marked, a target moved by the link
changes the pick, a hostile candidates file is one sentence by the upload control, and a
model's own ``config.json`` uploaded is planned (its name shown as text) until a catalog
model is chosen again. Every wait is on an explicit condition, never a sleep."""

from __future__ import annotations

import json

from lab_browser import choose, open_page
from playwright.sync_api import expect

BEST = ".lab-plan-best"
FRONTIER = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.label && m.data.label.length > 1)
        return m.data.label.length;
  return 0;
}"""

MEASURED = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.id && m.data.mode) return m.data.id.length;
  return 0;
}"""
"""Rows of the measured overlay (the public runs of this model × GPU × engine × workload)."""
TARGET_LINE = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'Span' && m.dimension === 'height') return m.location;
  return null;
}"""
"""Where the per-user target's vertical line is drawn (tokens/s per user)."""


def test_plan_page_frontier_target_and_upload(lab_url, lab_page, console_errors, tmp_path):
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan")
    best = lab_page.locator(BEST)
    expect(best).to_contain_text("Best configuration")
    lab_page.wait_for_function(FRONTIER)
    assert lab_page.evaluate(MEASURED) > 0  # the public runs overlaid as crosses
    assert lab_page.evaluate(TARGET_LINE) == 50  # the default 50 tokens/s per user
    first = best.inner_text()
    study = lab_page.locator(".lab-plan-study")  # the regret study, the pick's row marked
    expect(study).to_contain_text("How often a pick holds")
    expect(study.locator(".lab-plan-study-mine")).to_contain_text("(this pick)")
    expect(study).to_contain_text("was itself measured")
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan&tokens_per_s_user=20")
    expect(best).to_contain_text("Best configuration")
    assert best.inner_text() != first
    lab_page.wait_for_function(f"() => ({TARGET_LINE})() === 20")  # the moved target's line
    bad = tmp_path / "evil.csv"
    bad.write_bytes(b"id,backend\nx,y\n")
    lab_page.set_input_files("input[type=file][accept='.csv']", files=str(bad))
    expect(lab_page.locator(".lab-plan-status [role=alert]")).to_contain_text(
        "lacks the column(s)")
    assert console_errors == []


TINY = {"architectures": ["LlamaForCausalLM"], "_name_or_path": "<img src=x onerror=alert(1)>/Tiny",
        "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
        "max_position_embeddings": 131072}
"""A small Llama-shaped model whose name is markup (it must show as text)."""


def test_an_uploaded_config_is_planned_until_a_catalog_model_is_chosen(
        lab_url, lab_page, console_errors, tmp_path):
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan")
    best = lab_page.locator(BEST)
    expect(best).to_contain_text("Best configuration")
    catalog = best.text_content()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY))
    lab_page.set_input_files("input[type=file][accept='.json']", files=str(config))
    status = lab_page.locator(".lab-model-status")
    expect(status).to_contain_text("<img src=x onerror=alert(1)>/Tiny")  # shown as text
    expect(best).not_to_have_text(catalog)  # the small model is planned: another pick
    assert lab_page.locator(".lab-model-status img").count() == 0
    bad = tmp_path / "broken.json"
    bad.write_text("{oops")
    lab_page.set_input_files("input[type=file][accept='.json']", files=str(bad))
    expect(status.locator("[role=alert]")).to_contain_text("broken.json is not valid JSON")
    tiny = best.text_content()
    choose(lab_page, "model", "llama-3.1-8b")  # a catalog model chosen replaces the upload
    expect(status).to_contain_text("the catalog model chosen above")
    expect(best).not_to_have_text(tiny)
    eight_b = best.text_content()
    lab_page.set_input_files("input[type=file][accept='.json']", files=str(config))  # again
    expect(status).to_contain_text("<img src=x onerror=alert(1)>/Tiny")
    expect(best).to_have_text(tiny)
    lab_page.get_by_role("button", name="Use the catalog's model").click()
    expect(status).to_contain_text("the catalog model chosen above")
    expect(best).to_have_text(eight_b)
    assert console_errors == []
