"""Hand-computed values for every formula of experiments 1–4 on several models and GPUs.

Each expected value is written out from the catalog's figures (docs/sources.md) with docs/model.md's
formula, independently of the code under test.
"""

from __future__ import annotations

import math

import pytest

from lab.catalog import get_gpu, get_model
from lab.errors import LabInputError
from lab.models.decode_step import linear_params
from lab.models.kv_shapes import kv_bytes_per_token
from lab.models.memory import pages
from lab.models.parallel import allreduce_time
from lab.points.decode_points import DecodeConfig, calc_decode, calc_memory, calc_precision, calc_tp

REL = 1e-12


def approx(value):
    return pytest.approx(value, rel=REL)


@pytest.mark.parametrize(
    ("model_id", "n_lin", "kv_tok"),
    [
        ("llama-3.1-8b", 7_504_658_432, 131_072),
        ("llama-3.1-70b", 69_501_714_432, 327_680),
        ("llama-3.2-1b", 1_235_746_816, 32_768),
        ("qwen2.5-7b", 7_070_285_824, 57_344),
        ("llama-3.1-405b", 403_747_897_344, 516_096),
    ],
)
def test_linear_params_and_kv_bytes(model_id, n_lin, kv_tok):
    model = get_model(model_id)
    assert linear_params(model) == n_lin
    assert kv_bytes_per_token(model) == kv_tok


def test_llama70b_h200_tp4():
    """Llama 3.1 70B on H200 (4.8 TB/s, 989.5 TFLOPS, 141 GB), tp 4, BF16, B 16, S 4096."""
    r = calc_decode(DecodeConfig(model="llama-3.1-70b", gpu="h200", tp=4, batch=16, context=4096))
    n_lin, kv_tok = 69_501_714_432, 2 * 80 * 8 * 128 * 2
    w = n_lin * 2 / 4
    flop_lin = 2 * n_lin * 16 / 4
    kv = 16 * 4096 * kv_tok / 4
    flop_att = 4 * 16 * 4096 * 80 * 64 * 128 / 4
    t_lin = max(w / 4.8e12, flop_lin / 989.5e12)
    t_att = max(kv / 4.8e12, flop_att / 989.5e12)
    assert r["linear_weight_bytes"] == approx(34_750_857_216)
    assert r["linear_flops"] == approx(flop_lin)
    assert r["hbm_time_s"] == approx(w / 4.8e12)
    assert r["linear_compute_time_s"] == approx(flop_lin / 989.5e12)
    assert r["kv_read_bytes"] == approx(5_368_709_120)
    assert r["attention_flops"] == approx(flop_att)
    assert r["step_time_s"] == approx(t_lin + t_att)
    assert r["aggregate_tokens_per_s"] == approx(16 / (t_lin + t_att))
    assert r["linear_bottleneck"] == "hbm"
    # Memory: all 70,553,706,496 parameters in BF16 over 4 GPUs; ceil(4097/16) = 257 pages.
    assert pages(4096, 16) == 257
    assert r["memory_params_bytes"] == approx(35_276_853_248)
    assert r["memory_kv_bytes"] == approx(16 * 257 * 16 * kv_tok / 4)
    assert r["memory_remaining_bytes"] == approx(0.9 * 141e9 - 35_276_853_248
                                                 - 5_389_680_640 - 4e9)
    assert r["fits"] is True


def test_llama1b_l4_fp8_compute_bound():
    """Llama 3.2 1B on L4 (0.3 TB/s, FP8 242.5 TFLOPS): batch 512 passes the ridge."""
    r = calc_decode(DecodeConfig(model="llama-3.2-1b", gpu="l4", precision="fp8", batch=512,
                                 context=128))
    n_lin = 1_235_746_816
    ridge = 242.5e12 * 1 / (2 * 0.3e12)
    assert r["ridge_batch"] == approx(ridge)
    assert r["linear_weight_bytes"] == approx(n_lin * 1)
    assert r["linear_compute_time_s"] == approx(2 * n_lin * 512 / 242.5e12)
    assert r["hbm_time_s"] == approx(n_lin / 0.3e12)
    assert r["linear_bottleneck"] == "compute"
    assert r["linear_time_s"] == approx(2 * n_lin * 512 / 242.5e12)
    # Attention stays on BF16 peak and the BF16 KV cache: 512·128 tokens × 32,768 B.
    assert r["attention_time_s"] == approx(max(512 * 128 * 32_768 / 0.3e12,
                                               4 * 512 * 128 * 16 * 32 * 64 / 121e12))


def test_ridge_batch_h100_bf16():
    r = calc_decode(DecodeConfig())
    assert r["ridge_batch"] == approx(989.4e12 * 2 / (2 * 3.35e12))
    below = calc_decode(DecodeConfig(batch=295, context=1))
    above = calc_decode(DecodeConfig(batch=296, context=1))
    assert below["linear_bottleneck"] == "hbm"
    assert above["linear_bottleneck"] == "compute"


def test_weights_do_not_fit_405b_on_one_h100():
    """405B in BF16 over 8 H100s: 405,853,388,800 × 2 / 8 = 101.46 GB > 72 GB budget."""
    r = calc_memory(DecodeConfig(model="llama-3.1-405b", gpu="h100-sxm", tp=8, batch=1,
                                 context=1024))
    params = 405_853_388_800 * 2 / 8
    assert r["memory_params_bytes"] == approx(params)
    assert r["free_for_kv_bytes"] == approx(0.9 * 80e9 - params - 4e9)
    assert r["max_sequences"] == 0
    assert r["weights_fit"] is False
    assert r["fits"] is False
    assert r["memory_remaining_bytes"] < 0


