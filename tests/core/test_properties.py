"""Invariants of the decode model, checked with hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.catalog import get_gpu, get_model, gpu_table, model_table
from lab.errors import LabInputError
from lab.models.decode_metrics import decode_metrics
from lab.models.inputs import DecodeInputs
from lab.points.decode_points import DecodeConfig, calc_decode

MODELS = ["llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b", "qwen2.5-14b", "mistral-7b-v0.3"]
GPUS = ["h100-sxm", "a100-sxm-80gb", "l4", "mi300x", "tpu-v6e", "b200"]

models = st.sampled_from(MODELS)
gpus = st.sampled_from(GPUS)
batches = st.integers(1, 1024)
contexts = st.integers(1, 32_768)


def step(model, gpu, batch, context, tp=1, precision="bf16"):
    return decode_metrics(DecodeInputs(get_model(model), get_gpu(gpu), tp, precision, batch, context))


@settings(max_examples=200, deadline=None)
@given(models, gpus, batches, batches, contexts)
def test_step_time_non_decreasing_in_batch(model, gpu, b1, b2, context):
    lo, hi = sorted((b1, b2))
    assert step(model, gpu, lo, context)["step_time_s"] <= step(model, gpu, hi, context)["step_time_s"]


@settings(max_examples=200, deadline=None)
@given(models, gpus, batches, contexts, contexts)
def test_step_time_non_decreasing_in_context(model, gpu, batch, s1, s2):
    lo, hi = sorted((s1, s2))
    assert step(model, gpu, batch, lo)["step_time_s"] <= step(model, gpu, batch, hi)["step_time_s"]


@settings(max_examples=200, deadline=None)
@given(models, gpus, batches, batches, contexts)
def test_aggregate_non_decreasing_in_batch(model, gpu, b1, b2, context):
    lo, hi = sorted((b1, b2))
    low = step(model, gpu, lo, context)["aggregate_tokens_per_s"]
    high = step(model, gpu, hi, context)["aggregate_tokens_per_s"]
    assert low <= high * (1 + 1e-12)


PER_GPU_TERMS = ["linear_weight_bytes", "linear_flops", "hbm_time_s", "linear_compute_time_s",
                 "linear_time_s", "kv_read_bytes", "attention_flops", "attention_time_s",
                 "step_time_s", "memory_params_bytes", "memory_kv_bytes",
                 "kv_bytes_per_sequence"]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-72b"]), gpus, batches,
       contexts, st.sampled_from([2, 4, 8]))
def test_per_gpu_terms_scale_as_one_over_tp(model, gpu, batch, context, tp):
    one = step(model, gpu, batch, context, tp=1)
    many = step(model, gpu, batch, context, tp=tp)
    for key in PER_GPU_TERMS:
        assert many[key] == pytest.approx(one[key] / tp, rel=1e-12), key
    assert many["aggregate_tokens_per_s"] == pytest.approx(tp * one["aggregate_tokens_per_s"],
                                                           rel=1e-12)


KEYS = ["step_time_s", "aggregate_tokens_per_s", "memory_remaining_bytes", "max_sequences",
        "kv_read_bytes", "linear_flops", "ridge_batch"]


@settings(max_examples=25, deadline=None)
@given(st.lists(batches, min_size=1, max_size=5), st.lists(contexts, min_size=1, max_size=5))
def test_array_results_equal_point_results(batch_values, context_values):
    """A labelled grid over model × gpu × tp × precision × batch × context equals point calls."""
    model_ids, gpu_ids = ["llama-3.1-8b", "qwen2.5-7b"], ["h100-sxm", "a100-sxm-80gb"]
    tps, precisions = [1, 8], ["bf16", "fp8"]
    grid = decode_metrics(DecodeInputs(
        model_table(model_ids), gpu_table(gpu_ids),
        xr.DataArray(np.array(tps), dims="tp", coords={"tp": tps}),
        xr.DataArray(np.array(precisions, dtype=object), dims="precision",
                     coords={"precision": precisions}),
        xr.DataArray(np.array(batch_values), dims="batch"),
        xr.DataArray(np.array(context_values), dims="context"),
    ))
    dims = ("model", "gpu", "tp", "precision", "batch", "context")
    full = xr.broadcast(*(grid[k] for k in [*KEYS, "valid"]))
    arrays = {k: a.transpose(*dims).values for k, a in zip([*KEYS, "valid"], full, strict=True)}
    numpy_grid = decode_metrics(DecodeInputs(get_model("llama-3.1-8b"), get_gpu("h100-sxm"), 1,
                                             "bf16", np.array(batch_values)[:, None],
                                             np.array(context_values)[None, :]))
    for index in np.ndindex(arrays["valid"].shape):
        m, g, t, p, i, j = index
        config = DecodeConfig(model=model_ids[m], gpu=gpu_ids[g], tp=tps[t], precision=precisions[p],
                              batch=batch_values[i], context=context_values[j])
        try:
            point = calc_decode(config)
        except LabInputError:
            assert not arrays["valid"][index]
            assert np.isnan(arrays["step_time_s"][index])
            continue
        for key in KEYS:
            assert arrays[key][index] == point[key], key
        if (m, g, t, p) == (0, 0, 0, 0):
            assert numpy_grid["step_time_s"][i, j] == point["step_time_s"]
