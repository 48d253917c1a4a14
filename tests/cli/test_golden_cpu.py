"""The served golden outputs do not depend on the CPU's BLAS kernel (issue 41).

Experiment 11 fits its coefficients by least squares; a BLAS call there gave fitted values whose
last digits depended on the kernel OpenBLAS selects for the CPU, so a fresh clone on another
machine failed ``served-default-json``. The fit (:func:`lab.served.gap.nnls`) now sums with
:func:`math.fsum` and solves in Python floats. Here the recorded served case is rendered in
subprocesses with OpenBLAS forced onto two kernels other than this machine's (run side by side,
about 10 s of wall time on two cores) and must be byte identical to the recording.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golden_run import golden_path

HERE = Path(__file__).resolve().parent
CORETYPES = ("Prescott", "Sandybridge")
"""OpenBLAS kernels forced in the subprocesses (SSE3-era and AVX, unlike a modern host's)."""
SERVED_CASES = ("served-default-json",)
"""The served recordings re-rendered (the JSON holds every fitted digit the text rounds)."""
SCRIPT = """
import sys
sys.path[:0] = [{here!r}, {repo!r}]
from golden_cases import CASES
from golden_run import render
for name, argv, stdin in CASES:
    if name in {cases!r}:
        sys.stdout.write(name + "\\0" + render(argv, stdin) + "\\0")
"""


def test_served_goldens_are_the_same_on_other_blas_kernels():
    code = SCRIPT.format(here=str(HERE), repo=str(HERE.parents[1]), cases=SERVED_CASES)
    procs = {core: subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "OPENBLAS_CORETYPE": core, "OPENBLAS_NUM_THREADS": "1"})
        for core in CORETYPES}
    for core, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        parts = out.decode("utf-8").split("\0")
        got = dict(zip(parts[0::2], parts[1::2], strict=False))
        assert sorted(got) == sorted(SERVED_CASES), core
        for name in SERVED_CASES:
            assert got[name] == golden_path(name).read_text(encoding="utf-8"), (core, name)
