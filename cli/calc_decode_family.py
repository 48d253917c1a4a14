"""``calc decode|memory|tp|precision``: experiments 1–4 from the command line."""

from __future__ import annotations

import argparse

from cli.flags import add_decode_flags, add_json_flag, decode_config, print_json
from cli.inputs_line import inputs_line
from lab.derivations.decode_family import render_text
from lab.experiments.registry import record

EXPERIMENTS = {
    "decode": "Experiment 1, batch and the bottleneck: the ideal decode step.",
    "memory": "Experiment 2, how many sequences fit: weights, paged KV and the budget.",
    "tp": "Experiment 3, tensor parallelism: tp 1, 2, 4, 8 side by side.",
    "precision": "Experiment 4, precision: BF16 and FP8 side by side.",
}
"""The ``--help`` description of each decode-family subcommand; its point function and
derivation come from its record in :mod:`lab.experiments.registry`."""


def _measured(result: dict, config) -> dict:
    """Experiment 9's measured attention for this configuration (``lab.measured.overlay``)."""
    from lab.measured.loader import SHIPPED_SOURCE
    from lab.measured.overlay import measured_attention

    model, gpu = config.resolved()
    found = measured_attention(model, gpu, config.tp, config.batch, config.context,
                               result["attention_time_s"])
    return {**{k: v for k, v in found.items() if k != "point"}, "source": SHIPPED_SOURCE}


def _run(name: str, args: argparse.Namespace) -> int:
    calculate, steps = record(name).point_function(), record(name).derivation_function()
    config = decode_config(args)
    result = calculate(config)
    measured = _measured(result, config) if getattr(args, "measured_attention", False) else None
    if args.json:
        print_json(result if measured is None else {**result, "measured_attention": measured})
    else:
        model, gpu = config.resolved()
        print(inputs_line(name, args))
        print(render_text(steps(result, model, gpu)))
        if measured is not None:
            print(measured["sentence"])
    return 0


def register(subparsers) -> None:
    """Add ``decode``, ``memory``, ``tp`` and ``precision``."""
    for name, description in EXPERIMENTS.items():
        parser = subparsers.add_parser(name, help=description.split(":")[0],
                                       description=description)
        add_decode_flags(parser, allreduce=name in ("decode", "tp"),
                         expert_parallel=name in ("decode", "tp", "precision"))
        if name == "decode":
            parser.add_argument("--measured-attention", action="store_true",
                                help="also show the measured decode attention kernel (real H100 "
                                "SXM data, experiment 9) beside the ideal attention phase, where "
                                "the model's head shape, tp, batch and context were measured")
        add_json_flag(parser)
        parser.set_defaults(func=lambda args, name=name: _run(name, args))
