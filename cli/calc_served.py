"""``calc served``: experiment 11, measured serving latency against the floor plus named terms."""

from __future__ import annotations

import argparse

from cli.table_calc import print_table_result, register_table_command
from lab.errors import LabInputError
from lab.served.refit_note import unfitted_sentence
from lab.served.served_calc import calc_served, summary_lines
from lab.served.served_explain import row_steps
from lab.served.served_loader import read_served
from lab.served.vllm_bench import RunSetup

DESCRIPTION = ("Experiment 11, from floor to served: real engines' TPOT and TTFT against the "
               "lab's floor plus named terms, predicted out of sample.")


def _run(args: argparse.Namespace) -> int:
    setup = RunSetup(gpu=args.gpu or "", tp=args.tp, precision=args.precision or "",
                     model=args.model or "")
    if setup.stated() and not args.measurements:
        raise LabInputError("--gpu, --tp, --precision and --model describe the runs of "
                            "--measurements (vllm bench serve JSON results); give the files "
                            "too.")
    data = read_served(args.measurements, setup) if args.measurements else None
    result = calc_served(data, args.row, rows=args.json and args.all_rows)
    counts = result["counts"]
    note = unfitted_sentence(counts["modelled"], counts["predicted"],
                             counts["never_fitted_on"]) if args.measurements else ""
    if note:
        result["note"] = note

    def head() -> list[str]:
        named = [f"--measurements {' '.join(args.measurements)}" if args.measurements else
                 "the shipped public rows", f"--row {args.row}" if args.row else "default row"]
        named += [f"--{k} {getattr(setup, k)}" for k in ("gpu", "tp", "precision", "model")
                  if getattr(setup, k) not in ("", None)]
        return [f"Inputs: {'; '.join(named)}", *summary_lines(result), *([note] if note else [])]

    return print_table_result(args, result, head, "row", row_steps)


def register(subparsers) -> None:
    """Add ``served``."""
    register_table_command(
        subparsers, "served", DESCRIPTION, several=True, add_arguments=_add_arguments, run=_run,
        measurements_help="your own serving runs instead of the shipped public rows: a CSV with "
        "the columns of docs/model.md, Experiment 11, or the JSON that vllm bench serve "
        "--save-result writes (one run per file or per line); the coefficients are refitted on "
        "your rows")


def _add_arguments(parser) -> None:
    """What a vllm bench serve result does not save, and the row shown in full."""
    runs = parser.add_argument_group(
        "vllm bench serve runs", "What a vllm bench serve result does not save, for every run "
        "of --measurements (a run saved with --metadata gpu=… tp=… precision=… model=… may say "
        "it instead).")
    runs.add_argument("--gpu", default=None, help="catalog GPU id the runs used, e.g. h100-sxm")
    runs.add_argument("--tp", type=int, default=None, help="tensor-parallel GPUs of the server")
    runs.add_argument("--precision", default=None,
                      help="weight precision: bf16, fp8, nvfp4, mxfp4, … (default: the "
                      "checkpoint's own, FP8 when its name says so, else BF16)")
    runs.add_argument("--model", default=None,
                      help="catalog model id, when the runs' model_id is not a checkpoint the "
                      "lab knows (a local path)")
    parser.add_argument("--row", default=None, help="id of the row shown in full")
    parser.add_argument("--all-rows", action="store_true",
                        help="with --json, also print every row (large)")
