"""Nothing the lab did not write is replaced; failed writes leave nothing; damage is reported.

Exports and sweeps refuse to replace a folder or file this tool did not write, write under a
temporary name and report any OS failure in one sentence (exit 2) with nothing left behind.
A damaged dataset (a chunk or coordinate deleted or edited, bytes flipped, an attribute of the
wrong type) is one sentence on open or on read, never wrong numbers or a raw error.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

import lab
from cli.main import main
from sweeps import metadata as md
from sweeps.paths import ENV_VAR
from sweeps.store import CorruptDatasetError, UnverifiedDatasetError, open_grid
from tests.sweeps.conftest import SMALL_DECODE, write_small

REPO = Path(__file__).resolve().parents[2]


def _export(small_decode: Path, out: str, *extra: str) -> list[str]:
    return ["export", "--dataset", str(small_decode), "--sel", "model=qwen3-8b", *extra,
            "-o", out]


def _one_sentence(err: str) -> str:
    assert err.startswith("inference-lab: error: ") and "Traceback" not in err, err
    assert err.count("\n") == 1, err
    return err


def _user_folder(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_bytes(b"my notes")
    (folder / "sub").mkdir()
    (folder / "sub" / "data.csv").write_bytes(b"a,b\n1,2\n")
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# --- item 5: exports -------------------------------------------------------------------------


def test_zarr_export_into_a_users_folder_is_refused(small_decode, tmp_path, capsys):
    folder = tmp_path / "mine"
    before = _user_folder(folder)
    code = main(_export(small_decode, str(folder), "--format", "zarr"))
    assert code == 2
    err = _one_sentence(capsys.readouterr().err)
    assert "is a folder this tool did not write, so it is not replaced" in err
    assert _contents(folder) == before


def test_zarr_export_to_dot_keeps_the_working_folder(small_decode, tmp_path, monkeypatch,
                                                     capsys):
    before = _user_folder(tmp_path / "cwd")
    monkeypatch.chdir(tmp_path / "cwd")
    assert main(_export(small_decode, ".", "--format", "zarr")) == 2
    _one_sentence(capsys.readouterr().err)
    assert _contents(tmp_path / "cwd") == before


@pytest.mark.parametrize("name,body", [("x.csv", b"my,own\n1,2\n"),
                                       ("x.parquet", b"PAR1 not ours"),
                                       ("x.nc", b"just text")])
def test_a_users_file_is_not_overwritten(small_decode, tmp_path, capsys, name, body):
    path = tmp_path / name
    path.write_bytes(body)
    assert main(_export(small_decode, str(path))) == 2
    assert "is a file this tool did not write" in _one_sentence(capsys.readouterr().err)
    assert path.read_bytes() == body


@pytest.mark.parametrize("fmt", ["csv", "parquet", "netcdf", "zarr"])
def test_an_earlier_export_is_replaced(small_decode, tmp_path, capsys, fmt):
    tmp_path = tmp_path / "out"
    out = str(tmp_path / f"x.{fmt}")
    assert main(_export(small_decode, out, "--format", fmt)) == 0
    assert main(_export(small_decode, out, "--format", fmt, "--vars", "step_time_s")) == 0
    assert capsys.readouterr().out.split() == [out, out]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"x.{fmt}"]


def _empty(tmp_path: Path) -> Path:
    """A new empty folder for outputs (``tmp_path`` holds the dataset's copy)."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def _failed_export(small_decode, tmp_path, capsys, out: str, *extra: str) -> str:
    code = main(_export(small_decode, out, *extra))
    assert code == 2
    return _one_sentence(capsys.readouterr().err)


def test_parent_that_is_a_file(small_decode, tmp_path, capsys):
    tmp_path = _empty(tmp_path)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    err = _failed_export(small_decode, tmp_path, capsys, str(tmp_path / "file" / "x.csv"))
    assert "part of the path is a file, not a folder; nothing was written." in err
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_empty_output_name(small_decode, tmp_path, capsys, monkeypatch):
    tmp_path = _empty(tmp_path)
    monkeypatch.chdir(tmp_path)
    err = _failed_export(small_decode, tmp_path, capsys, "", "--format", "zarr")
    assert "The output name is empty" in err
    assert list(tmp_path.iterdir()) == []


def test_name_too_long(small_decode, tmp_path, capsys):
    tmp_path = _empty(tmp_path)
    err = _failed_export(small_decode, tmp_path, capsys, str(tmp_path / ("x" * 300 + ".csv")))
    assert "the name is too long; nothing was written." in err
    assert list(tmp_path.iterdir()) == []


def _read_only(monkeypatch, folder: Path) -> None:
    """Make ``folder`` behave in this process as a read-only mount does for root too: writing
    there, and removing any name there (even one never created), fails with ``EROFS``."""
    from sweeps import export

    def refused(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    def guard(real):
        def call(path, *args, **kwargs):
            if isinstance(path, str | os.PathLike) and "dir_fd" not in kwargs \
                    and Path(path).parent == folder:
                refused(path)
            return real(path, *args, **kwargs)
        return call

    for name in ("unlink", "remove", "rmdir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    monkeypatch.setattr(export, "_write_file", guard(lambda path, *a, **k: refused(path)),
                        raising=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "netcdf", "zarr"])
def test_export_into_a_read_only_folder_is_one_sentence(small_decode, tmp_path, capsys,
                                                        monkeypatch, fmt):
    """Removing the never-created temporary name fails again there: still one sentence."""
    folder = _empty(tmp_path)
    _read_only(monkeypatch, folder)
    out = folder / f"x.{fmt}"
    err = _failed_export(small_decode, tmp_path, capsys, str(out), "--format", fmt)
    assert err == (f"inference-lab: error: Could not write {out}: the file system is "
                   "read-only; nothing was written.\n")
    assert list(folder.iterdir()) == []


def _read_only_mount(folder: Path, command: list[str]) -> list[str] | None:
    """``command`` run with a read-only tmpfs mounted on ``folder`` in a private mount
    namespace (root or not), or None where this system cannot do that."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return None
    probe = subprocess.run([unshare, "-rm", "sh", "-c",
                            f"mount -t tmpfs -o ro tmpfs '{folder}'"], capture_output=True)
    if probe.returncode != 0:
        return None
    quoted = " ".join(f"'{part}'" for part in command)
    return [unshare, "-rm", "sh", "-c",
            f"mount -t tmpfs -o ro tmpfs '{folder}' && exec {quoted}"]


@pytest.mark.parametrize("fmt", ["csv", "zarr"])
def test_export_onto_a_read_only_mount_is_one_sentence(small_decode, tmp_path, fmt):
    folder = _empty(tmp_path)
    out = folder / f"x.{fmt}"
    command = _read_only_mount(folder, [sys.executable, "-m", "lab", *_export(small_decode,
                                                                               str(out))])
    if command is None:
        pytest.skip("no private read-only mount here (unshare -rm); the in-process test covers it")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"inference-lab: error: Could not write {out}: the file system is "
                           "read-only; nothing was written.\n")


def test_full_disk_leaves_no_partial_file_and_keeps_the_old_export(small_decode, tmp_path,
                                                                   capsys, monkeypatch):
    tmp_path = _empty(tmp_path)
    out = tmp_path / "x.csv"
    assert main(_export(small_decode, str(out))) == 0
    before = out.read_bytes()

    def full(self, path, **kwargs):
        Path(path).write_text("partial", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    err = _failed_export(small_decode, tmp_path, capsys, str(out))
    assert f"Could not write {out}: the disk is full; nothing was written." in err
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


def _limit_file_size(limit: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("fmt,limit", [("netcdf", 16_384), ("csv", 16_384),
                                       ("parquet", 4_096), ("zarr", 1_024)])
def test_file_size_limit_is_one_sentence_and_leaves_nothing(small_decode, tmp_path, fmt, limit):
    out = tmp_path / "out" / f"x.{fmt}"
    out.parent.mkdir()
    done = subprocess.run([sys.executable, "-m", "lab", "export", "--dataset",
                           str(small_decode), "--format", fmt, "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_file_size(limit))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"inference-lab: error: Could not write {out}: the file size limit "
                           "was reached; nothing was written.\n")
    assert list(out.parent.iterdir()) == []


# --- item 6: damaged datasets ----------------------------------------------------------------


def _chunk(store: Path, name: str = "step_time_s") -> Path:
    return sorted(p for p in (store / name / "c").rglob("*") if p.is_file())[0]


def test_deleted_chunk_is_reported_on_open(small_decode):
    assert not np.isnan(open_grid(small_decode)["step_time_s"].values).all()
    _chunk(small_decode).unlink()
    with pytest.raises(CorruptDatasetError, match=r"is corrupt \(its file step_time_s/c/"
                       r"[0-9/]+ is missing\); delete it and run `inference-lab sweep"):
        open_grid(small_decode)


def test_chunk_deleted_after_open_is_reported_on_read(small_decode):
    ds = open_grid(small_decode)
    _chunk(small_decode).unlink()
    with pytest.raises(CorruptDatasetError, match=r"its file step_time_s/c/.* is missing"):
        ds["step_time_s"].values  # noqa: B018 - the read is the test


def test_dataset_deleted_after_open_is_reported_on_read(small_decode):
    ds = open_grid(small_decode)
    shutil.rmtree(small_decode)
    with pytest.raises(CorruptDatasetError, match="is corrupt"):
        ds["step_time_s"].sel(batch=8).values  # noqa: B018 - the read is the test


def test_flipped_bytes_in_a_chunk_are_reported_via_the_cli(small_decode, tmp_path, capsys):
    chunk = _chunk(small_decode)
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    assert main(["export", "--dataset", str(small_decode), "-o", str(tmp_path / "x.csv")]) == 2
    err = _one_sentence(capsys.readouterr().err)
    assert "is corrupt (its file step_time_s/c/" in err and "does not match its checksum" in err
    assert not (tmp_path / "x.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["small.zarr"]


def test_deleted_coordinate_does_not_select_the_wrong_row(small_decode, tmp_path, capsys):
    shutil.rmtree(small_decode / "batch")
    out = tmp_path / "x.csv"
    assert main(["export", "--dataset", str(small_decode), "--sel", "batch=8",
                 "-o", str(out)]) == 2
    assert "is corrupt (its 'batch' coordinate is missing)" in _one_sentence(
        capsys.readouterr().err)
    assert not out.exists()


def test_edited_coordinate_is_reported(small_decode):
    batch = zarr.open_array(zarr.storage.LocalStore(small_decode), path="batch", mode="r+")
    batch[:] = np.array([1, 1, 64])
    with pytest.raises(CorruptDatasetError, match=r"is corrupt \(its file batch/c/0 does not "
                       "match its checksum"):
        open_grid(small_decode)


def test_coordinate_differing_from_the_spec_is_reported(small_decode):
    """Coordinates are compared with the stored spec even if the checksums were rewritten."""
    batch = zarr.open_array(zarr.storage.LocalStore(small_decode), path="batch", mode="r+")
    batch[:] = np.array([1, 1, 64])
    meta_path = small_decode / "zarr.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    from sweeps.build import file_digest

    key = "batch/c/0"
    meta["attributes"][md.ATTR_DIGESTS][key] = file_digest((small_decode / key).read_bytes())
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(CorruptDatasetError, match=r"its 'batch' coordinate differs from its "
                       "grid spec"):
        open_grid(small_decode)


def test_open_dataset_reports_damage(small_decode):
    _chunk(small_decode, "valid").unlink()
    with pytest.raises(CorruptDatasetError, match="is corrupt"):
        lab.open_dataset("decode", path=small_decode)


@pytest.mark.parametrize("value", [5, "[1, 2]", {"experiment": "decode"}, "not json",
                                   '{"experiment": "decode", "axes": 3, "constants": {}}',
                                   '{"experiment": 5, "axes": {}, "constants": {}}',
                                   '{"experiment": "decode", "axes": {"batch": 8}, '
                                   '"constants": {}}'])
def test_grid_spec_of_the_wrong_type_is_one_sentence(small_decode, tmp_path, capsys, value):
    zarr.open_group(small_decode, mode="r+").attrs[md.ATTR_SPEC] = value
    with pytest.raises(CorruptDatasetError, match=r"has an unreadable grid spec \(its "
                       r"'grid_spec' attribute is not the JSON a sweep writes\)"):
        open_grid(small_decode)
    assert main(_export(small_decode, str(tmp_path / "x.csv"))) == 2
    _one_sentence(capsys.readouterr().err)


def test_dataset_written_before_checksums_is_stale(small_decode):
    group = zarr.open_group(small_decode, mode="r+")
    del group.attrs[md.ATTR_DIGESTS]
    with pytest.raises(UnverifiedDatasetError, match=r"is stale: it was written before "
                       r"datasets recorded file checksums, .*; run `inference-lab sweep"):
        open_grid(small_decode)


def test_default_dataset_written_before_checksums_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "grids"))
    lab.open_dataset("decode")
    store = tmp_path / "grids" / "decode.zarr"
    del zarr.open_group(store, mode="r+").attrs[md.ATTR_DIGESTS]
    ds = lab.open_dataset("decode")
    assert ds.attrs[md.ATTR_NAME] == "default"
    assert md.ATTR_DIGESTS in json.loads((store / "zarr.json").read_text())["attributes"]


def test_unfinished_store_cannot_be_opened_as_a_dataset(tmp_path, monkeypatch):
    """A sweep's temporary store hides its root metadata until complete."""
    from sweeps import store as store_module

    seen = []

    def stop_before_finish(tmp, digests):
        seen.append(tmp)
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "_finish", stop_before_finish)
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None)  # keep it, as a kill would
    with pytest.raises(KeyboardInterrupt):
        write_small(tmp_path / "g.zarr")
    assert seen and (seen[0] / "step_time_s" / "zarr.json").exists()
    with pytest.raises(zarr.errors.GroupNotFoundError):
        xr.open_zarr(seen[0])


