"""``inference-lab calc <experiment>``: one calculation, shown step by step or as JSON.

The subcommands are the experiments of :mod:`lab.experiments.registry`, in order. Each is
generated from its experiment's ``param`` class (:mod:`cli.calc_generic`), except those
:data:`HAND_WRITTEN` names: experiment 9's ``calc measured`` and experiment 11's ``calc
served``, whose inputs are files of measurements rather than the parameters of their pages, and
experiment 12's ``calc plan`` (its ``--validate`` study and ``--candidates`` file).
"""

from __future__ import annotations

from collections.abc import Callable

from cli import calc_measured, calc_plan, calc_served
from cli.calc_generic import register_record
from lab.experiments.registry import experiments

HAND_WRITTEN: dict[str, Callable] = {
    "measured": calc_measured.register,
    "served": calc_served.register,
    "plan": calc_plan.register,
}
"""The experiments with a hand-written ``calc`` subcommand: by slug, the function adding it
to the ``calc`` subparsers."""


def register(subparsers) -> None:
    """Add ``calc`` and its experiment subcommands."""
    parser = subparsers.add_parser(
        "calc", help="run one experiment's calculation",
        description="Run one experiment's calculation and show the derivation "
        "(or JSON with --json).",
    )
    calc_subparsers = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT",
                                            parser_class=type(parser))
    for record in experiments():
        add = HAND_WRITTEN.get(record.slug)
        if add is None:
            register_record(calc_subparsers, record)
        else:
            add(calc_subparsers)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
