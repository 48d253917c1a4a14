"""A server process forked by ``--num-procs`` ends when the process that forked it ends.

With ``inference-lab serve --num-procs N`` (N ≠ 1), Bokeh's server forks N processes through
Tornado (``tornado.process.fork_processes``) and the first process only waits on them. Stopped
with SIGTERM (``kill``, a service manager, a container runtime), that first process ended and
its children went on serving on the port, orphaned, until killed one by one. Each child now
asks Linux to send it SIGTERM when its parent ends (``prctl(PR_SET_PDEATHSIG)``), so stopping
the server's process stops the server. A server of one process is left as it is: its parent
is whatever started it (a shell that may exit while the server should go on).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when its parent ends (``<linux/prctl.h>``)."""


def end_with_parent() -> bool:
    """In a process forked by ``--num-procs``, have SIGTERM sent to it when its parent ends
    (and end now if the parent is already gone); whether that was set up (never outside
    Linux, never in a server of one process)."""
    from tornado.process import task_id

    if task_id() is None or not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        return False
    if os.getppid() == 1:  # the parent ended before the request was made
        os.kill(os.getpid(), signal.SIGTERM)
    return True
