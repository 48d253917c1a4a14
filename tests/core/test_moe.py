"""Mixture-of-experts and MLA: real configs read, parameters against the model cards, and every
formula of lab.models.moe and lab.models.kv_shapes against a value computed by hand (docs/model.md §0,
"Mixture of experts, MLA and KV precision")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lab.catalog import get_model
from lab.catalog.lookup import get_moe_model, moe_model_catalog
from lab.catalog.moe_config import load_moe_config
from lab.catalog.moe_spec import MoESpec
from lab.errors import CatalogError
from lab.models.kv_shapes import (
    attention_flops,
    attention_flops_per_pair,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    kv_tokens_bytes,
)
from lab.models.moe import experts_touched, linear_flops, step_weight_bytes, step_weight_params
from lab.models.moe_params import (
    active_linear_params,
    active_params,
    active_params_without_input_embedding,
    replicated_linear_params,
    shared_linear_params,
    total_params,
)

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def config(name: str) -> MoESpec:
    return load_moe_config(CONFIGS / name / "config.json")


# -- parameters against the model cards ---------------------------------------------------------
# Exact counts worked by hand from each config (per-layer sums in the comments), then each card
# figure checked to lie within one unit of its last printed digit (46.7 B: 0.1 B; 671 B: 1 B).

def test_mixtral_8x7b_parameters():
    model = config("mixtral-8x7b-v0.1")
    # layer: attention 41,943,040 + 8 experts × 176,160,768 + router 32,768 + norms 8,192;
    # × 32 + embeddings 2 × 131,072,000 + final norm 4,096
    assert model.total_params == 46_702_792_704
    assert active_params(model) == 12_879_925_248  # 2 experts per layer
    assert abs(model.total_params - 46.7e9) < 0.1e9  # card: 46.7 B total
    assert abs(active_params(model) - 12.9e9) < 0.1e9  # card: 12.9 B used per token


def test_qwen3_30b_a3b_parameters():
    model = config("qwen3-30b-a3b")
    # layer: attention 18,874,368 + q/k norms 256 + 128 experts × 4,718,592 + router 262,144
    # + norms 4,096; × 48 + embeddings 2 × 311,164,928 + final norm 2,048
    assert model.total_params == 30_532_122_624
    assert active_params(model) == 3_353_032_704  # 8 experts per layer
    assert abs(model.total_params - 30.5e9) < 0.1e9  # card: 30.5 B
    assert abs(active_params(model) - 3.3e9) < 0.1e9  # card: 3.3 B activated (3.35 B)
    assert model.total_params - 2 * 151_936 * 2048 == 29_909_792_768  # card: 29.9 B non-embedding


def test_qwen15_moe_a27b_parameters():
    """Qwen2-MoE: q/k/v biases, a 5632-wide shared expert with its sigmoid gate."""
    model = config("qwen1.5-moe-a2.7b")
    # layer: attention 16,777,216 + biases 6,144 + 60 experts × 8,650,752 + shared 34,603,008
    # + gate 2,048 + router 122,880 + norms 4,096; × 24 + embeddings 2 × 311,164,928 + 2,048
    assert model.total_params == 14_315_784_192
    assert active_params(model) == 2_689_173_504  # 4 experts per layer
    assert abs(model.total_params - 14.3e9) < 0.1e9  # card: 14.3 B
    assert abs(active_params(model) - 2.7e9) < 0.1e9  # card: 2.7 B activated


def test_deepseek_v2_lite_parameters():
    model = config("deepseek-v2-lite")
    # layer: MLA 13,763,072 (q 6,291,456, kv_a 1,179,648 + norm 512, kv_b 2,097,152,
    # o 4,194,304) + norms 4,096; 1 dense MLP 67,239,936; 26 MoE layers of 64 routed + 2 shared
    # experts × 8,650,752 + router 131,072; embeddings 2 × 209,715,200; final norm 2,048
    assert model.total_params == 15_706_484_224
    assert active_params(model) == 2_661_150_208
    assert active_params_without_input_embedding(model) == 2_451_435_008
    assert abs(model.total_params - 15.7e9) < 0.1e9  # card: 15.7 B
    # card: 2.4 B activated. Counting the input embedding gives 2.66 B (as others found:
    # deepseek-ai/DeepSeek-V2 issue #73); DeepSeek's figure leaves it out.
    assert abs(active_params_without_input_embedding(model) - 2.4e9) < 0.1e9
    assert abs(active_params(model) - 2.4e9) > 0.1e9


def test_deepseek_v3_parameters():
    model = config("deepseek-v3")
    # layer: MLA 187,107,328 + norms 14,336; × 61 = 11,414,421,504; 3 dense MLPs
    # 1,189,085,184; 58 MoE layers × (257 experts × 44,040,192 + router 1,835,008 + bias 256)
    # = 656,569,547,264; embeddings 1,853,358,080; final norm 7,168 (the MTP layer is not counted)
    assert model.total_params == 671_026_419_200
    assert active_params(model) == 37_552_297_472
    assert active_params_without_input_embedding(model) == 36_625_618_432
    assert abs(model.total_params - 671e9) < 1e9  # card: 671 B
    assert abs(active_params_without_input_embedding(model) - 37e9) < 1e9  # card: 37 B


def test_llama_4_scout_text_parameters():
    model = config("llama-4-scout-17b-16e")
    # layer: attention 62,914,560 + 16 routed + 1 shared expert × 125,829,120 + router 81,920
    # + norms 10,240; × 48 + embeddings 2 × 1,034,485,760 + final norm 5,120. The card's 109 B
    # total includes the vision encoder, which the lab does not count.
    assert model.total_params == 107_769_861_120
    assert active_params(model) == 17_172_894_720
    assert abs(active_params(model) - 17e9) < 1e9  # card: 17 B active


def test_fields_read_from_the_configs():
    v2 = config("deepseek-v2-lite")
    assert (v2.experts, v2.experts_per_token, v2.expert_intermediate) == (64, 6, 1408)
    assert (v2.moe_layers, v2.dense_layers, v2.shared_intermediate) == (26, 1, 2816)
    assert (v2.kv_lora_rank, v2.q_lora_rank, v2.qk_rope_head_dim) == (512, 0, 64)
    assert (v2.qk_nope_head_dim, v2.v_head_dim, v2.head_dim) == (128, 128, 192)
    assert v2.is_mla and not v2.router_bias
    v3 = config("deepseek-v3")
    assert (v3.moe_layers, v3.q_lora_rank, v3.router_bias) == (58, 1536, True)
    qwen = config("qwen3-30b-a3b")
    assert (qwen.moe_layers, qwen.qk_norm, qwen.shared_intermediate, qwen.is_mla) == (
        48, True, 0, False)
    scout = config("llama-4-scout-17b-16e")
    assert (scout.experts, scout.experts_per_token, scout.moe_layers) == (16, 1, 48)
    assert (scout.intermediate, scout.shared_intermediate, scout.attention_chunk) == (
        16384, 8192, 8192)
    assert scout.id == "llama-4-scout-17b-16e"


def test_dense_defaults_give_the_dense_counts():
    """A MoESpec with the default fields is the dense GQA decoder: its counts are the catalog's."""
    dense = get_model("llama-3.1-8b")
    spec = MoESpec(**dense.as_dict())
    assert total_params(spec) == dense.total_params == 8_030_261_248
    # N_lin of docs/model.md §0: 32·(4096·4096·2 + 2·4096·1024 + 3·4096·14336) + 4096·128256
    # = 32·218,103,808 + 525,336,576: the total less the input embedding and the 266,240 norms
    assert shared_linear_params(spec) == active_linear_params(spec) == 7_504_658_432
    assert kv_bytes_per_token(spec) == 131_072  # 2·32·8·128·2


