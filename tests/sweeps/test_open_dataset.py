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
    assert ds.sizes["model"] == 25  # 13 dense, 12 in MoE records
    cell = ds["step_time_s"].sel(model="llama-3.1-8b", gpu="h100-sxm", tp=1,
                                 precision="bf16", kv_precision="bf16", batch=8, context=8192)
    assert f"{cell.values.item() * 1e3:.2f}" == "7.04"
    again = lab.open_dataset("decode")
    assert again.attrs[md.ATTR_HASH] == ds.attrs[md.ATTR_HASH]


def test_older_default_grid_at_a_named_path_is_stale_then_refreshed(data, monkeypatch):
    lab.open_dataset("decode")
    monkeypatch.setitem(PRESETS, "default", {"decode": {"batch": [1, 2]}})
    with pytest.raises(StaleDatasetError, match="stale: it was computed from an older "
                       "default grid"):
        lab.open_dataset("decode", path=data / "decode.zarr")
    assert lab.open_dataset("decode", refresh=True).sizes["batch"] == 2


def test_the_data_directorys_older_default_grid_is_recomputed(data, monkeypatch):
    """After an upgrade that changes the default grid (a new model, a new axis), the lab's own
    default dataset is recomputed on open, like a missing one, not reported as stale."""
    assert lab.open_dataset("decode").sizes["batch"] > 2
    monkeypatch.setitem(PRESETS, "default", {"decode": {"batch": [1, 2]}})
    assert lab.open_dataset("decode").sizes["batch"] == 2
    assert lab.open_dataset("decode").sizes["batch"] == 2  # and kept


def test_corrupt_dataset_is_reported_then_refreshed(data):
    lab.open_dataset("decode")
    (data / "decode.zarr" / "zarr.json").write_text("garbage", encoding="utf-8")
    with pytest.raises(CorruptDatasetError, match="unreadable"):
        lab.open_dataset("decode")
    assert lab.open_dataset("decode", refresh=True).sizes["model"] == 25


def test_missing_without_compute(data):
    with pytest.raises(MissingDatasetError, match="There is no dataset"):
        lab.open_dataset("decode", compute_missing=False)


def test_unknown_name():
    with pytest.raises(LabInputError, match=re.escape(
            "There is no dataset 'decoder'; valid: decode, prefill, prefix, goodput, context")
            + r".*, plan, measured, served, or the path of a \.zarr store a sweep wrote\.$"):
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
        lab.open_dataset("prefix", path=data / "prefix.zarr")
    assert lab.open_dataset("prefix").sizes["block"] == 1


def test_a_stale_sweep_of_another_grid_in_the_data_directory_is_kept(data):
    """Only the lab's default grid is recomputed when stale: a user's own sweep written to the
    data directory is reported, never replaced."""
    import json

    lab.open_dataset("decode")
    meta_path = data / "decode.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    spec = json.loads(meta["attributes"][md.ATTR_SPEC])
    spec["axes"]["model"] = ["a-retired-model"]
    meta["attributes"][md.ATTR_SPEC] = json.dumps(spec)
    meta["attributes"][md.ATTR_NAME] = "mine"
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(StaleDatasetError, match="is stale"):
        lab.open_dataset("decode")
    assert json.loads(meta_path.read_text(encoding="utf-8")) == meta


def test_an_older_default_grid_of_another_shape_is_recomputed_not_called_corrupt(data):
    """A default grid whose spec no longer gives today's hash and shape (as one written before
    the lab's grids gained an axis) is out of date, not damaged: stale at a named path, and
    recomputed in the data directory."""
    import json

    lab.open_dataset("decode")
    meta_path = data / "decode.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    spec = json.loads(meta["attributes"][md.ATTR_SPEC])
    spec["axes"]["kv_precision"] = ["bf16"]  # the dataset holds bf16 and fp8
    meta["attributes"][md.ATTR_SPEC] = json.dumps(spec)
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(StaleDatasetError, match="is stale"):
        lab.open_dataset("decode", path=data / "decode.zarr")
    assert lab.open_dataset("decode").sizes["kv_precision"] == 2


