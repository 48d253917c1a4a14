"""What a page load costs the browser and the server, on a reader's repeat visits.

A reader moves between the lab's pages in one tab: after the first page, the browser's cache
holds the lab's scripts. For each page of ``--pages``, this loads it ``--loads`` times in one
headless Chromium tab (each load after ``about:blank``) and reports, per page, the medians over
the loads after the first:

* ``wall_s``: from ``page.goto`` until Bokeh reports the page's document idle (its console
  message ``document idle``), s;
* ``chromium_cpu_s``: CPU time of every Chromium process over that span (user + system), s;
* ``server_cpu_s``: the same for the served lab's process, s.

Against ``inference-lab serve`` of this checkout on a free loopback port (or ``--url`` of a
running lab, e.g. an older checkout's, to compare two trees under the same conditions: run
both, alternating). Requests that would leave loopback fail inside Chromium.

Usage: ``python benchmarks/bench_page_load.py [--pages decode,plan,grid] [--loads 8]
[--url http://127.0.0.1:5006] [--json F]``. Needs Debian's Chromium at ``/usr/bin/chromium``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps
from benchmarks.bench_ui import free_port, start_lab
from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS

IDLE = "document idle"
"""Bokeh's console message once a page's document has rendered and settled."""


def cpu_s(processes: list[psutil.Process]) -> float:
    """User + system CPU time of ``processes`` (those that have ended count 0), s."""
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def chromium_processes() -> list[psutil.Process]:
    """Every Chromium process this benchmark started (children of its Playwright driver)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "chrom" in (p.name() or "").lower()]


def load_once(page, url: str, server: psutil.Process | None, idle: list) -> dict:
    """One load of ``url`` in ``page``: wall time to document idle and CPU of each side
    (``idle`` collects the page's idle messages)."""
    idle.clear()
    chromium = chromium_processes()
    c0, s0 = cpu_s(chromium), cpu_s([server]) if server else 0.0
    t0 = time.perf_counter()
    page.goto(url)
    deadline = time.monotonic() + 120
    while not idle and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    wall = time.perf_counter() - t0
    page.wait_for_load_state("networkidle")
    out = {"wall_s": wall, "chromium_cpu_s": cpu_s(chromium_processes()) - c0,
           "server_cpu_s": (cpu_s([server]) - s0) if server else None}
    page.goto("about:blank")
    return out


def median(loads: list[dict], key: str) -> float | None:
    values = [load[key] for load in loads if load[key] is not None]
    return round(statistics.median(values), 3) if values else None


def run(base: str, pages: list[str], loads: int, server: psutil.Process | None) -> dict:
    results = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_context().new_page()
        idle: list[int] = []
        page.on("console", lambda msg: idle.append(1) if IDLE in msg.text else None)
        load_once(page, f"{base}/", server, idle)  # the landing page fills the cache
        for slug in pages:
            url = f"{base}/?view={slug}"
            measured = [load_once(page, url, server, idle) for _ in range(loads)][1:]
            results[slug] = {key: median(measured, key)
                             for key in ("wall_s", "chromium_cpu_s", "server_cpu_s")}
            print(slug, results[slug], flush=True)
        browser.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default="decode,plan,grid",
                        help="comma-separated page names (?view=…), default decode,plan,grid")
    parser.add_argument("--loads", type=int, default=8, help="loads per page (first not counted)")
    parser.add_argument("--url", help="a running lab's base URL (default: serve this checkout)")
    parser.add_argument("--server-pid", type=int,
                        help="with --url: the server's process id, to count its CPU too")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    proc = None
    if args.url:
        base = args.url.rstrip("/")
        server = psutil.Process(args.server_pid) if args.server_pid else None
    else:
        port = free_port()
        proc = start_lab(port)
        base, server = f"http://127.0.0.1:{port}", psutil.Process(proc.pid)
    try:
        results = run(base, [p for p in args.pages.split(",") if p], args.loads, server)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
