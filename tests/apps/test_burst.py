"""Many readers at once (issue 38 item 1): the server keeps answering ``/liveness`` while it
builds a burst of pages, and serves every page (HTTP, then the page's document over its
websocket). The same measurement at 60 readers is ``benchmarks/bench_burst.py``."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

from lab_browser import app_errors, free_port, start_server, stop_server

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_burst.py"
READERS = 12


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_burst", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_liveness_answers_within_a_second_while_a_dozen_pages_load():
    bench = load_bench()
    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1"]
    proc = start_server(cmd, port, path="/liveness")
    try:
        figures = asyncio.run(bench.burst(f"http://127.0.0.1:{port}", proc.pid, READERS,
                                          ["decode", "memory", "tp", "grid"], settle=0))
    finally:
        log = stop_server(proc)
    assert figures["pages_served"] == READERS, figures["errors"]
    live = figures["liveness_during_burst"]
    assert live["failed"] == 0 and live["requests"] >= 3, live
    assert live["p99_s"] < 1.0, figures
    assert app_errors(log) == [], log
