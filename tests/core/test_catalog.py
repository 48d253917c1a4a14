"""The catalogs: exact ids, sources, parameter counts, and bring-your-own files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.catalog import get_gpu, get_model, gpu_catalog, load_gpu_file, model_catalog
from lab.catalog.moe_spec import MoESpec
from lab.errors import CatalogError

GPU_IDS = ["a100-sxm-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200", "b200", "gb200",
           "l40s", "l4", "mi300x", "mi325x", "mi355x", "gaudi3", "tpu-v5e", "tpu-v5p", "tpu-v6e",
           "b300", "gb300"]
MODEL_IDS = ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
             "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b",
             "mistral-7b-v0.3", "mistral-large-2"]
MOE_IDS = ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite", "deepseek-v3", "qwen3-235b-a22b",
           "minimax-m2.5"]

# Total parameters (D), as listed in docs/sources.md.
REFERENCE_TOTALS = {
    "llama-3.2-1b": 1_235_814_400, "llama-3.2-3b": 3_212_749_824,
    "llama-3.1-8b": 8_030_261_248, "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800, "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-14b": 14_770_033_664, "qwen2.5-32b": 32_763_876_352,
    "qwen2.5-72b": 72_706_203_648, "qwen3-8b": 8_190_735_360, "qwen3-32b": 32_762_123_264,
    "mistral-7b-v0.3": 7_248_023_552, "mistral-large-2": 122_610_069_504,
    # mixture of experts: the model cards' 46.7 B, 30.5 B, 15.7 B and 671 B
    "mixtral-8x7b": 46_702_792_704, "qwen3-30b-a3b": 30_532_122_624,
    "deepseek-v2-lite": 15_706_484_224, "deepseek-v3": 671_026_419_200,
    # experiment 11's models: Qwen's 235 B; MiniMax's 230 B less its q/k norms and router bias
    "qwen3-235b-a22b": 235_093_634_560, "minimax-m2.5": 228_689_304_576,
}
CHECKED_2026_12_06 = ("b300", "gb300", "qwen3-235b-a22b", "minimax-m2.5")
"""Entries added for experiment 11, checked on that date."""
LAYER_KIND_IDS = ["gpt-oss-20b", "gpt-oss-120b", "gemma-3-27b", "llama-4-scout",
                  "llama-4-maverick"]
"""Issue 26's models with sliding-window or chunked layers, after the others."""
CHECKED_2026_12_06 += tuple(LAYER_KIND_IDS)
SERVED_IDS = ["kimi-k2.5"]
"""Experiment 11's Kimi-K2.5 (1.03 T, the parameter-counting fixture's 1,026 B), last."""
CHECKED_2026_12_06 += tuple(SERVED_IDS)


def test_ids_exactly():
    assert list(gpu_catalog()) == GPU_IDS
    assert list(model_catalog()) == MODEL_IDS + MOE_IDS + LAYER_KIND_IDS + SERVED_IDS
    assert model_catalog()["kimi-k2.5"].total_params == 1_026_408_232_448


def test_every_entry_has_source_and_date():
    for spec in [*gpu_catalog().values(), *model_catalog().values()]:
        assert spec.source, spec.id
        if spec.id in CHECKED_2026_12_06:
            assert spec.checked == "2026-12-06", spec.id
            continue
        assert spec.checked == ("2026-12-03" if spec.id in MOE_IDS else "2026-10-16"), spec.id
    for model_id in MODEL_IDS:
        assert model_catalog()[model_id].checked == "2026-10-16", model_id


@pytest.mark.parametrize("model_id", MODEL_IDS + MOE_IDS)
def test_total_params_computed_from_shape_match_reference(model_id):
    assert get_model(model_id).total_params == REFERENCE_TOTALS[model_id]


@pytest.mark.parametrize("model_id", MOE_IDS)
def test_moe_entries_are_moe_records(model_id):
    assert isinstance(get_model(model_id), MoESpec)
    assert get_model(model_id) is model_catalog()[model_id]
    assert not any(isinstance(get_model(m), MoESpec) for m in MODEL_IDS)


def test_gpu_figures_in_si():
    h100 = get_gpu("h100-sxm")
    assert h100.capacity_bytes == 80e9
    assert h100.hbm_bw == 3.35e12
    assert h100.peak_bf16 == 989.4e12
    assert h100.peak_fp8 == 1979e12
    assert not get_gpu("a100-sxm-80gb").has_fp8
    assert not get_gpu("tpu-v5e").has_fp8
    assert all(get_gpu(g).has_fp8 for g in GPU_IDS if g not in ("a100-sxm-80gb", "tpu-v5e"))


LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
}


