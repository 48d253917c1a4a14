"""``inference-lab calc <experiment>``: one calculation, shown step by step or as JSON."""

from __future__ import annotations

import importlib

CALC_MODULES = (
    "cli.calc_decode",
    "cli.calc_serving",
)
"""Modules that register ``calc`` subcommands, in ``--help`` order."""


def register(subparsers) -> None:
    """Add ``calc`` and its experiment subcommands."""
    parser = subparsers.add_parser(
        "calc", help="run one experiment's calculation",
        description="Run one experiment's calculation and show the derivation "
        "(or JSON with --json).",
    )
    calc_subparsers = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT",
                                            parser_class=type(parser))
    for name in CALC_MODULES:
        importlib.import_module(name).register(calc_subparsers)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
