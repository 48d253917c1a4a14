"""``open_dataset(name)`` (also ``lab.open_dataset``): a precomputed grid, computed on first use when missing.

The default grids live in ``datasets/grids/<name>.zarr`` (or ``$INFERENCE_LAB_DATA``). The
first call on a fresh clone computes the ``default`` preset for that experiment with dask's
threaded scheduler in this process (no cluster start-up; seconds for ``decode``), under a
file lock so concurrent server processes compute it once; a default grid written before
datasets recorded file checksums is recomputed the same way. Every open checks the dataset
(:func:`sweeps.store.open_grid`), and every read of the returned dataset checks each file
against its checksum: damage is one sentence (:class:`~sweeps.store.CorruptDatasetError`)
naming the command that recomputes it. Importing this module is cheap: dask and Zarr load on
the first call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

from lab.errors import LabInputError
from lab.experiments.registry import record, resolve
from sweeps.paths import DATASET_NAMES, data_dir, dataset_path

if TYPE_CHECKING:
    import xarray as xr

    from sweeps.grid_schema import ExperimentSpec

__all__ = ["DATASET_NAMES", "data_dir", "dataset_loader", "open_dataset"]


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(f".{path.name}.lock")):  # portable: no fcntl on Windows
        yield


def dataset_loader(name: str) -> Callable[[], xr.Dataset] | None:
    """The loader of experiment ``name``'s dataset when it is not a grid (its record's
    ``dataset``, e.g. experiment 9's shipped measurements), else None."""
    found = record(name)
    if found is None or found.slug != name or found.dataset is None:
        return None
    return resolve(found.dataset)


def compute_default(name: str, path: Path, *, progress: bool = False) -> Path:
    """Compute the ``default`` preset of ``name`` into ``path`` on the threaded scheduler."""
    from sweeps.grid_files import preset
    from sweeps.grid_kinds import grid_kind
    from sweeps.runner import Runner
    from sweeps.store import write_experiment

    grid = preset("default")
    return write_experiment(grid_kind(name), grid.resolve(name), grid.name, path,
                                 Runner(None, "threads", progress))


def _check_default(ds: xr.Dataset, name: str, path: Path, spec: ExperimentSpec) -> None:
    """Raise if a dataset labelled ``default`` was computed from an older default preset.

    ``spec`` is the dataset's grid spec, already checked against its stored hash by
    :func:`~sweeps.store.open_grid_spec`. A schema's ``finalize`` only checks inputs and fills
    ``extra``, so the dataset is current exactly when the default preset expands to the same
    inputs: nothing is finalised again.
    """
    from dataclasses import replace

    from sweeps import metadata as md
    from sweeps.grid_files import preset
    from sweeps.store import StaleDatasetError

    if ds.attrs.get(md.ATTR_NAME) != "default":
        return
    if replace(preset("default").expand(name), extra={}) != replace(spec, extra={}):
        raise StaleDatasetError(f"The dataset at {path} is stale: it was computed from an "
                                "older default grid; run `inference-lab sweep --experiment "
                                f"{name}` (or open it with refresh=True) to recompute it.")


def _as_path(name: str | os.PathLike) -> Path | None:
    """``name`` as the path of a store when it is one (a path object, or a string that is not
    a dataset name and names a folder or looks like a path), else None."""
    if isinstance(name, os.PathLike):
        return Path(name)
    if not isinstance(name, str) or name in DATASET_NAMES or dataset_loader(name) is not None:
        return None
    separators = [sep for sep in (os.sep, os.altsep, "/") if sep]
    if any(sep in name for sep in separators) or name.endswith(".zarr") or Path(name).is_dir():
        return Path(name)
    return None


