"""The ``inference-lab`` commands whose exact output is recorded in ``tests/cli/golden/``.

Each case is ``(name, argv, stdin)``: ``stdin`` is a file under ``tests/cli/data/`` fed to
standard input (``--trace -``), or None. Paths in ``argv`` are relative to the repository root,
where the cases run. Add a case here, then record it with
``python tests/cli/record_golden.py NAME`` (every case without a name; only on purpose: the
recorded output is what the test holds every later version to).
"""

from __future__ import annotations

MODEL_FILE = "tests/cli/data/tiny/config.json"
GPU_FILE = "tests/cli/data/card.toml"
MOE_FILE = "tests/data/hf_configs/mixtral-8x7b-v0.1/config.json"
TRACE_FILE = "tests/cli/data/small_trace.csv"
BAD_TRACE_FILE = "tests/cli/data/bad_trace.csv"

SUBCOMMANDS = ("decode", "memory", "tp", "precision", "prefill", "prefix", "goodput", "context",
               "measured", "speculative", "served", "plan")

Case = tuple[str, tuple[str, ...], "str | None"]


def _case(name: str, *argv: str, stdin: str | None = None) -> Case:
    return name, tuple(argv), stdin


def _both(name: str, *argv: str, stdin: str | None = None) -> list[Case]:
    """The text output and the ``--json`` output of one command."""
    return [_case(name, *argv, stdin=stdin), _case(name + "-json", *argv, "--json", stdin=stdin)]


HELP_CASES: list[Case] = [
    _case("help-top", "--help"),
    _case("help-calc", "calc", "--help"),
    *(_case(f"help-{name}", "calc", name, "--help") for name in SUBCOMMANDS),
]
"""``--help`` of ``inference-lab``, ``calc`` and every ``calc`` subcommand: their text may
improve (the recording is then redone and the change noted), unlike the outputs below."""

DECODE_FAMILY = ("decode", "memory", "tp", "precision")

