"""Export round-trips for every format; bad selections get one sentence listing valid ones."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import xarray as xr

from cli.main import main
from lab.errors import LabInputError
from sweeps.export import FORMATS, format_for, parse_selection, select, write
from sweeps.store import open_grid

SEL = ["model=llama-3.1-8b", "gpu=h100-sxm,l4", "batch=1:8"]


@pytest.fixture
def small(small_decode):
    return open_grid(small_decode)


def _expected(small):
    return select(small, SEL, "decode").load()


def _frame_matches(frame: pd.DataFrame, expected: xr.Dataset) -> None:
    reference = expected.to_dataframe().reset_index()
    frame = frame.set_index(["gpu", "tp", "precision", "batch", "context"]).sort_index()
    reference = reference.set_index(["gpu", "tp", "precision", "batch", "context"]).sort_index()
    assert len(frame) == len(reference) == expected["step_time_s"].size
    for name in expected.data_vars:
        column = f"{name}_code" if name == "reason" else name  # reason is text, its code beside
        np.testing.assert_array_equal(frame[column].to_numpy(), reference[name].to_numpy(),
                                      err_msg=name)
    meanings = np.array(expected["reason"].attrs["flag_meanings"].split())
    np.testing.assert_array_equal(frame["reason"].to_numpy(dtype=str),
                                  meanings[reference["reason"].to_numpy()])
    assert (frame["model"] == "llama-3.1-8b").all()


def test_selection_parsing(small):
    sel = parse_selection(SEL, small, "decode")
    assert sel == {"model": "llama-3.1-8b", "gpu": ["h100-sxm", "l4"], "batch": [1, 8]}


def test_csv_round_trip(small, tmp_path):
    path = write(_expected(small), tmp_path / "x.csv", "csv")
    _frame_matches(pd.read_csv(path), _expected(small))


def test_parquet_round_trip_keeps_units(small, tmp_path):
    path = write(_expected(small), tmp_path / "x.parquet", "parquet")
    _frame_matches(pd.read_parquet(path), _expected(small))
    meta = json.loads(pq.read_schema(path).metadata[b"inference_lab"])
    assert meta["columns"]["step_time_s"] == {"long_name": "ideal decode step time",
                                              "units": "s"}
    assert meta["attrs"]["experiment"] == "decode"


@pytest.mark.parametrize("fmt,name", [("netcdf", "x.nc"), ("zarr", "x.zarr")])
def test_array_formats_round_trip(small, tmp_path, fmt, name):
    expected = _expected(small)
    path = write(expected, tmp_path / name, fmt)
    engine = "zarr" if fmt == "zarr" else None
    kwargs = {"consolidated": False} if fmt == "zarr" else {}
    with xr.open_dataset(path, engine=engine, **kwargs) as back:
        back = back.load()
    for name_ in expected.data_vars:
        np.testing.assert_array_equal(back[name_].values, expected[name_].values)
        assert back[name_].attrs["units"] == expected[name_].attrs["units"]
    assert list(back["gpu"].values) == ["h100-sxm", "l4"]
    assert str(back["model"].values) == "llama-3.1-8b"
    assert back.attrs["grid_hash"] == expected.attrs["grid_hash"]


def test_zarr_export_rewrites_existing(small, tmp_path):
    path = write(_expected(small), tmp_path / "x.zarr", "zarr")
    write(_expected(small).isel(context=[0]), path, "zarr")
    assert xr.open_zarr(path, consolidated=False).sizes["context"] == 1


@pytest.mark.parametrize("items,message", [
    (["foo=1"], "'foo' is not a dimension of the decode dataset; valid: model, gpu, tp, "
                "precision, kv_precision, batch, context."),
    (["batch=5"], "batch=5 is not on the grid; valid batch values: 1, 8, 64."),
    (["batch=x"], "batch=x is not a number; valid batch values: 1, 8, 64."),
    (["gpu=h100"], "gpu=h100 is not on the grid; valid gpu values: h100-sxm, l4, tpu-v5e."),
    (["batch=100:200"], "batch=100:200 holds no grid values; valid batch values: 1, 8, 64."),
    (["batch"], "Selection 'batch' must look like dim=value"),
    (["tp=1", "tp=2"], "'tp' is selected twice"),
])
def test_bad_selections(small, items, message):
    with pytest.raises(LabInputError) as info:
        parse_selection(items, small, "decode")
    assert str(info.value).startswith(message)


def test_bad_variable(small):
    with pytest.raises(LabInputError, match="'nope' is not a variable of the decode dataset; "
                       "valid: linear_weight_bytes, "):
        select(small, [], "decode", ["nope"])


def test_format_from_suffix():
    assert [format_for(f"x{s}", None) for s in (".csv", ".parquet", ".nc", ".zarr")] == \
        list(FORMATS)
    with pytest.raises(LabInputError, match="Cannot tell the format"):
        format_for("x.txt", None)


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_cli_every_format(small_decode, tmp_path, capsys, fmt):
    out = tmp_path / f"out.{fmt}"
    code = main(["export", "--dataset", str(small_decode), "--sel", "model=qwen3-8b",
                 "gpu=h100-sxm", "--vars", "step_time_s", "valid", "--format", fmt,
                 "-o", str(out)])
    assert code == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.exists()


def test_export_cli_bad_selection_exits_2(small_decode, tmp_path, capsys):
    code = main(["export", "--dataset", str(small_decode), "--sel", "gpu=a100",
                 "-o", str(tmp_path / "x.csv")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("inference-lab: error: gpu=a100 is not on the grid; valid gpu "
                          "values: h100-sxm, l4, tpu-v5e.")


def test_a_mistyped_dataset_path_is_reported_not_computed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--dataset", "nope.zarr", "-o", "sel.csv"]) == 2
    err = capsys.readouterr().err
    assert "There is no dataset at nope.zarr" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("folder", ["home", "empty"])
def test_a_folder_that_is_no_dataset_is_never_advised_deleted(tmp_path, capsys, folder):
    path = tmp_path / folder
    path.mkdir()
    if folder == "home":
        (path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["export", "--dataset", str(path), "-o", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{path} is not a dataset: it holds no Zarr store" in err
    assert "delete" not in err
    assert sorted(p.name for p in path.iterdir()) == (["notes.txt"] if folder == "home" else [])


def test_a_store_of_another_experiment_than_named_is_refused(small_decode, tmp_path, capsys):
    assert main(["export", "--dataset", str(small_decode), "--experiment", "context",
                 "-o", str(tmp_path / "s.csv")]) == 2
    assert "holds the decode dataset, not context" in capsys.readouterr().err
    assert main(["export", "--dataset", str(small_decode), "--sel", "model=qwen3-8b",
                 "-o", str(tmp_path / "s.csv")]) == 0


@pytest.mark.parametrize("marked", [True, False])
def test_a_zarr_export_opens_again_and_is_never_called_stale(small_decode, tmp_path, capsys,
                                                             marked):
    """An export's store was "stale: written before datasets recorded file checksums", and the
    advice (`sweep --experiment decode --out x.zarr`) replaced the reader's selection with the
    whole grid. It opens as it is now; an export from before the mark too (``marked=False``)."""
    import lab
    from sweeps import metadata as md

    out = tmp_path / "x.zarr"
    assert main(["export", "--dataset", str(small_decode), "--sel", *SEL, "-o", str(out)]) == 0
    if not marked:
        meta = json.loads((out / "zarr.json").read_text())
        del meta["attributes"][md.ATTR_EXPORTED]
        (out / "zarr.json").write_text(json.dumps(meta))
    opened = lab.open_dataset(str(out))
    expected = select(open_grid(small_decode), SEL, "decode").load()
    assert dict(opened.sizes) == dict(expected.sizes)
    np.testing.assert_array_equal(opened["step_time_s"].values, expected["step_time_s"].values)
    assert opened["step_time_s"].attrs["units"] == "s"
    capsys.readouterr()
    assert main(["export", "--dataset", str(out), "-o", str(tmp_path / "again.csv")]) == 0
    assert "stale" not in capsys.readouterr().err
    assert len(pd.read_csv(tmp_path / "again.csv")) == expected["step_time_s"].size