def write_config(tmp_path, config, name="my-llama"):
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_bring_your_own_config_json(tmp_path):
    model = get_model(str(write_config(tmp_path, LLAMA_CONFIG)))
    assert model.id == "my-llama"
    assert model.total_params == 8_030_261_248
    assert model.head_dim == 128


def test_head_dim_defaults_to_hidden_over_heads(tmp_path):
    config = {k: v for k, v in LLAMA_CONFIG.items() if k != "head_dim"}
    assert get_model(str(write_config(tmp_path, config))).head_dim == 128


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": None}, "missing the field 'hidden_size'"),
        ({"num_hidden_layers": 0}, "'num_hidden_layers' = 0, which is not a positive integer"),
        ({"vocab_size": -5}, "'vocab_size' = -5"),
        ({"intermediate_size": "big"}, "'intermediate_size' = 'big'"),
        # a MoE architecture is read by the MoE reader (issue 14), which names what is missing
        ({"architectures": ["DeepseekV3ForCausalLM"]}, "missing the field 'n_routed_experts'"),
        ({"num_local_experts": 8}, "mixture-of-experts"),
        ({"num_key_value_heads": 5}, "not a multiple of num_key_value_heads 5"),
    ],
)
def test_broken_config_json(tmp_path, change, message):
    config = dict(LLAMA_CONFIG)
    for key, value in change.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = value
    path = write_config(tmp_path, config)
    with pytest.raises(CatalogError, match=message) as info:
        get_model(str(path))
    assert str(path) in str(info.value)


def test_config_json_not_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(CatalogError, match="is not valid JSON"):
        get_model(str(path))


def test_missing_file():
    with pytest.raises(CatalogError, match="does not exist"):
        get_model("nowhere/config.json")


def test_gpu_toml(tmp_path):
    path = tmp_path / "my-gpu.toml"
    path.write_text('name = "My GPU"\ncapacity_gb = 96\nhbm_bandwidth_tbps = 4.0\n'
                    'bf16_tflops = 1000\ninterconnect_gbps = 900\n')
    gpu = load_gpu_file(path)
    assert gpu.id == "my-gpu"
    assert gpu.hbm_bw == 4e12
    assert not gpu.has_fp8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("capacity_gb = 96\nbf16_tflops = 1000\n", "missing the field 'hbm_bandwidth_tbps'"),
        ("capacity_gb = -1\nhbm_bandwidth_tbps = 4\nbf16_tflops = 1000\n", "'capacity_gb' = -1"),
        ("capacity_gb = 96\nhbm_bandwidth_tbps = 0\nbf16_tflops = 1000\n",
         "'hbm_bandwidth_tbps' = 0"),
        ("capacity_gb = [\n", "is not valid TOML"),
    ],
)
def test_broken_gpu_toml(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=message):
        get_gpu(str(path))


def test_unknown_ids_list_the_choices():
    with pytest.raises(CatalogError, match="Unknown GPU 'h300'; choose one of a100-sxm-80gb"):
        get_gpu("h300")


def test_a_misspelt_gpu_field_is_refused_not_ignored(tmp_path):
    """`fp8_tflop = 242` (for fp8_tflops) made a GPU without FP8 in silence."""
    from lab.catalog.loader import load_gpu_file
    from lab.errors import CatalogError

    path = tmp_path / "typo.toml"
    path.write_text('name = "Mine"\ncapacity_gb = 24\nhbm_bandwidth_tbps = 0.3\n'
                    "bf16_tflops = 121\nfp8_tflop = 242\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"'fp8_tflop' is not a GPU field; the fields are "
                                           r"id, name, .*fp8_tflops"):
        load_gpu_file(path)


def test_a_name_from_a_file_reaches_the_terminal_on_one_line_without_escapes(tmp_path, capsys):
    """A GPU TOML's name with an escape sequence sent it to the terminal, a newline split the
    pasteable Inputs: line, and a 500-character name was printed whole; a config.json's
    _name_or_path kept its escape too."""
    from cli.main import main

    path = tmp_path / "evil.toml"
    path.write_text('name = "evil\\u001b[31mRED\\nsecond line' + "x" * 500 + '"\n'
                    "capacity_gb = 80\nhbm_bandwidth_tbps = 3\nbf16_tflops = 900\n")
    assert main(["calc", "decode", "--gpu", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "\x1b" not in first and "on evil[31mRED second line" in first
    assert first.endswith(f"(--gpu {path}); --tp 1 --precision bf16 --batch 8 --context 8192 "
                          "--budget 0.9 --reserve-gb 4 --page 16") and "x" * 100 not in first
    config = tmp_path / "m" / "config.json"
    config.parent.mkdir()
    shipped = Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "mixtral-8x7b-v0.1"
    config.write_text(json.dumps({**json.loads((shipped / "config.json").read_text()),
                                  "_name_or_path": "a\x1bb\nc"}))
    assert get_model(str(config)).name == "ab c"
