"""Readers who open pages at the same moment load them in turn, in real Chromium
(``inference-lab serve --pages-at-once 1``; ``apps.ui.server.page_gate``).

Forty experiment pages opened at once on two cores did not all load within 120 s: drawn
all together, each page cost about 60 % more CPU, and every tab with a pending page request
kept redrawing its loading indicator (docs/operations.md). Here three readers open a page
at once: the first loads it, the other two get the waiting page at once and load theirs in
turn, so that no two pages load at the same time; every reader gets the page.
"""

from __future__ import annotations

import itertools
import sys

import pytest
from lab_browser import (
    NAVIGATION_TIMEOUT_MS,
    app_errors,
    free_port,
    require_chromium,
    start_server,
    stop_server,
    wait_idle,
)
from playwright.sync_api import expect

IDLE_AT = """
(() => { const hook = () => {
    if (window.Bokeh && Bokeh.documents.length) {
      const docs = [...Bokeh.documents];
      const mark = () => { if (window.labIdleAt === undefined && docs.every((d) => d.is_idle)) {
        window.labIdleAt = Date.now(); } };
      docs.forEach((d) => d.idle.connect(mark)); mark(); return; }
    setTimeout(hook, 10); };
  hook(); })();
"""
"""Init script: when the page's Bokeh documents are all idle (the moment the browser tells
the server the page is drawn), as ``window.labIdleAt`` (ms since the epoch)."""


@pytest.fixture(scope="module")
def one_at_a_time_url():
    """A lab served with ``--pages-at-once 1``."""
    require_chromium()
    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1",
           "--pages-at-once", "1"]
    proc = start_server(cmd, port)
    yield f"http://127.0.0.1:{port}"
    err = stop_server(proc)
    assert app_errors(err) == [], err
    assert "pages load 1 at a time" in err


def test_readers_arriving_together_load_their_pages_in_turn(browser, one_at_a_time_url):
    readers = []
    for _ in range(3):
        context = browser.new_context()
        context.add_init_script(IDLE_AT)
        page = context.new_page()
        documents: list[str] = []
        page.on("request", lambda request, documents=documents: documents.append(request.url)
                if request.resource_type == "document" else None)
        readers.append((context, page, documents))
    url = f"{one_at_a_time_url}/?view=precision"
    for _, page, _ in readers:  # three page requests before any page is drawn
        page.goto(url, wait_until="commit", timeout=NAVIGATION_TIMEOUT_MS)
    loads = []
    for context, page, documents in readers:
        expect(page.locator(".lab-card .value").first).to_be_visible(
            timeout=NAVIGATION_TIMEOUT_MS)
        wait_idle(page)
        page.wait_for_function("() => window.labIdleAt !== undefined")
        loads.append((page.evaluate("performance.timeOrigin"), page.evaluate("window.labIdleAt"),
                      len(documents)))
        context.close()
    loads.sort()
    assert [n for _, _, n in loads] == [1, 2, 2]  # two readers waited, then reloaded once
    for (_, drawn, _), (started, _, _) in itertools.pairwise(loads):
        # The next page was requested once this one was drawn. The idle moment is taken from
        # the documents' own idle signal; under load a background tab's timers are clamped,
        # so allow the browser a quarter second between telling the server and recording it.
        assert started >= drawn - 250