OUTPUT_CASES: list[Case] = [
    # -- experiments 1-4: defaults and varied inputs ----------------------------------------
    *(c for name in DECODE_FAMILY for c in _both(f"{name}-default", "calc", name)),
    *(c for name in DECODE_FAMILY for c in _both(
        f"{name}-70b-h200", "calc", name, "--model", "llama-3.1-70b", "--gpu", "h200",
        "--tp", "4", "--batch", "64", "--context", "32768", "--budget", "0.8",
        "--reserve-gb", "6", "--page", "32")),
    *(c for name in DECODE_FAMILY for c in _both(
        f"{name}-files", "calc", name, "--model", MODEL_FILE, "--gpu", GPU_FILE,
        "--batch", "4", "--context", "2048")),
    *(c for name in DECODE_FAMILY for c in _both(
        f"{name}-fp8-kv", "calc", name, "--precision", "fp8", "--kv-precision", "fp8",
        "--batch", "256", "--context", "1024")),
    *_both("decode-moe-ep", "calc", "decode", "--model", "mixtral-8x7b", "--tp", "2",
           "--ep", "4", "--batch", "32"),
    *_both("decode-moe-file", "calc", "decode", "--model", MOE_FILE, "--tp", "2"),
    *_both("decode-allreduce", "calc", "decode", "--tp", "4", "--allreduce",
           "--allreduce-latency-us", "12.5"),
    *_both("decode-measured", "calc", "decode", "--measured-attention", "--batch", "16"),
    *_both("decode-measured-none", "calc", "decode", "--measured-attention",
           "--model", "llama-3.1-70b", "--batch", "3"),
    *_both("decode-mxfp4", "calc", "decode", "--model", "gpt-oss-120b", "--gpu", "b200",
           "--precision", "mxfp4"),
    *_both("memory-gemma", "calc", "memory", "--model", "gemma-3-27b", "--gpu", "b200",
           "--context", "32768"),
    *_both("memory-mla", "calc", "memory", "--model", "deepseek-v2-lite"),
    *_both("tp-allreduce-ep", "calc", "tp", "--model", "qwen3-30b-a3b", "--allreduce",
           "--ep", "2"),
    *_both("tp-qwen", "calc", "tp", "--model", "qwen2.5-7b"),
    *_both("precision-ep", "calc", "precision", "--model", "mixtral-8x7b", "--ep", "2"),
    # -- experiment 5 -----------------------------------------------------------------------
    *_both("prefill-default", "calc", "prefill"),
    *_both("prefill-chunk", "calc", "prefill", "--chunk", "512", "--prompt", "8000",
           "--decode-ms", "7.5", "--c0-ms", "1", "--c1-ms", "0.05"),
    *_both("prefill-limits", "calc", "prefill", "--deadline-ms", "1200", "--itl-ms", "40"),
    *_both("prefill-decode-from", "calc", "prefill", "--decode-from", "--batch", "16",
           "--context", "4096", "--model", "llama-3.1-70b", "--tp", "4"),
    *_both("prefill-decode-from-files", "calc", "prefill", "--decode-from", "--model",
           MODEL_FILE, "--gpu", GPU_FILE, "--kv-precision", "fp8"),
    # -- experiment 6 -----------------------------------------------------------------------
    *_both("prefix-default", "calc", "prefix"),
    *_both("prefix-varied", "calc", "prefix", "--prefix", "1001", "--own", "17",
           "--requests", "5", "--page", "32", "--tp", "2", "--model", "llama-3.1-70b"),
    *_both("prefix-block", "calc", "prefix", "--block", "64", "--prefix", "0"),
    *_both("prefix-file", "calc", "prefix", "--model", MODEL_FILE),
    # -- experiment 7 -----------------------------------------------------------------------
    *_both("goodput-default", "calc", "goodput"),
    *_both("goodput-file", "calc", "goodput", "--trace", TRACE_FILE, "--batch-cap", "2",
           "--ttft-ms", "500", "--tpot-ms", "20", "--per-request"),
    *_both("goodput-stdin", "calc", "goodput", "--trace", "-", "--per-request",
           stdin=TRACE_FILE),
    *_both("goodput-memory", "calc", "goodput", "--memory-check", "--model", "llama-3.1-70b",
           "--gpu", "h200", "--tp", "2", "--budget", "0.5", "--reserve-gb", "10", "--page",
           "32", "--kv-precision", "fp8", "--c0-ms", "3", "--c1-ms", "0.02"),
    *_both("goodput-files", "calc", "goodput", "--trace", TRACE_FILE, "--model", MODEL_FILE,
           "--gpu", GPU_FILE, "--precision", "bf16"),
    # -- experiment 8 -----------------------------------------------------------------------
    *_both("context-default", "calc", "context"),
    *_both("context-coefficients", "calc", "context", "--tokens", "1000", "--a-ms", "0.02",
           "--c-ms", "1e-6"),
    *_both("context-window", "calc", "context", "--tokens", "65536", "--window", "4096"),
    *_both("context-from-model", "calc", "context", "--from-model", "--model", "gemma-3-27b",
           "--gpu", "b200", "--precision", "fp8"),
    *_both("context-from-model-file", "calc", "context", "--from-model", "--model",
           MODEL_FILE, "--gpu", GPU_FILE),
    # -- experiments 9-11 (hand-written or generated already) ----------------------------------
    *_both("measured-default", "calc", "measured"),
    *_both("measured-gemm", "calc", "measured", "--kind", "gemm", "--shape", "8192×6144",
           "--m", "8192"),
    *_both("speculative-default", "calc", "speculative"),
    *_both("speculative-varied", "calc", "speculative", "--k", "2", "--alpha", "0.6",
           "--batch", "64"),
    *_both("served-default", "calc", "served"),
]
"""Text and ``--json`` outputs: byte for byte the same before and after any refactor."""

