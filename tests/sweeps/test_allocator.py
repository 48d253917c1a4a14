"""The allocator is tuned only where a process exists to compute chunks."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sweeps.allocator as a
from sweeps.build import run_block
{action}
print(a.tune_allocator.cache_info().currsize)
"""


def _tuned_after(action: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHECK.format(action=action)],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_computing_a_grid_in_process_leaves_the_allocator_alone():
    action = ("import lab, tempfile, os\n"
              "os.environ['INFERENCE_LAB_DATA'] = tempfile.mkdtemp()\n"
              "from sweeps.datasets import open_dataset\n"
              "open_dataset('context')")
    assert _tuned_after(action) == "0"
    assert _tuned_after("assert not a.in_dask_worker()") == "0"


def test_a_dask_worker_tunes_its_allocator():
    action = ("from distributed import Client, LocalCluster\n"
              "with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as c, "
              "Client(c) as client:\n"
              "    print(client.submit(a.tune_in_dask_worker).result())")
    assert _tuned_after(action).splitlines()[0] == "True"
