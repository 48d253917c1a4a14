"""Entry point of ``inference-lab``: subcommands, one-sentence errors, exit status 2 on bad input.

Each subcommand lives in its own module with a ``register(subparsers)`` function that adds its
parser and sets ``func`` (called with the parsed arguments, returning an exit status).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence

from cli import calc_cmd as calc
from cli import calc_plan, catalog_cmd, export_cmd, serve_cmd, sweep_cmd
from lab import __version__
from lab.errors import LabInputError
from lab.experiments.registry import count_words

COMMAND_MODULES = (calc, catalog_cmd, sweep_cmd, export_cmd, serve_cmd, calc_plan)
"""Modules that register a top-level subcommand, in ``--help`` order."""

EXIT_BAD_INPUT = 2
"""Exit status for bad input (as argparse uses for usage errors)."""


class LabArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one sentence, not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sentence = message[0].upper() + message[1:] if message else "Invalid arguments"
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {sentence.rstrip('.')} "
                                  f"(see {self.prog} --help).\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered subcommand."""
    parser = LabArgumentParser(
        prog="inference-lab",
        description=f"Inference Lab: {count_words()} experiments in LLM inference engineering, each an "
        "explicit analytical model with stated limits.",
    )
    parser.add_argument("--version", action="version", version=f"inference-lab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=LabArgumentParser)
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def joined_negative_numbers(argv: list[str]) -> list[str]:
    """``--flag -1e5`` as ``--flag=-1e5``: argparse takes only ``-5`` and ``-0.5`` for negative
    numbers and reads ``-1e5``, ``-inf`` or ``-nan`` as an unknown option ("expected one
    argument"), so the value's range check never said what was wrong with it."""
    out: list[str] = []
    for token in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1] and token.startswith("-")
                and _is_number(token)):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def command_words(args: argparse.Namespace) -> str:
    """The command the parsed ``args`` ran, as typed: ``inference-lab calc memory``."""
    words = ["inference-lab"]
    if getattr(args, "command", None):
        words.append(args.command)
        if args.command == "calc" and getattr(args, "experiment", None):
            words.append(args.experiment)
    return " ".join(words)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(
            joined_negative_numbers(sys.argv[1:] if argv is None else list(argv)))
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return int(exc.code or 0)
    if unknown:  # named with the help of the command they were given to
        print(f"inference-lab: error: Unrecognized arguments: {' '.join(unknown)} (see "
              f"{command_words(args)} --help).", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    _replace_unencodable_output()
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a write that fails (a full disk) fails here, not at exit
        return status
    except LabInputError as exc:
        print(f"inference-lab: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("inference-lab: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped early (| head)
        _discard_output()
        return 0
    except OSError as exc:
        if exc.filename is not None or exc.errno not in OUTPUT_ERRORS:
            raise
        from sweeps.files import os_reason

        _discard_output()  # what is still buffered would fail again at exit
        print(f"inference-lab: error: Could not write the output: {os_reason(exc)}.",
              file=sys.stderr)
        return EXIT_WRITE_FAILED


OUTPUT_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG)
"""Errors of a write to standard output (a redirect to a full disk, ``> /dev/full``): an OS
error with no file name and one of these numbers is the output's."""
EXIT_WRITE_FAILED = 1
"""Exit status when the output could not be written."""


def _discard_output() -> None:
    """Point standard output at the null device: nothing more is written or flushed to it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _replace_unencodable_output() -> None:
    """Characters the output's encoding lacks (a ``−`` or ``×`` on a cp1252 pipe) print as
    ``?`` instead of stopping the command with a ``UnicodeEncodeError``."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        reconfigure(errors="replace")


if __name__ == "__main__":
    raise SystemExit(main())
