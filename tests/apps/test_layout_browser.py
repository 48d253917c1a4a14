"""Issue 29 in a real browser: the phone layouts of item 13 and the charts of items 6–11 as
the pages draw them (item 14, no page wider than the window, is checked where every page is
opened already: at 1440×900 by ``test_app_browser.py``'s every-page test, at 390×844 by
``test_phone_browser.py``). Uses the session's
served lab; the grid explorer's own test covers its page."""

from __future__ import annotations

from lab_browser import open_page

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
"""The two viewports every page must fit, CSS px."""

FIGURES = """() => Bokeh.documents.flatMap(d => [...d._all_models.values()])
  .filter(m => m.constructor.__name__ === 'Figure').map(f => ({
    title: f.title ? f.title.text : '',
    y_scale: f.y_scale.constructor.__name__,
    y_label: f.left.map(a => a.axis_label || '').join(''),
    x_ticks: f.below.filter(a => a.ticker && a.ticker.ticks).map(a => a.ticker.ticks)[0] || [],
    glyphs: f.renderers.filter(r => r.glyph).map(r => r.glyph.constructor.__name__),
    below: f.below.filter(m => m.constructor.__name__ === 'Legend')
      .flatMap(l => l.items.map(i => i.label.value)),
    inside: f.center.filter(m => m.constructor.__name__ === 'Legend')
      .flatMap(l => l.items.map(i => i.label.value)),
  }))"""
"""What each Bokeh figure on the page shows: title, y scale and label, x ticks, glyph kinds,
legend entries below the plot and inside it."""

X_LABELS = """() => Bokeh.documents.flatMap(d => [...d._all_models.values()])
  .filter(m => m.constructor.__name__ === 'Figure' && m.title && m.title.text === 'Step time')
  .map(f => { const axis = f.below.find(a => a.ticker);
              return {width: f.inner_width,
                      labels: axis.formatter.doFormat(axis.ticker.ticks, {loc: 0})}; })[0]"""
"""Experiment 1's step-time x labels as its formatter writes them at the drawn width."""


def url(base: str, slug: str, query: str = "") -> str:
    return f"{base}/?view={slug}{query}" if slug else f"{base}/"


def figures(page) -> dict[str, dict]:
    return {f["title"]: f for f in page.evaluate(FIGURES)}


def test_phone_layout(lab_url, lab_page):
    """Item 13: on a phone the derivation runs below its inputs at full width, a catalog
    table scrolls in its own box, the header title takes at most two lines, and experiment
    1's batch labels are thinned to fit (every power of two on a desktop)."""
    lab_page.set_viewport_size(SIZES["phone"])
    open_page(lab_page, url(lab_url, "derivation"))
    inputs = lab_page.locator(".lab-inputs-column").first.bounding_box()
    body = lab_page.locator(".lab-derivation-body").first.bounding_box()
    assert body["y"] >= inputs["y"] + inputs["height"] - 1
    assert body["width"] >= 0.85 * SIZES["phone"]["width"]
    title = lab_page.locator(".title").first
    line = float(title.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert title.bounding_box()["height"] <= 2 * line + 2
    open_page(lab_page, url(lab_url, "sources"))
    box = lab_page.locator(".lab-table-box").first
    widths = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert widths[0] > widths[1] and widths[1] <= SIZES["phone"]["width"]
    open_page(lab_page, url(lab_url, "decode"))
    phone = lab_page.evaluate(X_LABELS)
    shown = [label for label in phone["labels"] if label]
    assert len(shown) * 44 <= phone["width"] and shown[0] == "1" and shown[-1] == "1,024"
    lab_page.set_viewport_size(SIZES["desktop"])
    open_page(lab_page, url(lab_url, "decode"))
    assert all(lab_page.evaluate(X_LABELS)["labels"])


def test_charts_show_their_lesson(lab_url, lab_page):
    """Items 6–11 as the served pages draw them."""
    open_page(lab_page, url(lab_url, "decode"))
    step = figures(lab_page)["Step time"]
    assert step["inside"] == ["step = linear + attention", "linear phase",
                              "attention phase (KV reads)"]  # item 10
    open_page(lab_page, url(lab_url, "memory"))
    fit = figures(lab_page)["Sequences that fit"]
    assert fit["y_scale"] == "LogScale" and fit["y_label"] == "sequences"  # items 7, 11
    open_page(lab_page, url(lab_url, "tp"))
    assert all(f["x_ticks"] == [1, 2, 4, 8] and len(f["y_label"]) <= 12
               for f in figures(lab_page).values())  # item 11
    open_page(lab_page, url(lab_url, "prefix"))
    assert "Step" in figures(lab_page)["Private blocks per request"]["glyphs"]  # item 6
    open_page(lab_page, url(lab_url, "goodput"))
    titles = set(figures(lab_page))
    assert "Share of requests meeting the contract" not in titles  # item 9
    assert "Median TPOT" in titles
    open_page(lab_page, url(lab_url, "measured", "&kind=gemm"))
    (gemm,) = figures(lab_page).values()
    assert gemm["inside"] == [] and gemm["below"][-1] == "below the floor"  # item 8
