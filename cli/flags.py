"""Flags and output helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import math
import sys

from lab.points.decode_family import DecodeConfig

DEFAULTS = DecodeConfig()


DECODE_FLAGS: dict[str, dict] = {
    "model": {"default": DEFAULTS.model,
              "help": "catalog model id or path to a Hugging Face config.json"},
    "gpu": {"default": DEFAULTS.gpu, "help": "catalog GPU id or path to a GPU TOML file"},
    "tp": {"type": int, "default": DEFAULTS.tp, "help": "tensor-parallel degree: 1, 2, 4 or 8"},
    "precision": {"default": DEFAULTS.precision,
                  "help": "linear-layer precision: bf16 or fp8 (calc decode|memory|tp also "
                          "mxfp4 or nvfp4: FP4 weights with block scales, on a GPU with FP4; "
                          "or mxfp4-experts: a mixture of experts' routed experts MXFP4 and "
                          "the rest BF16, as gpt-oss ships)"},
    "batch": {"type": int, "default": DEFAULTS.batch,
              "help": "sequences decoding together, 1-1024"},
    "context": {"type": int, "default": DEFAULTS.context,
                "help": "tokens in each sequence's KV cache"},
    "budget": {"type": float, "default": DEFAULTS.budget,
               "help": "share of GPU memory the engine may use"},
    "reserve_gb": {"type": float, "default": DEFAULTS.reserve_gb,
                   "help": "GB (10^9 B) held back from the budget"},
    "page": {"type": int, "default": DEFAULTS.page, "help": "KV cache page size in tokens"},
    "kv_precision": {"default": DEFAULTS.kv_precision,
                     "help": "KV cache precision: bf16 or fp8 (FP8 halves KV and page bytes)"},
}
"""Every decode-configuration flag (``--reserve-gb`` for ``reserve_gb``), defined once."""

MEMORY_FLAGS = ("budget", "reserve_gb", "page")
"""The memory flags of experiment 2."""


def add_flags(parser: argparse.ArgumentParser, names, title: str) -> None:
    """Add the decode-configuration flags ``names`` in a group titled ``title``; the flags not
    added keep their defaults on the parsed arguments (so :func:`decode_config` always works)."""
    group = parser.add_argument_group(title)
    for name in names:
        options = dict(DECODE_FLAGS[name])
        options["help"] += " (default: %(default)s)"
        group.add_argument("--" + name.replace("_", "-"), **options)
    parser.set_defaults(**{key: flag["default"] for key, flag in DECODE_FLAGS.items()
                           if key not in names})


def add_decode_flags(parser: argparse.ArgumentParser, *, allreduce: bool = False,
                     expert_parallel: bool = False) -> None:
    """Add the decode configuration flags (model, GPU, tp, precision, batch, context, memory);
    ``--ep`` too when ``expert_parallel``."""
    add_flags(parser, tuple(DECODE_FLAGS), "decode configuration")
    if expert_parallel:
        group = parser.add_argument_group("expert parallelism")
        group.add_argument("--ep", type=int, default=DEFAULTS.ep,
                           help="expert-parallel degree (1, 2, 4 or 8; a mixture of experts "
                           "only): E/ep routed experts to each of ep groups of tp GPUs, the "
                           "batch spread over the groups, and the all-to-all dispatch and "
                           "combine added to the step as an extension, uniform routing "
                           "(ep × tp at most 8 GPUs; default: %(default)s)")
    else:
        parser.set_defaults(ep=DEFAULTS.ep)
    if allreduce:
        group = parser.add_argument_group("all-reduce extension")
        group.add_argument("--allreduce", action="store_true",
                           help="add the all-reduce estimate (extension; off by default)")
        group.add_argument("--allreduce-latency-us", type=float,
                           default=DEFAULTS.allreduce_latency_us,
                           help="fixed cost per collective, µs (default: %(default)s)")


def decode_config(args: argparse.Namespace) -> DecodeConfig:
    """A :class:`DecodeConfig` from parsed decode flags."""
    return DecodeConfig(
        model=args.model, gpu=args.gpu, tp=args.tp, precision=args.precision,
        batch=args.batch, context=args.context, budget=args.budget,
        reserve_gb=args.reserve_gb, page=args.page, kv_precision=args.kv_precision,
        ep=getattr(args, "ep", DEFAULTS.ep), allreduce=getattr(args, "allreduce", False),
        allreduce_latency_us=getattr(args, "allreduce_latency_us",
                                     DEFAULTS.allreduce_latency_us),
    )


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true",
                        help="print JSON in SI units (bytes, seconds, FLOP) instead of text")


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


SCHEMA_VERSION = 1
"""Version of the layout of every ``--json`` record (its ``schema_version`` key): raised when
a key is renamed or removed or changes meaning, not when one is added."""


def print_json(payload) -> None:
    """Print ``payload`` as JSON (NaN and infinities as null), a record led by its
    ``schema_version``."""
    if isinstance(payload, dict):
        payload = {"schema_version": SCHEMA_VERSION, **payload}
    json.dump(_clean(payload), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