ERROR_CASES: list[Case] = [
    _case("err-decode-batch", "calc", "decode", "--batch", "2000"),
    _case("err-decode-batch-zero", "calc", "decode", "--batch", "0", "--json"),
    _case("err-decode-tp", "calc", "decode", "--tp", "16"),
    _case("err-decode-tp3", "calc", "decode", "--tp", "3"),
    _case("err-decode-tp-text", "calc", "decode", "--tp", "two"),
    _case("err-decode-precision", "calc", "decode", "--precision", "fp16"),
    _case("err-decode-kv-precision", "calc", "decode", "--kv-precision", "int4"),
    _case("err-decode-model", "calc", "decode", "--model", "no-such-model"),
    _case("err-decode-model-path", "calc", "decode", "--model", "tests/cli/data/missing.json"),
    _case("err-decode-gpu-path", "calc", "decode", "--gpu", "tests/cli/data/missing.toml"),
    _case("err-decode-context", "calc", "decode", "--context", "200000"),
    _case("err-decode-budget", "calc", "decode", "--budget", "1.5"),
    _case("err-decode-reserve", "calc", "decode", "--reserve-gb", "-1"),
    _case("err-decode-page", "calc", "decode", "--page", "5000"),
    _case("err-decode-ep-dense", "calc", "decode", "--ep", "2"),
    _case("err-decode-allreduce-latency", "calc", "decode", "--allreduce",
          "--allreduce-latency-us", "-3"),
    _case("err-decode-unknown-flag", "calc", "decode", "--bogus", "1"),
    _case("err-memory-ep-flag", "calc", "memory", "--ep", "2"),
    _case("err-memory-allreduce-flag", "calc", "memory", "--allreduce"),
    _case("err-precision-fp8-gpu", "calc", "precision", "--gpu", "a100-sxm-80gb"),
    _case("err-tp-batch", "calc", "tp", "--batch", "-4"),
    _case("err-prefill-chunk", "calc", "prefill", "--chunk", "0"),
    _case("err-prefill-deadline", "calc", "prefill", "--deadline-ms", "0"),
    _case("err-prefill-both", "calc", "prefill", "--decode-from", "--decode-ms", "5"),
    _case("err-prefill-decode-from-batch", "calc", "prefill", "--decode-from", "--batch",
          "5000"),
    _case("err-prefill-c1", "calc", "prefill", "--c1-ms", "nan"),
    _case("err-prefix-moe", "calc", "prefix", "--model", "mixtral-8x7b"),
    _case("err-prefix-requests", "calc", "prefix", "--requests", "0"),
    _case("err-prefix-block", "calc", "prefix", "--block", "8192"),
    _case("err-goodput-trace-missing", "calc", "goodput", "--trace", "tests/cli/data/none.csv"),
    _case("err-goodput-trace-bad", "calc", "goodput", "--trace", BAD_TRACE_FILE),
    _case("err-goodput-stdin-bad", "calc", "goodput", "--trace", "-", stdin=BAD_TRACE_FILE),
    _case("err-goodput-cap", "calc", "goodput", "--batch-cap", "2048"),
    _case("err-goodput-ttft", "calc", "goodput", "--ttft-ms", "0"),
    _case("err-goodput-memory", "calc", "goodput", "--memory-check", "--budget", "0"),
    _case("err-context-tokens", "calc", "context", "--tokens", "0"),
    _case("err-context-window", "calc", "context", "--window", "0"),
    _case("err-context-c", "calc", "context", "--c-ms", "0"),
    _case("err-context-both", "calc", "context", "--from-model", "--a-ms", "1"),
    _case("err-speculative-alpha", "calc", "speculative", "--alpha", "2"),
    _case("err-speculative-k", "calc", "speculative", "--k", "17"),
    _case("err-calc-unknown", "calc", "nosuch"),
]
"""Bad input: the exit status and the one sentence on standard error, unchanged."""

CASES: list[Case] = [*HELP_CASES, *OUTPUT_CASES, *ERROR_CASES]
