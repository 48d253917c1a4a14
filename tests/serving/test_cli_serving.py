"""``inference-lab calc prefill|prefix|goodput|context``: text, JSON and every error path."""

from __future__ import annotations

import json

import pytest

from cli.main import main

HEADER = "request_id,arrival_s,prompt_tokens,output_tokens\n"


def _json(capsys, *argv):
    assert main(["calc", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _fails(capsys, *argv) -> str:
    try:
        code = main(["calc", *argv])
    except SystemExit as exc:   # argparse usage errors
        code = exc.code
    assert code == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1
    return err


def test_prefill_text_and_json(capsys):
    assert main(["calc", "prefill"]) == 0
    out = capsys.readouterr().out
    assert "1,079.04 ms" in out and "134.88 ms" in out
    r = _json(capsys, "prefill", "--chunk", "512")
    assert r["chunks"] == 32
    assert r["ttft_s"] == pytest.approx(1.36704)
    assert r["itl_during_prefill_s"] == pytest.approx(0.04272)
    for key in ("meets_deadline", "meets_itl", "smallest_chunk_meeting_deadline",
                "feasible_chunks"):
        assert key in r


def test_prefill_decode_from(capsys):
    r = _json(capsys, "prefill", "--decode-from", "--batch", "8", "--context", "8192")
    assert r["inputs"]["decode_source"] == "model"
    assert r["inputs"]["decode_s"] == pytest.approx(0.007045, rel=1e-3)


def test_prefill_no_feasible_chunk(capsys):
    r = _json(capsys, "prefill", "--deadline-ms", "1200")
    assert r["feasible_chunks"] is None
    assert r["feasible_text"] == "no chunk meets both"


def test_prefix_json(capsys):
    r = _json(capsys, "prefix")
    assert (r["shared_blocks"], r["private_blocks_per_request"]) == (62, 13)
    assert (r["blocks_with_cache"], r["blocks_without_cache"]) == (1362, 7500)
    assert r["bytes_with_cache"] == 1362 * 2_097_152
    for key in ("bytes_without_cache", "saved_fraction", "owned_blocks_per_request"):
        assert key in r


def test_context_json_exact(capsys):
    r = _json(capsys, "context", "--tokens", "10000000")
    assert r["pairs"] == 50_000_005_000_000
    for key in ("time_s", "linear_time_s", "attention_time_s", "attention_share",
                "doubling_ratio", "crossover_tokens"):
        assert key in r
    w = _json(capsys, "context", "--tokens", "100", "--window", "10")
    assert w["pairs"] == 55 + 90 * 10
    m = _json(capsys, "context", "--from-model", "--precision", "fp8")
    assert m["inputs"]["coefficients"] == "model"


def test_context_text(capsys):
    assert main(["calc", "context", "--tokens", "1000"]) == 0
    assert "1,000 × 1,001 / 2 = 500,500" in capsys.readouterr().out


def test_goodput_json_and_per_request(capsys):
    r = _json(capsys, "goodput", "--per-request")
    for key in ("requests", "good_requests", "goodput_rps", "throughput_tokens_per_s",
                "attainment", "makespan_s"):
        assert key in r
    assert len(r["per_request"]) == r["requests"] == 400
    assert {"ttft_s", "tpot_s", "good"} <= set(r["per_request"][0])
    assert sum(p["good"] for p in r["per_request"]) == r["good_requests"]


def test_goodput_text_notes_sorting(capsys, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "1,1.0,100,5\n2,0.0,100,5\n")
    assert main(["calc", "goodput", "--trace", str(path), "--per-request"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Note: ") and "sorted by arrival" in out
    assert "Goodput =" in out and "request_id" in out
    r = _json(capsys, "goodput", "--trace", str(path))
    assert "sorted by arrival" in r["trace_note"]


def test_goodput_memory_check_reports_rejections(capsys, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "1,0,100,5\n2,0,100000,20000\n")
    r = _json(capsys, "goodput", "--trace", str(path), "--memory-check", "--reserve-gb", "50")
    assert r["rejected_requests"] == 1
    assert main(["calc", "goodput", "--trace", str(path), "--memory-check", "--reserve-gb",
                 "50", "--per-request"]) == 0
    assert "rejected: never fits in memory" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "fragment"), [
    (("prefill", "--prompt", "0"), "prompt must be between"),
    (("prefill", "--chunk", "-4"), "chunk must be between"),
    (("prefill", "--deadline-ms", "0"), "deadline must be greater than 0"),
    (("prefill", "--itl-ms", "-1"), "ITL limit must be between"),
    (("prefill", "--decode-ms", "-1"), "decode must be between"),
    (("prefill", "--c1-ms", "nan"), "c1 must be a finite number"),
    (("prefill", "--decode-ms", "5", "--decode-from"), "either --decode-ms or --decode-from"),
    (("prefill", "--decode-from", "--tp", "3"), "tp 3"),
    (("prefill", "--decode-from", "--gpu", "a100-sxm-80gb", "--precision", "fp8"), "FP8"),
    (("prefill", "--prompt", "abc"), "invalid int value"),
    (("prefix", "--requests", "0"), "requests must be between"),
    (("prefix", "--block", "0"), "block must be between"),
    (("prefix", "--prefix", "0", "--own", "0"), "cannot both be 0"),
    (("prefix", "--tp", "3"), "tp 3"),
    (("prefix", "--model", "no-such-model"), "no-such-model"),
    (("prefix", "--prefix", "200000"), "exceeds"),
    (("context", "--tokens", "0"), "tokens must be between"),
    (("context", "--c-ms", "0"), "c must be greater than 0"),
    (("context", "--window", "0"), "window must be between"),
    (("context", "--a-ms", "1", "--from-model"), "either --a-ms/--c-ms or --from-model"),
    (("context", "--from-model", "--gpu", "a100-sxm-80gb", "--precision", "fp8"), "FP8"),
    (("goodput", "--batch-cap", "0"), "batch cap must be between"),
    (("goodput", "--ttft-ms", "0"), "TTFT limit must be greater than 0"),
    (("goodput", "--tpot-ms", "-2"), "TPOT limit must be between"),
    (("goodput", "--c0-ms", "0", "--c1-ms", "0"), "cannot both be 0"),
    (("goodput", "--tp", "3"), "tp 3"),
    (("goodput", "--precision", "fp4"), "fp4"),
    (("goodput", "--memory-check", "--budget", "0.1"), "do not fit the memory budget"),
    (("goodput", "--trace", "/no/such/trace.csv"), "does not exist"),
])
def test_error_paths(capsys, argv, fragment):
    assert fragment in _fails(capsys, *argv)


@pytest.mark.parametrize(("body", "fragment"), [
    ("", "is empty"),
    ("id,arrival_s,prompt_tokens,output_tokens\n1,0,5,5\n", "lacks the column request_id"),
    (HEADER + "1,-0.5,5,5\n", "must not be negative"),
    (HEADER + "1,zero,5,5\n", "is not a number"),
    (HEADER + "1,0,5,2.5\n", "whole number"),
    (HEADER + "1,0,5,0\n", "at least 1"),
    (HEADER + "1,0,130000,5000\n", "beyond Llama 3.1 8B's maximum context"),
])
def test_trace_error_paths(capsys, tmp_path, body, fragment):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    assert fragment in _fails(capsys, "goodput", "--trace", str(path))
