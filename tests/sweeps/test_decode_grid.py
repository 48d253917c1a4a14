"""Decode grid cells equal the CLI's numbers; every variable and coordinate is labelled."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import numpy as np
import pytest

from cli.main import main
from lab.catalog import gpu_catalog, model_catalog
from lab.errors import LabInputError
from lab.models.decode_metrics import UNITS
from lab.points.decode_points import DecodeConfig, calc_decode
from sweeps import metadata as md
from sweeps.grids.decode import DIMS

RTOL = 1e-12
TEXT_DIMS = ("model", "gpu", "precision", "kv_precision")


def _cell_inputs(ds, index):
    return {dim: ds[dim].values[i] for dim, i in zip(DIMS, index, strict=True)}


def _random_cells(ds, count, seed):
    rng = np.random.default_rng(seed)
    return [tuple(int(rng.integers(ds.sizes[d])) for d in DIMS) for _ in range(count)]


def _assert_matches(cell: dict, record: dict) -> None:
    for name, value in cell.items():
        expected = record[name]
        if isinstance(expected, bool):
            assert bool(value) is expected, name
        else:
            assert value == pytest.approx(expected, rel=RTOL, abs=0), name


def _check_random_cells(ds, count: int, seed: int) -> tuple[int, int]:
    """``count`` random cells of ``ds`` against ``calc_decode``: a valid cell equals the point
    model's record, an invalid one has a reason, NaN figures, and ``calc_decode`` refuses it.
    Returns how many valid and invalid cells were seen."""
    names = list(ds.data_vars)
    loaded = ds.compute()
    valid_seen = invalid_seen = 0
    for index in _random_cells(ds, count, seed=seed):
        inputs = _cell_inputs(ds, index)
        cell = {name: loaded[name].values[index].item() for name in names}
        config = DecodeConfig(**{k: (str(v) if k in TEXT_DIMS else int(v))
                                 for k, v in inputs.items()})
        if cell["valid"]:
            valid_seen += 1
            _assert_matches(cell, calc_decode(config))
        else:
            invalid_seen += 1
            assert cell["reason"] > 0
            assert all(np.isnan(cell[n]) for n in UNITS if loaded[n].dtype.kind == "f")
            with pytest.raises(LabInputError):
                calc_decode(config)
    return valid_seen, invalid_seen


def test_random_cells_equal_calc_decode(default_decode):
    valid_seen, invalid_seen = _check_random_cells(default_decode, 400, seed=4)
    assert valid_seen > 200 and invalid_seen > 10


@pytest.mark.parametrize("inputs", [
    {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1, "precision": "bf16", "batch": 8,
     "context": 8192},
    {"model": "qwen2.5-72b", "gpu": "mi300x", "tp": 4, "precision": "fp8", "batch": 96,
     "context": 32768},
    {"model": "llama-3.2-1b", "gpu": "l4", "tp": 2, "precision": "bf16", "batch": 1024,
     "context": 128},
])
def test_cells_equal_cli_json(default_decode, inputs):
    argv = ["calc", "decode", "--json"]
    for key, value in inputs.items():
        argv += [f"--{key}", str(value)]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    record = json.loads(out.getvalue())
    cell = default_decode.sel({"kv_precision": "bf16", **inputs})
    _assert_matches({n: cell[n].values.item() for n in cell.data_vars}, record)
    assert cell["step_time_s"].dtype == np.float64


def test_acceptance_cell_is_bit_identical(default_decode):
    cell = default_decode.sel(model="llama-3.1-8b", gpu="h100-sxm", tp=1, precision="bf16",
                              kv_precision="bf16", batch=8, context=8192)
    record = calc_decode(DecodeConfig())
    for name in cell.data_vars:
        assert cell[name].values.item() == record[name], name
    assert f"{cell['step_time_s'].values.item() * 1e3:.2f}" == "7.04"


def test_default_grid_shape(default_decode):
    ds = default_decode
    assert tuple(ds.dims) == DIMS
    # every catalog model and GPU: 13 dense, 4 MoE, issue 26's 5 with layer kinds, and the rest
    assert ds.sizes["model"] == len(model_catalog()) and ds.sizes["gpu"] == len(gpu_catalog())
    assert {"gpt-oss-120b", "gemma-3-27b", "llama-4-maverick"} <= set(ds.model.values)
    assert list(ds.tp.values) == [1, 2, 4, 8]
    assert list(ds.precision.values) == ["bf16", "fp8"]
    assert ds.batch.values[0] == 1 and ds.batch.values[-1] == 1024
    assert {2, 3, 4, 6, 8, 12} <= set(ds.batch.values.tolist())
    assert ds.context.values[0] == 128 and ds.context.values[-1] == 131072


def test_every_variable_and_coordinate_is_labelled(default_decode):
    ds = default_decode
    for name, var in ds.variables.items():
        assert var.attrs.get("long_name"), name
        assert var.attrs.get("units"), name
    assert ds["step_time_s"].attrs["units"] == "s"
    assert ds["context"].attrs["units"] == "1"                 # a count, CF: dimensionless
    assert ds["context"].attrs["counted_as"] == "tokens"
    assert ds["reason"].attrs["flag_values"][0] == 0


def test_dataset_attrs_carry_provenance(default_decode):
    attrs = default_decode.attrs
    spec = json.loads(attrs[md.ATTR_SPEC])
    assert spec["experiment"] == "decode" and spec["axes"]["tp"] == [1, 2, 4, 8]
    catalog = json.loads(attrs[md.ATTR_CATALOG])
    assert catalog["gpus"]["h100-sxm"]["source"]
    assert catalog["models"]["llama-3.1-8b"]["total_params"] == 8_030_261_248
    assert attrs[md.ATTR_VERSION] == md.package_version()
    assert attrs[md.ATTR_COMPLETE] == 1
    assert len(attrs[md.ATTR_HASH]) == 64


def test_invalid_cells_are_nan_with_reason(default_decode):
    from lab.points.validity import Reason

    no_fp8 = default_decode.sel(model="llama-3.1-8b", gpu="a100-sxm-80gb", tp=1,
                                precision="fp8", kv_precision="bf16", batch=8, context=8192)
    assert not no_fp8["valid"].values.item()
    assert no_fp8["reason"].values.item() == Reason.FP8_UNSUPPORTED
    assert np.isnan(no_fp8["step_time_s"].values.item())
    too_long = default_decode.sel(model="qwen2.5-7b", gpu="h100-sxm", tp=1, precision="bf16",
                                  kv_precision="bf16",
                                  batch=8, context=131072)
    assert too_long["reason"].values.item() == Reason.CONTEXT_TOO_LONG


@pytest.mark.parametrize("model", ["mixtral-8x7b", "deepseek-v2-lite", "gpt-oss-120b",
                                   "gemma-3-27b", "llama-4-scout"])
def test_moe_cells_equal_calc_decode(default_decode, model):
    """A MoE model's cells (experts touched, MLA's replicated latent) equal the point model's,
    in the default grid where its chunk may hold dense models too."""
    valid_seen, _ = _check_random_cells(default_decode.sel(model=[model]), 150, seed=14)
    assert valid_seen > 50


@pytest.mark.parametrize("inputs", [
    {"model": "mixtral-8x7b", "gpu": "h200", "tp": 2, "precision": "bf16", "batch": 8,
     "context": 4096},
    {"model": "mixtral-8x7b", "gpu": "h100-sxm", "tp": 1, "precision": "fp8", "batch": 1024,
     "context": 128},
    {"model": "deepseek-v2-lite", "gpu": "h100-sxm", "tp": 8, "precision": "bf16", "batch": 64,
     "context": 32768},
    {"model": "deepseek-v2-lite", "gpu": "mi300x", "tp": 1, "precision": "fp8", "batch": 1,
     "context": 131072},
])
def test_moe_cells_equal_cli_json(default_decode, inputs):
    test_cells_equal_cli_json(default_decode, inputs)
    cell = default_decode.sel({"kv_precision": "bf16", **inputs})
    assert bool(cell["valid"].values.item())


@pytest.mark.parametrize("inputs", [
    {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1, "precision": "bf16",
     "kv_precision": "fp8", "batch": 8, "context": 8192},
    {"model": "deepseek-v2-lite", "gpu": "h200", "tp": 4, "precision": "fp8",
     "kv_precision": "fp8", "batch": 256, "context": 65536},
    {"model": "qwen3-30b-a3b", "gpu": "mi300x", "tp": 2, "precision": "bf16",
     "kv_precision": "fp8", "batch": 48, "context": 16384},
])
def test_fp8_kv_cells_equal_cli_json(default_decode, inputs):
    argv = ["calc", "decode", "--json"]
    for key, value in inputs.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    record = json.loads(out.getvalue())
    assert record["inputs"]["kv_precision"] == "fp8"
    cell = default_decode.sel(inputs)
    _assert_matches({n: cell[n].values.item() for n in cell.data_vars}, record)


def test_fp8_kv_halves_the_kv_bytes_and_leaves_the_weights(default_decode):
    """The acceptance case with an FP8 cache (docs/model.md §0): 4.29 GB of KV reads, a
    5.76 ms step, 96 sequences at 8,192 tokens; the BF16 slice keeps 7.04 ms and 48."""
    at = default_decode.sel(model="llama-3.1-8b", gpu="h100-sxm", tp=1, precision="bf16",
                            batch=8, context=8192).compute()
    bf16, fp8 = at.sel(kv_precision="bf16"), at.sel(kv_precision="fp8")
    assert fp8["kv_read_bytes"].item() * 2 == bf16["kv_read_bytes"].item()
    assert fp8["linear_weight_bytes"].item() == bf16["linear_weight_bytes"].item()
    assert f"{fp8['kv_read_bytes'].item() / 1e9:.2f}" == "4.29"
    assert f"{fp8['step_time_s'].item() * 1e3:.2f}" == "5.76"
    assert f"{bf16['step_time_s'].item() * 1e3:.2f}" == "7.04"
    assert (fp8["max_sequences"].item(), bf16["max_sequences"].item()) == (96, 48)


@pytest.mark.parametrize("batch", [3, 8])
def test_moe_cells_are_bit_identical_to_the_point_call(default_decode, batch):
    """Kimi K2.5's experts touched at batch 3 and 8 differed in the last bit between a grid
    cell (numpy's pow) and calc (Python's float pow): 10,034,118,656.000021 bytes against
    …000008. Equal, not close."""
    inputs = {"model": "kimi-k2.5", "gpu": "gb300", "tp": 8, "precision": "fp8",
              "kv_precision": "fp8", "batch": batch, "context": 3072}
    record = calc_decode(DecodeConfig(**inputs))
    cell = default_decode.sel(inputs).compute()
    for name in ("linear_weight_bytes", "hbm_time_s", "step_time_s",
                 "aggregate_tokens_per_s_per_gpu"):
        assert cell[name].values.item() == record[name], name
