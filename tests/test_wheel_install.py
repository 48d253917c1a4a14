"""The built wheel works outside the repository: one command of each kind from a fresh venv.

The wheel is built from a copy of the source tree (``pip wheel --no-deps
--no-build-isolation``: no network), installed with ``--no-deps`` into a new venv that sees the
test environment's installed dependencies through a ``.pth`` line (not the editable install of
this checkout: a ``.pth`` line adds a directory without running the ``.pth`` files in it), and
run with the working directory, ``HOME`` and the cache directory in a temporary folder. So
every file the commands read must come from the wheel: the default trace, the catalogs, the
measurements of experiment 9, the apps. Marked ``wheel_install`` (about 40 s); CI runs it
with everything else.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheel_install

SKIPPED_NAMES = (".git", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache",
                 ".hypothesis", ".ruff_cache", "test-artifacts", ".venv", "cache")
"""Names not copied from the checkout: caches and build output (and ``datasets/grids``, the
generated data; ``sweeps/grids`` is code)."""


def _skipped(folder: str, names: list[str]) -> set[str]:
    skipped = set(shutil.ignore_patterns(*SKIPPED_NAMES)(folder, names))
    return skipped | ({"grids"} & set(names) if Path(folder).name == "datasets" else set())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    """``(python, bin dir, env, work dir)`` of a venv holding only the built wheel."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_skipped)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(root / "dist"), str(source)],
                   check=True, capture_output=True, timeout=120)
    wheel = next((root / "dist").glob("inference_lab-*.whl"))
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(purelib, "test-environment-deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                    "--no-index", "-q", str(wheel)], check=True, capture_output=True, timeout=120)
    work = root / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "INFERENCE_LAB_DATA", "VIRTUAL_ENV")}
    env.update(HOME=str(work), XDG_CACHE_HOME=str(work / "cache"),
               PATH=f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    shutil.rmtree(source)
    return python, env_dir / "bin", env, work


def _run(cmd: list[str], wheel_env, timeout: float = 120) -> subprocess.CompletedProcess:
    _python, _bin, env, work = wheel_env
    result = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result


def test_lab_is_imported_from_the_wheel(wheel_env):
    python = wheel_env[0]
    out = _run([str(python), "-c", "import lab, sweeps, apps.ui; print(lab.__file__); "
                "print(apps.ui.__file__); print(lab.__version__)"], wheel_env).stdout.split()
    assert all(str(REPO) not in path for path in out[:2]) and "site-packages" in out[0]
    assert out[2] != "0.0.0"


def test_calc_goodput_reads_the_packaged_trace(wheel_env):
    record = json.loads(_run([str(wheel_env[1] / "inference-lab"), "calc", "goodput", "--json"],
                             wheel_env).stdout)
    assert record["requests"] == 400
    assert round(record["goodput_rps"], 2) == 4.26      # README: 4.26 requests/s at cap 64


def test_calc_measured_reads_the_packaged_measurements(wheel_env):
    record = json.loads(_run([str(wheel_env[1] / "inference-lab"), "calc", "measured", "--json"],
                             wheel_env).stdout)
    assert record["schema_version"] == 1 and record["selected"]


def test_calc_served_reads_the_packaged_serving_rows(wheel_env):
    record = json.loads(_run([str(wheel_env[1] / "inference-lab"), "calc", "served", "--json"],
                             wheel_env).stdout)
    assert record["counts"]["rows"] == 5221 and record["counts"]["modelled"] > 0


def test_default_sweep_then_open_dataset(wheel_env):
    """The default sweep writes every default grid to the user cache; ``open_dataset`` reads one."""
    result = _run([str(wheel_env[1] / "inference-lab"), "sweep", "--scheduler", "threads"],
                  wheel_env, timeout=180)
    grids = wheel_env[3] / "cache" / "inference-lab" / "grids"
    assert sorted(p.name for p in grids.glob("*.zarr")) == [
        "context.zarr", "decode.zarr", "goodput.zarr", "plan.zarr", "prefill.zarr",
        "prefix.zarr", "speculative.zarr"], result.stderr
    out = _run([str(wheel_env[0]), "-c", "import lab; ds = lab.open_dataset('goodput'); "
                "print(ds.attrs['sweep_complete'], float(ds['goodput_rps'].max()))"],
               wheel_env).stdout.split()
    assert bool(int(out[0])) and float(out[1]) > 0


def test_serve_answers_a_page(wheel_env):
    port = _free_port()
    _python, bin_dir, env, work = wheel_env
    log = work / "serve.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen([str(bin_dir / "inference-lab"), "serve", "--port", str(port),
                                 "--address", "127.0.0.1"], cwd=work, env=env,
                                stdout=subprocess.DEVNULL, stderr=handle)
    try:
        deadline, body = time.monotonic() + 120, None
        while body is None and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                url = f"http://127.0.0.1:{port}/?view=goodput"
                with urllib.request.urlopen(url, timeout=30) as response:
                    body = response.read().decode()
            except OSError:
                time.sleep(0.3)
        assert body is not None, log.read_text()
        assert "Inference Lab" in body
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text()
