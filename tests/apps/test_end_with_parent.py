"""``apps/ui/server/end_with_parent.py`` in a process of its own: a process Tornado forked asks
Linux for SIGTERM when its parent ends, and before any fork (``--num-procs 0``) every process
forked afterwards asks. Read back with ``prctl(PR_GET_PDEATHSIG)``; the served case (a server of
two processes stopped with SIGTERM) is in ``test_app_serve.py``."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

READ = """
import ctypes, ctypes.util, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
def asked():
    sig = ctypes.c_int(-1)
    libc.prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
    return sig.value
"""


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", READ + code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_process_tornado_forked_asks_at_once():
    assert run("""
import tornado.process
from apps.ui.server.end_with_parent import end_with_parent
print(asked())
tornado.process._task_id = 0  # as fork_processes sets it in each child
end_with_parent()
print(asked())
""") == ["0", str(int(signal.SIGTERM))]


def test_before_any_fork_every_process_forked_afterwards_asks():
    """``--num-procs 0``: Panel runs the setup once, before Tornado forks."""
    assert run("""
from apps.ui.server.end_with_parent import end_with_parent
end_with_parent()
print(asked())  # the process that will fork is left alone
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, str(asked()).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read, 16).decode())
""") == ["0", str(int(signal.SIGTERM))]
