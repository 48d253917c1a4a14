"""Grid specs: axis generators, presets, TOML files and their one-sentence errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lab.catalog import gpu_catalog, model_catalog
from lab.errors import LabInputError
from sweeps.axes import choose_chunks, expand_axis, logspace_axis, pow2_axis, range_axis
from sweeps.grid_files import PRESETS, from_mapping, load_grid, preset
from sweeps.grid_kinds import GRIDS


def test_pow2_axis_has_points_between():
    assert pow2_axis(1, 64) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert pow2_axis(128, 1024, between=False) == [128, 256, 512, 1024]
    assert pow2_axis(100, 300) == [100, 128, 192, 256, 300]


def test_range_and_logspace_axes():
    assert range_axis(1, 10, 4) == [1, 5, 9, 10]
    values = logspace_axis(128, 131072, 121)
    assert values[0] == 128 and values[-1] == 131072 and len(values) == 121
    assert values == sorted(set(values))


@pytest.mark.parametrize("entry,message", [
    ([], "is an empty list"),
    ({"pow2": [1, 8], "range": [1, 8]}, "exactly one of pow2, range, logspace"),
    ({"pow2": [8, 1]}, "1 ≤ start ≤ stop"),
    ({"range": [-1, 1]}, "0 ≤ start ≤ stop"),
    ({"range": [1, 8], "step": 0}, "'step' must be a positive whole number"),
    ({"logspace": [1, 8]}, "needs 'num'"),
    ("lots", "must be a list of values or a generator table"),
])
def test_bad_axis_entries(entry, message):
    with pytest.raises(LabInputError, match=message):
        expand_axis(entry, "grid.toml [decode].batch")


def test_chunks_fill_trailing_dims_first():
    assert choose_chunks((13, 16, 4, 2, 20, 21), 131072) == (2, 16, 4, 2, 20, 21)
    assert choose_chunks((13, 16, 4, 2, 20, 21), 1000) == (1, 1, 1, 2, 20, 21)
    assert choose_chunks((5,), 2) == (2,)


def test_default_preset_covers_catalog():
    spec = preset("default").resolve("decode")
    assert spec.axes["model"] == tuple(model_catalog())  # 13 dense, 12 in MoE records
    assert len(spec.axes["model"]) == 25 and spec.axes["gpu"] == tuple(gpu_catalog())
    assert {"mixtral-8x7b", "deepseek-v3", "gpt-oss-120b", "gemma-3-27b"} <= set(
        spec.axes["model"])
    assert spec.axes["tp"] == (1, 2, 4, 8) and spec.axes["precision"] == ("bf16", "fp8")
    assert spec.axes["kv_precision"] == ("bf16", "fp8")
    assert tuple(spec.axes) == ("model", "gpu", "tp", "precision", "kv_precision", "batch",
                                "context")
    assert spec.constants == {"budget": 0.9, "reserve_gb": 4.0, "page": 16,
                              "allreduce": False, "allreduce_latency_us": 5.0}


def test_large_preset_is_over_2e8_cells():
    spec = load_grid("large").resolve("decode")
    assert spec.cells >= 2e8
    assert spec.float_dtype == "float32"


def test_toml_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[decode]\nmodel = ["llama-3.1-8b"]\ngpu = "all"\n'
                    'batch = { pow2 = [1, 16] }\nbudget = 0.8\n'
                    'variables = ["step_time_s", "valid"]\n', encoding="utf-8")
    grid = load_grid(str(path))
    assert grid.name == "mine"
    spec = grid.resolve("decode")
    assert spec.axes["batch"] == (1, 2, 3, 4, 6, 8, 12, 16)
    assert spec.constants["budget"] == 0.8
    assert spec.variables == ("step_time_s", "valid")


@pytest.mark.parametrize("data,message", [
    ({"decode": {"model": ["gpt-5"]}}, "has 'gpt-5', which is not a valid model \\(valid: "
                                       "llama-3.2-1b"),
    ({"decode": {"batch": [0]}}, "has 0, outside 1 to 1,024 sequences"),
    ({"decode": {"tp": [1.5]}}, "has 1.5, which is not a whole number"),
    ({"decode": {"batch": [1, 1]}}, "repeats a value"),
    ({"decode": {"colour": "red"}}, "unknown key 'colour' \\(valid: "),
    ({"decode": {"variables": ["nope"]}}, "variables must be a non-empty list of"),
    ({"decode": {"float_dtype": "float16"}}, "float_dtype must be one of float64, float32"),
    ({"decode": {"chunk_cells": 0}}, "chunk_cells must be a positive whole number"),
    ({"decode": {"allreduce": "yes"}}, "must be true or false"),
    ({"decoder": {}}, "has a \\[decoder\\] section, but the experiments with grids are "),
    ({"name": "x"}, "has no experiment sections"),
])
def test_bad_specs(data, message):
    with pytest.raises(LabInputError, match=message):
        from_mapping(data, "grid.toml", "grid").resolve(next(
            (k for k in data if k != "name"), "decode"))


def test_unknown_grid_and_bad_toml(tmp_path):
    with pytest.raises(LabInputError, match=f"neither a preset \\({', '.join(PRESETS)}\\)"):
        load_grid("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text("[decode\n", encoding="utf-8")
    with pytest.raises(LabInputError, match="is not valid TOML"):
        load_grid(str(bad))


def test_missing_section(tmp_path):
    grid = from_mapping({"decode": {}}, "grid.toml", "g")
    with pytest.raises(LabInputError, match="There is no grid for experiment 'nope'"):
        grid.resolve("nope")


@pytest.mark.parametrize("experiment", list(GRIDS))
def test_finalize_only_fills_extra(experiment):
    grid = preset("default")
    expanded = grid.expand(experiment)
    resolved = grid.resolve(experiment)
    assert replace(resolved, extra={}) == replace(expanded, extra={})
    assert expanded.extra == {}
