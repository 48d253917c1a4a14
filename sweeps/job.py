"""The sweep job: each requested experiment of a grid spec, built and written to Zarr."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.errors import LabInputError, shown
from sweeps.grid_files import GridSpec
from sweeps.grid_kinds import grid_kind
from sweeps.grid_schema import ExperimentSpec
from sweeps.object_store import check_url, is_url, join
from sweeps.paths import data_dir, dataset_path
from sweeps.runner import Runner
from sweeps.store import write_experiment


@dataclass(frozen=True)
class SweepResult:
    """One written dataset: experiment, path, cells and wall time (s)."""

    experiment: str
    path: Path | str
    cells: int
    seconds: float

    @property
    def cells_per_s(self) -> float:
        """End-to-end rate, cells per second."""
        return self.cells / self.seconds if self.seconds > 0 else float("inf")


def output_paths(experiments: Sequence[str], out: str | Path | None) -> dict[str, Path | str]:
    """Where each experiment's dataset goes.

    ``out`` ending in ``.zarr`` names the store of a single experiment; any other ``out`` is
    a directory receiving ``<experiment>.zarr``; None is the lab's data directory. An fsspec
    URL (``s3://bucket/grids/``) stays a URL (:mod:`sweeps.remote_grid`); a scheme the lab
    cannot store grids in is refused in one sentence.
    """
    if out is not None and not str(out).strip():
        raise LabInputError("The --out name is empty; give a folder (or a path ending in "
                            ".zarr), or leave --out out to write to the lab's datasets.")
    if is_url(out):
        url = check_url(str(out))
        if url.endswith(".zarr"):
            if len(experiments) != 1:
                raise LabInputError(f"--out {out} names one Zarr store but the sweep covers "
                                    f"{len(experiments)} experiments; give a prefix or one "
                                    "--experiment.")
            return {experiments[0]: url}
        return {name: join(url, f"{name}.zarr") for name in experiments}
    if out is not None and str(out).rstrip("/").endswith(".zarr"):
        if len(experiments) != 1:
            raise LabInputError(f"--out {out} names one Zarr store but the sweep covers "
                                f"{len(experiments)} experiments; give a directory or one "
                                "--experiment.")
        return {experiments[0]: Path(out)}
    return {name: dataset_path(name, out) for name in experiments}


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will write: each experiment's checked spec and its output path."""

    grid_name: str
    specs: dict[str, ExperimentSpec]
    paths: dict[str, Path | str]


def plan_sweep(grid: GridSpec, experiments: Sequence[str] | None,
               out: str | Path | None) -> SweepPlan:
    """Check every requested experiment of ``grid`` and where it goes, before any work.

    Parameters
    ----------
    grid : GridSpec
        The grid spec (preset or file).
    experiments : sequence of str, optional
        Which of the spec's experiments to run (default: all of them).
    out : path, optional
        See :func:`output_paths`.

    Raises
    ------
    LabInputError
        A bad spec or output, or an output path holding something this lab did not write.
    """
    from sweeps.remote_grid import check_replaceable_url
    from sweeps.store import check_replaceable

    names = tuple(experiments or grid.experiments)
    specs = {name: grid.resolve(name) for name in names}
    if out is None and grid.name != "default":
        raise LabInputError(
            f"Grid '{shown(grid.name, quoted=False)}' is not the lab's default grid, so it is "
            f"not written over the default datasets in {data_dir()} (the explorer and "
            "open_dataset read those); give --out: a folder, or a path ending in .zarr with "
            "one --experiment.")
    paths = output_paths(names, out)
    for path in paths.values():
        if is_url(path):
            check_replaceable_url(path)
        else:
            check_replaceable(path)
    return SweepPlan(grid.name, specs, paths)


def run_sweep(plan: SweepPlan, run: Runner,
              report: Callable[[str], None] | None = None) -> list[SweepResult]:
    """Build and write every experiment of ``plan`` (from :func:`plan_sweep`) on ``run``;
    ``report`` receives one line per step for the user."""
    results = []
    for name, spec in plan.specs.items():
        path = plan.paths[name]
        if report:
            shape = " × ".join(f"{d} {n}" for d, n in zip(spec.axes, spec.shape, strict=True))
            report(f"{name}: {spec.cells:,} cells ({shape}) → {path}")
        start = time.perf_counter()
        if is_url(path):
            from sweeps.remote_grid import write_experiment_url

            write_experiment_url(grid_kind(name), spec, plan.grid_name, path, run)
        else:
            write_experiment(grid_kind(name), spec, plan.grid_name, path, run)
        results.append(SweepResult(name, path, spec.cells, time.perf_counter() - start))
        if report:
            r = results[-1]
            report(f"{name}: done in {r.seconds:.1f} s ({r.cells_per_s:,.0f} cells/s)")
    return results