def open_dataset(name: str | os.PathLike, *, path: str | Path | None = None,
                 compute_missing: bool = True, refresh: bool = False,
                 storage_options: dict | None = None) -> xr.Dataset:
    """The grid dataset of experiment ``name`` as a lazy ``xarray.Dataset``.

    Parameters
    ----------
    name : {"decode", "prefill", "prefix", "goodput", "context", "measured"} or path
        Which experiment's dataset: a grid's name, or an experiment whose record names a
        loader (``"measured"``: experiment 9's table of measured kernel times with their floors
        over ``point``, in memory from the package data, its ``units`` CF units as a grid's;
        the other arguments do not apply). A path (``str`` or ``os.PathLike``) of a ``.zarr``
        store a sweep wrote opens that store as ``open_dataset(its experiment, path=...)``
        does; a missing one is reported, not computed.
    path : path, optional
        A ``.zarr`` store to open instead of the data directory's ``<name>.zarr``.
    compute_missing : bool
        Compute the default grid when the dataset does not exist (default True).
    refresh : bool
        Recompute the default grid when the dataset is stale or unreadable instead of
        raising (default False). Without it, the data directory's own default grid (``path``
        not given, the dataset computed from the ``default`` preset) is still recomputed when
        it is stale, whatever ``compute_missing`` says: a newer lab changed the default grid,
        and the lab wrote that dataset; any other stale dataset is reported.
    storage_options : dict, optional
        fsspec options for a URL (``s3://bucket/grids/decode.zarr``, as ``name`` or ``path``),
        e.g. ``{"endpoint_url": …}``; credentials otherwise come from the environment. A
        dataset at a URL is opened through its pointer (:mod:`sweeps.remote_grid`), never
        computed.

    Returns
    -------
    xarray.Dataset
        Dimensions and coordinates named as the CLI flags, variables as ``calc --json`` keys,
        ``units``/``long_name`` on each, provenance in ``attrs``.

    Raises
    ------
    LabInputError
        Unknown name; or (:class:`~sweeps.store.DatasetError`) a missing, stale or corrupt
        dataset, with one sentence saying how to fix it.
    """
    from sweeps import metadata as md
    from sweeps.conventions import cf_units
    from sweeps.grid_kinds import grid_kind
    from sweeps.object_store import is_url
    from sweeps.store import (
        CorruptDatasetError,
        StaleDatasetError,
        UnverifiedDatasetError,
        grid_name_of,
        open_export,
        open_grid,
        open_grid_spec,
        stored_attribute,
    )
    from sweeps.swap import has_leftovers, recover

    if isinstance(name, str) and not name.strip():  # '' named the current folder ('.')
        raise LabInputError("The dataset name is empty; give a dataset's name "
                            f"({', '.join(DATASET_NAMES)}) or the path of a .zarr store a sweep "
                            "wrote.")
    if is_url(name) or is_url(path):  # object storage: never computed (sweeps.remote_grid)
        from sweeps.remote_grid import open_grid_url_options

        if is_url(name) and path is not None:
            raise LabInputError("Give the dataset's path once: as the first argument or as "
                                "path=, not both.")
        return open_grid_url_options(str(name if is_url(name) else path), storage_options)
    store_path = _as_path(name)
    if store_path is not None:
        if path is not None:
            raise LabInputError("Give the dataset's path once: as the first argument or as "
                                "path=, not both.")
        exported = open_export(store_path)
        if exported is not None:  # a selection the reader exported: opened as it is
            return exported
        experiment = stored_attribute(store_path, md.ATTR_EXPERIMENT) \
            if store_path.is_dir() else None
        if experiment not in DATASET_NAMES:  # missing, not a lab store, or damaged: say which
            return open_grid(store_path)
        return open_dataset(experiment, path=store_path, compute_missing=False, refresh=refresh)
    loader = dataset_loader(name)
    if loader is not None:  # not a grid: the record's loader (docs/architecture.md), CF units
        return cf_units(loader())
    if name not in DATASET_NAMES:
        from lab.experiments.registry import experiments

        loaded = [r.slug for r in experiments() if r.dataset is not None]  # measured, served
        raise LabInputError(f"There is no dataset '{name}'; valid: "
                            f"{', '.join([*DATASET_NAMES, *loaded])}, or the path of a .zarr "
                            "store a sweep wrote.")
    grid_kind(name)
    target = Path(path) if path is not None else dataset_path(name)
    if has_leftovers(target):
        # A writer killed mid-swap: the old dataset goes back in place and is then opened as
        # it is, never computed over (in a read-only folder, what is there is reported).
        with suppress(OSError), _lock(target):
            recover(target)

    def recompute_unverified(exc: UnverifiedDatasetError) -> bool:
        """The lab's own default grid, written before checksums: recomputed like a missing
        one (any other unverifiable dataset is reported)."""
        return refresh or (path is None and exc.grid_name == "default")

    def checked() -> xr.Dataset:
        ds, spec = open_grid_spec(target)
        _check_default(ds, name, target, spec)
        return ds

    def own_default() -> bool:
        """The data directory's own default grid: the lab wrote it from its default preset, so
        when a newer version of the lab changed that grid (a new model, a new axis, a corrected
        catalog figure) it is recomputed, like a missing one. A dataset at a path the caller
        names, or a sweep of another grid written to the data directory, is reported instead."""
        return path is None and grid_name_of(target) == "default"

    if target.exists() and not refresh:
        try:
            return checked()
        except UnverifiedDatasetError as exc:
            if not recompute_unverified(exc):
                raise
        except StaleDatasetError:
            if not own_default():
                raise
    with _lock(target):  # another process may have written it meanwhile: look again
        if target.exists():
            try:
                return checked()
            except UnverifiedDatasetError as exc:
                if not recompute_unverified(exc):
                    raise
            except StaleDatasetError:
                if not (refresh or own_default()):
                    raise
            except CorruptDatasetError:
                if not refresh:
                    raise
        elif not compute_missing:
            return open_grid(target)
        compute_default(name, target)
    return open_grid(target)
