"""``inference-lab export``: write any selection of a grid dataset to a file."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from cli.storage_flags import add_storage_option
from lab.errors import LabInputError
from sweeps.paths import DATASET_NAMES


def _run(args: argparse.Namespace) -> int:
    from sweeps.files import interrupt_on_terminate
    from sweeps.object_store import parse_storage_options, using_storage_options

    with interrupt_on_terminate(), using_storage_options(
            parse_storage_options(args.storage_option)):
        return _export(args)


def _export(args: argparse.Namespace) -> int:
    from sweeps.files import ignore_file_size_signal

    ignore_file_size_signal()
    from sweeps.export import check_output, format_for, select, write
    from sweeps.object_store import is_url

    if is_url(args.output):
        raise LabInputError(f"-o {args.output} is a URL; export writes a local file (or -), so "
                            "give a path and copy it to the store afterwards.")

    to_stdout = args.output == STDOUT
    if to_stdout:
        fmt = args.format or "csv"
        if fmt not in STDOUT_FORMATS:
            raise LabInputError(f"-o - writes CSV or Parquet to standard output, not {fmt}; "
                                "give a file name for NetCDF or Zarr.")
    else:
        check_output(args.output)  # before any work: never replace what this tool did not write
        fmt = format_for(args.output, args.format)
    ds, experiment = _opened(args.experiment, args.dataset)
    part = select(ds, args.sel or [], experiment, args.vars)
    part.attrs["selection"] = " ".join(args.sel or []) or "all"
    if not to_stdout:
        print(write(part, args.output, fmt))
        return 0
    with tempfile.TemporaryDirectory(prefix="inference-lab-") as folder:
        written = write(part, Path(folder) / f"export.{fmt}", fmt)
        sys.stdout.flush()
        with written.open("rb") as handle:
            shutil.copyfileobj(handle, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    return 0


def _opened(experiment: str | None, dataset: str | None):
    """The dataset to export and its experiment: the lab's dataset of ``experiment`` (computed
    on first use), or the store at ``dataset`` as it is (never computed: a mistyped path is
    reported), whose own experiment a differing ``--experiment`` contradicts."""
    from sweeps import metadata as md
    from sweeps.datasets import open_dataset

    if dataset is None:
        experiment = experiment or DEFAULT_EXPERIMENT
        return open_dataset(experiment), experiment
    ds = open_dataset(dataset)
    stored = ds.attrs.get(md.ATTR_EXPERIMENT)
    if experiment is not None and stored != experiment:
        raise LabInputError(f"--dataset {dataset} holds the {stored} dataset, not {experiment}; "
                            "leave --experiment out (the store says which) or give "
                            f"--experiment {stored}.")
    return ds, stored


DEFAULT_EXPERIMENT = "decode"
"""The dataset exported when neither ``--experiment`` nor ``--dataset`` says which."""
STDOUT = "-"
"""``-o`` value that writes to standard output."""
STDOUT_FORMATS = ("csv", "parquet")
"""Formats that can stream to standard output (NetCDF and Zarr need a file or folder)."""


def register(subparsers) -> None:
    """Add ``export``."""
    parser = subparsers.add_parser(
        "export", help="write a selection of a grid dataset as CSV, Parquet, NetCDF or Zarr",
        description="Write any selection of an experiment's grid dataset to a file. The "
        "dataset is computed first if it does not exist yet.",
    )
    parser.add_argument("--experiment", choices=DATASET_NAMES, metavar="NAME",
                        help=f"dataset to export: {', '.join(DATASET_NAMES)} (default: "
                        f"{DEFAULT_EXPERIMENT}; with --dataset, the store's own)")
    parser.add_argument("--sel", nargs="+", metavar="DIM=VALUE",
                        help="selection: dim=value, dim=v1,v2,... or dim=low:high (inclusive); "
                        "omitted dimensions are exported whole")
    parser.add_argument("--vars", nargs="+", metavar="VAR",
                        help="variables to export (default: all)")
    parser.add_argument("--format", choices=("csv", "parquet", "netcdf", "zarr"),
                        help="output format (default: from the file suffix: .csv, .parquet, "
                        ".nc, .zarr)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="file (or .zarr directory) to write, under a temporary name renamed "
                        "once complete; an existing one is replaced only if this tool wrote it; "
                        "- writes CSV (or --format parquet) to standard output")
    parser.add_argument("--dataset", metavar="PATH",
                        help="a .zarr store written by `sweep --out` (a path or an object "
                        "store URL, s3://…) to export from instead of the lab's dataset; "
                        "opened as it is, never computed")
    add_storage_option(parser)
    parser.set_defaults(func=_run)
