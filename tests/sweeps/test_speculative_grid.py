"""Experiment 10's grid: every cell is ``calc speculative``'s number; ``open_dataset`` opens it."""

from __future__ import annotations

import numpy as np
import pytest

from lab.errors import LabInputError
from lab.points.speculative_points import SpeculativeConfig, calc_speculative
from sweeps.datasets import open_dataset
from sweeps.grid_files import from_mapping
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment

SMALL = {"batch": [1, 8, 300], "context": [512, 8192], "k": [0, 4], "alpha": [0.5, 0.8, 1.0],
         "draft": "mtp", "chunk_cells": 10}
"""A small grid in several chunks."""


def test_every_cell_equals_the_point(tmp_path):
    grid = from_mapping({"speculative": SMALL}, "test grid", "small")
    path = write_experiment(grid_kind("speculative"), grid.resolve("speculative"), grid.name,
                            tmp_path / "speculative.zarr", Runner(None, "threads"))
    ds = open_grid(path)
    assert ds["speedup"].dims == ("batch", "context", "k", "alpha")
    assert ds["speedup"].attrs["long_name"] == "speed-up over plain decoding"
    for batch, context, k, alpha in [(1, 512, 4, 0.8), (300, 512, 4, 0.5), (8, 8192, 0, 1.0),
                                     (300, 8192, 4, 1.0)]:
        point = calc_speculative(SpeculativeConfig(draft="mtp", batch=batch, context=context,
                                                   k=k, alpha=alpha))
        cell = ds.sel(batch=batch, context=context, k=k, alpha=alpha)
        for name in ("expected_tokens", "verify_time_s", "draft_time_s", "cycle_time_s",
                     "speedup", "aggregate_tokens_per_s", "draft_kv_bytes"):
            assert float(cell[name]) == point[name], name
    np.testing.assert_array_equal(ds["speedup"].sel(k=0).values, 1.0)


def test_a_spec_calc_would_refuse_is_refused_in_one_sentence():
    grid = from_mapping({"speculative": {"draft": "qwen2.5-7b"}}, "test grid", "bad")
    with pytest.raises(LabInputError, match="share the target's tokenizer"):
        grid.resolve("speculative")


def test_open_dataset_computes_the_default_grid(tmp_path):
    ds = open_dataset("speculative", path=tmp_path / "speculative.zarr")
    assert set(ds.dims) == {"batch", "context", "k", "alpha"}
    point = calc_speculative(SpeculativeConfig(batch=8, context=512))
    assert float(ds["speedup"].sel(batch=8, context=512, k=4, alpha=0.8)) == point["speedup"]
