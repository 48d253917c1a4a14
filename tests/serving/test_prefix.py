"""Experiment 6: the worked case of docs/model.md §6, the sawtooth, arrays agreeing with points."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from lab.catalog import get_model, model_table
from lab.derivations.decode_steps import render_text
from lab.derivations.serving_steps import prefix_steps
from lab.models.prefix import prefix_metrics
from lab.points.serving_points import calc_prefix


def test_spec_worked_case(llama8b):
    r = prefix_metrics(llama8b, 1, 1000, 200, 100, 16)
    assert r["shared_blocks"] == 62
    assert r["tail_tokens"] == 208
    assert r["private_blocks_per_request"] == 13
    assert r["blocks_with_cache"] == 1362
    assert r["blocks_without_cache"] == 7500
    assert round(r["saved_fraction"] * 100, 1) == 81.8
    assert r["block_bytes"] == 2_097_152
    assert r["bytes_with_cache"] == 1362 * 2_097_152
    assert r["owned_blocks_per_request"] == pytest.approx(13.62)


def test_calc_and_text():
    r = calc_prefix()
    text = render_text(prefix_steps(r))
    assert "1,362 blocks" in text and "7,500 blocks" in text and "81.8 %" in text
    assert "2,097,152 B" in text


def test_tp_shards_bytes(llama8b):
    assert prefix_metrics(llama8b, 2, 1000, 200, 100, 16)["block_bytes"] == 1_048_576


def test_block_bytes_follow_the_kv_precision(llama8b):
    # A BF16 cache is experiment 6's (no input for it): 16 · 131,072 B = 2,097,152 B a block;
    # an FP8 cache halves kv_tok to 65,536 B, so a block is 1,048,576 B and 1,362 blocks 1.43 GB.
    bf16 = prefix_metrics(llama8b, 1, 1000, 200, 100, 16)
    fp8 = prefix_metrics(llama8b, 1, 1000, 200, 100, 16, kv_precision="fp8")
    assert bf16["block_bytes"] == 2_097_152
    assert fp8["block_bytes"] == 1_048_576
    assert fp8["bytes_with_cache"] == 1_428_160_512
    assert fp8["blocks_with_cache"] == bf16["blocks_with_cache"] == 1_362


def test_sawtooth_one_more_prefix_token_saves_or_costs_every_request_a_block(llama8b):
    # The private tail is (P mod b) + U tokens: one more prefix token moves it by one, and the
    # block count steps where the tail crosses a multiple of b, down or up.
    base = prefix_metrics(llama8b, 1, 1016 - 9, 200, 100, 16)  # P mod 16 = 15, tail 215
    plus = prefix_metrics(llama8b, 1, 1016 - 8, 200, 100, 16)  # P mod 16 = 0, tail 200
    assert base["private_blocks_per_request"] == 14
    assert plus["private_blocks_per_request"] == 13
    flat = prefix_metrics(llama8b, 1, 1016, 200, 100, 16)  # P mod 16 = 8, tail 208: 13 blocks
    over = prefix_metrics(llama8b, 1, 1017, 200, 100, 16)  # P mod 16 = 9, tail 209: 14 blocks
    assert (flat["private_blocks_per_request"], over["private_blocks_per_request"]) == (13, 14)
    p = np.arange(0, 200)
    saved = prefix_metrics(llama8b, 1, p, 200, 100, 16)["saved_fraction"]
    assert np.any(np.diff(saved) < 0) and np.any(np.diff(saved) > 0)


@given(prefix=st.integers(0, 5000), own=st.integers(0, 5000), n=st.integers(1, 500),
       block=st.sampled_from([1, 8, 16, 32, 256]))
def test_blocks_cover_tokens(prefix, own, n, block):
    from lab.catalog import get_model
    if prefix + own == 0:
        return
    r = prefix_metrics(get_model("llama-3.1-8b"), 1, prefix, own, n, block)
    assert r["shared_blocks"] * block + r["private_blocks_per_request"] * block >= prefix + own
    assert r["blocks_with_cache"] <= r["blocks_without_cache"]
    assert 0 <= r["saved_fraction"] < 1


def test_arrays_equal_pointwise(llama8b):
    prefix = np.array([0, 15, 16, 1000])
    requests = np.array([1, 7, 100])
    grid = prefix_metrics(llama8b, 1, prefix[:, None], 200, requests[None, :], 16)
    grid = {k: np.broadcast_to(v, (4, 3)) for k, v in grid.items()}
    for i, p in enumerate(prefix):
        for j, n in enumerate(requests):
            point = prefix_metrics(llama8b, 1, int(p), 200, int(n), 16)
            for key, value in point.items():
                assert grid[key][i, j] == pytest.approx(value), key


def test_model_table_gives_each_models_own_point():
    ids = ["llama-3.1-8b", "qwen2.5-7b"]
    table = model_table(ids)
    r = prefix_metrics(table, 1, 1000, 200, 100, 16)
    assert isinstance(r["block_bytes"], xr.DataArray)
    for i, model_id in enumerate(ids):
        alone = prefix_metrics(get_model(model_id), 1, 1000, 200, 100, 16)
        for key, value in alone.items():
            per_model = r[key][i] if isinstance(r[key], xr.DataArray) else r[key]
            assert float(per_model) == float(value), key
    assert float(r["block_bytes"][0]) == 2_097_152  # 16 tokens × 131,072 B (docs/model.md §6)