# -- experts touched, weights read, FLOPs -------------------------------------------------------

def test_experts_touched_under_uniform_routing():
    assert experts_touched(8, 2, 1) == 2.0  # k at batch 1
    assert experts_touched(8, 2, 2) == 3.5  # 8·(1 − 0.75²)
    assert experts_touched(8, 2, 4) == 5.46875  # 8·(1 − 0.31640625)
    assert experts_touched(128, 8, 1) == 8.0
    many = experts_touched(128, 8, np.array([1, 16, 1024]))
    assert np.all(np.diff(many) > 0) and many[-1] == pytest.approx(128.0, abs=1e-12)


def test_step_weight_bytes_grow_with_batch_until_every_expert_is_read():
    model = config("mixtral-8x7b-v0.1")
    # shared: 32·41,943,040 attention + 32·32,768 routers + 131,072,000 LM head = 1,474,297,856;
    # one expert 176,160,768; batch 1 reads 2 per layer: + 32·2·176,160,768 = 12,748,587,008
    assert step_weight_params(model, 1) == 12_748_587_008
    assert step_weight_bytes(model, 1, "bf16", 1) == 25_497_174_016
    assert step_weight_bytes(model, 1, "fp8", 1) == 12_748_587_008
    # batch 2 reads 3.5 experts per layer: 1,474,297,856 + 32·3.5·176,160,768 = 21,204,303,872
    assert step_weight_bytes(model, 1, "bf16", 2) == 42_408_607_744
    # tp 2: routers (1,048,576) whole on each GPU, the rest halved
    assert step_weight_bytes(model, 2, "bf16", 1) == 12_749_635_584
    # every expert read: the whole model less the input embedding and the norms
    assert step_weight_params(model, 10_000) == pytest.approx(
        46_702_792_704 - 131_072_000 - 266_240, rel=1e-12)


