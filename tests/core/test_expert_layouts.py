"""Issue 26 items 3–4 wired in: expert parallelism (ep × tp layouts, the all-to-all extension in
the step) and gpt-oss's own weight format (MXFP4 routed experts, BF16 rest), by hand."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli.main import main
from lab.catalog import get_gpu, get_model
from lab.errors import LabInputError
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.tensor_parallel import TensorParallel
from lab.models import moe
from lab.models.expert_parallel import UNIFORM_ROUTING
from lab.models.memory import params_bytes
from lab.models.moe_params import shared_linear_params
from lab.points.decode_points import DecodeConfig, calc_decode, calc_precision, calc_tp

GPT_OSS_120B = {
    "total": 116_829_156_672,
    "expert_matrices": 36 * 128 * 3 * 2880 * 2880,     # 114,661,785,600
    "expert_biases": 36 * 128 * (2 * 2880 + 2880),     # 39,813,120
    "routers": 36 * 2880 * 128,                        # 13,271,040: whole on every GPU
}
GIB = 2 ** 30


# -- gpt-oss as it ships: MXFP4 experts, BF16 rest ------------------------------------------------

def test_gpt_oss_120b_mxfp4_experts_weight_bytes_by_hand_and_against_the_card():
    """Expert matrices at 4.25 bits (0.53125 B), everything else (expert biases included) BF16:
    2,167,371,072 × 2 + 114,661,785,600 × 0.53125 = 65,248,815,744 B = 60.77 GiB. OpenAI's
    gpt-oss model card (arXiv 2508.10925) lists a 60.8 GiB checkpoint (12.8 GiB for 20b)."""
    model = get_model("gpt-oss-120b")
    other = GPT_OSS_120B["total"] - GPT_OSS_120B["expert_matrices"]
    assert other == 2_167_371_072
    expected = other * 2 + GPT_OSS_120B["expert_matrices"] * 0.53125
    assert expected == 65_248_815_744
    assert params_bytes(model, 1, "mxfp4-experts") == expected
    assert params_bytes(model, 1, "mxfp4-experts") / GIB == pytest.approx(60.8, abs=0.05)
    assert params_bytes(get_model("gpt-oss-20b"), 1, "mxfp4-experts") / GIB == pytest.approx(
        12.8, abs=0.05)
    # the uniform precisions are untouched: every parameter at 2 B
    assert params_bytes(model, 1, "bf16") == pytest.approx(GPT_OSS_120B["total"] * 2.0,
                                                          rel=1e-15)


def test_gpt_oss_120b_fits_one_h100_only_with_mxfp4_experts():
    """Without an FP4 peak: the experts are dequantised, BF16 arithmetic (no refusal on H100)."""
    record = calc_decode(DecodeConfig(model="gpt-oss-120b", gpu="h100-sxm",
                                      precision="mxfp4-experts", batch=1, context=1024))
    assert record["memory_params_bytes"] == 65_248_815_744
    assert record["fits"]
    assert not calc_decode(DecodeConfig(model="gpt-oss-120b", gpu="h100-sxm", batch=1,
                                        context=1024))["fits"]
    assert record["linear_compute_time_s"] == pytest.approx(
        record["linear_flops"] / get_gpu("h100-sxm").peak_bf16)


def test_mxfp4_experts_step_weight_reads_by_hand():
    """Batch 1 reads the shared weights (1,547,919,360, BF16) and 4 experts per layer
    (36 × 4 × 24,883,200 = 3,583,180,800 at 0.53125 B)."""
    model = get_model("gpt-oss-120b")
    shared = shared_linear_params(model)
    assert shared == 1_547_919_360
    expected = 1_547_919_360 * 2 + 36 * 4 * 3 * 2880 * 2880 * 0.53125
    assert expected == 4_999_403_520
    assert moe.step_weight_bytes(model, 1, "mxfp4-experts", 1) == pytest.approx(expected,
                                                                               rel=1e-12)


def test_mxfp4_experts_refused_for_a_model_without_experts():
    for name in ("llama-3.1-8b", "gemma-3-27b"):
        with pytest.raises(LabInputError, match="has no routed experts, so 'mxfp4-experts'"):
            calc_decode(DecodeConfig(model=name, precision="mxfp4-experts"))


# -- expert parallelism ---------------------------------------------------------------------------

def ep_record(**fields):
    base = {"model": "gpt-oss-120b", "gpu": "h100-sxm", "tp": 2, "batch": 64, "ep": 4}
    return calc_decode(DecodeConfig(**{**base, **fields}))


def test_ep_layout_terms_by_hand():
    """gpt-oss-120b, ep 4 × tp 2 on H100 SXM, batch 64 at 8,192 tokens."""
    r = ep_record()
    g = GPT_OSS_120B
    # weights held: routers whole, the rest / tp, every expert (matrices and biases) / (ep·tp)
    rest = g["total"] - g["expert_matrices"] - g["expert_biases"]
    held = (g["routers"] + (rest - g["routers"]) / 2) * 2 + (
        g["expert_matrices"] + g["expert_biases"]) / 8 * 2
    assert held == 30_816_228_672
    assert r["memory_params_bytes"] == pytest.approx(held, rel=1e-15)
    # a group attends for 64/4 = 16 sequences: 18·8,192 + 18·127 layer-tokens, 2,048 B each, / tp
    assert r["kv_read_bytes"] == 16 * (18 * 8192 + 18 * 127) * 2048 / 2 == 2_453_372_928
    # linear FLOPs: 2 · 16 tokens · (routers + (active − routers)/tp)
    assert r["linear_flops"] == pytest.approx(
        2 * 16 * (g["routers"] + (5_131_100_160 - g["routers"]) / 2), rel=1e-15)
    # all-to-all: 2 · 36 layers · 64 tokens · 4 experts · 3/4 remote · 2,880 · 2 B, / (4·2) GPUs
    assert r["all_to_all_bytes_per_gpu"] == 2 * 36 * 64 * 4 * 3 / 4 * 2880 * 2 / 8 == 9_953_280
    assert r["all_to_all_time_s"] == pytest.approx(9_953_280 / 450e9, rel=1e-12)
    assert r["step_time_s"] == pytest.approx(
        r["linear_time_s"] + r["attention_time_s"] + r["all_to_all_time_s"], rel=1e-15)
    assert r["aggregate_tokens_per_s_per_gpu"] == pytest.approx(
        r["aggregate_tokens_per_s"] / 8, rel=1e-15)
    # every group holds as many sequences as one: 4 × floor(free / KV per sequence)
    assert r["max_sequences"] == 4 * (r["free_for_kv_bytes"] // r["kv_bytes_per_sequence"])
    assert r["uniform_routing"] == UNIFORM_ROUTING
    assert r["inputs"]["ep"] == 4


def test_ep_weight_reads_split_touched_experts_over_groups():
    """Touched experts n(B) = 128·(1 − (1 − 4/128)^64); a group reads n/ep of them."""
    model = get_model("gpt-oss-120b")
    touched = 128 * (1 - (1 - 4 / 128) ** 64)
    routed = 36 * touched * 3 * 2880 * 2880
    expected = (13_271_040 + (1_547_919_360 - 13_271_040) / 2) * 2 + routed / 8 * 2
    assert moe.step_weight_bytes(model, 2, "bf16", 64, 4) == pytest.approx(expected, rel=1e-12)
    assert ep_record()["linear_weight_bytes"] == pytest.approx(expected, rel=1e-12)


def test_ep_1_record_is_the_record_without_ep():
    """ep 1 adds no key and changes no figure (JSON outputs of existing inputs unchanged)."""
    record = calc_decode(DecodeConfig(model="gpt-oss-120b", batch=64))
    assert "ep" not in record["inputs"]
    assert not any(key.startswith("all_to_all") for key in record)
    assert "uniform_routing" not in record


@pytest.mark.parametrize("fields, fragment", [
    ({"model": "llama-3.1-8b"}, "has no routed experts, so expert parallelism does not apply"),
    ({"model": "gemma-3-27b"}, "has no routed experts"),
    ({"tp": 4}, "ep 4 × tp 4 is 16 GPUs, more than the 8 GPUs"),
    ({"ep": 3, "tp": 1}, "ep 3 is not one of 1, 2, 4, 8"),
    ({"ep": 16}, "ep must be between 1 and 8"),
])
def test_ep_layouts_refused_in_one_sentence(fields, fragment):
    with pytest.raises(LabInputError, match=fragment) as caught:
        ep_record(**fields)
    assert str(caught.value).count(". ") == 0


def test_ep_must_divide_the_experts():
    from lab.points.validity import expert_layout_problem
    six = replace(get_model("mixtral-8x7b"), experts=6)
    assert "ep 4 does not divide the 6 routed experts" in expert_layout_problem(
        six, get_gpu("h100-sxm"), 1, 4)
    assert expert_layout_problem(six, get_gpu("h100-sxm"), 1, 2) is None


def test_calc_tp_marks_layouts_over_one_node_and_precision_takes_ep():
    result = calc_tp(DecodeConfig(model="gpt-oss-120b", ep=4))
    valid = {e["tp"]: e["valid"] for e in result["records"]}
    assert valid == {1: True, 2: True, 4: False, 8: False}
    assert "16 GPUs" in result["records"][2]["reason"]
    both = calc_precision(DecodeConfig(model="llama-4-scout", tp=2, ep=2))
    assert both["bf16"]["all_to_all_time_s"] == both["fp8"]["all_to_all_time_s"] > 0


def test_cli_ep_flag_json_and_text(capsys):
    assert main(["calc", "decode", "--model", "gpt-oss-120b", "--tp", "2", "--ep", "4",
                 "--batch", "64", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["all_to_all_bytes_per_gpu"] == 9_953_280
    assert main(["calc", "decode", "--model", "gpt-oss-120b", "--tp", "2", "--ep", "4",
                 "--batch", "64"]) == 0
    text = capsys.readouterr().out
    assert "--ep 4" in text.splitlines()[0]
    assert "All-to-all (extension) = 2 × 36 MoE layers × 64 × 4 experts × (4 − 1)/4" in text
    assert "(uniform routing)" in text
    assert main(["calc", "decode", "--ep", "2"]) == 2
    err = capsys.readouterr().err
    assert "Llama 3.1 8B has no routed experts" in err and "Traceback" not in err


def test_pages_show_the_all_to_all_card_and_mask_layouts_over_one_node():
    exp = BatchBottleneck(model="gpt-oss-120b", ep=2, batch=64)
    exp.result = exp.compute()
    card = exp.cards()[-1]
    assert card.label == "All-to-all (extension)"
    assert "uniform routing" in card.caption
    tp_page = TensorParallel(model="gpt-oss-120b", ep=4)
    data = tp_page.chart_data()
    assert list(data["valid"].values) == [True, True, False, False]
    assert data["step_time_s"].sel(tp=8).isnull()


def test_experiments_1_and_4_show_the_layer_mix_by_hand():
    """Gemma 3 27B at 8,192 tokens reads 10·8,192 + 52·1,023 = 135,116 layer-tokens, not
    62·8,192 = 507,904; gpt-oss-20b 12·8,192 + 12·127 = 99,828 of 196,608."""
    from lab.experiments.precision_switch import PrecisionSwitch

    gemma = BatchBottleneck(model="gemma-3-27b", context=8192)
    gemma.result = gemma.compute()
    card = gemma.cards()[-1]
    assert (card.label, card.value) == ("Layer mix",
                                        "52 sliding-window layers of 1,024 tokens, 10 full")
    assert "135,116 layer-tokens" in card.caption and "507,904" in card.caption
    small = PrecisionSwitch(model="gpt-oss-20b", context=8192)
    small.result = small.compute()
    assert "99,828 layer-tokens" in small.cards()[-1].caption
    dense = BatchBottleneck()
    dense.result = dense.compute()
    assert all(c.label != "Layer mix" for c in dense.cards())


def test_the_all_to_all_between_nvlink_domains_crosses_the_network_by_hand():
    """DeepSeek-V3 on H100 SXM, ep 16 groups of tp 1: 16 GPUs over two 8-GPU HGX nodes. A GPU's
    15 remote groups: 7 on its node, 8 on the other, s = (16 − 16·8/16) / 15 = 8/15. Those 8/15
    of its bytes go at the 400 Gb/s network's 50 GB/s per direction instead of NVLink 4's 450:
    the time is the NVLink time × (1 + 8/15 · (450/50 − 1)) = × 79/15. On 8 GPUs (one node), on
    a GB200 NVL72 (one 72-GPU domain) or on a GPU the catalog gives no network (L40S), nothing
    crosses the network."""
    from lab.models.expert_parallel import (
        all_to_all_bytes_per_gpu,
        all_to_all_time,
        off_domain_share,
    )

    v3, h100 = get_model("deepseek-v3"), get_gpu("h100-sxm")
    assert (h100.scale_up_gpus, h100.network_bw) == (8, 50e9)
    assert off_domain_share(h100, 16, 1) == pytest.approx(8 / 15, rel=1e-15)
    nvlink = all_to_all_bytes_per_gpu(v3, 256, 16, 1) / 450e9
    assert all_to_all_time(v3, h100, 256, 16, 1) == pytest.approx(nvlink * 79 / 15, rel=1e-12)
    # ep 4 groups of tp 4 (16 GPUs): 2 groups a node, s = (4 − 4·8/16) / 3 = 2/3
    assert off_domain_share(h100, 4, 4) == pytest.approx(2 / 3, rel=1e-15)
    assert off_domain_share(h100, 8, 1) == 0 and off_domain_share(h100, 1, 16) == 0
    gb200 = get_gpu("gb200")
    assert (gb200.scale_up_gpus, off_domain_share(gb200, 16, 4)) == (72, 0)
    assert off_domain_share(gb200, 36, 4) == pytest.approx((36 - 36 * 72 / 144) / 35)
    l40s = get_gpu("l40s")
    assert off_domain_share(l40s, 16, 1) == 0
    assert all_to_all_time(v3, l40s, 256, 16, 1) == pytest.approx(
        all_to_all_bytes_per_gpu(v3, 256, 16, 1) / (l40s.interconnect_bw / 2), rel=1e-15)
