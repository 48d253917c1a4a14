"""``calc <slug>`` for an experiment whose record names no hand-written subcommand.

The flags are the experiment's ``param`` inputs (``--name`` for each, its ``doc`` as help and
its default shown); the text output is the experiment's substituted derivation and ``--json``
its record, as for every other experiment.
"""

from __future__ import annotations

import argparse

import param

from cli.flags import add_json_flag, print_json
from lab.derivations.decode_family import render_text
from lab.errors import LabInputError
from lab.experiments.registry import ExperimentRecord


def _flag_options(parameter: param.Parameter) -> dict:
    """``add_argument`` options for one ``param`` input."""
    options: dict = {"default": parameter.default,
                     "help": f"{parameter.doc or parameter.label} (default: %(default)s)"}
    if isinstance(parameter, param.Boolean):
        return {**options, "action": argparse.BooleanOptionalAction}
    if isinstance(parameter, param.Integer):
        options["type"] = int
    elif isinstance(parameter, param.Number):
        options["type"] = float
    elif isinstance(parameter, param.Selector):
        options["choices"] = list(parameter.objects)
        kinds = {type(v) for v in parameter.objects}
        if len(kinds) == 1 and (kind := kinds.pop()) in (int, float):
            options["type"] = kind  # "4" on the command line is the choice 4
    return options


def _run(record: ExperimentRecord, args: argparse.Namespace) -> int:
    cls = record.experiment_class()
    try:
        experiment = cls(**{name: getattr(args, name) for name in cls.input_names()})
    except ValueError as exc:  # param's own bounds check, before any calculation
        raise LabInputError(str(exc).split("\n")[0]) from None
    if experiment.error is not None:
        raise LabInputError(experiment.error)
    if args.json:
        print_json(experiment.result)
    else:
        print(render_text(experiment.steps()))
    return 0


def register_record(subparsers, record: ExperimentRecord) -> None:
    """Add ``calc <record.slug>`` with a flag per input of the record's param class."""
    cls = record.experiment_class()
    description = f"Experiment {record.number}, {cls.title.lower()}: {cls.headline}"
    parser = subparsers.add_parser(record.slug, help=f"Experiment {record.number}, "
                                   f"{cls.title.lower()}", description=description)
    group = parser.add_argument_group("inputs")
    for name in cls.input_names():
        group.add_argument("--" + name.replace("_", "-"), dest=name,
                           **_flag_options(cls.param[name]))
    add_json_flag(parser)
    parser.set_defaults(func=lambda args: _run(record, args))
