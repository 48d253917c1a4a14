"""Issue 26 in the serving grids: a model with sliding-window layers (Gemma 3 27B) in the
goodput and speculative grids — every cell equals the ``calc`` point for the same inputs."""

from __future__ import annotations

import math

import pytest

from lab.points.decode_points import DecodeConfig
from lab.points.serving_points import calc_goodput
from lab.points.speculative_points import SpeculativeConfig, calc_speculative
from sweeps.grid_files import from_mapping
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment


def _write(tmp_path, name: str, section: dict):
    grid = from_mapping({name: section}, "test grid", "windows")
    path = write_experiment(grid_kind(name), grid.resolve(name), grid.name,
                            tmp_path / f"{name}.zarr", Runner(None, "threads"))
    return open_grid(path).compute()


def test_goodput_grid_with_windows_equals_calc(tmp_path):
    ds = _write(tmp_path, "goodput", {"model": "gemma-3-27b", "tp": 2, "memory_check": True,
                                      "batch_cap": [4, 32], "ttft_ms": [1000.0, 8000.0],
                                      "tpot_ms": [12.0, 30.0]})
    for cap in (4, 32):
        for ttft in (1000.0, 8000.0):
            for tpot in (12.0, 30.0):
                record = calc_goodput(batch_cap=cap, ttft_ms=ttft, tpot_ms=tpot,
                                      memory_check=True,
                                      decode=DecodeConfig(model="gemma-3-27b", tp=2))
                cell = ds.sel(batch_cap=cap, ttft_ms=ttft, tpot_ms=tpot)
                for name in ("goodput_rps", "throughput_tokens_per_s", "attainment",
                             "makespan_s", "ttft_p50_s", "tpot_p90_s", "good_requests"):
                    value, want = cell[name].item(), record[name]
                    if isinstance(want, float) and math.isnan(want):
                        assert math.isnan(value), name
                    else:
                        assert value == pytest.approx(want, rel=1e-12, abs=0), name


def test_speculative_grid_with_windows_equals_calc(tmp_path):
    ds = _write(tmp_path, "speculative", {"model": "gemma-3-27b", "draft": "mtp",
                                          "batch": [1, 64], "context": [512, 1024, 5000],
                                          "k": [0, 3], "alpha": [0.8]})
    for batch in (1, 64):
        for context in (512, 1024, 5000):
            for k in (0, 3):
                point = calc_speculative(SpeculativeConfig(model="gemma-3-27b", draft="mtp",
                                                           batch=batch, context=context, k=k))
                cell = ds.sel(batch=batch, context=context, k=k, alpha=0.8)
                for name in ("verify_kv_read_bytes", "verify_attention_flops", "verify_time_s",
                             "cycle_time_s", "speedup", "draft_kv_bytes"):
                    assert cell[name].item() == point[name], name
