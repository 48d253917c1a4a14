"""``calc served``: experiment 11, measured serving latency against the floor plus named terms."""

from __future__ import annotations

import argparse

from cli.flags import add_json_flag, print_json
from lab.derivations.decode_family import render_text
from lab.served.calc import calc_served, summary_lines
from lab.served.explain import row_steps
from lab.served.loader import read_served

DESCRIPTION = ("Experiment 11, from floor to served: real engines' TPOT and TTFT against the "
               "lab's floor plus named terms, predicted out of sample.")


def _run(args: argparse.Namespace) -> int:
    data = read_served(args.measurements) if args.measurements else None
    result = calc_served(data, args.row, rows=args.json and args.all_rows)
    if args.json:
        print_json(result)
        return 0
    named = [f"--measurements {args.measurements}" if args.measurements else
             "the shipped public rows", f"--row {args.row}" if args.row else "default row"]
    lines = [f"Inputs: {'; '.join(named)}", *summary_lines(result), "", "The selected row:",
             render_text(row_steps(result["selected"]))]
    print("\n".join(lines))
    return 0


def register(subparsers) -> None:
    """Add ``served``."""
    parser = subparsers.add_parser("served", help=DESCRIPTION.split(":")[0],
                                   description=DESCRIPTION)
    parser.add_argument("--measurements", metavar="FILE", default=None,
                        help="your own serving CSV (the columns of docs/model.md, Experiment "
                        "11) instead of the shipped public rows; the coefficients are refitted "
                        "on your rows")
    parser.add_argument("--row", default=None, help="id of the row shown in full")
    parser.add_argument("--all-rows", action="store_true",
                        help="with --json, also print every row (large)")
    add_json_flag(parser)
    parser.set_defaults(func=_run)
