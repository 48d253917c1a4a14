"""Experiment 12 in headless Chromium against the session's ``inference-lab serve``: the
frontier drawn, the regret study shown with the pick's row marked, a target moved by the link
changes the pick, a hostile candidates file is one sentence by the upload control, and a
model's own ``config.json`` uploaded is planned (its name shown as text) until a catalog
model is chosen again. Every wait is on an explicit condition, never a sleep."""

from __future__ import annotations

import json
import re

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
    bad = tmp_path / "evil.txt"  # not .csv: the widget dropped it in the browser without a word
    bad.write_bytes(b"id,backend\nx,y\n")
    lab_page.set_input_files(".lab-plan-file input[type=file]", files=str(bad))
    expect(lab_page.locator(".lab-plan-status [role=alert]")).to_contain_text(
        "lacks the columns ")
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
    lab_page.set_input_files(".lab-model-file input[type=file]", files=str(config))
    status = lab_page.locator(".lab-model-status")
    expect(status).to_contain_text("<img src=x onerror=alert(1)>/Tiny")  # shown as text
    expect(best).not_to_have_text(catalog)  # the small model is planned: another pick
    assert lab_page.locator(".lab-model-status img").count() == 0
    bad = tmp_path / "broken.json"
    bad.write_text("{oops")
    lab_page.set_input_files(".lab-model-file input[type=file]", files=str(bad))
    expect(status.locator("[role=alert]")).to_contain_text("broken.json is not valid JSON")
    tiny = best.text_content()
    choose(lab_page, "model", "llama-3.1-8b")  # a catalog model chosen replaces the upload
    expect(status).to_contain_text("the catalog model chosen above")
    expect(best).not_to_have_text(tiny)
    eight_b = best.text_content()
    lab_page.set_input_files(".lab-model-file input[type=file]", files=str(config))  # again
    expect(status).to_contain_text("<img src=x onerror=alert(1)>/Tiny")
    expect(best).to_have_text(tiny)
    lab_page.get_by_role("button", name="Use the catalog's model").click()
    expect(status).to_contain_text("the catalog model chosen above")
    expect(best).to_have_text(eight_b)
    assert console_errors == []


LONG_ID = "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x8192_c32_tp8_ep1_363"
"""An id as the public rows name them: 72 characters without a space."""


def test_ranked_candidates_with_long_ids_fit_a_phone(lab_url, lab_page, console_errors,
                                                     tmp_path):
    """A candidates table whose ids have no spaces grew the page's column to 918 px on a
    390 px phone (the verdicts off screen): the ids wrap, and the table fits the column."""
    lab_page.set_viewport_size({"width": 390, "height": 844})
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan")
    mine = tmp_path / "mine.csv"
    mine.write_text("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size\n"
                    f"{LONG_ID},vllm,llama-3.1-70b,h200,agg,1024,1024,32,8\n"
                    f"{LONG_ID}_b,vllm,llama-3.1-70b,h200,agg,1024,1024,256,8\n")
    lab_page.set_input_files(".lab-plan-file input[type=file]", files=str(mine))
    table = lab_page.locator(".lab-plan-candidates table")
    expect(table).to_contain_text(LONG_ID)
    verdict = table.locator("tr").nth(1).locator("td").last
    expect(verdict).to_have_text(re.compile("^(meets|misses)$"))
    # No scroller of the page (the app's main column is one) scrolls sideways to show it.
    widest = lab_page.evaluate(
        "() => { const deep = (root) => [...root.querySelectorAll('*')].flatMap(e => "
        "[e, ...(e.shadowRoot ? deep(e.shadowRoot) : [])]); return Math.max(0, ...deep(document)"
        ".filter(e => e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll'].includes("
        "getComputedStyle(e).overflowX) && !e.closest('.lab-plan-candidates'))"
        ".map(e => e.scrollWidth)); }")
    assert widest <= 390, f"a scroller {widest} px wide on a 390 px page"
    assert console_errors == []
