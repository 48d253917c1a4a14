"""Flags and output helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import math
import sys

from lab.calc import DecodeConfig

DEFAULTS = DecodeConfig()


def add_decode_flags(parser: argparse.ArgumentParser, *, allreduce: bool = False) -> None:
    """Add the decode configuration flags (model, GPU, tp, precision, batch, context, memory)."""
    group = parser.add_argument_group("decode configuration")
    group.add_argument("--model", default=DEFAULTS.model,
                       help="catalog model id or path to a Hugging Face config.json "
                       "(default: %(default)s)")
    group.add_argument("--gpu", default=DEFAULTS.gpu,
                       help="catalog GPU id or path to a GPU TOML file (default: %(default)s)")
    group.add_argument("--tp", type=int, default=DEFAULTS.tp,
                       help="tensor-parallel degree: 1, 2, 4 or 8 (default: %(default)s)")
    group.add_argument("--precision", default=DEFAULTS.precision,
                       help="linear-layer precision: bf16 or fp8 (default: %(default)s)")
    group.add_argument("--batch", type=int, default=DEFAULTS.batch,
                       help="sequences decoding together, 1-1024 (default: %(default)s)")
    group.add_argument("--context", type=int, default=DEFAULTS.context,
                       help="tokens in each sequence's KV cache (default: %(default)s)")
    group.add_argument("--budget", type=float, default=DEFAULTS.budget,
                       help="share of GPU memory the engine may use (default: %(default)s)")
    group.add_argument("--reserve-gb", type=float, default=DEFAULTS.reserve_gb,
                       help="GB (10^9 B) held back from the budget (default: %(default)s)")
    group.add_argument("--page", type=int, default=DEFAULTS.page,
                       help="KV cache page size in tokens (default: %(default)s)")
    if allreduce:
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
        reserve_gb=args.reserve_gb, page=args.page,
        allreduce=getattr(args, "allreduce", False),
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


def print_json(payload) -> None:
    """Print ``payload`` as JSON (NaN and infinities as null)."""
    json.dump(_clean(payload), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
