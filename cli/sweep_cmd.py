"""``inference-lab sweep``: compute grids with Dask and write them to Zarr."""

from __future__ import annotations

import argparse
import sys

from cli.storage_flags import add_storage_option
from sweeps.paths import DATASET_NAMES


def _run(args: argparse.Namespace) -> int:
    from sweeps.files import interrupt_on_terminate
    from sweeps.object_store import parse_storage_options, using_storage_options

    with interrupt_on_terminate(), using_storage_options(
            parse_storage_options(args.storage_option)):
        return _sweep(args)


def _sweep(args: argparse.Namespace) -> int:
    from sweeps.allocator import tune_allocator
    from sweeps.files import ignore_file_size_signal

    ignore_file_size_signal()
    tune_allocator()  # this process exists to compute the grid (threaded scheduler included)
    from sweeps.grid_files import load_grid
    from sweeps.job import plan_sweep, run_sweep
    from sweeps.performance import checked_report_path, performance_report
    from sweeps.runner import runner

    grid = load_grid(args.grid)
    plan = plan_sweep(grid, args.experiment, args.out)  # bad input fails before any cluster
    report_path = checked_report_path(args.performance_report, args.scheduler)

    def report(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with runner(args.scheduler, args.workers, progress=not args.quiet) as run:
        if not args.quiet:
            report(f"grid '{grid.name}' on {run.description}")
            if run.dashboard_link:
                report(f"Dask dashboard: {run.dashboard_link}")
        with performance_report(report_path, run):
            results = run_sweep(plan, run, None if args.quiet else report)
    if report_path is not None and not args.quiet:
        report(f"Dask performance report: {report_path}")
    for result in results:
        print(result.path)
    return 0


def register(subparsers) -> None:
    """Add ``sweep``."""
    parser = subparsers.add_parser(
        "sweep", help="compute experiment grids with Dask and write them to Zarr",
        description="Compute each experiment's grid (a preset or a TOML grid spec) as a "
        "dask-backed xarray dataset and write it to Zarr, replacing the old dataset only on "
        "success. Prints the path of every dataset written.",
    )
    parser.add_argument("--grid", default="default",
                        help="preset name (default, large) or a TOML grid spec file "
                        "(default: %(default)s)")
    parser.add_argument("--experiment", nargs="+", metavar="NAME",
                        help=f"experiments to compute, of {', '.join(DATASET_NAMES)} "
                        "(default: every one the grid covers)")
    parser.add_argument("--out", metavar="PATH",
                        help="output directory (one NAME.zarr per experiment) or, for one "
                        "experiment, a path ending in .zarr; or an object store URL "
                        "(s3://bucket/grids/, gs://…, abfs://…) that every worker writes to "
                        "(default: the lab's datasets, datasets/grids or $INFERENCE_LAB_DATA)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="address of a running Dask scheduler (tcp://host:8786), or "
                        "'threads' for no cluster (default: start a local cluster)")
    add_storage_option(parser)
    parser.add_argument("--workers", type=int, metavar="N",
                        help="worker processes of the local cluster, 1 to 64 (default: one per CPU, "
                        "at most 8)")
    parser.add_argument("--performance-report", metavar="FILE",
                        help="save Dask's HTML performance report of the sweep (task stream, "
                        "worker profiles) to FILE; needs a cluster, not 'threads'")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar or messages, only the paths written")
    parser.set_defaults(func=_run)
