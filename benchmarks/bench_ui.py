"""UI latency of the served lab in headless Chromium.

Measures, against ``inference-lab serve`` on a free loopback port:

* **cards**: from the Enter key that commits a new batch on experiment 1 to the headline cards
  showing the new figures (a ``MutationObserver`` inside the cards' shadow root);
* **repaint**: from the same key press to the first Bokeh ``Figure`` paint whose data holds the
  new current point;
* both as median and p90 over ``--changes`` changes, for 1 session and ``--sessions`` concurrent
  sessions (separate browser contexts, changes interleaved);
* **first load** of the landing page and of experiment 1, each in a fresh browser context
  (empty cache): navigation start to the content visible (landing: the experiment cards;
  experiment 1: the cards and the chart canvas), read inside the page on every animation frame
  (``performance.now()``, whose zero is navigation start). The harness's own wall clock from
  ``page.goto`` until Playwright sees the same elements is reported beside it (``wall``): it
  adds Playwright's polling and messaging, about 0.1–0.3 s here.

Requests that would leave loopback fail inside Chromium (``--host-resolver-rules``), which
costs nothing per request; routing every request through Playwright (as the tests do, to
record what was blocked) adds a round trip to this Python process per file.

Usage: ``python benchmarks/bench_ui.py [--changes 20] [--sessions 4] [--loads 10] [--json F]``;
``--screenshots docs`` instead saves ``docs/screenshot-landing.png`` and ``-batch.png``.
Needs Debian's Chromium at ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.async_api import async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps
from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS  # one definition of the browser

BATCHES = (16, 32, 64, 128, 8, 4, 24, 48, 96, 12)
"""Batch values cycled through; consecutive values always differ."""

HOOKS = """() => {
  window.__t0 = null; window.__cards = null; window.__paint = null; window.__want = null;
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { window.__t0 = performance.now(); window.__cards = null;
                             window.__paint = null; }
  }, true);
  const deep = (root, sel, out) => {
    root.querySelectorAll('*').forEach(el => {
      if (el.matches && el.matches(sel)) out.push(el);
      if (el.shadowRoot) deep(el.shadowRoot, sel, out);
    });
    return out;
  };
  const cards = deep(document, '.lab-cards', [])[0];
  const root = cards.getRootNode();
  const first = () => { const v = deep(root, '.lab-card .value', [])[0]; return v && v.textContent; };
  window.__first = first;
  new MutationObserver(() => {
    if (window.__t0 !== null && window.__cards === null && window.__wantCard !== undefined
        && first() !== window.__wantCard) window.__cards = performance.now();
  }).observe(root, {subtree: true, childList: true, characterData: true});
  const current = () => {
    for (const d of Bokeh.documents) for (const m of d._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.batch && m.data.batch.length === 1)
        return m.data.batch[0];
    return null;
  };
  const seen = new Set();
  const wrap = (v) => {
    if (!v || seen.has(v)) return; seen.add(v);
    if (v.model && v.model.type === 'Figure' && typeof v.paint === 'function') {
      const orig = v.paint.bind(v);
      v.paint = (...a) => { const r = orig(...a);
        if (window.__t0 !== null && window.__paint === null && current() === window.__want)
          window.__paint = performance.now();
        return r; };
    }
    const kids = v.child_views;
    if (kids && kids[Symbol.iterator]) for (const x of kids) wrap(x);
    if (v.renderer_views) for (const x of v.renderer_views.values()) wrap(x);
  };
  for (const r of Array.from(Bokeh.index.roots || Object.values(Bokeh.index))) wrap(r);
  return seen.size;
}"""


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_lab(port: int) -> subprocess.Popen:
    """``inference-lab serve`` (via ``python -m lab``) on ``port``; waits until it answers."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server)
    proc = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--port", str(port),
                             "--address", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError("the lab did not start within 90 s")


def load_summary(loads: list[tuple[float, float]]) -> dict:
    """First load after server start, then median and p90 of all, in-page and wall (s)."""
    def stats(values: list[float]) -> dict:
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        return {"first": round(values[0], 3), "median": round(statistics.median(values), 3),
                "p90": round(p90, 3)}
    return {"in_page": stats([v for v, _ in loads]), "wall": stats([w for _, w in loads])}


def summary(values: list[float]) -> dict:
    """Median and p90 in ms."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered), 1), "p90_ms": round(p90, 1),
            "n": len(ordered)}


VISIBLE = """(selector, needCanvas) => {
  window.__visible = null;
  const deep = (root, sel) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches(sel)) return el;
      if (el.shadowRoot) { const found = deep(el.shadowRoot, sel); if (found) return found; }
    }
    return null;
  };
  const shown = (el) => {
    if (!el) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  };
  let content = false, canvas = !needCanvas;
  const poll = () => {
    content = content || shown(deep(document, selector));
    canvas = canvas || shown(deep(document, 'canvas'));
    if (content && canvas) window.__visible = performance.now();
    else requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}"""
"""Init script: time (ms after navigation start) when ``selector`` (and a canvas) is shown."""


async def open_batch(browser, base: str):
    """A fresh context on experiment 1 with the timing hooks installed."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    await page.goto(f"{base}?view=batch")
    await page.locator(".lab-card .value").first.wait_for()
    await page.wait_for_function("() => Bokeh.documents.length > 0")
    await page.wait_for_timeout(300)
    await page.evaluate(HOOKS)
    return context, page


