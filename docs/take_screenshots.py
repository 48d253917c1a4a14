"""Screenshots of every page of a running lab at 1440×900 and 390×844, for docs/ and the README.

Usage (with ``inference-lab serve --port 5006`` running)::

    python docs/take_screenshots.py http://127.0.0.1:5006 docs/screenshots

Writes ``<page>-desktop.png`` and ``<page>-phone.png`` per page (the landing page is
``home``), the same for :data:`EXAMPLES`, and the charts of :data:`CHARTS` alone. Uses
Debian's Chromium and reaches nothing but the given server.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from apps.ui.views.pages import all_pages

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps
from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS  # one definition of the browser

VIEWPORTS = {"desktop": (1440, 900), "phone": (390, 844)}
"""Screenshot name → (width, height) in CSS px."""

EXAMPLES = {"decode-moe": "?view=decode&model=mixtral-8x7b",
            "memory-mla": "?view=memory&model=deepseek-v2-lite",
            "memory-hybrid": "?view=memory&model=gemma-3-27b&gpu=b200&context=32768"}
"""Screenshot name → query of pages shown with another model than their default (experiment 1's
expert-read chart for a mixture-of-experts model, experiment 2's MLA latent card and a model of
sliding-window and full layers)."""

CHARTS = {"plan-frontier": ("?view=plan", ".lab-plan-chart")}
"""Screenshot name → (query, CSS selector) of a chart shown alone: experiment 12's frontier,
which a page-sized screenshot leaves below the fold."""

IDLE = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
        "Bokeh.documents.every(d => d.is_idle) && !document.querySelector('.pn-loading')")
"""True once every Bokeh document on the page has rendered."""


def main(base: str, out: Path) -> None:
    """Screenshot every page of the lab served at ``base`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for kind, (width, height) in VIEWPORTS.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            shots = {info.slug or "home": f"?view={info.slug}" if info.slug else ""
                     for info in all_pages()} | EXAMPLES
            for name, query in shots.items():
                page.goto(f"{base}/{query}", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"{name}-{kind}.png"))
            for name, (query, selector) in CHARTS.items():
                page.goto(f"{base}/{query}", timeout=120_000)
                page.wait_for_function(IDLE, timeout=120_000)
                chart = page.locator(selector).first
                chart.scroll_into_view_if_needed()
                page.wait_for_timeout(800)
                chart.screenshot(path=str(out / f"{name}-{kind}.png"))
            page.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/"), Path(sys.argv[2] if len(sys.argv) > 2 else "docs/screenshots"))
