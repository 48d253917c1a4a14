"""The grid explorer on the ``large`` preset (2.06×10^8 cells) in headless Chromium.

Serves the lab with ``--datasets DIR`` (``DIR/large.zarr`` must exist: compute it once with
``inference-lab sweep --grid large --experiment decode --out DIR/large.zarr --scheduler
threads``, ~40 s and 1.9 GB; not committed), opens ``?view=grid&dataset=large`` and measures:

* **redraw**: from a selector or axis change (the click event on a dropdown option; the
  dropdown is opened before) to the first animation frame whose heatmap data holds the new
  slice, timed in the page, as median and p90 over
  ``--changes`` changes cycling precision, GPU, model and the axes (batch, context, tp);
* **query**: choosing "the whole dataset at this model" as the query's scope (the best cells
  and the Pareto frontier over one model's 1.2×10^7 cells) until the query's summary (the
  text inside the Markdown pane's shadow root, ``.lab-grid-summary p``) changes, and whether
  the busy note showed meanwhile;
* **rss**: the server process's resident memory after all of it (``VmRSS``).

Usage: ``python benchmarks/bench_grid.py DIR [--changes 20] [--json FILE]``.
"""

from __future__ import annotations

import argparse
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

from playwright.sync_api import expect, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps
from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS  # one definition of the browser

SIGNATURE = """() => { let last = null;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.type === 'ColumnDataSource' && m.data.step_time_s) last = m;
  if (last === null) return null;
  const first = (k) => (k in last.data ? Array.from(last.data[k]).slice(0, 50) : null);
  return JSON.stringify([last.id, first('_x'), first('_y'), first('step_time_s')]); }"""
"""What identifies the heatmap drawn last (its model id, the first 50 cells' axis labels and
values: the heatmap is updated in place, and when a layout change makes a new one the
document keeps the old models, so the newest source is the one on screen)."""

BUSY_WATCH = """() => { window.__busySeen = false; clearInterval(window.__busyTimer);
  window.__busyTimer = setInterval(() => { for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.visible && Array.isArray(m.css_classes) && m.css_classes.includes('lab-busy-note'))
        window.__busySeen = true; }, 20); }"""


def described(store: Path) -> str:
    """The store's dimensions, cells and chunks, as the results file records them."""
    import xarray as xr

    ds = xr.open_zarr(store)
    sizes = " x ".join(f"{n} {d}" for d, n in ds.sizes.items())
    cells = 1
    for n in ds.sizes.values():
        cells *= n
    chunks = "x".join(str(c[0]) for c in ds.chunks.values())
    return f"large preset: {sizes} ({cells:.3g} cells), chunks of {chunks}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid``, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def choose(page, name: str, option_text: str) -> None:
    """Open the dropdown of input ``name`` and click the option reading ``option_text``."""
    pick(page, name, option_text)()


def pick(page, name: str, option_text: str):
    """Open the dropdown of input ``name`` and wait for its option reading ``option_text``;
    returns the click on that option (the change itself)."""
    page.locator(f".lab-grid-{name} [role=combobox]").first.click()
    option = page.locator("li").filter(has_text=option_text).first
    try:
        option.wait_for(state="visible", timeout=10_000)
        page.wait_for_timeout(400)  # the menu's opening transition
    except Exception:
        page.screenshot(path="/tmp/gridlab-bench-fail.png", full_page=True)
        raise
    return lambda: option.click(timeout=10_000)


WATCH_CHANGE = """(before) => { window.__clicked = null; window.__shown = null;
  document.addEventListener('click', () => { window.__clicked = performance.now(); },
                            {capture: true, once: true});
  const frame = () => { const s = (SIGNATURE)();
    if (window.__clicked !== null && s !== null && s !== before) {
      window.__shown = performance.now(); return; }
    requestAnimationFrame(frame); };
  requestAnimationFrame(frame); }""".replace("SIGNATURE", SIGNATURE)
