"""``calc measured``: experiment 9, measured kernel times against the lab's floors."""

from __future__ import annotations

import argparse

from cli.inputs_line import inputs_line
from cli.table_calc import print_table_result, register_table_command
from lab.measured.calc import calc_measured, summary_lines
from lab.measured.explain import point_steps
from lab.measured.measured_loader import KINDS, SHIPPED_GPU, read_measurements

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
    selection = ({name: getattr(args, name) for name in SELECTION_FLAGS} if picked else None)
    gpu = get_gpu(args.gpu)
    result = calc_measured(data, gpu, selection)
    return print_table_result(args, result,
                              lambda: [inputs_line(args, INPUTS_USED), *summary_lines(result)],
                              "point", lambda selected: point_steps(selected, gpu))


def register(subparsers) -> None:
    """Add ``measured``."""
    register_table_command(
        subparsers, "measured", DESCRIPTION, add_arguments=_add_arguments, run=_run,
        measurements_help="your own CSV of kernel times (columns: docs/model.md, Experiment 9) "
        "instead of the shipped H100 data")


def _add_arguments(parser) -> None:
    """The GPU and the point shown in full."""
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