# --- item 7 (disk) and sweep outputs ----------------------------------------------------------


def _sweep(grid: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "lab", "sweep", "--grid", str(grid), "--out", str(out),
            "--scheduler", "threads", "--quiet"]


def test_sweep_into_a_users_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "mine.zarr"
    before = _user_folder(folder)
    grid = tmp_path / "g.toml"
    grid.write_text('[decode]\nmodel = ["llama-3.1-8b"]\n', encoding="utf-8")
    code = main(["sweep", "--grid", str(grid), "--out", str(folder), "--scheduler", "threads"])
    assert code == 2
    assert "is a folder this tool did not write, so a sweep will not replace it" in \
        _one_sentence(capsys.readouterr().err)
    assert _contents(folder) == before


def test_sweep_that_hits_the_file_size_limit_keeps_the_old_dataset(tmp_path):
    out = write_small(tmp_path / "decode.zarr")
    before = open_grid(out)["step_time_s"].values
    grid = tmp_path / "big.toml"
    grid.write_text('name = "big"\n[decode]\nchunk_cells = 65536\n'
                    'model = ["llama-3.1-8b", "qwen3-8b"]\n', encoding="utf-8")
    done = subprocess.run(_sweep(grid, out), cwd=REPO, capture_output=True, text=True,
                          timeout=180, preexec_fn=_limit_file_size(65_536))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"inference-lab: error: Could not write the dataset at {out}: the "
                           "file size limit was reached; the previous dataset is unchanged.\n")
    np.testing.assert_array_equal(open_grid(out)["step_time_s"].values, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.toml", "decode.zarr"]


def test_sweep_rewrites_its_own_dataset_with_a_damaged_root(tmp_path):
    """A store whose root metadata was destroyed is still recognised as the lab's."""
    out = write_small(tmp_path / "g.zarr")
    (out / "zarr.json").write_text("garbage", encoding="utf-8")
    write_small(out, {**SMALL_DECODE, "batch": [2]})
    assert list(open_grid(out).batch.values) == [2]
    assert os.listdir(tmp_path) == ["g.zarr"]


def test_a_users_csv_with_the_labs_column_names_is_not_overwritten(small_decode, tmp_path,
                                                                   capsys):
    """A CSV's header says nothing of its writer: a user's measurements in the lab's column
    names are theirs (sweeps.export_record)."""
    path = tmp_path / "my_measurements.csv"
    body = b"model,batch,step_time_s\nllama-3.1-8b,8,0.0071\n"
    path.write_bytes(body)
    assert main(_export(small_decode, str(path))) == 2
    assert "is a file this tool did not write" in _one_sentence(capsys.readouterr().err)
    assert path.read_bytes() == body


def test_an_export_edited_since_is_the_users(small_decode, tmp_path, capsys):
    out = tmp_path / "out" / "x.csv"
    assert main(_export(small_decode, str(out))) == 0
    with out.open("a", encoding="utf-8") as handle:
        handle.write("# my notes on these rows\n")
    edited = out.read_bytes()
    capsys.readouterr()
    assert main(_export(small_decode, str(out))) == 2
    # it was this tool's export; the sentence said it was not
    assert "was exported by this tool but has changed since, so it is yours and not replaced" \
        in _one_sentence(capsys.readouterr().err)
    assert out.read_bytes() == edited


def test_a_lost_record_costs_a_refusal_not_a_file(small_decode, tmp_path, capsys, monkeypatch):
    from sweeps.export_record import record_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    out = tmp_path / "out" / "x.csv"
    assert main(_export(small_decode, str(out))) == 0
    written = out.read_bytes()
    record_path().write_text("not the lab's JSON", encoding="utf-8")
    capsys.readouterr()
    assert main(_export(small_decode, str(out))) == 2
    assert out.read_bytes() == written
