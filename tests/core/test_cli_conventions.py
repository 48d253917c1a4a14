"""CLI conventions: ``--version``, ``-`` for standard input and output, ``schema_version`` in
every JSON record, ``--page`` for the KV page everywhere, and text that names its inputs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lab
from cli.flags import SCHEMA_VERSION
from cli.main import main
from lab.points.serving_points import DEFAULT_TRACE

REPO = Path(__file__).resolve().parents[2]


def run(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lab", *argv], input=stdin, cwd=REPO,
                          capture_output=True, timeout=120)


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"inference-lab {lab.__version__}\n"


@pytest.mark.parametrize("argv", [
    ["calc", "decode"], ["calc", "memory"], ["calc", "tp"], ["calc", "precision"],
    ["calc", "prefill"], ["calc", "prefix"], ["calc", "goodput"], ["calc", "context"],
    ["calc", "measured"], ["catalog"],
])
def test_every_json_record_leads_with_its_schema_version(argv, capsys):
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert next(iter(record)) == "schema_version" and record["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(("argv", "first"), [
    (["calc", "decode"], "Inputs: Llama 3.1 8B (--model llama-3.1-8b) on NVIDIA H100 SXM "
     "(--gpu h100-sxm); --tp 1 --precision bf16 --batch 8 --context 8192 --budget 0.9 "
     "--reserve-gb 4 --page 16"),
    (["calc", "prefill"], "Inputs: --decode-ms 10 --prompt 16384 --chunk 2048 --c0-ms 2 "
     "--c1-ms 0.06 --deadline-ms 1500 --itl-ms 50"),
    (["calc", "prefix", "--model", "llama-3.1-70b", "--tp", "2"],
     "Inputs: Llama 3.1 70B (--model llama-3.1-70b); --tp 2 --prefix 1000 --own 200 "
     "--requests 100 --page 16"),
    (["calc", "goodput"], "Inputs: Llama 3.1 8B (--model llama-3.1-8b) on NVIDIA H100 SXM "
     f"(--gpu h100-sxm); --trace {DEFAULT_TRACE} --batch-cap 64 --ttft-ms 1000 --tpot-ms 12 "
     "--c0-ms 2 --c1-ms 0.02 --tp 1 --precision bf16"),
    (["calc", "speculative", "--kv-precision", "fp8"],
     "Inputs: Llama 3.1 8B (--model llama-3.1-8b) on NVIDIA H100 SXM (--gpu h100-sxm); "
     "--draft llama-3.2-1b --k 4 --alpha 0.8 --batch 8 --context 512 --tp 1 --precision bf16 "
     "--kv-precision fp8"),
    (["calc", "measured"], "Inputs: NVIDIA H100 SXM (--gpu h100-sxm)"),
    (["calc", "measured", "--tp", "2"], "Inputs: NVIDIA H100 SXM (--gpu h100-sxm); --tp 2"),
    (["calc", "context", "--from-model", "--gpu", "h200"],
     "Inputs: Llama 3.1 8B (--model llama-3.1-8b) on NVIDIA H200 SXM (--gpu h200); --from-model "
     "--precision bf16 --tokens 32768"),
])
def test_text_output_names_the_model_gpu_and_inputs(argv, first, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == first


@pytest.mark.parametrize(("argv", "help_of"), [
    (["plan", "--precision", "fp8"], "inference-lab plan --help"),
    (["sweep", "--bogus"], "inference-lab sweep --help"),
    (["calc", "goodput", "--bogus", "1"], "inference-lab calc goodput --help"),
    (["--bogus"], "inference-lab --help"),
])
def test_an_unknown_flag_points_to_the_help_of_its_own_command(argv, help_of, capsys):
    """The sentence named the top-level help, which lists the commands, not their flags."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith(f"(see {help_of}).\n"), err
    given = " ".join(a for a in argv if a not in ("plan", "sweep", "calc", "goodput"))
    assert f"Unrecognized arguments: {given} (see" in err