def test_linear_flops_use_active_parameters():
    model = config("mixtral-8x7b-v0.1")
    assert active_linear_params(model) == 12_748_587_008
    assert linear_flops(model, 1, 1) == 25_497_174_016
    assert linear_flops(model, 1, 4) == 101_988_696_064  # 4 tokens × 2 experts each


def test_mla_replicated_weights():
    model = config("deepseek-v3")
    # 61·7168·(1536 + 512 + 64) + 58·7168·256 = 923,467,776 + 106,430,464
    assert replicated_linear_params(model) == 1_029_898_240
    assert replicated_linear_params(config("mixtral-8x7b-v0.1")) == 1_048_576  # routers only
    # Qwen2-MoE: 24 routers 2048·60 and 24 shared-expert gates 2048
    assert replicated_linear_params(config("qwen1.5-moe-a2.7b")) == 2_998_272


# -- KV bytes, pages and attention FLOPs ---------------------------------------------------------

def test_mla_kv_bytes_are_the_latent_and_are_not_split_by_tp():
    v3 = config("deepseek-v3")
    assert kv_bytes_per_token(v3) == 70_272  # 61·(512 + 64)·2
    assert kv_bytes_per_token(v3, "fp8") == 35_136
    assert kv_bytes_per_token_per_gpu(v3, 8) == 70_272
    assert kv_bytes_per_token(config("deepseek-v2-lite")) == 31_104  # 27·576·2


def test_gqa_kv_bytes_split_by_tp_and_halved_by_fp8():
    mixtral = config("mixtral-8x7b-v0.1")
    assert kv_bytes_per_token(mixtral) == 131_072  # 32·2·8·128·2
    assert kv_bytes_per_token_per_gpu(mixtral, 2) == 65_536
    assert kv_bytes_per_token_per_gpu(mixtral, 2, "fp8") == 32_768
    assert kv_tokens_bytes(mixtral, 1, 1000, "fp8") == 65_536_000


def test_page_bytes_follow_the_kv_precision():
    v3 = config("deepseek-v3")
    assert kv_tokens_bytes(v3, 8, 16) == 1_124_352  # 16·70,272
    assert kv_tokens_bytes(v3, 8, 16, "fp8") == 562_176
    mixtral = config("mixtral-8x7b-v0.1")
    pages = kv_tokens_bytes(mixtral, 1, 16, np.array(["bf16", "fp8"]))
    assert list(pages) == [2_097_152, 1_048_576]


def test_attention_flops_absorbed_mla_and_gqa():
    v3 = config("deepseek-v3")
    assert attention_flops_per_pair(v3) == 16_990_208  # 2·61·128·(2·512 + 64)
    assert attention_flops(v3, 8, 1000) == 2_123_776_000
    assert attention_flops_per_pair(config("mixtral-8x7b-v0.1")) == 524_288  # 4·32·32·128


# -- the catalog of MoE models and refusals -------------------------------------------------------

def test_moe_catalog_matches_the_configs():
    catalog = moe_model_catalog()
    first = ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite", "deepseek-v3"]
    assert list(catalog)[:4] == first  # later entries: tests/core/test_layer_kinds.py and others
    assert catalog["mixtral-8x7b"].total_params == 46_702_792_704
    assert catalog["qwen3-30b-a3b"].total_params == 30_532_122_624
    assert catalog["deepseek-v3"].total_params == 671_026_419_200
    assert catalog["deepseek-v2-lite"].total_params == 15_706_484_224
    for spec in (catalog[key] for key in first):
        assert spec.source and spec.checked == "2026-12-03"
        folder = {"mixtral-8x7b": "mixtral-8x7b-v0.1"}.get(spec.id, spec.id)
        assert replace(config(folder), id=spec.id, name=spec.name, source=spec.source,
                       checked=spec.checked, notes=spec.notes) == spec
    assert get_moe_model("deepseek-v3") is catalog["deepseek-v3"]


def test_decode_experiments_read_moe_configs_and_llama_4_chunked_attention():
    """Issue 14 wires the MoE reader into get_model: the configs load as MoESpec records
    (the totals of the model cards); issue 26 models Llama 4's chunked attention, so it loads
    too, with its 36 chunked layers of 8,192 tokens and 12 full ones."""
    assert get_model(str(CONFIGS / "deepseek-v3" / "config.json")).total_params == 671_026_419_200
    assert get_model(str(CONFIGS / "qwen3-30b-a3b" / "config.json")).total_params == 30_532_122_624
    assert isinstance(get_model(str(CONFIGS / "mixtral-8x7b-v0.1" / "config.json")), MoESpec)
    scout = get_model(str(CONFIGS / "llama-4-scout-17b-16e" / "config.json"))
    assert (scout.chunk_layers, scout.attention_chunk, scout.window_layers) == (36, 8192, 0)


