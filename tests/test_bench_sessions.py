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


LAUNCHER = "import subprocess, sys\nsys.stdin.readline()\nsubprocess.run(sys.argv[1:])\n"
"""Starts its arguments as a command once a line arrives on its standard input."""


def cpu_split_while(command: list[str]) -> dict:
    """The benchmark's CPU split while ``command`` runs beside a sleeping stand-in server, read
    as the burst's sampler reads it (every 50 ms until the command has ended).

    The benchmark counts every child of its own process as the browser's; here that parent is a
    launcher holding only ``command``, so processes the test worker runs for other tests (a
    served app of a session fixture) are not counted."""
    bench = load_bench()
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, *command],
                                stdin=subprocess.PIPE)
    try:
        split = bench.CpuSplit(psutil.Process(server.pid), psutil.Process(launcher.pid))
        split.start()
        launcher.stdin.write(b"go\n")
        launcher.stdin.close()
        while launcher.poll() is None:
            split.sample()
            time.sleep(0.05)
        return split.stop()  # the process has ended: only the readings taken before count
    finally:
        for proc in (server, launcher):
            proc.kill()
            proc.wait()


def test_an_ended_browser_process_still_counts():
    cpu = cpu_split_while([sys.executable, "-c", BURN.format(s=0.6)])
    assert 0.4 <= cpu["chromium"] <= 1.5
    assert cpu["server"] < 0.3
    assert cpu["other_processes"] >= 0


def test_a_reaped_child_is_not_counted_twice():
    """The parent's reaped-children CPU is not added to the child's own readings."""
    cpu = cpu_split_while([sys.executable, "-c", "import subprocess, sys, time\n"
                           f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.6)!r}])\n"
                           "time.sleep(1.0)\n"])
    assert 0.4 <= cpu["chromium"] <= 1.0  # 0.6 s once (twice would be 1.2 s or more)
