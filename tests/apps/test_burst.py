"""Many readers at once (issue 38 item 1): the server keeps answering ``/liveness`` while it
builds a burst of pages, and serves every page (HTTP, then the page's document over its
websocket). The same measurement at 60 readers is ``benchmarks/bench_burst.py``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
from pathlib import Path

import pytest
from lab_browser import server_log

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_burst.py"
READERS = 10


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_burst", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The shared server's start-up polls it with urllib, whose refused connections may leave a
# socket for the garbage collector (a ResourceWarning reported at this test's setup).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_liveness_answers_within_a_second_while_ten_pages_load(lab_server):
    """Ten readers open pages at once on the suite's shared server; ``/liveness`` keeps
    answering while the pages build: its slowest answer well under the readers' median wait
    for a page (before issue 38 every page was built on the event loop, so a health check
    waited behind whole builds: p99 2.5 s with twelve readers). A ratio, not a fixed second,
    so a busy machine slows both sides alike; the second itself is measured by
    ``benchmarks/bench_burst.py`` (docs/operations.md)."""
    base, proc = lab_server
    before = len(server_log(proc))
    burst = load_bench().burst(base, proc.pid, READERS, ["decode", "memory", "tp", "grid"],
                               settle=0, navigation=False)
    # on a thread of its own: a browser test earlier in this worker may keep a loop running here
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        figures = pool.submit(asyncio.run, burst).result()
    print(figures)
    assert figures["pages_served"] == READERS, figures["errors"]
    live = figures["liveness_during_burst"]
    assert live["failed"] == 0 and live["requests"] >= 3, live
    assert live["p99_s"] < 0.5 * figures["page_ready_median_s"], figures
    assert "Traceback" not in server_log(proc)[before:]
