"""The grid explorer in Chromium, one served lab (``--datasets`` on a small folder) for every
test: dataset switch, axes, facets, lines, query, compare, a table row opening its experiment
page, hostile URL values as one sentence, and no horizontal overflow at 1440×900 or 390×844."""

from __future__ import annotations

import json
import re
import sys

import pytest
from lab_browser import app_errors, free_port, open_page, start_server, stop_server, wait_idle
from playwright.sync_api import expect

from tests.sweeps.conftest import write_small

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}

SOURCE_COLUMNS = """(name) => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data[name]) return Array.from(m.data[name]);
  return null;
}"""
"""The first data column named ``name`` of the page's Bokeh documents."""

HEATMAP_X = """() => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data._value) return Array.from(m.data._x);
  return null;
}"""
"""The x label of every cell of the page's heatmap."""

LINES = """() => { let n = 0;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'GlyphRenderer' && m.glyph.type === 'Line') n++;
  return n; }"""


@pytest.fixture(scope="module")
def grid_url(tmp_path_factory):
    """``inference-lab serve --datasets DIR`` over a small decode grid and a user sweep."""
    folder = tmp_path_factory.mktemp("grid-browser")
    write_small(folder / "decode.zarr")
    write_small(folder / "my-sweep.zarr", name="my-sweep")
    port = free_port()
    proc = start_server([sys.executable, "-m", "lab", "serve", "--port", str(port),
                         "--address", "127.0.0.1", "--datasets", str(folder)], port)
    yield f"http://127.0.0.1:{port}/?view=grid"
    err = stop_server(proc)
    assert app_errors(err) == [], err


def message(page) -> str:
    box = page.locator(".lab-input-problem")
    return box.first.inner_text() if box.count() else ""


def test_dataset_switch_axes_and_url(grid_url, lab_page, console_errors):
    open_page(lab_page, grid_url + "&x=tp&y=context&tp=2")
    xs = lab_page.evaluate(HEATMAP_X)
    assert sorted(set(xs)) == ["1", "2", "8"]
    lab_page.locator(".lab-grid-dataset [role=combobox]").first.click()
    lab_page.locator("li").filter(has_text=re.compile(r"^my-sweep$")).click()
    wait_idle(lab_page)
    expect(lab_page).to_have_url(re.compile(r"dataset=my-sweep"))
    expect(lab_page).to_have_url(re.compile(r"x=batch"))  # the new dataset's own defaults
    assert message(lab_page) == ""
    assert console_errors == []


def test_facets_lines_and_compare(grid_url, lab_page, console_errors):
    open_page(lab_page, grid_url + "&facet=tp")
    expect(lab_page.locator(".lab-grid-chart .bk-Figure, .lab-grid-chart .bk-panel-models-"
                            "layout-FlexBox")).not_to_have_count(0)
    titles = lab_page.evaluate("""() => { const t = [];
      for (const doc of Bokeh.documents) for (const m of doc._all_models.values())
        if (m.type === 'Title' && / at tp /.test(m.text)) t.push(m.text); return t.sort(); }""")
    # each panel names the variable with its unit and the facet's value with its own
    assert [t.split(" at ")[1] for t in titles] == ["tp 1 GPU", "tp 2 GPUs", "tp 8 GPUs"]
    assert all(t.startswith("Ideal decode step time (ms)") for t in titles)
    open_page(lab_page, grid_url + "&mode=lines&x=context&y=batch")
    assert lab_page.evaluate(LINES) == 3
    open_page(lab_page, grid_url + "&mode=compare&compare=precision&compare_a=fp8"
              "&compare_b=bf16")
    ratio = [v for v in lab_page.evaluate(SOURCE_COLUMNS, "ratio_step_time_s") if v == v]
    assert ratio and all(0 < v < 1.01 for v in ratio)  # FP8 weights: never slower
    assert console_errors == []


