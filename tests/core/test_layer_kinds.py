"""Issue 26: sliding-window, chunked and full layers, attention sinks, FP4 weights and expert
parallelism — hand-computed KV bytes per kind, closed-form pair counts against brute force,
parameter totals against the model cards, the FP4 refusal and the all-to-all bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.catalog import get_gpu, get_model, model_catalog
from lab.errors import LabInputError
from lab.models import layer_kinds
from lab.models.expert_parallel import all_to_all_bytes, all_to_all_bytes_per_gpu, all_to_all_time
from lab.models.moe_params import active_params, active_params_without_input_embedding
from lab.models.weight_formats import bits_per_weight, bytes_per_weight
from lab.points.decode_points import DecodeConfig, calc_decode, calc_memory

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def config(name: str):
    return get_model(str(CONFIGS / name / "config.json"))


# -- parameters against the model cards ---------------------------------------------------------

def test_gpt_oss_parameters_against_the_model_card():
    """Per layer: attention 26,542,080 + q/k/v/o biases 8,000 + sinks 64 + norms 5,760; experts
    (3·d·F + 2F + d) = 24,891,840 each; router 128·2,880 + 128 bias. OpenAI's card (arXiv
    2508.10925): 116.83B total, 5.13B active; 20.91B and 3.61B."""
    big, small = config("gpt-oss-120b"), config("gpt-oss-20b")
    assert big.total_params == 116_829_156_672
    assert active_params_without_input_embedding(big) == 5_132_849_472
    assert small.total_params == 20_914_757_184
    assert active_params_without_input_embedding(small) == 3_608_307_264
    assert abs(big.total_params - 116.83e9) < 0.01e9 and abs(small.total_params - 20.91e9) < 0.01e9
    assert (big.window_layers, big.sliding_window, big.chunk_layers) == (18, 128, 0)
    assert big.attention_sinks and big.expert_bias and big.output_bias and big.router_bias


def test_gemma_3_27b_and_llama_4_parameters():
    gemma = config("gemma-3-27b-it")
    # layer: attention 66,060,288 + MLP 346,816,512 + 4 norms 21,504 + q/k norms 256; × 62
    # + tied embedding 262,208 × 5,376 + final norm 5,376. Card: 27B (the language model).
    assert gemma.total_params == 27_009_346_304
    assert (gemma.window_layers, gemma.sliding_window, gemma.experts) == (52, 1024, 0)
    maverick = config("llama-4-maverick-17b-128e")
    # 24 MoE layers of 128 + 1 experts × 125,829,120 + router 655,360; 24 dense MLPs
    # 251,658,240; attention 62,914,560 + norms 10,240 per layer; embeddings 2 × 1,034,485,760
    assert maverick.total_params == 400_711_848_960
    assert active_params(maverick) == 17_184_691_200
    assert abs(maverick.total_params - 400e9) < 1e9 and abs(active_params(maverick) - 17e9) < 1e9
    assert (maverick.chunk_layers, maverick.attention_chunk, maverick.moe_layers) == (36, 8192, 24)


def test_catalog_entries_equal_their_configs():
    catalog = model_catalog()
    for model_id, folder in [("gpt-oss-20b", "gpt-oss-20b"), ("gpt-oss-120b", "gpt-oss-120b"),
                             ("gemma-3-27b", "gemma-3-27b-it"),
                             ("llama-4-scout", "llama-4-scout-17b-16e"),
                             ("llama-4-maverick", "llama-4-maverick-17b-128e")]:
        entry, read = catalog[model_id], config(folder)
        assert entry.source and entry.checked == "2026-12-06"
        for field in ("total_params", "layers", "window_layers", "sliding_window",
                      "chunk_layers", "attention_chunk", "experts", "kv_heads", "head_dim"):
            assert getattr(entry, field) == getattr(read, field), (model_id, field)


def test_layer_mix_sentences():
    assert layer_kinds.layer_mix(config("gpt-oss-20b")) == (
        "12 sliding-window layers of 128 tokens, 12 full")
    assert layer_kinds.layer_mix(config("llama-4-scout-17b-16e")) == (
        "36 chunked layers of 8,192 tokens, 12 full")
    assert layer_kinds.layer_mix(get_model("llama-3.1-8b")) == "32 full layers"


# -- KV bytes per kind, by hand -----------------------------------------------------------------

def test_gpt_oss_120b_kv_by_hand():
    """2·8·64·2 = 2,048 B per layer-token. At S = 8,192, page 16: full layers hold
    ceil(8,193/16) = 513 pages; a window layer the pages over positions 8,065..8,192:
    512 − 504 + 1 = 9. (18·513 + 18·9)·16·2,048 = 307,888,128 B. Reads: 18·8,192 + 18·127
    layer-tokens × 2,048 B × batch 8."""
    r = calc_memory(DecodeConfig(model=str(CONFIGS / "gpt-oss-120b" / "config.json"),
                                 gpu="b200", batch=8, context=8192, precision="mxfp4"))
    assert r["kv_bytes_per_sequence"] == (18 * 513 + 18 * 9) * 16 * 2048
    assert r["kv_bytes_per_sequence_full_length"] == 36 * 513 * 16 * 2048
    assert r["kv_read_bytes"] == 8 * (18 * 8192 + 18 * 127) * 2048
    assert r["attention_flops"] == 8 * (18 * 8192 + 18 * 127) * 4 * 64 * 64
    assert r["layer_mix"] == "18 sliding-window layers of 128 tokens, 18 full"
    held = 18 * 8193 + 18 * 128
    assert r["page_waste_bytes_per_sequence"] == ((18 * 513 + 18 * 9) * 16 - held) * 2048


def test_gemma_and_llama_4_kv_by_hand():
    """Gemma 3 27B: 2·16·128·2 = 8,192 B per layer-token; at S = 4,000, page 16, a 1,024-token
    window covers positions 2,977..4,000: 250 − 186 + 1 = 65 pages. Llama 4 Scout: 4,096 B; at
    S = 10,000 a chunked layer holds positions 8,192..10,000: 625 − 512 + 1 = 114 pages."""
    gemma = calc_memory(DecodeConfig(model="gemma-3-27b", gpu="h100-sxm", context=4000))
    assert gemma["kv_bytes_per_sequence"] == (10 * 251 + 52 * 65) * 16 * 8192
    assert gemma["kv_read_bytes"] == 8 * (10 * 4000 + 52 * 1023) * 8192
    scout = config("llama-4-scout-17b-16e")
    assert layer_kinds.paged_layer_tokens(scout, 10_000, 16) == (12 * 626 + 36 * 114) * 16
    assert layer_kinds.read_layer_tokens(scout, 10_000) == 12 * 10_000 + 36 * (10_000 - 8192)
    assert layer_kinds.held_layer_tokens(scout, 10_000) == 12 * 10_001 + 36 * (10_000 - 8192 + 1)


def test_window_flattens_kv_against_context():
    model = get_model("gpt-oss-120b")
    contexts = np.array([1024, 2048, 4096, 8192])
    window = 18 * layer_kinds.window_pages(contexts, 128, 16)
    assert np.all(window <= 18 * 9)  # at most ceil(127/16) + 1 pages per window layer
    held = layer_kinds.paged_layer_tokens(model, contexts, 16)
    assert np.all(np.diff(held) < np.diff(layer_kinds.full_length_layer_tokens(model, contexts,
                                                                                16)))


def test_dense_and_existing_models_are_unchanged():
    """The acceptance point keeps its figures to the digit; no model without local layers gets
    the new keys."""
    r = calc_memory(DecodeConfig())
    assert "layer_mix" not in r and round(r["kv_read_bytes"] / 1e9, 2) == 8.59
    assert layer_kinds.effective_context(get_model("mixtral-8x7b"), 8192) == 8192


# -- pair counts: closed forms against brute force ----------------------------------------------

def brute(n: int, allowed) -> int:
    return sum(1 for i in range(n) for j in range(i + 1) if allowed(i, j))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 70), w=st.integers(1, 40), c=st.integers(1, 40))
def test_pair_counts_against_brute_force(n, w, c):
    assert layer_kinds.causal_pairs(n) == brute(n, lambda i, j: True)
    assert layer_kinds.window_pairs(n, w) == brute(n, lambda i, j: j > i - w)
    assert layer_kinds.chunk_pairs(n, c) == brute(n, lambda i, j: j // c == i // c)


@settings(max_examples=40, deadline=None)
@given(s=st.integers(0, 200), w=st.integers(1, 50), c=st.integers(1, 50),
       page=st.integers(1, 20))
def test_held_and_paged_tokens_against_brute_force(s, w, c, page):
    """The positions a window or chunk layer needs at position ``s`` and the pages they touch."""
    window_keys = [j for j in range(s + 1) if j > s - w]
    chunk_keys = [j for j in range(s + 1) if j // c == s // c]
    assert min(s + 1, w) == len(window_keys)
    assert s % c + 1 == len(chunk_keys)
    assert layer_kinds.window_pages(s, w, page) == len({j // page for j in window_keys})
    assert layer_kinds.chunk_pages(s, c, page) == len({j // page for j in chunk_keys})


def test_layer_pairs_between_is_a_difference():
    model = config("gpt-oss-20b")
    whole = layer_kinds.layer_pairs(model, 1000)
    assert whole == 12 * 1000 * 1001 // 2 + 12 * (128 * 129 // 2 + (1000 - 128) * 128)
    assert layer_kinds.layer_pairs_between(model, 0, 600) + layer_kinds.layer_pairs_between(
        model, 600, 1000) == whole


# -- FP4 ---------------------------------------------------------------------------------------

def test_fp4_bits_and_bytes():
    assert (bits_per_weight("mxfp4"), bits_per_weight("nvfp4")) == (4.25, 4.5)
    assert (bytes_per_weight("mxfp4"), bytes_per_weight("nvfp4")) == (0.53125, 0.5625)
    r = calc_decode(DecodeConfig(model="gpt-oss-120b", gpu="b200", precision="nvfp4"))
    assert r["memory_params_bytes"] == 116_829_156_672 * 0.5625
    assert r["linear_compute_time_s"] == r["linear_flops"] / 9000e12


def test_a_gpu_without_fp4_refuses_fp4_in_one_sentence():
    with pytest.raises(LabInputError) as info:
        calc_memory(DecodeConfig(model="gpt-oss-120b", gpu="h100-sxm", precision="mxfp4"))
    assert str(info.value) == ("NVIDIA H100 SXM has no FP4 peak, so MXFP4 weights are not "
                               "available on it; use bf16 or fp8.")
    assert get_gpu("b200").has_fp4 and not get_gpu("h100-sxm").has_fp4


# -- expert parallelism -------------------------------------------------------------------------

def test_all_to_all_bytes_by_hand():
    """gpt-oss-120b, batch 64, ep 8: per MoE layer 64 tokens × 4 experts × 7/8 remote × 2,880
    × 2 B = 1,290,240 B of dispatch, as much of combine; × 36 layers = 92,897,280 B."""
    model = get_model("gpt-oss-120b")
    assert all_to_all_bytes(model, 64, 8) == 2 * 36 * 64 * 4 * 7 / 8 * 2880 * 2 == 92_897_280
    assert all_to_all_bytes(model, 64, 1) == 0
    assert all_to_all_bytes_per_gpu(model, 64, 8, tp=2) == 92_897_280 / 16
    # 8 GPUs, one HGX node: over one direction of the B200's 1,800 GB/s NVLink, / 900e9 B/s
    assert all_to_all_time(model, get_gpu("b200"), 64, 8, tp=1) == pytest.approx(
        92_897_280 / 8 / 900e9)
    # 16 GPUs, two nodes: 4 of a GPU's 7 remote groups on the other node, their bytes over the
    # 50 GB/s network: 5,806,080 B / 900e9 B/s × (1 + 4/7 · (900/50 − 1)) = × 75/7
    assert all_to_all_time(model, get_gpu("b200"), 64, 8, tp=2) == pytest.approx(
        92_897_280 / 16 / 900e9 * 75 / 7)
    assert all_to_all_bytes(get_model("llama-3.1-8b"), 64, 8) == 0


def test_config_files_are_json_objects():
    for name in ("gpt-oss-20b", "gpt-oss-120b", "gemma-3-27b-it", "llama-4-maverick-17b-128e"):
        assert isinstance(json.loads((CONFIGS / name / "config.json").read_text()), dict)
