"""The code base is ruff-clean."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    assert ruff, "ruff is part of the test extras; install with pip install -e '.[test]'"
    done = subprocess.run([ruff, "check", "lab", "sweeps", "datasets", "apps", "tests", "docs",
                           "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
