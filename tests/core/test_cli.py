"""The command line: outputs, JSON shapes, and one-sentence errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli.main import main


def run(capsys, *args):
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_sentence_error(status, err, fragment):
    assert status == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert fragment in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["calc", "decode", "--model", "llama-9z"], "Unknown model 'llama-9z'"),
        (["calc", "decode", "--gpu", "h900"], "Unknown GPU 'h900'"),
        (["calc", "decode", "--batch", "0"], "batch must be between 1 and 1,024"),
        (["calc", "decode", "--batch", "2000"], "batch must be between 1 and 1,024"),
        (["calc", "decode", "--tp", "3"], "tp 3 does not divide the 32 query heads"),
        # beyond the allowed degrees: the range check says so, not a validity reason later
        (["calc", "decode", "--tp", "16"], "tp must be between 1 and 8, not 16."),
        (["calc", "decode", "--context", "0"], "context must be between"),
        (["calc", "decode", "--precision", "int4"], "Precision 'int4' is not one of bf16, fp8"),
        (["calc", "decode", "--gpu", "a100-sxm-80gb", "--precision", "fp8"], "has no FP8 peak"),
        (["calc", "memory", "--budget", "1.5"], "budget must be between"),
        (["calc", "memory", "--page", "0"], "page must be between"),
        (["calc", "decode", "--batch", "eight"], "invalid int value: 'eight'"),
        (["calc", "decode", "--model", "missing/config.json"], "does not exist"),
        (["calc", "nonsense"], "invalid choice"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(capsys, args, fragment):
    status, _, err = run(capsys, *args)
    assert_one_sentence_error(status, err, fragment)


def test_broken_config_json(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}))
    status, _, err = run(capsys, "calc", "decode", "--model", str(path))
    assert_one_sentence_error(status, err, "missing the field 'num_hidden_layers'")
    assert str(path) in err


def test_byo_model_and_gpu_from_files(capsys, tmp_path):
    config = tmp_path / "tiny" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 16,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
        "vocab_size": 128256, "tie_word_embeddings": True, "max_position_embeddings": 131072}))
    gpu = tmp_path / "card.toml"
    gpu.write_text("capacity_gb = 24\nhbm_bandwidth_tbps = 0.3\nbf16_tflops = 121\n")
    status, out, _ = run(capsys, "calc", "decode", "--model", str(config), "--gpu", str(gpu),
                         "--json")
    assert status == 0
    record = json.loads(out)
    assert record["inputs"]["model"] == "tiny"
    assert record["linear_weight_bytes"] == 1_235_746_816 * 2
    assert record["hbm_time_s"] == pytest.approx(1_235_746_816 * 2 / 0.3e12, rel=1e-12)


def test_tp_json_records_every_degree_with_reasons(capsys):
    status, out, _ = run(capsys, "calc", "tp", "--model", "qwen2.5-7b", "--json")
    assert status == 0
    records = json.loads(out)["records"]
    assert [r["tp"] for r in records] == [1, 2, 4, 8]
    assert records[3]["valid"] is False
    assert "28 query heads" in records[3]["reason"]
    assert records[2]["speedup_vs_tp1"] == pytest.approx(4, rel=1e-12)


def test_tp_text_marks_unavailable(capsys):
    status, out, _ = run(capsys, "calc", "tp", "--model", "qwen2.5-7b")
    assert status == 0
    assert "tp 8 = unavailable: tp 8 does not divide the 28 query heads" in out


def test_tp_allreduce_flag(capsys):
    status, out, _ = run(capsys, "calc", "tp", "--allreduce", "--json")
    assert status == 0
    records = json.loads(out)["records"]
    assert records[0]["allreduce_time_s"] == 0
    assert records[3]["allreduce_time_s"] > 0
    assert records[3]["speedup_vs_tp1"] < 8


def test_precision_json(capsys):
    status, out, _ = run(capsys, "calc", "precision", "--json")
    result = json.loads(out)
    assert status == 0
    assert result["speedup"] == pytest.approx(
        result["bf16"]["step_time_s"] / result["fp8"]["step_time_s"], rel=1e-12)
    assert result["inputs"]["precision"] == "bf16"
    assert result["fp8"]["memory_params_bytes"] == 8_030_261_248


def test_memory_text(capsys):
    status, out, _ = run(capsys, "calc", "memory")
    assert status == 0
    assert "Pages per sequence = ceil((8,192 + 1) / 16) = 513" in out
    assert "Max sequences = floor(51.94 GB / 1.08 GB) = 48" in out


def test_catalog_text_and_json(capsys):
    status, out, _ = run(capsys, "catalog")
    assert status == 0
    assert "h100-sxm" in out and "llama-3.1-405b" in out and "source:" in out
    status, out, _ = run(capsys, "catalog", "--json")
    data = json.loads(out)
    assert len(data["gpus"]) == 18 and len(data["models"]) == 25  # 13 dense, 12 in MoE records
    mixtral = next(m for m in data["models"] if m["id"] == "mixtral-8x7b")
    assert mixtral["experts"] == 8 and mixtral["total_params"] == 46_702_792_704
    a100 = next(g for g in data["gpus"] if g["id"] == "a100-sxm-80gb")
    assert a100["peak_fp8"] is None


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "calc" in out and "catalog" in out


def test_console_script_and_python_m():
    for command in (["inference-lab"], [sys.executable, "-m", "lab"]):
        done = subprocess.run([*command, "calc", "decode", "--json"], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["aggregate_tokens_per_s"] == pytest.approx(1135.6292,
                                                                                  rel=1e-7)
        bad = subprocess.run([*command, "calc", "decode", "--tp", "3"], capture_output=True,
                             text=True, check=False)
        assert bad.returncode == 2
        assert bad.stderr.count("\n") == 1


def test_output_into_a_closed_pipe_is_quiet():
    done = subprocess.run(f"{sys.executable} -m lab catalog | head -1", shell=True,
                          capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("GPUs")


def test_memory_text_when_weights_do_not_fit(capsys):
    status, out, _ = run(capsys, "calc", "memory", "--model", "llama-3.1-405b", "--tp", "8")
    assert status == 0
    assert "Free for KV = 72.00 GB − 101.46 GB − 4.00 GB = −33.46 GB" in out
    assert "Max sequences = 0 (the weights alone do not fit the budget)" in out