def test_query_table_row_opens_the_experiment_page(grid_url, lab_page, console_errors):
    open_page(lab_page, grid_url + "&scope=dataset&where=step_time_s%3C%3D0.05")
    expect(lab_page.locator(".lab-grid-summary")).to_contain_text("meet the constraints")
    rings = lab_page.evaluate("""() => { let n = 0;
      for (const doc of Bokeh.documents) for (const m of doc._all_models.values())
        if (m.type === 'LegendItem' && /meets the constraints/.test(JSON.stringify(m.label)))
          n++; return n; }""")
    assert rings >= 1
    link = lab_page.locator("a.lab-grid-open").first
    href = link.get_attribute("href")
    assert href.startswith("?view=decode&model=")
    link.click()
    wait_idle(lab_page)
    expect(lab_page).to_have_url(re.compile(r"view=decode&model="))
    tp = re.search(r"tp=(\d+)", href).group(1)
    expect(lab_page).to_have_url(re.compile(rf"tp={tp}\b"))
    assert console_errors == []


@pytest.mark.parametrize(("query", "words"), [
    ("&dataset=../../etc", "dataset=../../etc is not one of decode"),
    ("&x=secret", "x=secret is not one of model, gpu"),
    ("&where=__import__(%27os%27)",
     "'__import__('os')' is not a constraint; write constraints like step_time_s<=0.05"),
    ("&dataset=large", "has not been computed yet; run `inference-lab sweep --grid large"),
])
def test_hostile_url_values_are_one_sentence(grid_url, lab_page, query, words):
    open_page(lab_page, grid_url + query)
    expect(lab_page.locator(".lab-input-problem").first).to_contain_text(words)
    expect(lab_page.get_by_text("Traceback")).to_have_count(0)


@pytest.mark.parametrize("size", SIZES)
def test_no_horizontal_overflow_and_the_variable_box_reads_whole(grid_url, lab_page, size):
    """Issue 29 items 11, 13, 14: the page fits the window, the heatmap is not a sliver beside
    the inputs on a phone, and the Variable box shows its whole label."""
    lab_page.set_viewport_size(SIZES[size])
    open_page(lab_page, grid_url + "&scope=dataset")
    width = lab_page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= SIZES[size]["width"]
    chart = lab_page.locator(".lab-grid-chart").first.bounding_box()
    assert chart["width"] >= 0.8 * min(SIZES[size]["width"], 900) - 60
    box = lab_page.locator(".lab-grid-variable .MuiSelect-select").first
    clipped = box.evaluate("e => e.scrollWidth > e.clientWidth + 1")
    assert not clipped


HEATMAP = """() => { const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data._value)
        out.push([m.id, Array.from(m.data._value).slice(0, 20)]);
  return JSON.stringify(out); }"""
"""Every heatmap source of the page: its id and first values."""


def test_a_keyboard_step_on_a_slider_redraws_in_place(grid_url, lab_page, console_errors):
    """Issue 24: an arrow key on the tp slider reaches the server (the page is served
    throttled: the released value, as an index) and the heatmap on screen gets the new slice's
    data, in the same figure."""
    open_page(lab_page, grid_url + "&tp=1")
    before = json.loads(lab_page.evaluate(HEATMAP))
    assert len(before) == 1
    lab_page.locator(".lab-grid-tp input[type=range]").first.focus()
    lab_page.keyboard.press("ArrowRight")
    expect(lab_page).to_have_url(re.compile(r"tp=2\b"))
    # Wait for the values themselves: a redraw may pass through other states of the JSON
    # (a source's data replaced in parts) before the new slice's values arrive.
    lab_page.wait_for_function(
        f"(b) => {{ const now = JSON.parse(({HEATMAP})());"
        " return now.length === 1 && JSON.stringify(now[0][1]) !== JSON.stringify(b); }",
        arg=before[0][1])
    after = json.loads(lab_page.evaluate(HEATMAP))
    assert [a[0] for a in after] == [before[0][0]]  # the same source, new data
    assert after[0][1] != before[0][1]
    assert message(lab_page) == ""
    assert console_errors == []
