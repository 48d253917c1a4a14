"""Files other tools read without surprises: plain ``xr.open_zarr`` without a warning, CF
attributes, units plain pint and UDUNITS-2 parse, compressed NetCDF, flag codes as text and
per-column units in CSV/Parquet — each export opened with pandas, xarray and pint-xarray.

Warnings are errors in this suite (pyproject), so a warning on open fails these tests.
"""

from __future__ import annotations

import json
from datetime import datetime

import cf_units
import numpy as np
import pandas as pd
import pint
import pint_xarray  # noqa: F401  (registers the .pint accessor)
import pyarrow.parquet as pq
import pytest
import xarray as xr

from cli.main import main
from lab.pint_units import pint_registry
from lab.unit_attrs import unit_label
from sweeps import metadata as md
from sweeps.conventions import CONVENTIONS
from sweeps.grid_files import preset
from sweeps.grid_kinds import grid_kind
from sweeps.paths import DATASET_NAMES
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment


@pytest.fixture(scope="module")
def default_grids(tmp_path_factory):
    """Every experiment's ``default`` grid, written by the sweep's writer."""
    folder = tmp_path_factory.mktemp("default-grids")
    grid = preset("default")
    return {name: write_experiment(grid_kind(name), grid.resolve(name), grid.name, folder / f"{name}.zarr",
                                        Runner(None, "threads"))
            for name in DATASET_NAMES}


def _assert_cf(attrs: dict) -> None:
    assert attrs["Conventions"] == CONVENTIONS
    created = datetime.fromisoformat(attrs["date_created"].replace("Z", "+00:00"))
    assert created.tzinfo is not None
    lines = attrs["history"].splitlines()
    assert lines and all(line.split(" ", 1)[1].startswith("inference-lab ") for line in lines)
    assert lines[-1].startswith(attrs["date_created"])


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_plain_open_zarr_reads_consolidated_metadata_without_warning(default_grids, name):
    ds = xr.open_zarr(default_grids[name])                 # no consolidated= argument
    lab_view = open_grid(default_grids[name])              # the lab's checked reader agrees
    assert set(ds.data_vars) == set(lab_view.data_vars)
    first = next(iter(ds.data_vars))
    np.testing.assert_array_equal(ds[first].values, lab_view[first].values)
    _assert_cf(ds.attrs)
    assert ds.attrs[md.ATTR_DIGESTS] and ds.attrs["history"].count("\n") == 0


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_every_variable_of_every_dataset_quantifies_with_pint(default_grids, name):
    ds = open_grid(default_grids[name])
    quantified = ds.pint.quantify(unit_registry=pint_registry())
    for var in (*ds.data_vars, *ds.dims):
        assert quantified[var].pint.units is not None, var
    seconds = [v for v in ds.data_vars if ds[v].attrs["units"] == "s"]
    assert all(str(quantified[v].pint.units) == "second" for v in seconds)


@pytest.fixture(scope="module")
def exports(default_grids, tmp_path_factory):
    """The decode grid exported (one GPU, two models) in every format."""
    folder = tmp_path_factory.mktemp("exports")
    out = {}
    for suffix in ("csv", "parquet", "nc", "zarr"):
        out[suffix] = folder / f"decode.{suffix}"
        assert main(["export", "--dataset", str(default_grids["decode"]), "--sel",
                     "gpu=h100-sxm", "model=qwen2.5-7b,llama-3.1-8b", "context=1024:8192",
                     "-o", str(out[suffix])]) == 0
    return out


def test_csv_has_reason_as_text_and_its_code(exports, capsys):
    frame = pd.read_csv(exports["csv"])
    assert set(frame["reason"]) == {"valid", "tp_heads"}  # tp 8 does not divide 28 heads
    assert frame.loc[frame["reason"] == "valid", "valid"].all()
    assert (frame.loc[frame["reason"] == "valid", "reason_code"] == 0).all()
    assert (frame.loc[frame["reason"] == "tp_heads", "reason_code"] > 0).all()
    assert list(frame.columns).index("reason_code") == list(frame.columns).index("reason") + 1
    assert "reason_text" not in frame


