"""Each hostile input the fuzzers found gives one sentence quoting the stated limit.

One test per finding of the fuzz runs (issue 9, item 8): huge token counts in a trace, TOML that
is not UTF-8, a GPU peak of 1e300 (which divided by zero in ``calc context --from-model``),
a model shape of 1e300 or 309 digits, ``total_params`` of the wrong type, nesting past the
recursion limit, a flag of 310 digits, non-finite and huge grid-spec values, an empty trace
name and a grid of 1.8×10^12 cells.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from test_fuzz_cli import run_main

from lab.catalog import load_gpu_file, load_model_config
from lab.errors import CatalogError, LabInputError, shown
from lab.limits import (
    MAX_AXIS_VALUES,
    MAX_GENERATOR_BOUND,
    MAX_GRID_CELLS,
    MAX_REQUEST_TOKENS,
    MAX_TOTAL_PARAMS,
)
from lab.models.goodput import load_trace
from lab.points.validity import check_range
from sweeps.grid_files import load_grid

HEADER = "request_id,arrival_s,prompt_tokens,output_tokens\n"
LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
         "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072}
GPU = "capacity_gb = 80\nhbm_bandwidth_tbps = 3.35\nbf16_tflops = 989\n"


def _one_sentence(info) -> str:
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    return message


@pytest.mark.parametrize("count", ["9223372036854775808", "18446744073709551616",
                                   "1" + "0" * 309, str(MAX_REQUEST_TOKENS + 1)])
def test_trace_token_counts_beyond_the_limit(tmp_path, count):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + f"1,0,{count},5\n")
    with pytest.raises(LabInputError) as info:
        load_trace(path)
    message = _one_sentence(info)
    assert "row 2: prompt_tokens must" in message


def test_trace_at_the_token_limit_loads(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + f"1,0,{MAX_REQUEST_TOKENS},1\n")
    assert int(load_trace(path).prompt_tokens[0]) == MAX_REQUEST_TOKENS


def test_trace_arrival_beyond_the_limit(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "1,1e300,5,5\n")
    with pytest.raises(LabInputError, match="row 2: arrival_s must be at most"):
        load_trace(path)


def test_trace_that_is_a_device_is_refused():
    with pytest.raises(LabInputError, match="is not a regular file"):
        load_trace("/dev/null")


def test_gpu_toml_not_utf8(tmp_path):
    path = tmp_path / "gpu.toml"
    path.write_bytes(b"name = \"\xff\xfe\"\n" + GPU.encode())
    with pytest.raises(CatalogError, match="is not UTF-8 text") as info:
        load_gpu_file(path)
    _one_sentence(info)


@pytest.mark.parametrize("text", ["a = " + "[" * 5000 + "]" * 5000,
                                  "a = " + "{b=" * 5000 + "}" * 5000])
def test_gpu_toml_nested_too_deeply(tmp_path, text):
    path = tmp_path / "gpu.toml"
    path.write_text(text + "\n" + GPU)
    with pytest.raises(CatalogError, match="too deeply"):
        load_gpu_file(path)


def test_gpu_peak_of_1e300_is_out_of_range(tmp_path):
    path = tmp_path / "gpu.toml"
    path.write_text(GPU.replace("989", "1e300"))
    with pytest.raises(CatalogError, match=re.escape(
            "'bf16_tflops' = 1e+300, outside the accepted 0.001 to 10,000,000 TFLOPS")):
        load_gpu_file(path)
    status, err = run_main(["calc", "context", "--from-model", "--gpu", str(path)])
    assert status == 2 and err.count("\n") == 1 and "bf16_tflops" in err


def test_c_ms_that_rounds_to_zero_seconds_is_refused():
    status, err = run_main(["calc", "context", "--c-ms", "5e-324"])
    assert status == 2 and "c must be at least 1e-200 ms" in err


@pytest.mark.parametrize("value", [1e300, 10**309, "4096", [4096], True])
def test_model_hidden_size_huge_or_wrong_type(tmp_path, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "hidden_size": value}))
    with pytest.raises(CatalogError, match="'hidden_size' = ") as info:
        load_model_config(path)
    assert "309" not in _one_sentence(info) or "digit" in str(info.value)


def test_model_shape_beyond_the_parameter_limit(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": 65_536, "hidden_size": 1_048_576,
                                "head_dim": 65_536}))
    with pytest.raises(CatalogError, match=f"beyond the {MAX_TOTAL_PARAMS:,}"):
        load_model_config(path)


@pytest.mark.parametrize("declared", ["8B", [8030261248], {"n": 1}, None])
def test_total_params_of_the_wrong_type(tmp_path, declared):
    path = tmp_path / "config.json"
    entry = {**LLAMA, "total_params": declared}
    path.write_text(json.dumps(entry))
    if declared is None:  # absent: the shape decides
        assert load_model_config(path).total_params == 8030261248
        return
    with pytest.raises(CatalogError, match=r"'total_params' = .*not a whole number"):
        load_model_config(path)


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a":' * 5000 + "1" + "}" * 5000])
def test_config_json_nested_too_deeply(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(CatalogError, match="too deeply"):
        load_model_config(path)


def test_config_json_with_a_5000_digit_number(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": ' + "1" * 5000 + "}")
    with pytest.raises(CatalogError, match="number too long"):
        load_model_config(path)


@pytest.mark.parametrize("flag", ["--batch", "--context", "--tp", "--page"])
def test_integer_flag_of_310_digits(flag):
    status, err = run_main(["calc", "decode", flag, "1" + "0" * 309])
    assert status == 2 and err.count("\n") == 1
    assert "a 310-digit integer" in err


def test_check_range_accepts_any_number_type():
    for value in (10**400, -(10**400)):
        with pytest.raises(LabInputError, match="digit integer"):
            check_range("batch", value, 1, 1024)
    for value in (float("nan"), float("inf")):
        with pytest.raises(LabInputError, match="finite"):
            check_range("batch", value, 1, 1024)


@pytest.mark.parametrize(("entry", "fragment"), [
    ("budget = nan", "not a finite number"),
    ("budget = inf", "not a finite number"),
    ("budget = 1e308", "outside 0.01 to 1.0"),
    ("context = [1" + "0" * 400 + "]", "a 401-digit integer, outside"),
    ("budget = 1" + "0" * 400, "a 401-digit integer, outside"),
    ("context = {range = [1, 1" + "0" * 20 + "]}", f"≤ {MAX_GENERATOR_BOUND:,}"),
    ("context = {range = [1, 100000000]}", f"more than the {MAX_AXIS_VALUES:,}"),
    ("context = {logspace = [1, 1024], num = 1000000000}", "would have 1,000,000,000 values"),
])
def test_spec_values_non_finite_or_huge(tmp_path, entry, fragment):
    path = tmp_path / "spec.toml"
    path.write_text(f"[decode]\n{entry}\n")
    with pytest.raises(LabInputError) as info:
        load_grid(str(path)).resolve("decode")
    assert fragment in _one_sentence(info)


def test_spec_with_an_empty_trace(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('[goodput]\ntrace = ""\n')
    with pytest.raises(LabInputError, match=re.escape("[goodput].trace is empty")):
        load_grid(str(path)).resolve("goodput")


@pytest.mark.parametrize(("trace", "fragment"), [("/", "is a directory"),
                                                 ("/dev/null", "is not a regular file")])
def test_spec_with_a_trace_that_is_not_a_file(tmp_path, trace, fragment):
    path = tmp_path / "spec.toml"
    path.write_text(f'[goodput]\ntrace = "{trace}"\n')
    with pytest.raises(LabInputError, match=fragment):
        load_grid(str(path)).resolve("goodput")


def test_spec_of_1_8e12_cells_is_over_the_limit(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('[decode]\nmodel = "all"\ngpu = "all"\ntp = [1, 2, 4, 8]\n'
                    'precision = ["bf16", "fp8"]\nbatch = {range = [1, 1024]}\n'
                    'context = {range = [1, 1048576]}\n')
    with pytest.raises(LabInputError) as info:
        load_grid(str(path)).resolve("decode")
    message = _one_sentence(info)
    assert f"more than the {MAX_GRID_CELLS:,} one grid may have" in message
    assert "1,048,576" in message


def test_spec_not_utf8_and_too_deep(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_bytes(b'name = "\xff"\n[decode]\n')
    with pytest.raises(LabInputError, match="not UTF-8"):
        load_grid(str(path))
    path.write_text("name = " + "[" * 5000 + "]" * 5000 + "\n[decode]\n")
    with pytest.raises(LabInputError, match="too deeply"):
        load_grid(str(path))


def test_shown_never_raises_and_stays_short():
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    for value in (10**5000, nested, "x" * 10_000, {"a": 10**5000}):
        assert len(shown(value)) <= 40


@pytest.mark.parametrize("kind", ["config.json", "gpu.toml"])
def test_model_or_gpu_file_over_the_size_limit_says_so(tmp_path, kind):
    """A file over the stated size, or one that is not a regular file, is named as such (both
    were reported as "not a usable file name")."""
    from lab.catalog import get_gpu, get_model
    from lab.limits import MAX_SPEC_BYTES

    path = tmp_path / kind
    path.write_bytes(b" " * (MAX_SPEC_BYTES + 1))
    load = get_model if kind == "config.json" else get_gpu
    with pytest.raises(LabInputError, match=f"is larger than {MAX_SPEC_BYTES:,} bytes"):
        load(str(path))
    fifo = tmp_path / f"fifo-{kind}"
    os.mkfifo(fifo)
    with pytest.raises(LabInputError, match="is not a regular file"):
        load(str(fifo))



def test_a_trace_limit_is_written_in_full(tmp_path):
    """A trace cell over the tokens limit read "must be at most 1.04858e+06"."""
    trace = tmp_path / "big.csv"
    trace.write_text("request_id,arrival_s,prompt_tokens,output_tokens\n1,0,10,100000000000\n",
                     encoding="utf-8")
    with pytest.raises(LabInputError, match=r"output_tokens must be at most 1,048,576, not "
                                            r"100000000000\."):
        load_trace(trace)


@pytest.mark.parametrize("argv,what", [(["calc", "goodput", "--trace", ""], "trace"),
                                       (["calc", "served", "--measurements", ""], "serving"),
                                       (["calc", "measured", "--measurements", " "],
                                        "measurements")])
def test_an_empty_file_name_is_said_to_be_empty(argv, what, capsys):
    """`--trace ''` read as the current folder: "Trace path . is a directory"."""
    from cli.main import main

    assert main(argv) == 2
    assert f"The {what} file name is empty; give a file." in capsys.readouterr().err
