"""The lab page's figures for experiment 1, reproduced to the digit (CLI text and JSON)."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from lab.catalog import get_model
from lab.models.decode_step import linear_params
from lab.points.decode_points import DecodeConfig, calc_decode

ARGS = ["calc", "decode", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8",
        "--context", "8192"]

PAGE_FIGURES = [
    "15.01 GB", "120.07 GFLOP", "4.48 ms", "0.12 ms", "8 × 8,192 × 131,072 B / 1", "8.59 GB",
    "34.36 GFLOP", "2.56 ms", "7.04 ms", "1,136 tok/s", "142 tok/s per sequence", "HBM",
    "43.33 GB remains inside the chosen budget",
]

# Hand-derived (docs/model.md §1): N_lin = 7,504,658,432; BW 3.35e12 B/s;
# BF16 dense peak 989.4e12 FLOP/s; kv_tok = 2·32·8·128·2 = 131,072 B; P_total 8,030,261,248.
N_LIN = 32 * (4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336) \
    + 4096 * 128256
EXPECTED = {
    "linear_weight_bytes": 15_009_316_864,
    "linear_flops": 120_074_534_912,
    "hbm_time_s": 15_009_316_864 / 3.35e12,
    "linear_compute_time_s": 120_074_534_912 / 989.4e12,
    "linear_time_s": 15_009_316_864 / 3.35e12,
    "kv_read_bytes": 8 * 8192 * 131_072,
    "attention_flops": 4 * 8 * 8192 * 32 * 32 * 128,
    "attention_time_s": 8 * 8192 * 131_072 / 3.35e12,
    "step_time_s": 15_009_316_864 / 3.35e12 + 8 * 8192 * 131_072 / 3.35e12,
    "aggregate_tokens_per_s": 8 / (15_009_316_864 / 3.35e12 + 8 * 8192 * 131_072 / 3.35e12),
    "per_sequence_tokens_per_s": 1 / (15_009_316_864 / 3.35e12 + 8 * 8192 * 131_072 / 3.35e12),
    "memory_params_bytes": 2 * 8_030_261_248,
    "memory_kv_bytes": 8 * 513 * 16 * 131_072,
    "memory_budget_bytes": 0.9 * 80e9,
    "memory_remaining_bytes": 0.9 * 80e9 - 2 * 8_030_261_248 - 8 * 513 * 16 * 131_072 - 4e9,
    "ridge_batch": 989.4e12 * 2 / (2 * 3.35e12),
}


def test_linear_params_from_reference():
    assert linear_params(get_model("llama-3.1-8b")) == 7_504_658_432
    assert calc_decode(DecodeConfig())["linear_weight_bytes"] == 2 * 7_504_658_432


def test_text_shows_every_page_figure(capsys):
    assert main(ARGS) == 0
    out = capsys.readouterr().out
    for figure in PAGE_FIGURES:
        assert figure in out, figure
    assert "Step floor = 4.48 + 2.56 = 7.04 ms" in out
    assert "Aggregate ceiling = 8 / 0.007045 s = 1,136 tok/s" in out
    assert "Attention phase = max(KV / bandwidth, FLOPs / BF16 peak)" in out


def test_text_order_follows_the_page(capsys):
    main(ARGS)
    out = capsys.readouterr().out
    labels = ["Linear weight reads", "Linear FLOPs", "HBM time", "Linear compute time",
              "Linear phase", "KV reads", "Attention FLOPs", "Attention phase", "Step floor",
              "Aggregate ceiling", "Memory remaining"]
    positions = [out.index(label + " =") for label in labels]
    assert positions == sorted(positions)


@pytest.fixture
def record(capsys):
    assert main([*ARGS, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_values_to_1e_9(record):
    for key, expected in EXPECTED.items():
        assert record[key] == pytest.approx(expected, rel=1e-9), key
    assert record["linear_bottleneck"] == "hbm"
    assert record["fits"] is True


def test_json_has_required_keys(record):
    required = {
        "linear_weight_bytes", "linear_flops", "hbm_time_s", "linear_compute_time_s",
        "linear_time_s", "linear_bottleneck", "kv_read_bytes", "attention_flops",
        "attention_time_s", "step_time_s", "aggregate_tokens_per_s",
        "per_sequence_tokens_per_s", "memory_params_bytes", "memory_kv_bytes",
        "memory_budget_bytes", "memory_remaining_bytes", "fits", "ridge_batch",
    }
    assert required <= record.keys()


def test_rounded_page_figures(record):
    assert round(record["linear_weight_bytes"] / 1e9, 2) == 15.01
    assert round(record["linear_flops"] / 1e9, 2) == 120.07
    assert round(record["hbm_time_s"] * 1e3, 2) == 4.48
    assert round(record["linear_compute_time_s"] * 1e3, 2) == 0.12
    assert round(record["kv_read_bytes"] / 1e9, 2) == 8.59
    assert round(record["attention_flops"] / 1e9, 2) == 34.36
    assert round(record["attention_time_s"] * 1e3, 2) == 2.56
    assert round(record["step_time_s"] * 1e3, 2) == 7.04
    assert round(record["step_time_s"], 6) == 0.007045
    assert round(record["aggregate_tokens_per_s"]) == 1136
    assert round(record["per_sequence_tokens_per_s"]) == 142
    assert round(record["memory_remaining_bytes"] / 1e9, 2) == 43.33


def test_memory_json_adds_capacity_keys(capsys):
    assert main(["calc", "memory", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    free = 0.9 * 80e9 - 2 * 8_030_261_248 - 4e9
    per_sequence = 513 * 16 * 131_072
    assert record["kv_bytes_per_sequence"] == pytest.approx(per_sequence, rel=1e-12)
    assert record["free_for_kv_bytes"] == pytest.approx(free, rel=1e-12)
    assert record["max_sequences"] == free // per_sequence == 48
