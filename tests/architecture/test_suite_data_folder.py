"""The test suite keeps off the user's data: its grids go to a folder of its own run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sweeps.paths import REPO_ROOT, data_dir


def test_the_suite_computes_its_grids_in_a_folder_of_its_own_run():
    """A user's own sweep under a default name in ``datasets/grids`` (reported as stale by
    design) made the served lab's grid pages fail the suite, and the suite's first-use grids
    were written into the user's folder: the run's data folder is a new temporary one, the
    same for every worker (the served labs and their subprocesses inherit it)."""
    folder = data_dir().resolve()
    assert folder != (REPO_ROOT / "datasets" / "grids").resolve()
    assert folder.is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert folder.name.startswith("inference-lab-test-data-")
    assert Path(os.environ["INFERENCE_LAB_DATA"]).resolve() == folder
