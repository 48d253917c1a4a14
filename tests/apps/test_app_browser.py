"""End-to-end tests in headless Chromium against ``inference-lab serve``.

Every wait is on an explicit condition (an element shown, a value or URL changed, the Bokeh
documents idle) with the timeouts of :mod:`lab_browser`, never a fixed sleep: the tests must
pass on a 2-core machine that is busy with other work.
"""

from __future__ import annotations

import csv
import re

import pytest
from lab_browser import loads_cleanly, open_page, screenshot, set_number, wait_idle
from lab_browser import page_url as url
from playwright.sync_api import expect

from apps.ui.views.pages import all_pages
from lab.experiments import all_experiments

EXPERIMENT_SLUGS = {c.slug for c in all_experiments()}
PAGES = [p.slug for p in all_pages() if p.slug not in EXPERIMENT_SLUGS]
"""The pages that are not an experiment's: each experiment page's load is checked by
``test_experiment_pages_browser.py`` in the same page load that moves its inputs."""
CARD_VALUES = ".lab-card .value"

CDS_WITH_FILL = """() => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.fill_alpha && m.data.batch)
        out.push({batch: Array.from(m.data.batch), fill: Array.from(m.data.fill_alpha)});
  return out;
}"""

HEATMAP_VALUES = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && (m.data.zvalues || m.data.step_time_s))
        return Array.from(m.data.zvalues || m.data.step_time_s).slice(0, 40);
  return null;
}"""


def card_values(page) -> list[str]:
    return page.locator(CARD_VALUES).all_inner_texts()


@pytest.mark.parametrize("view", PAGES, ids=lambda v: v or "landing")
def test_every_page_loads_without_errors(lab_url, lab_page, console_errors, view):
    """Every page that is not an experiment's loads cleanly at desktop size
    (:func:`lab_browser.loads_cleanly`); the grid explorer's own overflow is
    ``test_grid_browser.py``'s."""
    lab_page.set_viewport_size({"width": 1440, "height": 900})
    open_page(lab_page, url(lab_url, view))
    if view == "grid":
        lab_page.wait_for_function(f"() => ({HEATMAP_VALUES})() !== null")
    else:
        expect(lab_page.locator("h1").first).to_be_visible()
    loads_cleanly(lab_page, view, fits=view != "grid")
    assert console_errors == []


def test_root_is_the_landing_page(lab_url, lab_page):
    open_page(lab_page, f"{lab_url}/")
    expect(lab_page.get_by_text("Change the inputs. Understand the tradeoff.")).to_be_visible()
    expect(lab_page.locator("a.lab-exp")).to_have_count(len(all_experiments()))


def test_batch_defaults_and_moving_batch_to_16(lab_url, lab_page, console_errors):
    open_page(lab_page, url(lab_url, "batch"))
    values = lab_page.locator(CARD_VALUES)
    expect(values.nth(0)).to_have_text("7.04 ms")
    expect(values.nth(1)).to_have_text("1,136 tok/s")
    expect(values.nth(4)).to_have_text("43.33 GB")
    before = lab_page.evaluate(CDS_WITH_FILL)
    assert [8] in [d["batch"] for d in before]
    set_number(lab_page, "batch", 16)
    expect(values.nth(0)).to_have_text("9.61 ms")
    expect(values.nth(1)).to_have_text("1,665 tok/s")
    lab_page.wait_for_function(
        "() => { for (const d of Bokeh.documents) for (const m of d._all_models.values())"
        " if (m.type === 'ColumnDataSource' && m.data.batch && m.data.batch.length === 1"
        " && m.data.batch[0] === 16) return true; return false; }")
    screenshot(lab_page, "batch-16")
    assert console_errors == []


def test_over_budget_configuration_draws_hollow_markers(lab_url, lab_page):
    open_page(lab_page, url(lab_url, "batch", batch=512))
    expect(lab_page.locator(".lab-card .label").nth(4)).to_have_text("Over budget")
    lab_page.wait_for_function(
        "() => { for (const d of Bokeh.documents) for (const m of d._all_models.values())"
        " if (m.type === 'ColumnDataSource' && m.data.batch && m.data.batch.length === 1"
        " && m.data.batch[0] === 512) return true; return false; }")
    sources = lab_page.evaluate(CDS_WITH_FILL)
    current = [s for s in sources if s["batch"] == [512]]
    assert current and all(s["fill"] == [0] for s in current)
    series = [s for s in sources if len(s["batch"]) > 1]
    for s in series:
        fills = dict(zip(s["batch"], s["fill"], strict=True))
        assert fills[1] == 1 and fills[1024] == 0
    # Moving the batch moves the marker in place; its fill follows the budget.
    set_number(lab_page, "batch", 16)
    lab_page.wait_for_function(f"() => {{ const one = ({CDS_WITH_FILL})()"
                               ".filter(s => s.batch.length === 1);"
                               " return one.length === 2 && one.every(s => s.batch[0] === 16); }")
    current = [s for s in lab_page.evaluate(CDS_WITH_FILL) if len(s["batch"]) == 1]
    assert len(current) == 2 and all(s == {"batch": [16], "fill": [1]} for s in current)


