"""``inference-lab calc <experiment>``: one calculation, shown step by step or as JSON.

The subcommands are the experiments of :mod:`lab.experiments.registry`, in order: a record
naming a hand-written command module is registered by that module (once for all the records
naming it); any other gets the flags of its param class (:mod:`cli.calc_generic`).
"""

from __future__ import annotations

import importlib

from cli.calc_generic import register_record
from lab.experiments.registry import experiments


def register(subparsers) -> None:
    """Add ``calc`` and its experiment subcommands."""
    parser = subparsers.add_parser(
        "calc", help="run one experiment's calculation",
        description="Run one experiment's calculation and show the derivation "
        "(or JSON with --json).",
    )
    calc_subparsers = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT",
                                            parser_class=type(parser))
    registered: set[str] = set()
    for record in experiments():
        if record.command is None:
            register_record(calc_subparsers, record)
        elif record.command not in registered:
            registered.add(record.command)
            importlib.import_module(record.command).register(calc_subparsers)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