def written(tmp_path, name: str, change: dict, drop: tuple = ()) -> Path:
    entry = json.loads((CONFIGS / name / "config.json").read_text())
    target = entry.get("text_config", entry)
    target.update(change)
    for key in drop:
        target.pop(key)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(entry))
    return folder / "config.json"


@pytest.mark.parametrize(
    ("name", "change", "drop", "message"),
    [
        ("qwen3-30b-a3b", {"use_sliding_window": True, "sliding_window": 4096},
         ("max_window_layers",), "without 'max_window_layers'"),
        ("qwen3-30b-a3b", {"layer_types": ["linear_attention"] * 48}, (),
         "a layer of type 'linear_attention' in 'layer_types'"),
        ("deepseek-v3", {}, ("kv_lora_rank",), "missing the field 'kv_lora_rank'"),
        ("mixtral-8x7b-v0.1", {"num_experts_per_tok": 9}, (), "more than its 8 routed experts"),
        ("qwen3-30b-a3b", {"mlp_only_layers": [48]}, (), "not a list of layer indices"),
        ("deepseek-v2-lite", {"first_k_dense_replace": 28}, (), "not a layer count"),
        ("mixtral-8x7b-v0.1", {"architectures": ["LlamaForCausalLM"]}, (),
         "a dense model: read it with lab.catalog.get_model"),
        ("deepseek-v3", {"n_routed_experts": 0}, (), "'n_routed_experts' = 0"),
        ("qwen3-30b-a3b", {"tie_word_embeddings": "no"}, (), "not true/false"),
    ],
)
def test_broken_moe_configs(tmp_path, name, change, drop, message):
    path = written(tmp_path, name, change, drop)
    with pytest.raises(CatalogError, match=message) as info:
        load_moe_config(path)
    assert str(path) in str(info.value)


def test_llama_4_without_text_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["Llama4ForConditionalGeneration"]}))
    with pytest.raises(CatalogError, match="'text_config'"):
        load_moe_config(path)


def test_formulas_broadcast_over_a_table_of_models():
    import xarray as xr

    from lab.catalog.moe_tables import moe_model_table

    table = moe_model_table(["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"])
    assert list(total_params(table).values) == [46_702_792_704, 30_532_122_624,
                                                671_026_419_200]
    assert list(kv_bytes_per_token(table).values) == [131_072, 98_304, 70_272]
    batch = xr.DataArray([1, 2], dims="batch")
    weights = step_weight_bytes(table, 1, "bf16", batch)
    assert weights.dims == ("model", "batch")
    assert weights.sel(model="mixtral-8x7b").values.tolist() == [25_497_174_016,
                                                                 42_408_607_744]


def test_dense_catalog_models_keep_their_figures():
    """Plain dense records and the dense model table read as "no experts, no latent, BF16 KV":
    every formula gives the decode model's own figure, so wiring these in changes no number."""
    from lab.catalog import model_catalog, model_table
    from lab.models.decode_step import linear_params

    dense = [m for m in model_catalog().values() if not isinstance(m, MoESpec)]
    table = model_table(dense)
    for model in (*dense, table):
        n_lin = linear_params(model)
        for batch in (1, 64):
            assert np.array_equal(step_weight_params(model, batch), n_lin)
        assert np.array_equal(active_linear_params(model), n_lin)
        # §0's kv_tok = 2·L·K·h·2 B and 4·L·H·h FLOP per pair, as the dense model states them
        assert np.array_equal(kv_bytes_per_token(model),
                              2 * model.layers * model.kv_heads * model.head_dim * 2)
        assert np.array_equal(attention_flops_per_pair(model),
                              4 * model.layers * model.heads * model.head_dim)
        assert np.array_equal(replicated_linear_params(model), 0 * n_lin)
    llama = get_model("llama-3.1-8b")
    assert step_weight_bytes(llama, 2, "bf16", 8) == 7_504_658_432  # N_lin·2 B/2
    assert kv_bytes_per_token_per_gpu(llama, 2, "fp8") == 32_768  # 131,072 / 2 / 2


def test_memory_holds_every_expert():
    from lab.models.moe import resident_weight_bytes

    v3 = config("deepseek-v3")
    # (1,029,898,240 replicated + (671,026,419,200 − 1,029,898,240)/8) · 2 B
    assert resident_weight_bytes(v3, 8, "bf16") == 169_558_926_720
    assert resident_weight_bytes(config("mixtral-8x7b-v0.1"), 1, "fp8") == 46_702_792_704
    llama = get_model("llama-3.1-8b")  # dense: P_total·bytes/tp, as lab.models.memory
    assert resident_weight_bytes(llama, 2, "bf16") == 8_030_261_248
