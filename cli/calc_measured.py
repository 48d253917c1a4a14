"""``calc measured``: experiment 9, measured kernel times against the lab's floors."""

from __future__ import annotations

import argparse

from cli.flags import add_json_flag, print_json
from cli.inputs_line import inputs_line
from lab.derivations.decode_family import render_text
from lab.measured.calc import DEFAULT_POINT, Selection, calc_measured, summary_lines
from lab.measured.explain import point_steps
from lab.measured.loader import KINDS, SHIPPED_GPU, read_measurements

DESCRIPTION = ("Experiment 9, floors against measurements: how far real kernels sit above the "
               "lab's ideal.")

SELECTION_FLAGS = ("kind", "shape", "tp", "batch", "context", "m")
"""Flags that pick the point shown in full (any one given selects by all of them)."""
INPUTS_USED = (False, True, ("measurements", *SELECTION_FLAGS))
"""What the ``Inputs:`` line names: the GPU, the measurements and the selection."""


def _run(args: argparse.Namespace) -> int:
    from lab.catalog import get_gpu

    data = read_measurements(args.measurements) if args.measurements else None
    picked = any(getattr(args, name) is not None for name in SELECTION_FLAGS)
    selection = None
    if picked:
        values = {name: getattr(args, name) for name in SELECTION_FLAGS}
        selection = Selection(**{k: DEFAULT_POINT[k] if v is None else v
                                 for k, v in values.items()})
    gpu = get_gpu(args.gpu)
    result = calc_measured(data, gpu, selection)
    if args.json:
        print_json(result)
        return 0
    lines = [inputs_line(args, INPUTS_USED), *summary_lines(result)]
    lines.append("")
    lines.append("The selected point:")
    lines.append(render_text(point_steps(result["selected"], gpu)))
    print("\n".join(lines))
    return 0


def register(subparsers) -> None:
    """Add ``measured``."""
    parser = subparsers.add_parser("measured", help=DESCRIPTION.split(":")[0],
                                   description=DESCRIPTION)
    parser.add_argument("--measurements", metavar="FILE", default=None,
                        help="your own CSV of kernel times (columns: docs/model.md, Experiment 9) "
                        "instead of the shipped H100 data")
    parser.add_argument("--gpu", default=SHIPPED_GPU,
                        help="catalog GPU id or GPU TOML whose peaks make the floor "
                        "(default: %(default)s, where the shipped data was measured)")
    group = parser.add_argument_group("the point shown in full (default: decode 32-8-128 tp 1, "
                                      "batch 16, context 8192)")
    group.add_argument("--kind", choices=KINDS, default=None, help="kernel kind")
    group.add_argument("--shape", default=None,
                       help="head shape Q-KV-D (e.g. 32-8-128) or k×n of a GEMM (e.g. 4096×6144)")
    group.add_argument("--tp", type=int, default=None, help="GPUs the heads are split over")
    group.add_argument("--batch", type=int, default=None, help="decode batch, sequences")
    group.add_argument("--context", type=int, default=None,
                       help="decode cached tokens per sequence, or prefill tokens")
    group.add_argument("--m", type=int, default=None, help="GEMM rows m, tokens")
    add_json_flag(parser)
    parser.set_defaults(func=_run)