async def change_batch(page, value: int, old_card: str) -> tuple[float, float]:
    """Type ``value`` into the batch box, press Enter; (cards ms, repaint ms)."""
    await page.evaluate("(a) => { window.__want = a[0]; window.__wantCard = a[1]; }",
                        [value, old_card])
    box = page.locator(".lab-input-batch input").first
    await box.blur()  # pmui's editable slider commits on Enter only after a fresh focus
    await box.click()
    await box.press("Control+A")
    await box.press_sequentially(str(value))
    await box.press("Enter")
    try:
        await page.wait_for_function(
            "() => window.__cards !== null && window.__paint !== null", timeout=30_000)
    except Exception as exc:
        state = await page.evaluate("() => [window.__t0, window.__cards, window.__paint, "
                                    "window.__first(), window.__want]")
        raise RuntimeError(f"batch {value}: no update seen (t0, cards, paint, card, want) = "
                           f"{state}") from exc
    cards, paint, t0 = await page.evaluate("() => [window.__cards, window.__paint, window.__t0]")
    return cards - t0, paint - t0


async def session_loop(page, changes: int, offset: int) -> tuple[list[float], list[float]]:
    """``changes`` batch changes on one page."""
    cards, paints = [], []
    for i in range(changes):
        value = BATCHES[(i + offset) % len(BATCHES)]
        old = await page.evaluate("() => window.__first()")
        c, p = await change_batch(page, value, old)
        cards.append(c)
        paints.append(p)
    return cards, paints


async def first_load(browser, url: str, ready: str) -> tuple[float, float]:
    """(in-page, wall) seconds from navigation to ``ready`` shown, in a fresh context."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    canvas = "batch" in url
    await context.add_init_script(f"({VISIBLE})({json.dumps(ready)}, {json.dumps(canvas)})")
    page = await context.new_page()
    start = time.perf_counter()
    await page.goto(url)
    await page.locator(ready).first.wait_for(state="visible", timeout=30_000)
    if canvas:
        await page.locator("canvas").first.wait_for(state="visible", timeout=30_000)
    wall = time.perf_counter() - start
    await page.wait_for_function("() => window.__visible !== null", timeout=30_000)
    in_page = await page.evaluate("() => window.__visible") / 1000
    await context.close()
    return in_page, wall


IDLE = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
        "Bokeh.documents.every(d => d.is_idle) && !document.querySelector('.pn-loading') && "
        "(document.getElementById('loader') || {style: {}}).style.display !== 'flex'")


async def screenshots(browser, base: str, folder: str) -> list[str]:
    """The landing page and experiment 1 as PNGs in ``folder`` (for the README)."""
    os.makedirs(folder, exist_ok=True)
    saved = []
    for name, url, ready in (("landing", f"{base}/", "a.lab-exp"),
                             ("batch", f"{base}?view=batch", ".lab-card .value")):
        context = await browser.new_context(viewport={"width": 1360, "height": 1240})
        page = await context.new_page()
        await page.goto(url)
        await page.locator(ready).first.wait_for(state="visible")
        await page.wait_for_load_state("networkidle")
        await page.wait_for_function(IDLE)
        path = os.path.join(folder, f"screenshot-{name}.png")
        await page.screenshot(path=path)
        saved.append(path)
        await context.close()
    return saved


async def run(args) -> dict:
    port = free_port()
    proc = start_lab(port)
    base = f"http://127.0.0.1:{port}"
    results: dict = {}
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            if args.screenshots:
                results["screenshots"] = await screenshots(browser, base, args.screenshots)
                await browser.close()
                return results
            loads: dict[str, list[tuple[float, float]]] = {"landing": [], "batch": []}
            for _ in range(args.loads):
                loads["landing"].append(await first_load(browser, f"{base}/", "a.lab-exp"))
                loads["batch"].append(await first_load(browser, f"{base}?view=batch",
                                                       ".lab-card .value"))
            results["first_load_s"] = {k: load_summary(v) for k, v in loads.items()}
            for sessions in (1, args.sessions):
                opened = [await open_batch(browser, base) for _ in range(sessions)]
                per = await asyncio.gather(*[session_loop(page, args.changes, i)
                                             for i, (_, page) in enumerate(opened)])
                cards = [c for cs, _ in per for c in cs]
                paints = [p for _, ps in per for p in ps]
                results[f"{sessions}_session{'s' if sessions > 1 else ''}"] = {
                    "cards": summary(cards), "repaint": summary(paints)}
                for context, _ in opened:
                    await context.close()
            await browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=20, help="changes per session")
    parser.add_argument("--sessions", type=int, default=4, help="concurrent sessions")
    parser.add_argument("--loads", type=int, default=10, help="first loads per page")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--screenshots", metavar="DIR",
                        help="only save the landing and experiment 1 pages as PNGs in DIR")
    args = parser.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        print(f"{CHROMIUM} is missing; install Debian's chromium.", file=sys.stderr)
        return 2
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
