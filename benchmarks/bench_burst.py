"""Sixty readers at once: is the server still answering its health check, and does its memory
come back?

Starts ``inference-lab serve`` (warm-up included) on a free loopback port and, once it
answers, sends ``--readers`` page requests at the same moment, each as a reader's browser
would without drawing anything: the page's HTTP ``GET /?view=…`` (pages cycled through
``--pages``; a reader who gets the server's waiting page asks for its turn and reloads, as the
waiting page's script does), then the page's websocket, which asks for the page's Bokeh
document (``PULL-DOC-REQ``). A reader's page is *ready* when that document has arrived;
the reader then sends Bokeh's ``document_ready`` event, as a browser does once it has drawn
the page, and closes its websocket :data:`STAY_S` later. Requests carry ``Sec-Fetch-Dest:
document``, as a browser's navigation does (``--client script``: plain GETs, as a script or
``curl`` sends them, which the server's page gate did not count before issue 38).
Throughout, ``/liveness`` is polled every :data:`POLL_S` (a new connection each time, as a
health check does) with a :data:`LIVENESS_TIMEOUT_S` limit, and the server's resident memory
(RSS of its process tree, MB) is sampled.

Printed and written to ``--json FILE``: pages served, median / slowest page-ready time,
``/liveness`` answers during the burst (p50, p99, slowest; a request that timed out counts as
its timeout), RSS at start, at its peak and ``--settle`` seconds after the last page was
ready. One run measures one server configuration (``--num-procs``, ``--num-threads``,
``--pages-at-once``). Results: ``benchmarks/results/burst-*.json``.

Usage::

    python benchmarks/bench_burst.py [--readers 60] [--pages decode,memory,…]
        [--num-procs 1] [--num-threads N] [--pages-at-once N] [--client browser|script]
        [--settle 60] [--json FILE]
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
from pathlib import Path
from urllib.parse import urlsplit

import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parents[1]
POLL_S = 0.2
"""Interval between two ``/liveness`` requests, s."""
LIVENESS_TIMEOUT_S = 30.0
"""Longest wait for one ``/liveness`` answer, s (a health check's would be a few seconds)."""
PAGE_TIMEOUT_S = 240.0
"""Longest wait for one reader's page (HTTP and document), s."""
PAGES = "decode,memory,tp,precision,prefill,prefix,context,grid,"
"""Pages the readers cycle through ('' is the landing page)."""
STAY_S = 1.0
"""Seconds a reader keeps its websocket open after its page is ready."""
READY_EVENT = {"events": [{"kind": "MessageSent", "msg_type": "bokeh_event",
                           "msg_data": {"type": "event", "name": "document_ready",
                                        "values": {"type": "map", "entries": []}}}]}
"""Bokeh's ``document_ready`` event as BokehJS sends it once a page is drawn."""
WAITING = re.compile(r'const reader = "([A-Za-z0-9_-]+)"')
"""The reader id in the server's waiting page (``apps/ui/server/waiting_page.py``)."""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, MB."""
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 1e6


def websocket_url(page_url: str) -> str:
    """The websocket a browser opens for the page at ``page_url``: BokehJS takes the page's
    own path (``/?view=decode`` -> ``/ws``). Until 2026-12-06 this benchmark opened
    ``/inference_lab/ws``, the same app under another path, whose server has no session of
    that id and so built every reader's page a second time (0.45 s of server CPU instead of
    0.08 s, and a second document)."""
    parts = urlsplit(page_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/ws"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def fetch(client: AsyncHTTPClient, url: str, **kwargs):
    try:
        return await client.fetch(url, raise_error=False, **kwargs)
    except HTTPClientError as error:  # pragma: no cover - raise_error=False returns it
        return error.response


async def reader(client: AsyncHTTPClient, base: str, page: str,
                 navigation: bool = True) -> dict:
    """One reader: the page's HTML (through the waiting page if the server sends it), then its
    document over the websocket. Seconds to each, or the error. ``navigation``: the request
    says it is a browser's navigation (``Sec-Fetch-Dest: document``), else it is a plain GET
    as a script sends it."""
    start = time.monotonic()
    url = f"{base}/?view={page}" if page else f"{base}/"
    headers = {"Sec-Fetch-Dest": "document"} if navigation else {}
    waited = False
    try:
        for _ in range(20):
            response = await fetch(client, url, headers=headers, request_timeout=PAGE_TIMEOUT_S)
            html = response.body.decode(errors="replace") if response.body else ""
            if response.code != 200:
                return {"page": page, "error": f"HTTP {response.code}"}
            waiting = WAITING.search(html)
            if not waiting:
                break
            waited = True
            reader_id = waiting.group(1)
            await fetch(client, url, headers={"X-Inference-Lab-Turn": reader_id},
                        request_timeout=PAGE_TIMEOUT_S)
            headers = {"Sec-Fetch-Dest": "document",
                       "Cookie": f"inference_lab_turn_{reader_id}=1"}
        html_s = time.monotonic() - start
        token = re.search(r'"token":\s*"([^"]+)"', html)
        if token is None:
            return {"page": page, "error": "no session token in the page"}
        request = HTTPRequest(websocket_url(url), headers={"Origin": base},
                              request_timeout=PAGE_TIMEOUT_S)
        connection = await websocket_connect(request, subprotocols=["bokeh", token.group(1)])
        try:
            async def message() -> dict:
                header = json.loads(await connection.read_message())
                for _ in range(2 + 2 * header.get("num_buffers", 0)):
                    await connection.read_message()
                return header

            await asyncio.wait_for(message(), PAGE_TIMEOUT_S)  # ACK
            for part in ({"msgid": "1", "msgtype": "PULL-DOC-REQ"}, {}, {}):
                await connection.write_message(json.dumps(part))
            header = await asyncio.wait_for(message(), PAGE_TIMEOUT_S)
            ready_s = time.monotonic() - start
            # What a browser says once it has drawn the page (the server's page gate then
            # gives the load's place to the next reader); the reader stays a moment.
            for part in ({"msgid": "2", "msgtype": "PATCH-DOC"}, {}, READY_EVENT):
                await connection.write_message(json.dumps(part))
            await asyncio.sleep(STAY_S)
        finally:
            connection.close()
        if header.get("msgtype") != "PULL-DOC-REPLY":
            return {"page": page, "error": f"websocket answered {header.get('msgtype')}"}
        return {"page": page, "html_s": round(html_s, 3), "ready_s": round(ready_s, 3),
                "waited": waited}
    except Exception as error:  # one reader's failure is a figure, not a crash
        return {"page": page, "error": f"{type(error).__name__}: {error}"[:200]}


async def poll_liveness(base: str, stop: asyncio.Event, samples: list) -> None:
    """``/liveness`` every :data:`POLL_S` until ``stop``; appends ``(t, seconds, ok)``."""
    client = AsyncHTTPClient(force_instance=True, max_clients=4)
    while not stop.is_set():
        started = time.monotonic()
        try:
            response = await client.fetch(f"{base}/liveness", raise_error=False,
                                          request_timeout=LIVENESS_TIMEOUT_S,
                                          headers={"Connection": "close"})
            ok = response.code == 200
        except Exception:  # a timeout is a sample
            ok = False
        took = time.monotonic() - started
        samples.append((started, took if ok else max(took, LIVENESS_TIMEOUT_S), ok))
        await asyncio.sleep(max(0.0, POLL_S - took))
    client.close()


async def burst(base: str, pid: int, readers: int, pages: list[str], settle: float,
                navigation: bool = True) -> dict:
    AsyncHTTPClient.configure(None, max_clients=readers + 10)
    client = AsyncHTTPClient()
    rss_start = rss_mb(pid)
    stop = asyncio.Event()
    samples: list = []
    poller = asyncio.create_task(poll_liveness(base, stop, samples))
    peak = [rss_start]

    async def sample_rss() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    await asyncio.sleep(1.0)
    start = time.monotonic()
    results = await asyncio.gather(*(reader(client, base, pages[i % len(pages)], navigation)
                                     for i in range(readers)))
    end = time.monotonic()
    during = [took for t, took, _ in samples if start <= t <= end]
    await asyncio.sleep(settle)
    rss_after = rss_mb(pid)
    stop.set()
    await poller
    await sampler
    ready = [r["ready_s"] for r in results if "ready_s" in r]
    return {
        "readers": readers, "pages_served": len(ready),
        "errors": [r for r in results if "error" in r][:10],
        "waited_in_line": sum(1 for r in results if r.get("waited")),
        "page_ready_median_s": round(statistics.median(ready), 2) if ready else None,
        "page_ready_slowest_s": round(max(ready), 2) if ready else None,
        "html_median_s": round(statistics.median(r["html_s"] for r in results
                                                 if "html_s" in r), 2) if ready else None,
        "burst_s": round(end - start, 2),
        "liveness_during_burst": {
            "requests": len(during), "failed": sum(1 for t, _, ok in samples
                                                   if start <= t <= end and not ok),
            "p50_s": round(percentile(during, 50), 3), "p99_s": round(percentile(during, 99), 3),
            "slowest_s": round(max(during), 3) if during else None},
        "rss_mb": {"start": round(rss_start, 1), "peak": round(peak[0], 1),
                   f"{settle:g}_s_after": round(rss_after, 1),
                   "after_vs_start": round(rss_after / rss_start, 3)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=60)
    parser.add_argument("--pages", default=PAGES, help="comma-separated ?view= values")
    parser.add_argument("--num-procs", type=int, default=1)
    parser.add_argument("--num-threads", type=int, default=None,
                        help="panel serve --num-threads (passed after --)")
    parser.add_argument("--pages-at-once", type=int, default=None)
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds after the burst at which RSS is read again")
    parser.add_argument("--client", choices=["browser", "script"], default="browser",
                        help="browser: requests say Sec-Fetch-Dest: document, as a browser's "
                        "navigation does (the default); script: plain GETs")
    parser.add_argument("--label", default="", help="a note kept in the JSON")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)

    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1",
           "--num-procs", str(args.num_procs)]
    if args.pages_at_once is not None:
        cmd += ["--pages-at-once", str(args.pages_at_once)]
    if args.num_threads is not None:
        cmd += ["--", "--num-threads", str(args.num_threads)]
    log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        import urllib.request

        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise SystemExit(f"server did not start: {log.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/liveness", timeout=5), \
                        urllib.request.urlopen(f"{base}/?view=decode", timeout=60):
                    break
            except OSError:
                time.sleep(0.5)
        time.sleep(3)
        figures = asyncio.run(burst(base, proc.pid, args.readers, args.pages.split(","),
                                    args.settle, args.client == "browser"))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.seek(0)
        text = log.read().decode(errors="replace")
        log.close()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    figures = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
               "label": args.label, "cores": os.cpu_count(),
               "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
               "client": args.client,
               "server": {"num_procs": args.num_procs, "num_threads": args.num_threads,
                          "pages_at_once": args.pages_at_once},
               **figures, "server_tracebacks": text.count("Traceback")}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