def test_a_dataset_without_its_root_metadata_says_so(small_decode, tmp_path, capsys):
    from cli.main import main

    (small_decode / "zarr.json").unlink()
    with pytest.raises(CorruptDatasetError, match=re.escape(
            f"The dataset at {small_decode} has lost its metadata (its root zarr.json is "
            "missing); delete it and run `inference-lab sweep --experiment EXPERIMENT --out "
            f"{small_decode}` to recompute it (EXPERIMENT: one of "
            "decode, ")):
        lab.open_dataset("decode", path=small_decode)
    assert main(["export", "--dataset", str(small_decode), "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "has lost its metadata (its root zarr.json is missing)" in err
    assert "does not exist" not in err and err.count("\n") == 1


class _StorePath:
    """A minimal ``os.PathLike`` (not a ``pathlib.Path``), as other libraries hand out."""

    def __init__(self, path):
        self.path = path

    def __fspath__(self) -> str:
        return str(self.path)


def test_open_dataset_accepts_a_path(small_decode, data):
    from sweeps.store import open_grid

    expected = open_grid(small_decode)
    for given in (str(small_decode), small_decode, _StorePath(small_decode)):
        ds = lab.open_dataset(given)
        assert ds.attrs[md.ATTR_NAME] == "small"
        assert ds["step_time_s"].equals(expected["step_time_s"])
    assert not data.exists()  # nothing computed in the data directory


def test_open_dataset_given_a_missing_path_reports_it(tmp_path, data):
    missing = tmp_path / "none.zarr"
    with pytest.raises(MissingDatasetError, match=re.escape(f"There is no dataset at {missing}")):
        lab.open_dataset(str(missing))
    assert not missing.exists() and not data.exists()
    with pytest.raises(LabInputError, match="Give the dataset's path once"):
        lab.open_dataset(missing, path=missing)


def test_the_command_a_sentence_gives_runs_as_printed(tmp_path, capsys):
    """"run `inference-lab sweep --out nothere.zarr`" was refused when run ("names one Zarr
    store but the sweep covers 7 experiments"); a stale store of a grid of the user's own
    was told to sweep without its grid. Each command now names what the sweep needs."""
    import shlex
    import shutil

    from sweeps.remake_command import remake_advice, remake_command

    assert remake_command("g/decode.zarr", "decode", "default") == \
        "inference-lab sweep --experiment decode --out g/decode.zarr"
    assert remake_command("g/big.zarr", "decode", "large") == \
        "inference-lab sweep --grid large --experiment decode --out g/big.zarr"
    assert remake_command("my runs/", None, "mine") == \
        "inference-lab sweep --grid YOUR_GRID.toml --out 'my runs/'"
    assert "(YOUR_GRID.toml: the grid file it was swept from)" in remake_advice("a/", None, "x")
    # the repair command of a store whose metadata still reads, run as printed, writes it again
    from cli.main import main
    from sweeps.store import _fix

    store = tmp_path / "ctx.zarr"
    assert main(["sweep", "--experiment", "context", "--out", str(store), "--scheduler",
                 "threads", "--quiet"]) == 0
    command = re.search(r"run `([^`]+)`", _fix(store)).group(1)
    assert command == f"inference-lab sweep --experiment context --out {shlex.quote(str(store))}"
    shutil.rmtree(store)
    assert main([*shlex.split(command)[1:], "--scheduler", "threads", "--quiet"]) == 0
    assert lab.open_dataset("context", path=store).attrs["grid_name"] == "default"


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_dataset_name_is_one_sentence(name):
    """``lab.open_dataset("")`` said ". is not a dataset" (the empty name was the current
    folder)."""
    with pytest.raises(LabInputError, match=r"^The dataset name is empty; give a dataset's "
                                            r"name \(decode, "):
        lab.open_dataset(name)
