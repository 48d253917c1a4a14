"""Safe writes, interrupted sweeps, and stale or corrupt datasets reported on open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from lab.catalog import loader, lookup
from lab.catalog.entries import GPUSpec
from sweeps import metadata as md
from sweeps.store import (
    CorruptDatasetError,
    MissingDatasetError,
    StaleDatasetError,
    clear_leftovers,
    open_grid,
)
from tests.sweeps.conftest import SMALL_DECODE, write_small

REPO = Path(__file__).resolve().parents[2]


def test_written_dataset_opens_complete(small_decode):
    ds = open_grid(small_decode)
    assert ds.attrs[md.ATTR_COMPLETE] == 1
    assert not list(small_decode.parent.glob("small.zarr.tmp-*"))


def test_rewrite_replaces_the_dataset(tmp_path):
    path = write_small(tmp_path / "g.zarr")
    write_small(path, {**SMALL_DECODE, "batch": [2, 4]})
    assert list(open_grid(path).batch.values) == [2, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.zarr"]


def test_failed_write_leaves_old_dataset(tmp_path, monkeypatch):
    path = write_small(tmp_path / "g.zarr")
    before = open_grid(path).step_time_s.values

    from sweeps.grids import decode as decode_grid

    def broken(coords, constants):
        if "llama-3.1-70b" in list(coords["model"]):
            raise RuntimeError("boom")
        return decode_grid.decode_block(coords, constants)

    from sweeps.grid_kinds import GRIDS, GridKind

    kind = GRIDS["decode"]
    monkeypatch.setitem(GRIDS, "decode", GridKind(kind.schema, broken, kind.units,
                                                  kind.var_attrs))
    with pytest.raises(RuntimeError, match=r"boom"):
        write_small(path, {**SMALL_DECODE, "batch": [8, 64]})
    np.testing.assert_array_equal(open_grid(path).step_time_s.values, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.zarr"]


def test_a_failed_write_waits_for_the_chunks_still_being_written(tmp_path, monkeypatch):
    """A chunk fails while another is still writing: dask raises at once, but the cleanup must
    wait for the other chunk, or its write recreates the removed output and leaves it behind."""
    path = write_small(tmp_path / "g.zarr")
    from sweeps.grid_kinds import GRIDS, GridKind
    from sweeps.grids import decode as decode_grid

    writing = threading.Event()
    claimed = threading.Lock()
    slow = threading.local()
    real_open = zarr.open_array

    class SlowWrites:
        """An array of the slow chunk: its first write starts 0.5 s late."""

        def __init__(self, array) -> None:
            self._array = array

        def with_config(self, *args, **kwargs) -> SlowWrites:
            return SlowWrites(self._array.with_config(*args, **kwargs))

        def __setitem__(self, key, value) -> None:
            if not writing.is_set():
                writing.set()
                time.sleep(0.5)
            self._array[key] = value

        def __getattr__(self, name):
            return getattr(self._array, name)

    def open_array(*args, **kwargs):
        array = real_open(*args, **kwargs)
        return SlowWrites(array) if getattr(slow, "on", False) else array

    def racing(coords, constants):
        if "llama-3.1-70b" in list(coords["model"]):
            writing.wait(5)  # fail while the slow chunk is writing
            raise RuntimeError("boom")
        # the first other chunk is the slow one (not the one-cell probe of the dtypes)
        slow.on = len(coords["gpu"]) > 1 and claimed.acquire(blocking=False)
        return decode_grid.decode_block(coords, constants)

    kind = GRIDS["decode"]
    monkeypatch.setitem(GRIDS, "decode", GridKind(kind.schema, racing, kind.units,
                                                  kind.var_attrs))
    monkeypatch.setattr(zarr, "open_array", open_array)
    with pytest.raises(RuntimeError, match=r"boom"):
        write_small(path, {**SMALL_DECODE, "batch": [8, 64]})
    time.sleep(1.0)  # long after the slow chunk: nothing may appear beside the dataset
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.zarr"]


def _sweep_cmd(grid: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "lab", "sweep", "--grid", str(grid), "--out", str(out),
            "--scheduler", "threads", "--quiet"]


def _sweep_writing_over_a_dataset(tmp_path: Path, stderr) -> tuple:
    """A sweep of a larger grid over a small dataset, once it writes chunks: ``(out, the
    dataset's step times before, the grid file, the running process)``."""
    out = write_small(tmp_path / "decode.zarr")
    before = open_grid(out).step_time_s.values
    grid = tmp_path / "big.toml"
    grid.write_text('name = "big"\n[decode]\nchunk_cells = 4096\n'
                    'model = ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"]\n', encoding="utf-8")
    proc = subprocess.Popen(_sweep_cmd(grid, out), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=stderr, text=True)
    deadline = time.monotonic() + 60
    written = []
    while time.monotonic() < deadline and not written and proc.poll() is None:
        written = list(tmp_path.glob("decode.zarr.tmp-*/step_time_s/c/*"))
        time.sleep(0.01)
    assert written, "the sweep never started writing chunks"
    return out, before, grid, proc


def test_killed_sweep_leaves_old_dataset_and_rerun_completes(tmp_path):
    out, before, grid, proc = _sweep_writing_over_a_dataset(tmp_path, subprocess.DEVNULL)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    leftovers = list(tmp_path.glob("decode.zarr.tmp-*"))
    assert leftovers, "the killed sweep should have left its temporary directory"
    with pytest.raises(zarr.errors.GroupNotFoundError):  # not mistaken for a dataset
        xr.open_zarr(leftovers[0])
    ds = open_grid(out)
    np.testing.assert_array_equal(ds.step_time_s.values, before)
    done = subprocess.run(_sweep_cmd(grid, out), cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    ds = open_grid(out)
    assert ds.sizes["gpu"] == 18 and ds.attrs[md.ATTR_NAME] == "big"
    assert not list(tmp_path.glob("decode.zarr.tmp-*"))


def test_leftovers_of_live_writers_are_kept(tmp_path):
    target = tmp_path / "g.zarr"
    live = tmp_path / f"g.zarr.tmp-{os.getpid()}-abc"
    live.mkdir()
    dead = tmp_path / "g.zarr.tmp-999999999-abc"
    dead.mkdir()
    clear_leftovers(target)
    assert live.exists() and not dead.exists()


def test_target_lost_mid_swap_is_restored(tmp_path):
    path = write_small(tmp_path / "g.zarr")
    path.rename(tmp_path / "g.zarr.old-999999999-abc")
    clear_leftovers(path)
    assert open_grid(path).attrs[md.ATTR_COMPLETE] == 1


def test_missing_dataset_is_reported(tmp_path):
    with pytest.raises(MissingDatasetError, match=r"There is no dataset at .*inference-lab "
                       r"sweep"):
        open_grid(tmp_path / "nothing.zarr")


def test_unreadable_metadata_is_reported(small_decode):
    (small_decode / "zarr.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CorruptDatasetError, match=r"is unreadable .* delete it"):
        open_grid(small_decode)


def test_incomplete_dataset_is_reported(small_decode):
    group = zarr.open_group(small_decode, mode="r+")
    del group.attrs[md.ATTR_COMPLETE]
    with pytest.raises(CorruptDatasetError, match=r"incomplete .*'sweep_complete'"):
        open_grid(small_decode)


def test_missing_variable_is_reported(small_decode):
    import shutil

    shutil.rmtree(small_decode / "step_time_s")
    with pytest.raises(CorruptDatasetError, match=r"lacks variable 'step_time_s'"):
        open_grid(small_decode)


def test_non_sweep_zarr_is_reported(tmp_path):
    path = tmp_path / "other.zarr"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_zarr(path, consolidated=False)
    with pytest.raises(CorruptDatasetError, match=r"not written by a sweep"):
        open_grid(path)


def test_changed_catalog_makes_dataset_stale(small_decode, monkeypatch):
    original = loader.gpu_catalog()
    h100 = original["h100-sxm"]
    changed = dict(original)
    changed["h100-sxm"] = GPUSpec(**{**h100.__dict__, "hbm_bw": h100.hbm_bw * 1.1})
    monkeypatch.setattr(loader, "gpu_catalog", lambda: changed)
    with pytest.raises(StaleDatasetError, match=r"stale: the catalog figures of gpu "
                       "'h100-sxm' changed"):
        open_grid(small_decode)
    assert open_grid(small_decode, check_stale=False).sizes["gpu"] == 3


def test_changed_version_makes_dataset_stale(small_decode, monkeypatch):
    monkeypatch.setattr(md, "package_version", lambda: "99.0")
    with pytest.raises(StaleDatasetError, match=r"computed by inference-lab .*not 99.0"):
        open_grid(small_decode)


def test_changed_model_code_makes_dataset_stale(small_decode, monkeypatch):
    """A formula or calibration row changed under the same version number: the grid computed
    before it no longer equals the point call, so it is stale and says why."""
    monkeypatch.setattr(md, "models_fingerprint", lambda: "0" * 64)
    with pytest.raises(StaleDatasetError, match=r"stale: it was computed by other code or data "
                       r"of the lab's models"):
        open_grid(small_decode)


def test_the_models_fingerprint_follows_every_file_but_compiled_caches(tmp_path, monkeypatch):
    """A changed formula, catalog or calibration row changes the fingerprint; a compiled cache
    does not."""
    package = tmp_path / "lab"
    (package / "served" / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    rows = package / "served" / "data" / "rows.csv"
    rows.write_text("id,tpot_ms\na,10\n")
    monkeypatch.setattr(md, "_lab_root", lambda: package)

    def fingerprint() -> str:
        md.models_fingerprint.cache_clear()
        return md.models_fingerprint()

    try:
        first = fingerprint()
        (package / "__pycache__").mkdir()
        (package / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"cache")
        assert fingerprint() == first
        rows.write_text("id,tpot_ms\na,11\n")
        second = fingerprint()
        assert len(second) == 64 and second != first
    finally:
        md.models_fingerprint.cache_clear()


def test_edited_spec_makes_dataset_stale(small_decode):
    group = zarr.open_group(small_decode, mode="r+")
    spec = json.loads(group.attrs[md.ATTR_SPEC])
    spec["constants"]["budget"] = 0.8
    group.attrs[md.ATTR_SPEC] = json.dumps(spec)
    with pytest.raises(StaleDatasetError, match=r"grid spec no longer matches"):
        open_grid(small_decode)


def test_removed_catalog_entry_makes_dataset_stale(small_decode, monkeypatch):
    original = lookup.model_catalog()
    monkeypatch.setattr(lookup, "model_catalog",
                        lambda: {k: v for k, v in original.items() if k != "qwen3-8b"})
    with pytest.raises(StaleDatasetError, match=r"stale: .*qwen3-8b"):
        open_grid(small_decode)


def test_a_terminated_sweep_removes_its_temporary_store_and_keeps_the_old(tmp_path):
    """SIGTERM (kill, timeout, a job scheduler) left the temporary store beside its target
    (3.5 GB for the large preset) until the next sweep there; Ctrl-C already cleaned up."""
    out, before, _, proc = _sweep_writing_over_a_dataset(tmp_path, subprocess.PIPE)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().endswith("inference-lab: interrupted.")
    assert not list(tmp_path.glob("decode.zarr.tmp-*"))
    np.testing.assert_array_equal(open_grid(out).step_time_s.values, before)


def test_the_terminate_handler_is_the_callers_again_afterwards():
    """A notebook calling main(["sweep", …]) kept the sweep's SIGTERM handler for good."""
    from sweeps.files import interrupt_on_terminate

    before = signal.getsignal(signal.SIGTERM)
    with interrupt_on_terminate():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    with pytest.raises(KeyboardInterrupt), interrupt_on_terminate():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler raises here
    assert signal.getsignal(signal.SIGTERM) is before
