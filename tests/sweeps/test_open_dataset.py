"""``lab.open_dataset``: computed on first use, cached, and checked on every open."""

from __future__ import annotations

import re

import pytest

import lab
from lab.errors import LabInputError
from sweeps import metadata as md
from sweeps.grid_files import PRESETS
from sweeps.paths import ENV_VAR, data_dir, dataset_path
from sweeps.store import CorruptDatasetError, MissingDatasetError, StaleDatasetError


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "grids"))
    return tmp_path / "grids"


def test_data_dir_defaults_to_repo_and_follows_env(data):
    assert data_dir() == data
    assert dataset_path("decode") == data / "decode.zarr"


def test_repo_default(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert data_dir().parts[-2:] == ("datasets", "grids")


def test_first_use_computes_the_default_grid(data):
    ds = lab.open_dataset("decode")
    assert (data / "decode.zarr").is_dir()
    assert ds.attrs[md.ATTR_NAME] == "default"
    assert ds.sizes["model"] == 17  # 13 dense, 4 MoE
    cell = ds["step_time_s"].sel(model="llama-3.1-8b", gpu="h100-sxm", tp=1,
                                 precision="bf16", kv_precision="bf16", batch=8, context=8192)
    assert f"{cell.values.item() * 1e3:.2f}" == "7.04"
    again = lab.open_dataset("decode")
    assert again.attrs[md.ATTR_HASH] == ds.attrs[md.ATTR_HASH]


def test_older_default_grid_is_stale_then_refreshed(data, monkeypatch):
    lab.open_dataset("decode")
    monkeypatch.setitem(PRESETS, "default", {"decode": {"batch": [1, 2]}})
    with pytest.raises(StaleDatasetError, match="stale: it was computed from an older "
                       "default grid"):
        lab.open_dataset("decode")
    assert lab.open_dataset("decode", refresh=True).sizes["batch"] == 2


def test_corrupt_dataset_is_reported_then_refreshed(data):
    lab.open_dataset("decode")
    (data / "decode.zarr" / "zarr.json").write_text("garbage", encoding="utf-8")
    with pytest.raises(CorruptDatasetError, match="unreadable"):
        lab.open_dataset("decode")
    assert lab.open_dataset("decode", refresh=True).sizes["model"] == 17


def test_missing_without_compute(data):
    with pytest.raises(MissingDatasetError, match="There is no dataset"):
        lab.open_dataset("decode", compute_missing=False)


def test_unknown_name():
    with pytest.raises(LabInputError, match=re.escape(
            "There is no dataset 'decoder'; valid: decode, prefill, prefix, goodput, context.")):
        lab.open_dataset("decoder")


@pytest.fixture
def counted_prefix(monkeypatch):
    """The prefix grid (it has a ``finalize``) with its finalize calls counted."""
    from dataclasses import replace

    from sweeps.grid_kinds import GRIDS

    kind = GRIDS["prefix"]
    calls = []

    def finalize(spec):
        calls.append(spec)
        return kind.schema.finalize(spec)

    schema = replace(kind.schema, finalize=finalize)
    monkeypatch.setitem(GRIDS, "prefix", replace(kind, schema=schema))
    return calls


def test_opening_the_default_finalizes_its_spec_once(data, counted_prefix):
    first = lab.open_dataset("prefix")
    counted_prefix.clear()
    again = lab.open_dataset("prefix")
    assert len(counted_prefix) == 1
    assert again.attrs == first.attrs


def test_older_default_grid_with_finalize_is_stale(data, monkeypatch, counted_prefix):
    lab.open_dataset("prefix")
    monkeypatch.setitem(PRESETS, "default", {"prefix": {"block": [16]}})
    with pytest.raises(StaleDatasetError, match="older default grid"):
        lab.open_dataset("prefix")
    assert lab.open_dataset("prefix", refresh=True).sizes["block"] == 1