def test_prediction_reveal(lab_url, lab_page):
    open_page(lab_page, url(lab_url, "batch"))
    lab_page.get_by_text("No, a little later").click()
    lab_page.locator("button", has_text="Reveal the answer").click()
    answer = lab_page.locator(".lab-answer")
    expect(answer).to_contain_text("Right: No, a little later.")
    expect(answer).to_contain_text("7.04 ms")


FOCUSED = """() => { let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  return el ? [el.tagName, el.textContent.trim().slice(0, 40)] : null; }"""
"""The element the keyboard is on, inside the shadow roots: tag and text."""


def test_the_prediction_from_the_keyboard_keeps_the_focus(lab_url, lab_page):
    """An arrow key in the choices committed one and left the focus on the page's body, and so
    did Enter on the reveal button: a keyboard reader lost their place twice."""
    open_page(lab_page, url(lab_url, "tp"))
    group = lab_page.get_by_role("radiogroup", name="Your prediction")
    group.get_by_role("radio").first.focus()
    lab_page.keyboard.press("ArrowRight")  # the first choice after "Not sure yet"
    reveal = lab_page.get_by_role("button", name="Reveal the answer")
    expect(reveal).to_be_enabled()
    assert lab_page.evaluate(FOCUSED)[0] == "INPUT"  # still on the choices
    lab_page.keyboard.press("Tab")
    assert lab_page.evaluate(FOCUSED) == ["BUTTON", "Reveal the answer"]
    lab_page.keyboard.press("Enter")
    expect(lab_page.locator(".lab-answer")).to_contain_text("Yes, 8× sooner")
    lab_page.wait_for_timeout(500)  # the answer's round trip is over: nothing took the focus
    assert lab_page.evaluate(FOCUSED) == ["BUTTON", "Reveal the answer"]


UNNAMED = """() => { const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if ((el.tagName === 'BUTTON' || (el.tagName === 'INPUT' && el.type !== 'hidden'))
        && el.offsetParent !== null && !el.classList.contains('card-header')) {
      const named = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
        || el.textContent.trim() || (el.labels && el.labels.length) || el.title;
      if (!named) out.push(el.outerHTML.slice(0, 80));
    }
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document); return out; }"""
"""Visible buttons and inputs with no accessible name, inside every shadow root (a card's
header is named by its title, drawn in a shadow root of its own: checked by role)."""


UNNAMED_PARTS = """() => { const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if (/^H[1-6]$/.test(el.tagName) && !el.textContent.trim() && el.getAttribute('aria-hidden') !== 'true')
      out.push(el.outerHTML.slice(0, 80));
    if (el.tagName === 'CANVAS' && !el.closest('[aria-hidden=true]')
        && el.getAttribute('aria-hidden') !== 'true') out.push('canvas ' + el.className);
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document); return out; }"""
"""Empty headings and chart canvases a screen reader would list, inside every shadow root."""


@pytest.mark.parametrize("slug", ["decode", "speculative"])
def test_every_button_and_box_of_an_experiment_has_a_name(lab_url, lab_page, slug):
    """Every number box's − and + were icon-only buttons with no name ("button", twice per
    input), and experiment 10's slider box an unnamed text box."""
    open_page(lab_page, url(lab_url, slug))
    lab_page.wait_for_function(f"() => ({UNNAMED})().length === 0", timeout=10_000)
    label = "Batch (sequences)" if slug == "decode" else "Draft tokens k"
    expect(lab_page.get_by_role("button", name=f"Increase {label}").first).to_be_visible()
    # the card's header says whether it is open; each chart is one image, named by its title
    # and axes; an empty heading of the page's header is no heading (apps/ui/shell/page_semantics)
    card = lab_page.get_by_role("button", name="Show the calculation")
    expect(card).to_have_attribute("aria-expanded", "false")
    card.click()
    expect(card).to_have_attribute("aria-expanded", "true")
    chart = ("Chart: Step time, Ideal decode step time (ms) against Batch (sequences)"
             if slug == "decode" else re.compile(r"^Chart: .+, .+ against .+"))
    expect(lab_page.get_by_role("img", name=chart).first).to_be_visible()
    lab_page.wait_for_function(f"() => ({UNNAMED_PARTS})().length === 0", timeout=10_000)


