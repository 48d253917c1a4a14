"""Write grids to Zarr safely and open them again with every check.

Writing (:func:`write_grid`): the template (metadata and coordinates) goes to a temporary
directory beside the target, then every chunk is filled by a region write from the task that
computed it, wherever that runs, then the ``sweep_complete`` attribute is set and the
directory is renamed into place. An interrupted or failed sweep leaves the previous dataset
untouched; the next write clears the leftovers of dead writers.

Opening (:func:`open_grid`): a missing, unreadable, incomplete or stale dataset raises a
:class:`DatasetError` with one sentence saying what is wrong and how to fix it.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import xarray as xr
import zarr

from lab.errors import LabInputError
from sweeps import metadata as md
from sweeps.registry import grid_kind
from sweeps.runner import Runner
from sweeps.schema import ExperimentSpec

TMP_MARK = ".tmp-"
OLD_MARK = ".old-"


class DatasetError(LabInputError):
    """A dataset cannot be used as it is: missing, unreadable, incomplete or stale."""


class MissingDatasetError(DatasetError):
    """No dataset at the path."""


class CorruptDatasetError(DatasetError):
    """The dataset cannot be read, was never completed, or lacks what a sweep writes."""


class StaleDatasetError(DatasetError):
    """The dataset was computed for a different catalog, grid spec or package version."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _leftovers(target: Path, mark: str) -> list[tuple[Path, int]]:
    found = []
    for path in target.parent.glob(f"{target.name}{mark}*"):
        try:
            pid = int(path.name[len(target.name) + len(mark):].split("-")[0])
        except ValueError:
            continue
        found.append((path, pid))
    return found


def clear_leftovers(target: Path) -> None:
    """Remove temporaries of writers that died; restore a target lost mid-swap."""
    for path, pid in _leftovers(target, TMP_MARK):
        if not _pid_alive(pid):
            shutil.rmtree(path, ignore_errors=True)
    for path, pid in _leftovers(target, OLD_MARK):
        if _pid_alive(pid):
            continue
        if not target.exists():
            path.rename(target)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _swap_into_place(tmp: Path, target: Path) -> None:
    backup = None
    if target.exists():
        backup = target.with_name(f"{target.name}{OLD_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")
        target.rename(backup)
    try:
        tmp.rename(target)
    except BaseException:
        if backup is not None:
            backup.rename(target)
        raise
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def write_grid(ds: xr.Dataset, target: str | Path, run: Runner,
               writers: Callable[[str], list]) -> Path:
    """Write the lazy grid ``ds`` to the Zarr store ``target`` (replacing it only on success).

    Parameters
    ----------
    ds : xarray.Dataset
        A dask-backed grid from :meth:`sweeps.registry.GridKind.build`; its template
        (metadata, coordinates, attributes) is written first.
    target : path
        The ``.zarr`` directory to create or replace.
    run : Runner
        Where the chunks are computed and written.
    writers : callable
        ``writers(path)`` gives one delayed task per chunk that computes the chunk and writes
        its region (:func:`sweeps.build.region_tasks`).

    Returns
    -------
    Path
        ``target``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clear_leftovers(target)
    tmp = target.with_name(f"{target.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        ds.to_zarr(tmp, mode="w-", compute=False, consolidated=False, zarr_format=3)
        run.compute(*writers(str(tmp)))
        zarr.open_group(tmp, mode="r+", zarr_format=3).attrs[md.ATTR_COMPLETE] = 1
        _swap_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _stale_detail(ds: xr.Dataset, stored_spec: ExperimentSpec, spec: ExperimentSpec) -> str:
    changed_inputs = [k for k in spec.extra if stored_spec.extra.get(k) != spec.extra[k]]
    if changed_inputs:
        return f"its input changed ({', '.join(changed_inputs)})"
    stored = json.loads(ds.attrs[md.ATTR_CATALOG])
    now = md.catalog_figures(spec)
    changed = [f"{kind[:-1]} '{key}'" for kind in ("models", "gpus")
               for key in now[kind] if stored.get(kind, {}).get(key) != now[kind][key]]
    if changed:
        return f"the catalog figures of {', '.join(changed)} changed"
    version = md.package_version()
    if ds.attrs[md.ATTR_VERSION] != version:
        return (f"it was computed by inference-lab {ds.attrs[md.ATTR_VERSION]}, "
                f"not {version}")
    return "its grid spec no longer matches its hash"


def open_grid(path: str | Path, *, check_stale: bool = True) -> xr.Dataset:
    """Open a sweep's Zarr dataset lazily, checking it is complete, readable and current.

    Parameters
    ----------
    path : path
        The ``.zarr`` directory.
    check_stale : bool
        Compare the stored hash with the spec's hash against today's catalog and version.

    Raises
    ------
    MissingDatasetError, CorruptDatasetError, StaleDatasetError
        With one sentence naming the path and the fix.
    """
    return open_grid_spec(path, check_stale=check_stale)[0]


def open_grid_spec(path: str | Path, *,
                   check_stale: bool = True) -> tuple[xr.Dataset, ExperimentSpec]:
    """:func:`open_grid`, and the dataset's stored grid spec as finalised now (what its hash
    was checked against), so a caller need not finalise it again."""
    path = Path(path)
    fix = f"run `inference-lab sweep --out {path}` to recompute it"
    if not path.exists():
        raise MissingDatasetError(f"There is no dataset at {path}; {fix}.")
    try:
        ds = xr.open_zarr(path, consolidated=False, zarr_format=3)
    except Exception as exc:
        raise CorruptDatasetError(f"The dataset at {path} is unreadable "
                                  f"({type(exc).__name__}: {exc}); delete it and {fix}.") \
            from None
    missing = [a for a in md.REQUIRED_ATTRS if a not in ds.attrs]
    if missing:
        raise CorruptDatasetError(f"The dataset at {path} is incomplete or not written by a "
                                  f"sweep (no '{missing[0]}' attribute); delete it and {fix}.")
    try:
        stored = ExperimentSpec.from_dict(json.loads(ds.attrs[md.ATTR_SPEC]))
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptDatasetError(f"The dataset at {path} has an unreadable grid spec "
                                  f"({type(exc).__name__}); delete it and {fix}.") from None
    try:
        schema = grid_kind(stored.experiment).schema
        spec = schema.finalized(stored)
        expected = md.expected_hash(spec)
    except LabInputError as exc:
        raise StaleDatasetError(f"The dataset at {path} is stale: {exc} Run `inference-lab "
                                f"sweep --out {path}` with a current grid.") from None
    absent = [v for v in spec.variables if v not in ds.data_vars]
    if absent or dict(ds.sizes) != {k: len(v) for k, v in spec.axes.items()}:
        what = f"lacks variable '{absent[0]}' of" if absent else "does not have the shape of"
        raise CorruptDatasetError(f"The dataset at {path} {what} its grid spec; "
                                  f"delete it and {fix}.")
    ds = ds[list(spec.variables)]
    if check_stale and ds.attrs[md.ATTR_HASH] != expected:
        raise StaleDatasetError(f"The dataset at {path} is stale: {_stale_detail(ds, stored, spec)}; "
                                f"{fix}.")
    return ds, spec
