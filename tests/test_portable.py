"""Portability: nothing in ``lab`` or ``sweeps`` needs a POSIX-only module or call.

The data-directory lock is :mod:`filelock` (``fcntl`` is POSIX-only), a writer's liveness is
:mod:`psutil` (``os.kill(pid, 0)`` kills the process on Windows), and the cache directory of a
regular install is :mod:`platformdirs`' user cache directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lab.shipped import PACKAGED_TRACE, REPO_TRACE, packaged_file
from sweeps.store import _pid_alive

REPO = Path(__file__).resolve().parents[1]


def test_lab_imports_and_locks_without_fcntl(tmp_path):
    code = ("import sys; sys.modules['fcntl'] = None\n"
            "import lab, sweeps.datasets, sweeps.store\n"
            "from pathlib import Path\n"
            f"with sweeps.datasets._lock(Path({str(tmp_path / 'x.zarr')!r})):\n"
            "    print('locked')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    assert out == "locked\n"


def test_pid_alive_uses_psutil():
    assert _pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not _pid_alive(child.pid)


def test_regular_install_caches_in_platformdirs_user_cache(monkeypatch, tmp_path):
    from platformdirs import user_cache_dir

    import sweeps.paths as paths

    monkeypatch.delenv(paths.ENV_VAR, raising=False)
    monkeypatch.setattr(paths, "REPO_ROOT", tmp_path)           # no pyproject.toml: not a clone
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert paths.data_dir() == Path(user_cache_dir("inference-lab", appauthor=False)) / "grids"
    if sys.platform.startswith("linux"):
        assert paths.data_dir() == tmp_path / "cache" / "inference-lab" / "grids"


def test_packaged_trace_is_the_authored_trace():
    """The wheel's copy of the default trace is byte-identical to the repository's."""
    assert packaged_file(*PACKAGED_TRACE).read_bytes() == REPO_TRACE.read_bytes()
