"""``inference-lab catalog``: the GPUs and models with their figures and sources."""

from __future__ import annotations

import argparse

from cli.flags import add_json_flag, print_json
from lab.catalog import gpu_catalog, model_catalog
from lab.units import GB, GB_PER_S, TB_PER_S, fmt_int, fmt_number


def _gpu_line(gpu) -> str:
    fp8 = f"{fmt_number(gpu.peak_fp8 / 1e12, 1)}" if gpu.has_fp8 else "none"
    return (f"{gpu.id:<14} {gpu.capacity_bytes / GB:>6.0f} GB {gpu.hbm_bw / TB_PER_S:>6.3f} TB/s "
            f"BF16 {fmt_number(gpu.peak_bf16 / 1e12, 1):>8} FP8 {fp8:>8} TFLOPS  "
            f"link {fmt_number(gpu.interconnect_bw / GB_PER_S, 0):>6} GB/s  checked {gpu.checked}\n"
            f"{'':<14} source: {gpu.source}")


def _model_line(model) -> str:
    return (f"{model.id:<16} d {model.hidden:>5} L {model.layers:>3} H {model.heads:>3} "
            f"K {model.kv_heads:>2} h {model.head_dim:>3} F {model.intermediate:>5} "
            f"V {model.vocab:>6}  {fmt_int(model.total_params):>15} params  "
            f"max ctx {model.max_context:,}  checked {model.checked}\n"
            f"{'':<16} source: {model.source}")


def _run(args: argparse.Namespace) -> int:
    gpus, models = gpu_catalog(), model_catalog()
    if args.json:
        print_json({"gpus": [g.as_dict() for g in gpus.values()],
                    "models": [m.as_dict() for m in models.values()]})
        return 0
    print("GPUs (capacity as the vendor labels it, decimal GB; dense peaks)")
    for gpu in gpus.values():
        print(_gpu_line(gpu))
    print("\nModels (shape from config.json; parameters computed from the shape)")
    for model in models.values():
        print(_model_line(model))
    return 0


def register(subparsers) -> None:
    """Add ``catalog``."""
    parser = subparsers.add_parser(
        "catalog", help="list GPUs and models with their figures and sources",
        description="List every catalog GPU and model with its figures, source and the date "
        "it was checked.")
    add_json_flag(parser)
    parser.set_defaults(func=_run)
