"""What ``calc measured`` and ``calc served`` share: a ``calc`` subcommand over a table of
measurements (:mod:`lab.table_experiment`), the shipped one or the reader's ``--measurements``.

Both print the same way: ``--json``, the record; else a head (the ``Inputs:`` line and the
summary), a blank line, and the substituted derivation of the one point or row shown in full.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cli.flags import add_json_flag, print_json
from lab.derivations.decode_steps import Step, render_text


def register_table_command(subparsers, slug: str, description: str, *,
                           measurements_help: str, several: bool = False,
                           add_arguments: Callable[[argparse.ArgumentParser], None],
                           run: Callable[[argparse.Namespace], int]) -> None:
    """Add ``calc <slug>``: its help is ``description`` up to its first colon; ``--measurements
    FILE`` (several files with ``several``) first, then ``add_arguments``' own, then ``--json``."""
    parser = subparsers.add_parser(slug, help=description.split(":")[0], description=description)
    parser.add_argument("--measurements", metavar="FILE", **({"nargs": "+"} if several else {}),
                        default=None, help=measurements_help)
    add_arguments(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run)


def print_table_result(args: argparse.Namespace, result: dict, head: Callable[[], list[str]],
                       shown: str, steps: Callable[[dict], list[Step]]) -> int:
    """Print ``result`` as JSON (``--json``), else ``head()``, then "The selected <shown>:" and
    the derivation ``steps(result["selected"])``; the exit status 0."""
    if args.json:
        print_json(result)
        return 0
    print("\n".join([*head(), "", f"The selected {shown}:",
                     render_text(steps(result["selected"]))]))
    return 0