def test_page_rounding_at_block_boundary():
    """S = 1023 fills 64 pages exactly with the next token; S = 1024 needs a 65th page."""
    model = get_model("llama-3.2-1b")
    assert pages(1023, 16) == 64
    assert pages(1024, 16) == 65
    assert pages(1022, 16) == 64
    at = calc_memory(DecodeConfig(model="llama-3.2-1b", gpu="l4", context=1023))
    over = calc_memory(DecodeConfig(model="llama-3.2-1b", gpu="l4", context=1024))
    assert at["kv_bytes_per_sequence"] == approx(64 * 16 * 32_768)
    assert over["kv_bytes_per_sequence"] == approx(65 * 16 * 32_768)
    assert at["page_waste_bytes_per_sequence"] == 0
    assert over["page_waste_bytes_per_sequence"] == approx(15 * 32_768)
    free = 0.9 * 24e9 - 1_235_814_400 * 2 - 4e9
    assert at["max_sequences"] == math.floor(free / (64 * 16 * 32_768))
    assert kv_bytes_per_token(model) == 32_768


def test_max_sequences_mi300x_tp2_fp8():
    r = calc_memory(DecodeConfig(model="qwen2.5-72b", gpu="mi300x", tp=2, precision="fp8",
                                 context=32_000))
    kv_tok = 2 * 80 * 8 * 128 * 2
    per_seq = math.ceil(32_001 / 16) * 16 * kv_tok / 2
    free = 0.9 * 192e9 - 72_706_203_648 * 1 / 2 - 4e9
    assert r["kv_bytes_per_sequence"] == approx(per_seq)
    assert r["max_sequences"] == math.floor(free / per_seq)


def test_invalid_tp_for_qwen7b():
    with pytest.raises(LabInputError, match="tp 8 does not divide the 28 query heads"):
        calc_decode(DecodeConfig(model="qwen2.5-7b", tp=8))
    result = calc_tp(DecodeConfig(model="qwen2.5-7b"))
    valid = {e["tp"]: e["valid"] for e in result["records"]}
    assert valid == {1: True, 2: True, 4: True, 8: False}
    assert "28 query heads" in result["records"][3]["reason"]


def test_tp_not_dividing_kv_heads():
    """Llama 3.2 3B has 24 query heads and 8 KV heads: tp 3 divides H but not K."""
    with pytest.raises(LabInputError, match="does not divide the 8 KV heads"):
        calc_decode(DecodeConfig(model="llama-3.2-3b", tp=3))


def test_fp8_on_a100_is_invalid():
    with pytest.raises(LabInputError, match="no FP8"):
        calc_decode(DecodeConfig(gpu="a100-sxm-80gb", precision="fp8"))
    with pytest.raises(LabInputError, match="no FP8"):
        calc_precision(DecodeConfig(gpu="a100-sxm-80gb"))


def test_context_beyond_model_maximum():
    with pytest.raises(LabInputError, match=r"exceeds Mistral 7B v0\.3's maximum of 32,768"):
        calc_decode(DecodeConfig(model="mistral-7b-v0.3", context=40_000))


def test_ideal_tp_scaling_is_exact():
    result = calc_tp(DecodeConfig(model="llama-3.1-70b", gpu="h100-sxm", batch=32))
    records = {e["tp"]: e for e in result["records"]}
    for tp in (2, 4, 8):
        assert records[tp]["speedup_vs_tp1"] == approx(tp)
        assert records[tp]["aggregate_tokens_per_s_per_gpu"] == approx(
            records[1]["aggregate_tokens_per_s_per_gpu"])


def test_allreduce_extension_by_hand():
    """Llama 3.1 70B, H100 SXM (900 GB/s bidirectional → 450 GB/s per direction), tp 8, B 32."""
    model, gpu = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    latency = 5e-6
    per_collective = 2 * 7 / 8 * 32 * 8192 * 2 / 450e9 + latency
    expected = 2 * 80 * per_collective
    assert allreduce_time(model, gpu, 8, 32, latency) == approx(expected)
    assert allreduce_time(model, gpu, 1, 32, latency) == 0
    base = calc_decode(DecodeConfig(model="llama-3.1-70b", tp=8, batch=32))
    extended = calc_decode(DecodeConfig(model="llama-3.1-70b", tp=8, batch=32, allreduce=True))
    assert extended["allreduce_time_s"] == approx(expected)
    assert extended["step_time_s"] == approx(base["step_time_s"] + expected)
    assert base["allreduce_time_s"] == 0


def test_precision_speedup_by_hand():
    """H100 SXM, Llama 3.1 8B, B 8, S 8192: FP8 halves the weight reads only."""
    r = calc_precision(DecodeConfig())
    n_lin = 7_504_658_432
    attention = 8 * 8192 * 131_072 / 3.35e12
    bf16 = n_lin * 2 / 3.35e12 + attention
    fp8 = n_lin * 1 / 3.35e12 + attention
    assert r["speedup"] == approx(bf16 / fp8)
    assert 1 < r["speedup"] < 2
    assert r["fp8"]["memory_params_bytes"] == approx(8_030_261_248)
    assert r["fp8"]["max_sequences"] == math.floor((72e9 - 8_030_261_248 - 4e9)
                                                   / (513 * 16 * 131_072))
