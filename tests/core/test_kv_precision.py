"""The KV cache's own precision (``kv_precision``: bf16 default, fp8) in experiments 1, 2, 4 and
7: FP8 halves KV bytes per token, KV reads, page bytes and KV memory; the default changes no
figure (docs/model.md §0 "Attention phase", "Memory" and "KV-cache precision").

Hand-computed for Llama 3.1 8B (L = 32, K = 8, h = 128, P_total = 8,030,261,248) on an H100 SXM
(80 GB, 3.35 TB/s) at B = 8, S = 8,192, page 16, budget 0.90, reserve 4 GB:

- kv_tok = 2·32·8·128·b_kv = 131,072 B (BF16), 65,536 B (FP8)
- KV reads = 8·8,192·65,536 = 4,294,967,296 B (FP8)
- pages(8,192) = ceil(8,193/16) = 513, so a sequence holds 8,208 tokens: 537,919,488 B (FP8)
- free = 72e9 − 2·8,030,261,248 − 4e9 = 51,939,477,504 B; max sequences
  floor(free / 1,075,838,976) = 48 (BF16), floor(free / 537,919,488) = 96 (FP8)
"""

from __future__ import annotations

import json

import pytest

from cli.main import main
from lab.catalog import get_gpu, get_model
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.goodput_contract import GoodputContract
from lab.experiments.sequences_fit import SequencesFit
from lab.models.decode_metrics import decode_metrics
from lab.models.decode_step import decode_step
from lab.models.inputs import DecodeInputs
from lab.models.kv_shapes import kv_bytes_per_element, kv_bytes_per_token
from lab.models.memory import kv_bytes_per_sequence, sequence_capacity
from lab.points.decode_points import DecodeConfig, calc_decode, calc_memory, calc_precision

MODEL, GPU = get_model("llama-3.1-8b"), get_gpu("h100-sxm")


def inputs(**changes) -> DecodeInputs:
    return DecodeInputs(MODEL, GPU, batch=8, context=8192, **changes)


def test_bytes_per_element_and_per_token():
    assert kv_bytes_per_element("bf16") == 2
    assert kv_bytes_per_element("fp8") == 1
    assert kv_bytes_per_token(MODEL) == 131_072
    assert kv_bytes_per_token(MODEL, "bf16") == 131_072
    assert kv_bytes_per_token(MODEL, "fp8") == 65_536


def test_fp8_halves_kv_reads_and_attention_memory_time():
    fp8 = decode_step(inputs(kv_precision="fp8"))
    assert fp8["kv_read_bytes"] == 4_294_967_296
    assert fp8["attention_memory_time_s"] == pytest.approx(4_294_967_296 / 3.35e12, rel=1e-12)
    bf16 = decode_step(inputs())
    assert bf16["kv_read_bytes"] == 8_589_934_592
    # the attention FLOPs and the linear phase do not depend on the KV precision
    assert fp8["attention_flops"] == bf16["attention_flops"]
    assert fp8["linear_time_s"] == bf16["linear_time_s"]


def test_default_is_bit_identical_to_bf16():
    default, bf16 = decode_metrics(inputs()), decode_metrics(inputs(kv_precision="bf16"))
    for key, value in default.items():
        assert bf16[key] == value or (value != value and bf16[key] != bf16[key]), key


def test_fp8_halves_kv_memory_and_doubles_sequences():
    assert kv_bytes_per_sequence(MODEL, 1, 8192, 16, "fp8") == 537_919_488
    assert kv_bytes_per_sequence(MODEL, 1, 8192, 16) == 1_075_838_976
    fp8 = sequence_capacity(inputs(kv_precision="fp8"))
    bf16 = sequence_capacity(inputs())
    assert fp8["free_for_kv_bytes"] == bf16["free_for_kv_bytes"] == 51_939_477_504
    assert bf16["max_sequences"] == 48
    assert fp8["max_sequences"] == 96
    # page waste: 8,208 − 8,193 = 15 tokens of padding
    assert fp8["page_waste_bytes_per_sequence"] == 15 * 65_536


def test_points_carry_the_input_and_precision_keeps_it():
    record = calc_decode(DecodeConfig(kv_precision="fp8"))
    assert record["inputs"]["kv_precision"] == "fp8"
    assert record["memory_kv_bytes"] == 8 * 537_919_488
    assert calc_memory(DecodeConfig())["inputs"]["kv_precision"] == "bf16"
    both = calc_precision(DecodeConfig(kv_precision="fp8"))
    assert both["bf16"]["kv_read_bytes"] == both["fp8"]["kv_read_bytes"] == 4_294_967_296


def run(capsys, *args):
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_flag_json_and_inputs_line(capsys):
    status, out, _ = run(capsys, "calc", "decode", "--kv-precision", "fp8", "--json")
    assert status == 0
    record = json.loads(out)
    assert record["inputs"]["kv_precision"] == "fp8"
    assert record["kv_read_bytes"] == 4_294_967_296
    status, out, _ = run(capsys, "calc", "memory", "--kv-precision", "fp8")
    assert status == 0
    assert out.splitlines()[0].endswith("--page 16 --kv-precision fp8")
    status, out, _ = run(capsys, "calc", "memory")
    assert "kv-precision" not in out.splitlines()[0]  # the default line reads as before


def test_cli_bad_kv_precision_is_one_sentence(capsys):
    status, _, err = run(capsys, "calc", "decode", "--kv-precision", "int4")
    assert status == 2
    assert err.strip().splitlines() == ["inference-lab: error: KV precision 'int4' is not one "
                                        "of bf16, fp8."]


def test_goodput_kv_precision(capsys):
    status, out, _ = run(capsys, "calc", "goodput", "--kv-precision", "fp8", "--memory-check",
                         "--json")
    assert status == 0
    record = json.loads(out)
    assert record["inputs"]["kv_precision"] == "fp8"
    status, out, _ = run(capsys, "calc", "goodput", "--memory-check", "--json")
    bf16 = json.loads(out)
    assert bf16["inputs"]["kv_precision"] == "bf16"
    # same free memory (weights and reserve), each step's KV reads halved: never slower
    assert record["kv_free_bytes"] == bf16["kv_free_bytes"]
    assert record["makespan_s"] <= bf16["makespan_s"]


def test_experiment_classes_take_the_input():
    assert BatchBottleneck().kv_precision == "bf16"
    fit = SequencesFit(kv_precision="fp8", context=8192)
    assert fit.config().kv_precision == "fp8"
    assert GoodputContract(kv_precision="fp8").decode_config().kv_precision == "fp8"


def test_experiment_cards_change_with_an_fp8_cache():
    """Experiment 2's page: the KV per sequence halves and twice the sequences fit; experiment
    1's attention phase halves (the figures of the module docstring)."""
    bf16 = {card.label: card for card in SequencesFit().cards()}
    fp8 = {card.label: card for card in SequencesFit(kv_precision="fp8").cards()}
    assert (bf16["KV per sequence"].value, fp8["KV per sequence"].value) == ("1.08 GB", "0.54 GB")
    assert (bf16["Max sequences"].value, fp8["Max sequences"].value) == ("48", "96")
    assert fp8["KV per sequence"].caption.endswith(", FP8 KV cache")
    assert not bf16["KV per sequence"].caption.endswith("FP8 KV cache")
    step = {card.label: card.value for card in BatchBottleneck(kv_precision="fp8").cards()}
    assert step["Ideal step time"] == "5.76 ms"
    assert step["What attention adds"] == "1.28 ms"
