"""Experiment 12 in headless Chromium against the session's ``inference-lab serve``: the
frontier drawn, the regret study shown with the pick's row marked, a target moved by the link
changes the pick, a hostile candidates file is one sentence by the upload control. Every wait
is on an explicit condition, never a sleep."""

from __future__ import annotations

from lab_browser import open_page
from playwright.sync_api import expect

BEST = ".lab-plan-best"
FRONTIER = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.label && m.data.label.length > 1)
        return m.data.label.length;
  return 0;
}"""


def test_plan_page_frontier_target_and_upload(lab_url, lab_page, console_errors, tmp_path):
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan")
    best = lab_page.locator(BEST)
    expect(best).to_contain_text("Best configuration")
    lab_page.wait_for_function(FRONTIER)
    first = best.inner_text()
    study = lab_page.locator(".lab-plan-study")  # the regret study, the pick's row marked
    expect(study).to_contain_text("How often a pick holds")
    expect(study.locator(".lab-plan-study-mine")).to_contain_text("(this pick)")
    expect(study).to_contain_text("was itself measured")
    open_page(lab_page, f"{lab_url}/inference_lab?view=plan&tokens_per_s_user=20")
    expect(best).to_contain_text("Best configuration")
    assert best.inner_text() != first
    bad = tmp_path / "evil.csv"
    bad.write_bytes(b"id,backend\nx,y\n")
    lab_page.set_input_files("input[type=file]", files=str(bad))
    expect(lab_page.locator(".lab-plan-status [role=alert]")).to_contain_text(
        "lacks the column(s)")
    assert console_errors == []
