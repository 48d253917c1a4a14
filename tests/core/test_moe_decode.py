"""Mixture-of-experts and MLA models in experiments 1–4 and 7: ``get_model`` reads their
configs, the decode step reads the experts the batch touches and MLA's replicated latent, and
memory holds every expert (docs/model.md §0, "Mixture of experts, MLA and KV precision").

Hand-computed for Mixtral-8x7B (d 4,096, L 32, H 32, K 8, h 128, F_e 14,336, E 8, k 2,
V 32,000, untied):

- attention per layer d·H·h + 2·d·K·h + H·h·d = 41,943,040; router d·E = 32,768
- N_shared = 32·(41,943,040 + 32,768) + d·V (131,072,000) = 1,474,297,856
- one expert 3·d·F_e = 176,160,768; N_rep (routers) = 32·32,768 = 1,048,576
- B = 1: n = 2, N_read = 1,474,297,856 + 32·2·176,160,768 = 12,748,587,008 = N_act
- B = 2: n = 8·(1 − 0.75²) = 3.5, N_read = 1,474,297,856 + 32·3.5·176,160,768 = 21,204,303,872
- kv_tok = 2·32·8·128·2 = 131,072 B; attention FLOP per pair 4·32·32·128 = 524,288

DeepSeek-V2-Lite (MLA: L 27, H 16, d_c 512, d_r 64): kv_tok = 27·(512 + 64)·2 = 31,104 B on
every GPU whatever tp; FLOP per pair 2·27·16·(2·512 + 64) = 940,032.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cli.main import main
from lab.catalog import get_gpu, get_model
from lab.catalog.moe_spec import MoESpec
from lab.derivations.decode_steps import decode_steps, render_text
from lab.errors import LabInputError
from lab.models.decode_step import decode_step
from lab.models.inputs import DecodeInputs
from lab.models.kv_shapes import head_kv_bytes_per_token, head_kv_elements_per_token_layer
from lab.models.memory import memory_fit, sequence_capacity
from lab.models.moe import all_experts_params, all_experts_weight_bytes
from lab.points.decode_points import DecodeConfig, calc_decode
from lab.points.validity import Reason, decode_reason

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
MIXTRAL = get_model(str(CONFIGS / "mixtral-8x7b-v0.1" / "config.json"))
LITE = get_model(str(CONFIGS / "deepseek-v2-lite" / "config.json"))
H100 = get_gpu("h100-sxm")


def test_configs_load_as_moe_records():
    assert isinstance(MIXTRAL, MoESpec) and MIXTRAL.total_params == 46_702_792_704
    assert isinstance(LITE, MoESpec) and LITE.kv_lora_rank == 512


def test_weight_reads_grow_with_the_batch_until_every_expert_is_read():
    one = decode_step(DecodeInputs(MIXTRAL, H100, batch=1, context=1))
    two = decode_step(DecodeInputs(MIXTRAL, H100, batch=2, context=1))
    assert one["linear_weight_bytes"] == 12_748_587_008 * 2
    assert two["linear_weight_bytes"] == pytest.approx(21_204_303_872 * 2, rel=1e-12)
    # every expert read: N_shared + 32·8·176,160,768 = 46,571,454,464 weights at B → ∞
    many = decode_step(DecodeInputs(MIXTRAL, H100, batch=1024, context=1))
    assert many["linear_weight_bytes"] == pytest.approx(46_571_454_464 * 2, rel=1e-12)


def test_flops_use_active_parameters_and_tp_keeps_routers_whole():
    out = decode_step(DecodeInputs(MIXTRAL, H100, batch=4, context=1))
    assert out["linear_flops"] == 2 * 4 * 12_748_587_008
    split = decode_step(DecodeInputs(MIXTRAL, H100, tp=2, batch=1, context=1))
    # (N_rep + (N_read − N_rep)/2) · 2 B = 2,097,152 + 12,747,538,432
    assert split["linear_weight_bytes"] == 12_749_635_584


def test_gqa_kv_and_attention_of_a_moe_model():
    out = decode_step(DecodeInputs(MIXTRAL, H100, tp=2, batch=8, context=1000))
    assert out["kv_read_bytes"] == 8000 * 131_072 / 2
    assert out["attention_flops"] == 8000 * 524_288 / 2


def test_mla_latent_is_replicated_and_attention_uses_the_absorbed_form():
    for tp in (1, 2, 4):
        out = decode_step(DecodeInputs(LITE, H100, tp=tp, batch=4, context=1000))
        assert out["kv_read_bytes"] == 4000 * 31_104
        assert out["attention_flops"] == 4000 * 940_032 / tp
    fp8 = decode_step(DecodeInputs(LITE, H100, batch=4, context=1000, kv_precision="fp8"))
    assert fp8["kv_read_bytes"] == 4000 * 15_552


def test_memory_holds_every_expert_and_pages_the_latent():
    fit = memory_fit(DecodeInputs(MIXTRAL, H100, batch=1, context=1))
    assert fit["memory_params_bytes"] == 46_702_792_704 * 2
    capacity = sequence_capacity(DecodeInputs(LITE, H100, tp=2, context=8191))
    # 8,192 tokens held (512 pages of 16), the whole latent on each GPU: 8,192 · 31,104 B
    assert capacity["kv_bytes_per_sequence"] == 8192 * 31_104
    assert capacity["page_waste_bytes_per_sequence"] == 0


def test_mla_needs_tp_to_divide_the_query_heads_only():
    one_kv_head = replace(LITE, kv_heads=1)
    assert int(decode_reason(one_kv_head, H100, 2, "bf16", 1)) == Reason.VALID
    assert int(decode_reason(replace(MIXTRAL, kv_heads=1), H100, 2, "bf16", 1)) == Reason.TP_KV_HEADS


def test_point_and_cli(capsys):
    record = calc_decode(DecodeConfig(model=str(CONFIGS / "mixtral-8x7b-v0.1" / "config.json"),
                                      batch=1, context=1024))
    assert record["linear_weight_bytes"] == 12_748_587_008 * 2
    status = main(["calc", "decode", "--model", str(CONFIGS / "mixtral-8x7b-v0.1" / "config.json"),
                   "--batch", "2", "--context", "1024"])
    out = capsys.readouterr().out
    assert status == 0
    assert "Experts touched per MoE layer = 8 × (1 − (1 − 2/8)^2) (uniform routing) = 3.50 of 8" in out
    assert "42.41 GB / GPU" in out
    status = main(["calc", "memory", "--model", str(CONFIGS / "deepseek-v2-lite" / "config.json"),
                   "--json"])
    assert status == 0
    assert json.loads(capsys.readouterr().out)["kv_bytes_per_sequence"] == 513 * 16 * 31_104


def test_dense_only_experiments_refuse_moe():
    from lab.points.serving_points import calc_prefix

    with pytest.raises(LabInputError, match="mixture-of-experts"):
        calc_prefix(model=str(CONFIGS / "deepseek-v2-lite" / "config.json"))


def test_every_expert_read_is_the_ceiling_of_the_weight_reads():
    # N_shared + 32·8·176,160,768 = 46,571,454,464 weights; tp 2 keeps the routers whole:
    # (1,048,576 + (46,571,454,464 − 1,048,576)/2) · 1 B at FP8 = 23,286,251,520
    assert all_experts_weight_bytes(MIXTRAL, 1, "bf16") == 46_571_454_464 * 2
    assert all_experts_weight_bytes(MIXTRAL, 2, "fp8") == 23_286_251_520
    many = decode_step(DecodeInputs(MIXTRAL, H100, batch=1024, context=1))
    assert many["linear_weight_bytes"] == pytest.approx(
        all_experts_weight_bytes(MIXTRAL, 1, "bf16"), rel=1e-12)


def test_deepseek_v2_lite_every_expert_read_by_hand_at_tp_2():
    """DeepSeek-V2-Lite, tp 2, BF16, counted by hand from its config: the line "Weight reads
    once every expert is read" shows 15.53 GB, not the 15.50 GB of ``params × 2 B / 2``,
    because the routers and MLA's down-projections are whole on every GPU."""
    model = get_model("deepseek-v2-lite")
    # MLA, uncompressed queries: q 2048·16·192, kv_a 2048·576, kv_b 512·16·256, o 16·128·2048.
    attention = 6_291_456 + 1_179_648 + 2_097_152 + 4_194_304          # 13,762,560 per layer
    dense_mlp = 3 * 2048 * 10_944                                       # layer 0
    moe_layer = 64 * 3 * 2048 * 1408 + 3 * 2048 * 2816 + 2048 * 64      # routed, shared, router
    lm_head = 102_400 * 2048
    params = 27 * attention + dense_mlp + 26 * moe_layer + lm_head
    assert params == 15_496_642_560 == all_experts_params(model)
    whole = 27 * 2048 * 576 + 26 * 2048 * 64      # kv_a down-projections and routers
    per_gpu = (whole + (params - whole) // 2) * 2                       # B
    assert per_gpu == 15_531_900_928 == all_experts_weight_bytes(model, 2, "bf16")
    assert params * 2 // 2 == 15_496_642_560                            # 15.50 GB: not shown
    record = calc_decode(DecodeConfig(model="deepseek-v2-lite", gpu="h100-sxm", tp=2, batch=8,
                                      context=1024))
    text = render_text(decode_steps(record, model, H100))
    assert ("Weight reads once every expert is read = 15,496,642,560 params (shared + all 64 "
            "experts) × 2 B, / 2 (routers and MLA down-projections whole) = 15.53 GB / GPU "
            "(the ceiling as the batch grows)") in text


def test_mla_latent_against_per_head_keys_and_values():
    # DeepSeek-V2-Lite: 16 heads × (d_n 128 + d_r 64 + d_v 128) = 5,120 elements per layer
    assert head_kv_elements_per_token_layer(LITE) == 5_120
    assert head_kv_bytes_per_token(LITE) == 27 * 5_120 * 2 == 276_480
    assert head_kv_bytes_per_token(LITE, "fp8") == 138_240
    # a GQA model: what it caches, 2·K·h = 2·8·128
    assert head_kv_elements_per_token_layer(MIXTRAL) == 2_048
    assert head_kv_bytes_per_token(MIXTRAL) == 131_072
