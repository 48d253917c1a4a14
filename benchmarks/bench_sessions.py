"""Sessions of the served lab: memory kept per closed session, and many pages opened at once.

Two measurements against ``inference-lab serve``'s own ``panel serve`` command line
(:func:`cli.serve_cmd.panel_command`, warm-up included) on a free loopback port, driven by
Debian's headless Chromium (one fresh browser context per session, as a new reader would be):

* ``leak``: ``--rounds`` rounds of ``--sessions`` sessions (pages cycled through
  ``--pages``; ``--parallel`` open at a time). Each session loads its page until every Bokeh
  document is idle, then closes. After each round the benchmark waits until the server has
  discarded the closed sessions (its log reports each one destroyed; sessions unused for
  1 s are discarded every second here, instead of the defaults of 15 s and 17 s) and reads
  the server's resident memory (RSS, MB). Printed per round, with the growth per closed
  session and the last round's RSS against the first's. ``--client http`` opens each
  session by the page's HTTP request alone (the server builds the whole page; no browser
  renders it or connects): several times faster, and the server-side cost is the same.
* ``burst``: ``--sessions`` browser contexts open ``--page`` at the same moment. Per page,
  seconds from ``goto`` until its content is shown, checked every :data:`POLL_MS` (landing:
  the experiment cards; experiment pages: the headline cards and a chart canvas), with
  ``--timeout`` as the limit; the 1-minute load average before, at its peak and at the
  end; CPU seconds used meanwhile by the server's processes, by Chromium's (with
  Playwright's driver) and by every other process on the machine, against the core-seconds
  the machine had (cores × wall time), to tell where the time went. Chromium's renderers
  end as their pages close, so CPU is read per process every half second. ``--client
  http`` sends the page requests alone, all at once (the server builds every page; no
  browser runs): the server's share of a burst. A page shown counts from the reader's first
  request: a reader who gets the server's waiting page (``--pages-at-once``) waits on it,
  and its page loads on its turn. Runs of 2026-12-04 (every page, and experiment 1 before
  and after the changes that let its forty load) and of 2026-12-05 (every page, pages
  loading one per core at a time): ``benchmarks/results/``.

Usage::

    python benchmarks/bench_sessions.py leak [--rounds 5] [--sessions 20] [--parallel 2]
                                             [--client browser|http]
    python benchmarks/bench_sessions.py burst [--sessions 40] [--page batch] [--num-procs 1]
                                              [--pages-at-once N] [--client browser|http]

``--json FILE`` also writes the figures to FILE. Needs ``/usr/bin/chromium``; traffic stays on
127.0.0.1 (any other host fails to resolve inside Chromium).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from playwright.async_api import async_playwright

from apps.ui.server.page_gate import LIMIT_ENV, configured_limit
from cli.main import build_parser
from cli.serve_cmd import panel_command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps
from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS  # one definition of the browser

IDLE = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
        "Bokeh.documents.every(d => d.is_idle) && !document.querySelector('.pn-loading')")
"""Every Bokeh document of the page has rendered."""

READY = {"": "a.lab-exp", "grid": ".lab-grid-model", "derivation": "h1", "sources": "h1"}
"""What shows that a page has loaded; experiment pages: their headline cards (and a canvas)."""

SHOWN = """([selectors]) => {
  const visible = (el) => { const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden"; };
  const find = (root, selector) => {
    for (const el of root.querySelectorAll(selector)) if (visible(el)) return true;
    for (const el of root.querySelectorAll("*"))
      if (el.shadowRoot && find(el.shadowRoot, selector)) return true;
    return false; };
  return selectors.every((selector) => find(document, selector)); }"""
"""True once an element matching each selector is visible, in the page or in any shadow root
(Panel renders its panes inside shadow roots)."""

POLL_MS = 250
"""How often a burst page is checked for its content, ms. Checked this way, forty waiting
tabs cost the machine almost nothing; Playwright's own locator wait re-queries each waiting
page on every DOM change and timer, which measured 0.005 of a core per waiting tab (about
20 core-seconds over a 40-page burst, some 8 % of what two cores have in 120 s) that no
reader's browser spends."""

LEAK_PAGES = "batch,memory,,grid,prefill,batch,context,goodput,derivation,batch"
"""Pages the leak rounds cycle through ('' is the landing page)."""

QUICK_CLEANUP = ["--check-unused-sessions", "1000", "--unused-session-lifetime", "1000"]
"""Discard closed sessions within about 2 s (instead of 15–32 s)."""


def server_command(port: int, num_procs: int, extra: list[str]) -> list[str]:
    """``inference-lab serve``'s command line on loopback ``port``, plus ``extra`` flags."""
    args = build_parser().parse_args(["serve", "--port", str(port), "--address", "127.0.0.1",
                                      "--num-procs", str(num_procs)])
    return [*panel_command(args), *extra]


def free_port() -> int:
    """A free loopback port."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(cmd: list[str], port: int, pages_at_once: int | None = None) -> subprocess.Popen:
    """Start the server (``pages_at_once``: its ``--pages-at-once``, None for the default)
    and wait (up to 120 s) until ``/`` answers."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server)
    env = dict(os.environ)
    if pages_at_once is not None:
        env[LIMIT_ENV] = str(pages_at_once)  # what inference-lab serve --pages-at-once sets
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    proc.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited: {log.read().decode(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise TimeoutError("the lab did not start within 120 s")


def tree(proc: psutil.Process) -> list[psutil.Process]:
    """``proc`` and its descendants still alive."""
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def rss_mb(pid: int) -> float:
    """Resident memory of the server's processes, MB."""
    total = 0
    for p in tree(psutil.Process(pid)):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 1e6


def process_cpu(proc: psutil.Process) -> float | None:
    """User + system CPU seconds of one process itself (None once it has exited).

    Not its reaped children's: every process of the tree is read on its own, so adding a
    parent's ``children_*`` times would count a renderer that ended twice (the burst's totals
    then exceeded the core-seconds the machine had)."""
    try:
        t = proc.cpu_times()
    except psutil.NoSuchProcess:
        return None
    return t.user + t.system


def busy_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, every process) since boot."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


class CpuSplit:
    """CPU seconds used by the server's processes, by Chromium's and by everything else on
    the machine between :meth:`start` and :meth:`stop`.

    Chromium starts a renderer per page and ends it when the page closes, so CPU is read per
    process every :data:`CPU_SAMPLE_S` (the last reading of a process that has exited
    counts; at most one interval of its work is missed). A process's CPU before ``start``
    is subtracted.
    """

    def __init__(self, server: psutil.Process, me: psutil.Process) -> None:
        self.server, self.me = server, me
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}

    def _groups(self) -> list[tuple[str, psutil.Process]]:
        ours = tree(self.server)
        served = {p.pid for p in ours}
        try:
            children = self.me.children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        return ([("server", p) for p in ours]
                + [("chromium", p) for p in children if p.pid not in served])

    def sample(self, first: bool = False) -> None:
        """Read every process's CPU now (``first``: the readings to subtract)."""
        for group, proc in self._groups():
            seconds = process_cpu(proc)
            if seconds is None:
                continue
            key = (group, proc.pid)
            if first:
                self.first[key] = seconds
            self.last[key] = seconds

    def start(self) -> None:
        self.machine0 = busy_cpu_seconds()
        self.sample(first=True)

    def stop(self) -> dict:
        """``{"server", "chromium", "other_processes"}`` CPU seconds since :meth:`start`."""
        self.sample()
        machine = busy_cpu_seconds() - self.machine0
        used = {"server": 0.0, "chromium": 0.0}
        for (group, pid), seconds in self.last.items():
            used[group] += seconds - self.first.get((group, pid), 0.0)
        others = max(0.0, machine - used["server"] - used["chromium"])
        return {k: round(v, 1) for k, v in {**used, "other_processes": others}.items()}


CPU_SAMPLE_S = 0.5
"""Interval between per-process CPU readings during a burst, s."""


def live_sessions(proc: subprocess.Popen) -> int:
    """Sessions the server holds now: launched minus destroyed, as its log reports them."""
    log = proc.log  # type: ignore[attr-defined]
    log.flush()
    log.seek(0)
    text = log.read().decode(errors="replace")
    return len(re.findall(r"Session \d+ launching", text)) - len(
        re.findall(r"Session \d+ destroyed", text))


def page_url(base: str, slug: str) -> str:
    return f"{base}/?view={slug}" if slug else f"{base}/"


async def load(browser, base: str, slug: str, timeout_s: float) -> float:
    """Open ``slug`` in a fresh context; seconds until its content shows (inf on timeout)."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = await context.new_page()
        start_t = time.perf_counter()
        deadline_ms = timeout_s * 1000
        try:
            await page.goto(page_url(base, slug), timeout=deadline_ms)
            selectors = [READY[slug]] if slug in READY else [".lab-card .value", "canvas"]
            left = max(1.0, deadline_ms - (time.perf_counter() - start_t) * 1000)
            await page.wait_for_function(SHOWN, arg=[selectors], polling=POLL_MS, timeout=left)
        except Exception:  # a timeout is a result here
            return float("inf")
        return time.perf_counter() - start_t
    finally:
        await context.close()


async def visit(browser, base: str, slug: str) -> None:
    """A session: load ``slug`` until every document is idle, then close the tab."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = await context.new_page()
        await page.goto(page_url(base, slug), timeout=60_000)
        await page.wait_for_function(IDLE, timeout=60_000)
        await page.locator(READY.get(slug, ".lab-card .value")).first.wait_for(timeout=60_000)
    finally:
        await context.close()


def fetch(base: str, slug: str) -> None:
    """A session without a browser: the page's HTTP request, which builds the whole page on
    the server; no websocket follows, so the server discards it as unused."""
    with urllib.request.urlopen(page_url(base, slug), timeout=120) as response:
        response.read()


async def leak(args) -> dict:
    port = free_port()
    proc = start(server_command(port, 1, QUICK_CLEANUP), port)
    base = f"http://127.0.0.1:{port}"
    pages = args.pages.split(",")
    rounds = []
    try:
        start_rss = rss_mb(proc.pid)
        async with async_playwright() as pw:
            browser = (await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                       if args.client == "browser" else None)
            done = 0
            for r in range(args.rounds):
                t0 = time.perf_counter()
                for i in range(0, args.sessions, args.parallel):
                    batch = [pages[(done + k) % len(pages)]
                             for k in range(min(args.parallel, args.sessions - i))]
                    if browser is None:
                        await asyncio.gather(*[asyncio.to_thread(fetch, base, s)
                                               for s in batch])
                    else:
                        await asyncio.gather(*[visit(browser, base, s) for s in batch])
                    done += len(batch)
                    if args.verbose:
                        print(f"  {done} sessions, {time.perf_counter() - t0:.1f} s",
                              flush=True)
                deadline = time.monotonic() + 60
                while live_sessions(proc) and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                await asyncio.sleep(2)
                rounds.append({"round": r + 1, "sessions_closed": done,
                               "live": live_sessions(proc), "rss_mb": round(rss_mb(proc.pid), 1),
                               "seconds": round(time.perf_counter() - t0, 1)})
                print(json.dumps(rounds[-1]), flush=True)
            if browser is not None:
                await browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    first, last = rounds[0]["rss_mb"], rounds[-1]["rss_mb"]
    per = (last - first) / max(1, rounds[-1]["sessions_closed"] - rounds[0]["sessions_closed"])
    return {"client": args.client, "rss_after_start_mb": round(start_rss, 1), "rounds": rounds,
            "growth_per_closed_session_mb": round(per, 3),
            "last_vs_first_round": round(last / first, 3)}


def timed_fetch(base: str, slug: str, timeout_s: float) -> float:
    """Seconds for the page's HTTP request (the server builds the page), inf on timeout."""
    start_t = time.perf_counter()
    try:
        with urllib.request.urlopen(page_url(base, slug), timeout=timeout_s) as response:
            response.read()
    except OSError:
        return float("inf")
    return time.perf_counter() - start_t


async def burst(args) -> dict:
    port = free_port()
    proc = start(server_command(port, args.num_procs, []), port, args.pages_at_once)
    base = f"http://127.0.0.1:{port}"
    server = psutil.Process(proc.pid)
    me = psutil.Process()
    try:
        await asyncio.sleep(5)  # let the load average settle after start-up
        load_before = os.getloadavg()[0]
        async with async_playwright() as pw:
            browser = (await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                       if args.client == "browser" else None)
            split = CpuSplit(server, me)
            split.start()
            peak = [load_before]

            async def sample() -> None:
                while True:
                    peak.append(os.getloadavg()[0])
                    split.sample()
                    await asyncio.sleep(CPU_SAMPLE_S)

            sampler = asyncio.create_task(sample())
            t0 = time.perf_counter()
            if browser is None:
                loop = asyncio.get_running_loop()
                with ThreadPoolExecutor(args.sessions) as pool:  # every request at once
                    times = await asyncio.gather(*[
                        loop.run_in_executor(pool, timed_fetch, base, args.page, args.timeout)
                        for _ in range(args.sessions)])
            else:
                times = await asyncio.gather(*[load(browser, base, args.page, args.timeout)
                                               for _ in range(args.sessions)])
            wall = time.perf_counter() - t0
            sampler.cancel()
            cpu = split.stop()
            if browser is not None:
                await browser.close()
    finally:
        for worker in tree(server)[1:]:  # --num-procs forks workers that outlive the parent
            worker.terminate()
        proc.terminate()
        proc.wait(timeout=20)
    loaded = sorted(t for t in times if t != float("inf"))
    return {
        "client": args.client, "page": args.page or "landing", "sessions": args.sessions,
        "num_procs": args.num_procs, "timeout_s": args.timeout,
        "pages_at_once": (configured_limit() if args.pages_at_once is None
                          else args.pages_at_once),
        "loaded": len(loaded), "timed_out": args.sessions - len(loaded),
        "load_s": ({"median": round(statistics.median(loaded), 1),
                    "p90": round(loaded[round(0.9 * (len(loaded) - 1))], 1),
                    "max": round(loaded[-1], 1)} if loaded else None),
        "wall_s": round(wall, 1),
        "load_average_1min": {"before": round(load_before, 2), "peak": round(max(peak), 2),
                              "end": round(os.getloadavg()[0], 2)},
        "cpu_s": cpu,
        "cpu_s_per_page": {"server": round(cpu["server"] / args.sessions, 2),
                           "chromium": round(cpu["chromium"] / args.sessions, 2)},
        "cores": psutil.cpu_count(),
        "core_seconds_available": round(psutil.cpu_count() * wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["leak", "burst"])
    parser.add_argument("--rounds", type=int, default=5, help="leak: rounds")
    parser.add_argument("--sessions", type=int, default=None,
                        help="sessions per round (leak, default 20) or at once (burst, 40)")
    parser.add_argument("--client", choices=["browser", "http"], default="browser",
                        help="sessions opened by Chromium, or by the page request alone")
    parser.add_argument("--parallel", type=int, default=2, help="leak: sessions open at once")
    parser.add_argument("--pages", default=LEAK_PAGES, help="leak: pages cycled through")
    parser.add_argument("--page", default="batch", help="burst: page opened ('' = landing)")
    parser.add_argument("--num-procs", type=int, default=1, help="burst: server processes")
    parser.add_argument("--timeout", type=float, default=120.0, help="burst: seconds per load")
    parser.add_argument("--pages-at-once", type=int, default=None,
                        help="burst: the server's --pages-at-once (default: the server's own, "
                        "one per core; 0 = no limit)")
    parser.add_argument("--verbose", action="store_true", help="print progress")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        print(f"{CHROMIUM} is missing; install Debian's chromium.", file=sys.stderr)
        return 2
    if args.sessions is None:
        args.sessions = 20 if args.mode == "leak" else 40
    results = asyncio.run(leak(args) if args.mode == "leak" else burst(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