def test_url_round_trips_the_state(lab_url, lab_page, browser):
    open_page(lab_page, url(lab_url, "batch"))
    expect(lab_page.locator(CARD_VALUES).first).to_have_text("7.04 ms")
    set_number(lab_page, "batch", 16)
    expect(lab_page).to_have_url(re.compile(r"batch=16"))
    shared = lab_page.url
    other = browser.new_page()
    try:
        open_page(other, shared)
        expect(other.locator(CARD_VALUES).first).to_have_text("9.61 ms")
        expect(other.locator(".lab-input-batch input").first).to_have_value("16")
    finally:
        other.close()


def test_invalid_inputs_show_the_reason(lab_url, lab_page, console_errors):
    open_page(lab_page, url(lab_url, "batch", model="qwen2.5-7b", tp=8, bacth=64))
    expect(lab_page.locator(".lab-error").first).to_contain_text("does not divide")
    expect(lab_page.locator(CARD_VALUES)).to_have_count(0)
    # a misspelt key is named with the input it meant, and leaves the address
    expect(lab_page.locator(".lab-input-problem").first).to_have_text(
        "The link's bacth= (did you mean batch=?) is not an input of this page, so it was "
        "ignored.")
    expect(lab_page).not_to_have_url(re.compile(r"bacth="))
    assert console_errors == []


def test_grid_explorer_switches_model(lab_url, lab_page, console_errors):
    open_page(lab_page, url(lab_url, "grid"))
    lab_page.wait_for_function(f"() => ({HEATMAP_VALUES})() !== null")
    before = lab_page.evaluate(HEATMAP_VALUES)
    lab_page.locator(".lab-grid-model [role=combobox]").first.click()
    lab_page.locator("li").filter(has_text=re.compile(r"^Llama 3\.1 70B$")).click()
    wait_idle(lab_page)
    expect(lab_page).to_have_url(re.compile(r"model=llama-3.1-70b"))
    lab_page.wait_for_function(
        f"(b) => JSON.stringify(({HEATMAP_VALUES})()) !== b", arg=__import__("json").dumps(before))
    screenshot(lab_page, "grid-70b")
    assert console_errors == []


def test_csv_download_holds_the_figures_on_screen(lab_url, lab_page, tmp_path):
    open_page(lab_page, url(lab_url, "batch"))
    expect(lab_page.locator(CARD_VALUES).first).to_have_text("7.04 ms")
    with lab_page.expect_download() as info:
        lab_page.get_by_text("Chart data (CSV)").click()
    path = tmp_path / "chart.csv"
    info.value.save_as(path)
    with path.open(newline="") as handle:  # the inputs come first, as '#' lines
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    row = next(r for r in rows if r["batch"] == "8")
    assert f"{float(row['step_time_s']) * 1e3:.2f} ms" == "7.04 ms"
    assert f"{round(float(row['aggregate_tokens_per_s'])):,} tok/s" == "1,136 tok/s"
    assert {r["batch"] for r in rows} >= {"1", "8", "1024"}


def test_goodput_serves_an_uploaded_trace(lab_url, lab_page, console_errors):
    open_page(lab_page, url(lab_url, "goodput"))
    expect(lab_page.locator(CARD_VALUES).first).to_contain_text("req/s")
    # the trace's column names (inline code) are in the text's colour: #82aaff was 2.3:1
    colours = lab_page.evaluate("""() => { const out = [];
      const walk = (root) => { for (const el of root.querySelectorAll('*')) {
        if (el.tagName === 'CODE' && el.offsetParent !== null)
          out.push([getComputedStyle(el).color, getComputedStyle(el.parentElement).color]);
        if (el.shadowRoot) walk(el.shadowRoot); } };
      walk(document); return out; }""")
    assert colours and all(code == text for code, text in colours), colours
    trace = b"request_id,arrival_s,prompt_tokens,output_tokens\n1,0.0,100,5\n2,0.1,200,3\n"
    lab_page.set_input_files("input[type=file]", files=[
        {"name": "mine.csv", "mimeType": "text/csv", "buffer": trace}])
    expect(lab_page.get_by_text("2 of 2 meet the contract")).to_be_visible()
    broken = b"request_id,arrival_s,prompt_tokens\n1,0.0,100\n"
    lab_page.set_input_files("input[type=file]", files=[
        {"name": "broken.csv", "mimeType": "text/csv", "buffer": broken}])
    expect(lab_page.locator(".lab-error").first).to_contain_text("lacks the column output_tokens")
    assert console_errors == []
