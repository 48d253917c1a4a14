"""Keep large temporary arrays on the heap while a process computes chunks.

glibc serves every allocation above its mmap threshold (128 KiB at start, adapting upward only
when a larger block is freed) with fresh pages from the kernel, and each page is faulted in
again on first write. A chunk's outputs are ~1 MB arrays allocated and freed over and over, so
without tuning most of the compute time goes to page faults: measured here, the decode grid's
block function runs about 4× faster with the thresholds raised. Memory stays bounded: freed
memory above the trim threshold is still returned to the kernel.

The setting is process-wide, so it is made only where the process exists to compute chunks:
in a Dask worker (:func:`tune_in_dask_worker`, called for every chunk) and in the
``inference-lab sweep`` command's own process. A grid computed in-process by a long-lived
server (the grid explorer's first open) leaves the server's allocator as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

from lab.units import MIB

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 64 * MIB
"""Allocations below this come from the heap (glibc's upper limit for the setting is 32 MiB on
32-bit and 64 MiB-ish in practice on 64-bit builds)."""
TRIM_THRESHOLD_BYTES = 128 * MIB
"""Free heap memory above this is returned to the kernel."""


@cache
def tune_allocator() -> bool:
    """Raise glibc's mmap and trim thresholds once per process; False where not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok_mmap = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    ok_trim = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    return ok_mmap and ok_trim


def in_dask_worker() -> bool:
    """True when the caller runs inside a ``distributed`` worker."""
    if "distributed" not in sys.modules:  # never a worker without it loaded; keep it unloaded
        return False
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


def tune_in_dask_worker() -> bool:
    """:func:`tune_allocator` in a Dask worker (once per worker); nothing elsewhere."""
    return in_dask_worker() and tune_allocator()