def test_parquet_has_reason_as_text_and_units_per_column(exports):
    table = pq.read_table(exports["parquet"])
    frame = table.to_pandas()
    assert set(frame["reason"]) == {"valid", "tp_heads"}
    assert frame["reason_code"].dtype.kind == "i"
    fields = {f.name: f.metadata or {} for f in table.schema}
    assert fields["step_time_s"][b"units"] == b"s"
    assert fields["context"][b"units"] == b"1"                 # a count, CF: dimensionless
    assert fields["context"][b"counted_as"] == b"tokens"
    assert fields["step_time_s"][b"long_name"]
    meta = json.loads(table.schema.metadata[b"inference_lab"])
    _assert_cf(meta["attrs"])
    assert md.ATTR_DIGESTS not in meta["attrs"]


@pytest.mark.parametrize("suffix", ["nc", "zarr"])
def test_netcdf_and_zarr_exports_open_with_xarray_and_pint(exports, default_grids, suffix):
    ds = xr.open_dataset(exports[suffix], engine="h5netcdf" if suffix == "nc" else "zarr")
    _assert_cf(ds.attrs)
    assert ds.attrs["history"].count("\n") == 1 and "export as" in ds.attrs["history"]
    assert md.ATTR_DIGESTS not in ds.attrs
    quantified = ds.pint.quantify(unit_registry=pint_registry())
    assert str(quantified["step_time_s"].pint.units) == "second"
    assert str(quantified["aggregate_tokens_per_s"].pint.units) == "1 / second"
    assert ds["aggregate_tokens_per_s"].attrs["counted_as"] == "tokens"
    source = open_grid(default_grids["decode"]).sel(gpu="h100-sxm", model=["qwen2.5-7b",
                                                                             "llama-3.1-8b"])
    np.testing.assert_array_equal(ds["step_time_s"].values,
                                  source["step_time_s"].sel(context=ds.context).values)


def test_netcdf_export_is_compressed(exports):
    ds = xr.open_dataset(exports["nc"], engine="h5netcdf")
    numeric = [v for v in ds.data_vars if ds[v].dtype.kind in "iufb"]
    assert numeric and all(ds[v].encoding.get("zlib") or ds[v].encoding.get("compression")
                           for v in numeric)


def test_whole_dataset_download_strips_checksums_and_carries_cf_attrs(default_grids, tmp_path):
    from apps.ui.parts.downloads import compressed_netcdf

    source = open_grid(default_grids["prefix"])
    path = tmp_path / "download.nc"
    path.write_bytes(compressed_netcdf(source))
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert md.ATTR_DIGESTS not in ds.attrs
    _assert_cf(ds.attrs)
    assert "whole-dataset" in ds.attrs["history"].splitlines()[-1]
    np.testing.assert_array_equal(ds["shared_blocks"].values, source["shared_blocks"].values)


PLAIN_PINT = pint.UnitRegistry(force_ndarray_like=True)
"""Pint's default definitions and nothing else (pint-xarray refuses a registry without
``force_ndarray_like``; it changes no definition)."""


def _unparsed(ds: xr.Dataset) -> list[str]:
    """``name: units`` of every variable of ``ds`` whose units UDUNITS-2 or plain pint refuse
    (a variable without ``units`` counts as refused)."""
    failures = []
    for name, var in ds.variables.items():
        units = var.attrs.get("units")
        try:
            cf_units.Unit(units)
            PLAIN_PINT.parse_units(units) if units != "1" else PLAIN_PINT(units)
        except Exception as exc:  # any refusal is the failure reported
            failures.append(f"{name}: {units!r} ({type(exc).__name__})")
    return failures