def test_page_is_the_kv_page_flag_everywhere_and_block_still_works(capsys):
    assert main(["calc", "prefix", "--page", "32", "--json"]) == 0
    by_page = json.loads(capsys.readouterr().out)
    assert main(["calc", "prefix", "--block", "32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_page
    assert by_page["inputs"]["block"] == 32
    for command in ("decode", "memory", "goodput", "prefix"):
        assert main(["calc", command, "--help"]) == 0
        assert "--page" in capsys.readouterr().out


def test_trace_from_standard_input_equals_the_file():
    from_file = json.loads(run("calc", "goodput", "--json").stdout)
    piped = run("calc", "goodput", "--trace", "-", "--json", stdin=DEFAULT_TRACE.read_bytes())
    record = json.loads(piped.stdout)
    assert record["inputs"]["trace"] == "-"
    record["inputs"]["trace"] = from_file["inputs"]["trace"]
    assert record == from_file


def test_a_bad_trace_on_standard_input_is_one_sentence_naming_it():
    done = run("calc", "goodput", "--trace", "-",
               stdin=b"request_id,arrival_s,prompt_tokens,output_tokens\n1,0,x,3\n")
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1
    assert "standard input" in err and "/tmp" not in err and "Traceback" not in err


def test_export_to_standard_output_as_csv_and_parquet(tmp_path):
    sel = ["export", "--experiment", "prefill", "--sel", "prompt=16384"]
    assert main([*sel, "-o", str(tmp_path / "a.csv")]) == 0
    csv = run(*sel, "-o", "-")
    assert csv.returncode == 0 and csv.stdout == (tmp_path / "a.csv").read_bytes()
    parquet = run(*sel, "-o", "-", "--format", "parquet")
    assert parquet.returncode == 0
    assert pq.read_table(io.BytesIO(parquet.stdout)).num_rows == csv.stdout.count(b"\n") - 1


def test_export_of_netcdf_to_standard_output_is_one_sentence(capsys):
    assert main(["export", "--experiment", "prefill", "-o", "-", "--format", "netcdf"]) == 2
    assert "CSV or Parquet" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [("calc", "decode"), ("catalog", "--json"),
                                  ("export", "--experiment", "prefill", "-o", "-")])
def test_output_to_a_full_disk_is_one_sentence(argv):
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "lab", *argv], cwd=REPO, stdout=full,
                              stderr=subprocess.PIPE, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 1
    assert err == "inference-lab: error: Could not write the output: the disk is full.\n"


def test_output_in_an_encoding_without_the_labs_signs_still_prints():
    done = subprocess.run([sys.executable, "-m", "lab", "calc", "decode"], cwd=REPO,
                          capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "cp1252"})
    assert done.returncode == 0 and done.stderr == b""
    assert b"budget ? 16.06 GB weights" in done.stdout  # the \u2212 cp1252 lacks, as ?


ONE_PLURAL = r"(?<![\d.,])1 (tokens|blocks|sequences|steps|chunks|pairs|requests|points|rows)\b"
"""A count of one with a plural noun ("1 chunks", "last chunk 1 tokens")."""


@pytest.mark.parametrize("argv", [
    ("calc", "prefill", "--prompt", "1", "--chunk", "1"),
    ("calc", "prefill", "--prompt", "2048", "--chunk", "2048"),
    ("calc", "prefix", "--prefix", "1", "--own", "1", "--requests", "1"),
    ("calc", "speculative", "--k", "1", "--batch", "1"),
    ("calc", "context", "--tokens", "1"),
    ("calc", "decode", "--batch", "1"),
])
def test_a_count_of_one_takes_the_singular(argv, capsys):
    import re

    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert not re.findall(ONE_PLURAL, out), re.findall(rf".*{ONE_PLURAL}.*", out)


@pytest.mark.parametrize("argv,message", [
    (["calc", "decode", "--budget", "-inf"], "budget must be a finite number, not -inf."),
    (["calc", "decode", "--budget", "-1e-3"], "budget must be between 0.01 and 1 of capacity"),
    (["calc", "prefill", "--decode-ms", "-1e5"], "decode must be between 0 and 1,000,000,000 ms"),
])
def test_a_negative_number_in_any_notation_is_judged_by_its_range(argv, message, capsys):
    """argparse reads only -5 and -0.5 as negative numbers: -inf or -1e5 was "expected one
    argument", never the range the value breaks."""
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv,note", [
    (["calc", "tp", "--tp", "3"], "--tp 3 is not used with these inputs"),
    (["calc", "precision", "--precision", "mxfp4", "--gpu", "b200"],
     "--precision mxfp4 is not used with these inputs"),
    (["calc", "context", "--model", "llama-3.1-70b"], "--model llama-3.1-70b is not used"),
    (["calc", "prefill", "--batch", "64"], "--batch 64 is not used with these inputs"),
    (["calc", "decode", "--allreduce-latency-us", "10"], "--allreduce-latency-us 10 is not used"),
])
def test_a_flag_the_calculation_does_not_use_is_noted_not_ignored(argv, note, capsys):
    """`calc tp --tp 3` printed "--tp 3" in its Inputs line over a table of every tp; `calc
    precision --precision mxfp4` compared BF16 with FP8 in silence."""
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert note in captured.err and "so it changed nothing" in captured.err
    flag = note.split()[0] + " " + note.split()[1]
    assert flag not in captured.out.splitlines()[0]  # the Inputs line names what was used


@pytest.mark.parametrize("argv", [["calc", "decode"], ["calc", "decode", "--measured-attention"],
                                  ["calc", "goodput", "--per-request"], ["calc", "tp"],
                                  ["calc", "context", "--from-model"]])
def test_flags_the_calculation_uses_get_no_note(argv, capsys):
    assert main(argv) == 0
    assert "note:" not in capsys.readouterr().err
