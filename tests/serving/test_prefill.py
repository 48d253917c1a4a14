"""Experiment 5: the worked case of docs/model.md §5, the chunk sweep, and arrays agreeing with points."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from lab.derivations.decode_steps import render_text
from lab.derivations.serving_steps import prefill_steps
from lab.models.prefill import chunk_sweep, prefill_metrics
from lab.points.serving_points import calc_prefill
from lab.units import fmt_ms

MS = 1e-3
WORKED = {"decode_s": 10 * MS, "c0_s": 2 * MS, "c1_s": 0.06 * MS,
          "deadline_s": 1.5, "itl_limit_s": 50 * MS}


def _metrics(prompt, chunk):
    return prefill_metrics(prompt, chunk, **WORKED)


@pytest.mark.parametrize(("chunk", "chunks", "ttft", "itl"), [
    (2048, 8, "1,079.04 ms", "134.88 ms"),
    (512, 32, "1,367.04 ms", "42.72 ms"),
])
def test_spec_worked_case(chunk, chunks, ttft, itl):
    r = _metrics(16384, chunk)
    assert r["chunks"] == chunks
    assert fmt_ms(r["ttft_s"]) == ttft
    assert fmt_ms(r["itl_during_prefill_s"]) == itl


def test_worked_case_full_precision():
    r = _metrics(16384, 2048)
    assert r["ttft_s"] == pytest.approx(1.07904, rel=1e-12)
    assert r["itl_during_prefill_s"] == pytest.approx(0.13488, rel=1e-12)
    r = _metrics(16384, 512)
    assert r["ttft_s"] == pytest.approx(1.36704, rel=1e-12)
    assert r["itl_during_prefill_s"] == pytest.approx(0.04272, rel=1e-12)


def test_ttft_equals_sum_of_step_costs():
    prompt, chunk = 5000, 1536
    r = _metrics(prompt, chunk)
    remaining, total = prompt, 0.0
    while remaining:
        carried = min(chunk, remaining)
        total += WORKED["decode_s"] + WORKED["c0_s"] + WORKED["c1_s"] * carried
        remaining -= carried
    assert r["ttft_s"] == pytest.approx(total, rel=1e-12)
    assert r["last_chunk_tokens"] == prompt - 3 * chunk


def test_chunk_larger_than_prompt_is_one_step():
    r = _metrics(100, 4096)
    assert r["chunks"] == 1
    assert r["itl_during_prefill_s"] == pytest.approx(r["ttft_s"])


def test_sweep_exact_against_brute_force():
    prompt = 3000
    sweep = chunk_sweep(prompt, **WORKED)
    ok_deadline = [c for c in range(1, prompt + 1) if _metrics(prompt, c)["meets_deadline"]]
    ok_both = [c for c in range(1, prompt + 1)
               if _metrics(prompt, c)["meets_deadline"] and _metrics(prompt, c)["meets_itl"]]
    assert sweep["smallest_chunk_meeting_deadline"] == min(ok_deadline)
    assert sweep["feasible_chunks"] == {"min": min(ok_both), "max": max(ok_both),
                                        "count": len(ok_both)}


def test_default_feasible_range():
    r = calc_prefill()
    assert r["smallest_chunk_meeting_deadline"] == 382
    assert r["feasible_chunks"] == {"min": 382, "max": 633, "count": 252}


def test_no_chunk_meets_both():
    r = calc_prefill(deadline_ms=1200, itl_ms=50)
    assert r["feasible_chunks"] is None
    assert r["feasible_text"] == "no chunk meets both"
    assert "no chunk meets both" in render_text(prefill_steps(r))


def test_no_chunk_meets_deadline():
    r = calc_prefill(deadline_ms=100)
    assert r["smallest_chunk_meeting_deadline"] is None
    assert "= none" in render_text(prefill_steps(r))


def test_arrays_equal_pointwise():
    prompts = np.array([1, 17, 1000, 16384])
    chunks = np.array([1, 16, 512, 2048, 20000])
    grid = prefill_metrics(prompts[:, None], chunks[None, :], **WORKED)
    for i, p in enumerate(prompts):
        for j, c in enumerate(chunks):
            point = _metrics(int(p), int(c))
            for key, value in point.items():
                assert grid[key][i, j] == value, key


def test_xarray_in_xarray_out():
    chunk = xr.DataArray([512, 2048], dims="chunk", coords={"chunk": [512, 2048]})
    r = _metrics(16384, chunk)
    assert isinstance(r["ttft_s"], xr.DataArray)
    assert r["chunks"].sel(chunk=512).item() == 32
    assert r["ttft_s"].sel(chunk=2048).item() == pytest.approx(1.07904)


def test_decode_from_model_uses_experiment_one():
    from lab.points.decode_points import DecodeConfig, calc_decode
    config = DecodeConfig(batch=8, context=8192)
    r = calc_prefill(decode_from=config)
    assert r["inputs"]["decode_s"] == calc_decode(config)["step_time_s"]
    assert r["inputs"]["decode_source"] == "model"
