"""Serving grids (experiments 5–8): random cells equal ``calc <experiment>`` records."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stdout

import numpy as np
import pytest

from cli.main import main
from lab.errors import LabInputError
from lab.points.serving_points import calc_context, calc_goodput, calc_prefill, calc_prefix
from sweeps.grid_files import from_mapping, preset
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment

RTOL = 1e-12
CELLS = 300


@pytest.fixture(scope="session")
def serving(tmp_path_factory):
    """Every serving grid of the default preset, written to Zarr and opened again."""
    grid = preset("default")
    root = tmp_path_factory.mktemp("serving")
    out = {}
    for name in ("prefill", "prefix", "goodput", "context"):
        path = write_experiment(grid_kind(name), grid.resolve(name), grid.name, root / f"{name}.zarr",
                                     Runner(None, "threads"))
        out[name] = open_grid(path)
    return out


def _cells(ds, count, seed):
    """``count`` random cells: (coordinates, variables) as Python values."""
    loaded = ds.compute()
    rng = np.random.default_rng(seed)
    dims = list(ds.dims)
    for _ in range(count):
        index = tuple(int(rng.integers(ds.sizes[d])) for d in dims)
        coords = {d: loaded[d].values[i].item() for d, i in zip(dims, index, strict=True)}
        values = {n: loaded[n].values[index].item() for n in ds.data_vars}
        yield coords, values


def _assert_matches(values: dict, record: dict) -> None:
    for name, value in values.items():
        expected = record[name]
        if isinstance(expected, bool) or isinstance(value, bool):
            assert bool(value) is bool(expected), name
        elif isinstance(expected, float) and math.isnan(expected):
            assert math.isnan(value), name
        elif isinstance(expected, int) and not isinstance(expected, bool):
            assert value == expected, name
        else:
            assert value == pytest.approx(expected, rel=RTOL, abs=0), name


def _constants(ds):
    return {k: ds[k].values.item() for k in ds.coords if k not in ds.dims}


def test_prefill_cells_equal_calc(serving):
    ds = serving["prefill"]
    c = _constants(ds)
    for coords, values in _cells(ds, CELLS, 5):
        record = calc_prefill(prompt=coords["prompt"], chunk=coords["chunk"],
                              decode_ms=c["decode_ms"], c0_ms=c["c0_ms"], c1_ms=c["c1_ms"],
                              deadline_ms=c["deadline_ms"], itl_ms=c["itl_ms"])
        _assert_matches(values, record)


def test_prefix_cells_equal_calc(serving):
    ds = serving["prefix"]
    c = _constants(ds)
    for coords, values in _cells(ds, CELLS, 6):
        record = calc_prefix(model=c["model"], tp=c["tp"], own=c["own"], **coords)
        _assert_matches(values, record)


def test_goodput_cells_equal_calc(serving):
    ds = serving["goodput"]
    c = _constants(ds)
    assert c["trace"] == "default"
    for coords, values in _cells(ds, CELLS, 7):
        record = calc_goodput(batch_cap=coords["batch_cap"], ttft_ms=coords["ttft_ms"],
                              tpot_ms=coords["tpot_ms"], c0_ms=c["c0_ms"], c1_ms=c["c1_ms"])
        _assert_matches(values, record)


def test_context_cells_equal_calc(serving):
    ds = serving["context"]
    c = _constants(ds)
    for coords, values in _cells(ds, CELLS, 8):
        window = coords["window"] or None
        record = calc_context(tokens=coords["tokens"], a_ms=c["a_ms"], c_ms=c["c_ms"],
                              window=window)
        _assert_matches(values, record)
    assert ds["pairs"].dtype == np.int64


@pytest.mark.parametrize("experiment,argv,cell", [
    ("prefill", ["--prompt", "16384", "--chunk", "2048"], {"prompt": 16384, "chunk": 2048}),
    ("prefix", ["--prefix", "1000", "--requests", "128", "--block", "16"],
     {"prefix": 1000, "requests": 128, "block": 16}),
    ("goodput", ["--batch-cap", "64", "--ttft-ms", "1000", "--tpot-ms", "12"],
     {"batch_cap": 64, "ttft_ms": 1000.0, "tpot_ms": 12.0}),
    ("context", ["--tokens", "32768", "--window", "4096"], {"tokens": 32768, "window": 4096}),
])
def test_cells_equal_cli_json(serving, experiment, argv, cell):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calc", experiment, *argv, "--json"]) == 0
    record = json.loads(out.getvalue())
    ds = serving[experiment].sel(cell)
    values = {n: ds[n].values.item() for n in ds.data_vars}
    record = {k: (float("nan") if v is None else v) for k, v in record.items()}
    _assert_matches(values, record)


def test_worked_cases_are_on_the_grids(serving):
    prefill = serving["prefill"].sel(prompt=16384, chunk=2048)
    assert prefill["chunks"].values.item() == 8
    assert f"{prefill['ttft_s'].values.item() * 1e3:.2f}" == "1079.04"
    prefix = serving["prefix"].sel(prefix=1000, requests=128, block=16)
    assert prefix["shared_blocks"].values.item() == 62


def test_every_serving_variable_is_labelled(serving):
    for name, ds in serving.items():
        for var_name, var in ds.variables.items():
            assert var.attrs.get("long_name") and var.attrs.get("units"), (name, var_name)


def test_serving_specs_reject_what_calc_rejects(tmp_path):
    grid = from_mapping({"prefix": {"prefix": [0], "own": 0}}, "g.toml", "g")
    with pytest.raises(LabInputError, match="cannot both be 0"):
        grid.resolve("prefix")
    grid = from_mapping({"prefix": {"prefix": [200_000]}}, "g.toml", "g")
    with pytest.raises(LabInputError, match="exceeds"):
        grid.resolve("prefix")
    grid = from_mapping({"goodput": {"trace": str(tmp_path / "none.csv")}}, "g.toml", "g")
    with pytest.raises(LabInputError, match="does not exist"):
        grid.resolve("goodput")
    grid = from_mapping({"prefix": {"model": "deepseek-v3", "tp": 8}}, "g.toml", "g")
    with pytest.raises(LabInputError, match=r"DeepSeek.* is a mixture-of-experts model"):
        grid.resolve("prefix")


def test_changed_trace_makes_goodput_stale(tmp_path):
    from lab.points.serving_points import DEFAULT_TRACE
    from sweeps.store import StaleDatasetError

    trace = tmp_path / "trace.csv"
    trace.write_bytes(DEFAULT_TRACE.read_bytes())
    grid = from_mapping({"goodput": {"trace": str(trace), "batch_cap": [1, 64]}}, "g", "g")
    path = write_experiment(grid_kind("goodput"), grid.resolve("goodput"), grid.name,
                                      tmp_path / "goodput.zarr", Runner(None, "threads"))
    assert open_grid(path).sizes["batch_cap"] == 2
    lines = trace.read_text().splitlines()
    trace.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(StaleDatasetError, match=r"its input changed \(trace_sha256\)"):
        open_grid(path)


def test_goodput_grid_takes_the_kv_precision(tmp_path):
    """kv_precision is a goodput constant (default bf16, the default grid's figures); an FP8
    cache grid equals calc goodput --kv-precision fp8 with the memory check on."""
    from lab.points.decode_points import DecodeConfig

    assert preset("default").resolve("goodput").constants["kv_precision"] == "bf16"
    section = {"kv_precision": "fp8", "memory_check": True, "model": "llama-3.1-70b",
               "tp": 4, "batch_cap": [64, 256], "ttft_ms": [1000.0], "tpot_ms": [30.0]}
    grid = from_mapping({"goodput": section}, "g", "g")
    ds = open_grid(write_experiment(grid_kind("goodput"), grid.resolve("goodput"), grid.name,
                                    tmp_path / "goodput.zarr", Runner(None, "threads")))
    assert _constants(ds)["kv_precision"] == "fp8"
    for coords, values in _cells(ds, 4, 3):
        decode = DecodeConfig(model="llama-3.1-70b", tp=4, kv_precision="fp8")
        record = calc_goodput(batch_cap=coords["batch_cap"], ttft_ms=coords["ttft_ms"],
                              tpot_ms=coords["tpot_ms"], memory_check=True, decode=decode)
        _assert_matches(values, record)
        bf16 = calc_goodput(batch_cap=coords["batch_cap"], ttft_ms=coords["ttft_ms"],
                            tpot_ms=coords["tpot_ms"], memory_check=True,
                            decode=decode.with_(kv_precision="bf16"))
        assert bf16 != record