def _quantifies_plainly(ds: xr.Dataset) -> None:
    """Every variable of ``ds`` quantifies with pint-xarray's default registry and with a
    plain one, and a count keeps its count in ``counted_as``."""
    for quantified in (ds.pint.quantify(), ds.pint.quantify(unit_registry=PLAIN_PINT)):
        for var in ds.data_vars:
            assert quantified[var].pint.units is not None, var
    for name, var in ds.variables.items():
        if var.attrs.get("counted_as"):
            assert var.attrs["units"] in ("1", "1/s"), name


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_every_variable_of_every_default_grid_parses_with_plain_pint_and_udunits(default_grids,
                                                                                   name):
    ds = open_grid(default_grids[name])
    assert _unparsed(ds) == []
    _quantifies_plainly(ds)


@pytest.mark.parametrize("suffix", ["nc", "zarr"])
def test_every_variable_of_every_export_parses_with_plain_pint_and_udunits(exports, suffix):
    ds = xr.open_dataset(exports[suffix], engine="h5netcdf" if suffix == "nc" else "zarr")
    assert _unparsed(ds) == []
    _quantifies_plainly(ds)
    assert str(ds.pint.quantify()["memory_kv_bytes"].pint.units) == "byte"


def test_every_parquet_column_unit_parses_with_plain_pint_and_udunits(exports):
    fields = {f.name: f.metadata or {} for f in pq.read_table(exports["parquet"]).schema}
    units = {name: meta[b"units"].decode() for name, meta in fields.items() if b"units" in meta}
    assert set(fields) - set(units) == {"reason"}              # the flag as text has no unit
    table = xr.Dataset({name: ((), 0, {"units": unit}) for name, unit in units.items()})
    assert _unparsed(table) == []


def test_whole_dataset_download_units_parse_with_plain_pint_and_udunits(default_grids,
                                                                       tmp_path):
    from apps.ui.parts.downloads import compressed_netcdf

    path = tmp_path / "goodput.nc"
    path.write_bytes(compressed_netcdf(open_grid(default_grids["goodput"])))
    ds = xr.open_dataset(path, engine="h5netcdf")
    assert _unparsed(ds) == []
    _quantifies_plainly(ds)


@pytest.mark.parametrize(("name", "variable", "label"), [
    ("decode", "context", "tokens"), ("decode", "aggregate_tokens_per_s", "tokens/s"),
    ("decode", "tp", "GPUs"), ("decode", "linear_flops", "FLOP"),
    ("decode", "memory_kv_bytes", "B"), ("decode", "reserve_gb", "GB"),
    ("decode", "allreduce_latency_us", "µs"), ("goodput", "goodput_rps", "requests/s"),
    ("prefix", "shared_blocks", "blocks"), ("context", "pairs", "pairs"),
])
def test_the_labels_charts_show_come_back_from_the_cf_attributes(default_grids, name, variable,
                                                                  label):
    from apps.ui.plots.charts import axis_label

    da = open_grid(default_grids[name])[variable]
    assert unit_label(da.attrs) == label
    shown = {"B": "GB", "FLOP": "GFLOP"}.get(label, label)
    assert axis_label(da).endswith(f"({shown})")


@pytest.mark.parametrize("name", ["measured", "served"])
def test_every_variable_of_the_table_datasets_parses_with_plain_pint_and_udunits(name):
    """Experiments 9's and 11's ``lab.open_dataset`` too (the README says every dataset):
    experiment 11's ``layers`` and ``moe_layers`` read ``units = "layers"``, which neither
    UDUNITS-2 nor pint parses."""
    import lab

    ds = lab.open_dataset(name)
    units = {n: v.attrs["units"] for n, v in ds.variables.items() if "units" in v.attrs}
    assert len(units) > 10  # ids and text have none
    assert _unparsed(xr.Dataset({n: ((), 0, {"units": u}) for n, u in units.items()})) == []
    for quantified in (ds.pint.quantify(), ds.pint.quantify(unit_registry=PLAIN_PINT)):
        assert all(quantified[n].pint.units is not None for n in units if n in ds.data_vars)
