"""The session benchmark's CPU split counts processes that end before the burst does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sessions.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_sessions", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
"""A child that spends ``s`` CPU seconds, then exits."""


def test_an_ended_browser_process_still_counts():
    bench = load_bench()
    me = psutil.Process()
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        split = bench.CpuSplit(psutil.Process(server.pid), me)
        split.start()
        renderer = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.6)])
        while renderer.poll() is None:  # the burst's sampler, reading while the page is open
            split.sample()
            time.sleep(0.05)
        cpu = split.stop()  # the process has ended: only the readings taken before count
    finally:
        server.kill()
        server.wait()
    assert 0.4 <= cpu["chromium"] <= 1.5
    assert cpu["server"] < 0.3
    assert cpu["other_processes"] >= 0