"""In the page: the time of the next click, and of the first animation frame after it whose
heatmap holds other data than ``before``."""


def timed_change(page, prepare) -> tuple[float, float]:
    """Seconds from a change to the heatmap showing other data: in the page (from the click
    event on the option ``prepare()`` made ready, the dropdown opened before, to the first
    animation frame with the new data) and as Playwright sees it (from asking for the click,
    which itself takes 50-200 ms, to its polling seeing the new data)."""
    before = page.evaluate(SIGNATURE)
    action = prepare()
    page.evaluate(WATCH_CHANGE, before)
    start = time.perf_counter()
    action()
    page.wait_for_function("() => window.__shown !== null", timeout=60_000, polling=20)
    wall = time.perf_counter() - start
    in_page = page.evaluate("() => (window.__shown - window.__clicked) / 1000")
    return in_page, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", help="folder holding large.zarr")
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
    server = subprocess.Popen([sys.executable, "-m", "lab", "serve", "--port", str(port),
                               "--address", "127.0.0.1", "--datasets", args.datasets],
                              stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/liveness", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    results: dict = {"load_average_before": os.getloadavg()}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            start = time.perf_counter()
            page.goto(base + "/?view=grid&dataset=large", timeout=120_000)
            page.wait_for_function(f"() => ({SIGNATURE})() !== null", timeout=120_000)
            results["first_load_s"] = round(time.perf_counter() - start, 3)
            steps = [
                ("precision fp8", lambda: pick(page, "precision", "fp8")),
                ("gpu H200", lambda: pick(page, "gpu", "H200")),
                ("x context", lambda: pick(page, "x", "[context]")),
                ("model Llama 3.1 70B", lambda: pick(page, "model", "Llama 3.1 70B")),
                ("y tp", lambda: pick(page, "y", "[tp]")),
                ("precision bf16", lambda: pick(page, "precision", "bf16")),
                ("x batch", lambda: pick(page, "x", "[batch]")),
                ("gpu H100 SXM", lambda: pick(page, "gpu", "H100 SXM")),
                ("y context", lambda: pick(page, "y", "[context]")),
                ("model Llama 3.1 8B", lambda: pick(page, "model", "Llama 3.1 8B")),
            ]
            times = []
            for k in range(args.changes):
                label, action = steps[k % len(steps)]
                times.append((label, *timed_change(page, action)))
                page.wait_for_timeout(300)
            seconds = sorted(t for _, t, _ in times)
            walls = sorted(w for _, _, w in times)
            results["redraw"] = {
                "changes": len(seconds),
                "median_ms": round(statistics.median(seconds) * 1e3, 1),
                "p90_ms": round(seconds[int(0.9 * (len(seconds) - 1))] * 1e3, 1),
                "each_ms": [(label, round(t * 1e3, 1)) for label, t, _ in times],
                "playwright_median_ms": round(statistics.median(walls) * 1e3, 1),
                "playwright_p90_ms": round(walls[int(0.9 * (len(walls) - 1))] * 1e3, 1)}
            print(json.dumps(results["redraw"]), flush=True)
            summary = page.locator(".lab-grid-summary p").first
            expect(summary).to_contain_text("cells are valid", timeout=60_000)
            before = summary.inner_text()
            page.evaluate(BUSY_WATCH)
            start = time.perf_counter()
            choose(page, "scope", "at this model")
            expect(summary).not_to_have_text(before, timeout=60_000)
            results["query_one_model"] = {
                "seconds": round(time.perf_counter() - start, 3),
                "summary": summary.inner_text(),
                "busy_note_seen": page.evaluate("() => window.__busySeen")}
            results["server_rss_mb"] = round(rss_mb(server.pid), 1)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    results["dataset"] = described(Path(args.datasets) / "large.zarr")
    results["machine"] = f"{os.cpu_count()} cores"
    results["load_average_after"] = os.getloadavg()
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
