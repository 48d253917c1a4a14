"""A server process forked by ``--num-procs`` ends when the process that forked it ends.

With ``inference-lab serve --num-procs N`` (N ≠ 1), Bokeh's server forks its processes through
Tornado (``tornado.process.fork_processes``) and the first process only waits on them. Stopped
with SIGTERM (``kill``, a service manager, a container runtime), that first process ended and
its children went on serving on the port, orphaned, until killed one by one. Each forked
process now asks Linux to send it SIGTERM when its parent ends (``prctl(PR_SET_PDEATHSIG)``),
so stopping the server's process stops the server:

- with N > 1 Panel runs the setup script in each forked process, which asks at once;
- with N = 0 (one process per CPU) Panel runs it once, before the fork, so the request is
  registered to run in every process forked afterwards (``os.register_at_fork``).

A server of one process forks nothing, and its own parent (a shell that may exit while the
server should go on) is left alone. Linux sends the signal when the *thread* that forked a
process ends: Tornado forks from the main thread, which lasts as long as the server.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when its parent ends (``<linux/prctl.h>``)."""


def ask_for_sigterm_when_parent_ends() -> bool:
    """This process gets SIGTERM when its parent ends (Linux); whether that was set up."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0


def end_with_parent() -> None:
    """In a process Tornado forked: ask now. Before any fork (``--num-procs 0``, or a server of
    one process): ask in each process forked from here on (Tornado's; a server of one process
    forks none)."""
    from tornado.process import task_id

    if task_id() is not None:
        ask_for_sigterm_when_parent_ends()
    elif sys.platform.startswith("linux"):
        os.register_at_fork(after_in_child=ask_for_sigterm_when_parent_ends)
