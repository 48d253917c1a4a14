"""The datasets folder as a hostile operator could leave it (issue 38 item 2): only regular
files and folders inside it are read (a FIFO never blocks, a symlink out of it is neither listed
nor followed), and a store whose chunks claim more than the documented bound, or disagree with
their data, is one sentence."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from lab.errors import LabInputError
from sweeps.build import file_digest
from sweeps.catalog_of_datasets import dataset_names, open_named
from sweeps.local_store_checks import MAX_CHUNK_BYTES
from sweeps.store import CorruptDatasetError, open_grid

HANG_S = 20.0
"""Longest a read may take before it counts as blocked."""


def within(seconds: float, call, unblock=None):
    """``call()``'s result or exception, failing the test if it has not returned within
    ``seconds`` (then ``unblock()`` releases the blocked thread)."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if unblock is not None:
            unblock()
        thread.join(5)
        pytest.fail(f"the read blocked for more than {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def release(fifo: Path):
    """Open ``fifo`` for writing once, so a reader blocked on it goes on."""
    def go():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    return go


def rewrite_manifest(store: Path, key: str) -> None:
    """Record ``key``'s current bytes in the store's checksum list, as an attacker would."""
    root = store / "zarr.json"
    meta = json.loads(root.read_text())
    meta["attributes"]["file_digests"][key] = file_digest((store / key).read_bytes())
    root.write_text(json.dumps(meta))


def claim_chunks(store: Path, variable: str, first: int) -> None:
    """Make ``variable``'s metadata claim chunks of ``first`` models each."""
    path = store / variable / "zarr.json"
    meta = json.loads(path.read_text())
    meta["chunk_grid"]["configuration"]["chunk_shape"][0] = first
    path.write_text(json.dumps(meta))
    rewrite_manifest(store, f"{variable}/zarr.json")


@pytest.fixture
def folder(small_decode_master, tmp_path):
    """A datasets folder holding one good store, ``mine``."""
    shutil.copytree(small_decode_master, tmp_path / "mine.zarr")
    return tmp_path


@pytest.mark.parametrize("inside", ["zarr.json", "step_time_s/zarr.json"])
def test_a_fifo_in_a_store_is_one_sentence_and_never_blocks(folder, inside):
    fifo = folder / "mine.zarr" / inside
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(LabInputError) as error:
        within(HANG_S, lambda: open_named("mine", folder), release(fifo))
    assert "not a regular file" in str(error.value) and str(error.value).count(". ") == 0


def test_a_symlink_out_of_the_folder_is_neither_listed_nor_opened(folder, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copytree(folder / "mine.zarr", elsewhere / "other.zarr")
    (folder / "other.zarr").symlink_to(elsewhere / "other.zarr")
    (folder / "etc.zarr").symlink_to("/etc")
    names = dataset_names(folder)
    assert "mine" in names and "other" not in names and "etc" not in names
    with pytest.raises(LabInputError, match="There is no dataset 'other' here"):
        open_named("other", folder)


def test_a_symlink_inside_a_store_is_refused(folder):
    chunk = folder / "mine.zarr" / "step_time_s" / "c" / "0" / "0" / "0" / "0" / "0" / "0" / "0"
    chunk.unlink()
    chunk.symlink_to("/etc/hostname")
    with pytest.raises(CorruptDatasetError, match="is a symbolic link"):
        open_named("mine", folder)


def test_chunks_claiming_more_than_the_bound_are_one_sentence(folder):
    claim_chunks(folder / "mine.zarr", "step_time_s", 2_000_000)
    with pytest.raises(CorruptDatasetError) as error:
        within(HANG_S, lambda: open_grid(folder / "mine.zarr"))
    text = str(error.value)
    assert "step_time_s" in text and f"{MAX_CHUNK_BYTES // 2**20} MiB" in text
    assert "Traceback" not in text and text.count("; ") <= 1



def test_a_coordinate_claiming_a_trillion_values_is_its_own_sentence(folder):
    store = folder / "mine.zarr"
    path = store / "batch" / "zarr.json"
    meta = json.loads(path.read_text())
    meta["shape"] = [10**12]
    path.write_text(json.dumps(meta))
    rewrite_manifest(store, "batch/zarr.json")
    with pytest.raises(CorruptDatasetError) as error:
        within(HANG_S, lambda: open_grid(store))
    text = str(error.value)
    assert "its coordinate 'batch' claims 1,000,000,000,000 values" in text
    assert "allocate" not in text and text.count("; ") <= 1
