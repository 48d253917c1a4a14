"""``calc <slug>``: every experiment's subcommand, generated from its ``param`` class.

Each input of :meth:`~lab.experiments.base.Experiment.command_line_inputs` becomes a flag
``--name`` (its ``doc`` as help, its default shown), typed by its parameter and shaped by its
:class:`~lab.experiments.command_line.Flag` metadata: a model or GPU that may be a file path,
``--trace -`` from standard input, a flag left unset so the calculation derives the value, a
second name, a ``--help`` group. The text output is the ``Inputs:`` line
(:mod:`cli.inputs_line`), the experiment's substituted derivation and its extra lines;
``--json`` prints its record.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

import param

from cli.flags import add_json_flag, print_json
from cli.inputs_line import inputs_line
from cli.stdin_trace import STDIN, named_source, trace_source
from lab.derivations.decode_steps import render_text
from lab.experiments.command_line import flag_of
from lab.experiments.registry import ExperimentRecord

INPUTS_GROUP = "inputs"
"""The ``--help`` group of an input whose metadata names none."""


def _choices_text(parameter: param.Selector) -> str:
    return ", ".join(str(v) for v in flag_of(parameter).accepted or parameter.objects)


def _flag_options(parameter: param.Parameter) -> dict:
    """``add_argument`` options for one ``param`` input."""
    flag = flag_of(parameter)
    doc = (parameter.doc or parameter.label or "").rstrip(".")
    default = None if flag.unset else parameter.default
    shown = flag.default_shown or "%(default)s"
    if isinstance(parameter, param.Boolean) and parameter.default is False:
        return {"action": "store_true", "default": False, "help": doc}
    options: dict = {"default": default, "help": f"{doc} (default: {shown})"}
    if isinstance(parameter, param.Boolean):
        return {**options, "action": argparse.BooleanOptionalAction}
    if isinstance(parameter, param.Integer):
        options["type"] = int
    elif isinstance(parameter, param.Number):
        options["type"] = float
    elif isinstance(parameter, param.Selector):
        kinds = {type(v) for v in parameter.objects}
        if len(kinds) == 1 and (kind := kinds.pop()) in (int, float):
            options["type"] = kind  # "4" on the command line is the choice 4
        if flag.path:
            file = "" if "path" in doc else f" (or a path to {flag.path})"
            options["help"] = f"{doc}{file} (default: {shown})"
        elif flag.checked_by_point:
            options["help"] = f"{doc}: {_choices_text(parameter)} (default: {shown})"
        else:
            options["choices"] = list(parameter.objects)
    if flag.stdin:
        options["help"] = f"{doc}, or {STDIN} to read it from standard input (default: {shown})"
    return options


def add_input_flags(parser: argparse.ArgumentParser, inputs: dict[str, param.Parameter]) -> None:
    """A flag per input, in groups titled by their metadata (in order of first use)."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for name, parameter in inputs.items():
        flag = flag_of(parameter)
        title = flag.group or INPUTS_GROUP
        if title not in groups:
            groups[title] = parser.add_argument_group(title)
        names = [flag.name or name, *flag.aliases]
        groups[title].add_argument(*("--" + n.replace("_", "-") for n in names), dest=name,
                                   **_flag_options(parameter))


def _calculate(cls, values: dict) -> dict:
    """``cls.calculate(values)``, an input read from standard input copied to a file first
    and named as the user gave it in the record."""
    inputs = cls.command_line_inputs()
    from_stdin = [name for name, p in inputs.items() if flag_of(p).stdin]
    with ExitStack() as stack:
        given = dict(values)
        for name in from_stdin:
            given[name] = stack.enter_context(trace_source(values[name]))
        result = cls.calculate(given)
        for name in from_stdin:
            result = named_source(result, values[name], given[name])
    return result


def unused_given(cls, values: dict, used: tuple[bool, bool, tuple[str, ...]]) -> list[str]:
    """The experiment's own inputs set away from their default that the calculation did not
    use (``calc tp --tp 3``: every tp is computed; ``calc context --model …`` without
    ``--from-model``), so a note can say so instead of ignoring them in silence."""
    model_used, gpu_used, names = used
    taken = {*names, *(["model"] if model_used else []), *(["gpu"] if gpu_used else [])}
    return [name for name, parameter in cls.command_line_inputs().items()
            if name not in taken and name in values and values[name] is not None
            and values[name] != parameter.default]


def _run(record: ExperimentRecord, args: argparse.Namespace) -> int:
    cls = record.experiment_class()
    values = {name: getattr(args, name) for name in cls.command_line_inputs()}
    result = _calculate(cls, values)
    if args.json:
        print_json(result)
        return 0
    before, after = cls.text_lines(result, values)
    lines = [*before]
    used = cls.inputs_used(values)
    if used is not None:
        flag_names = {name: flag_of(p).name for name, p in cls.command_line_inputs().items()
                      if flag_of(p).name}
        lines.append(inputs_line(argparse.Namespace(**values), used, flag_names))
        for name in unused_given(cls, values, used):
            flag = "--" + flag_names.get(name, name).replace("_", "-")
            value = values[name]
            shown = f"{value:g}" if isinstance(value, float) else value
            print(f"inference-lab: note: {flag} {shown} is not used with these inputs, "
                  f"so it changed nothing (see inference-lab calc {record.slug} --help).",
                  file=sys.stderr)
    lines.append(render_text(cls.derivation(result, values)))
    print("\n".join([*lines, *after]))
    return 0


def register_record(subparsers, record: ExperimentRecord) -> None:
    """Add ``calc <record.slug>`` with a flag per command-line input of its param class."""
    cls = record.experiment_class()
    description = f"Experiment {record.number}, {cls.title.lower()}: {cls.headline}"
    parser = subparsers.add_parser(record.slug, help=f"Experiment {record.number}, "
                                   f"{cls.title.lower()}", description=description)
    add_input_flags(parser, cls.command_line_inputs())
    add_json_flag(parser)
    parser.set_defaults(func=lambda args: _run(record, args))
