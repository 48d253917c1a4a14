"""Write grids to Zarr safely and open them again with every check.

Writing (:func:`write_grid`): the template (metadata and coordinates) goes to a temporary
directory beside the target, with its root metadata hidden (``zarr.json.incomplete``) so
nothing opens it as a dataset; every chunk is filled by a region write from the task that
computed it, wherever that runs, and the task returns the checksum of each file it wrote;
then the root metadata is restored with the ``sweep_complete`` attribute and the checksum of
every file (``file_digests``), and the directory is renamed into place. An interrupted or
failed sweep leaves the previous dataset untouched; the next write or open of the path recovers
from a writer killed at any step, even between the two renames of the swap (:mod:`sweeps.swap`).
Only a store this lab wrote is ever replaced.

Opening (:func:`open_grid`): a missing, unreadable, incomplete, damaged or stale dataset raises
a :class:`DatasetError` with one sentence saying what is wrong and how to fix it. The stored
grid spec is checked as a spec file would be, the coordinates must equal it, every recorded
file must exist, and every file read later (each chunk, lazily) must match its checksum, or
the read raises :class:`CorruptDatasetError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr
from zarr.storage import LocalStore, WrapperStore

from lab.errors import LabInputError
from sweeps import files
from sweeps import metadata as md
from sweeps.build import coordinate_array, file_digest, output_dtypes, region_tasks
from sweeps.conventions import cf_units, consolidate
from sweeps.grid_kinds import GridKind, grid_kind
from sweeps.grid_schema import OPTION_KEYS, ExperimentSpec, expand_section
from sweeps.local_store_checks import (
    MAX_METADATA_BYTES,
    LocalStoreError,
    check_arrays,
    check_chunk_file,
    check_entries,
    read_regular_file,
)
from sweeps.object_store import is_url
from sweeps.remake_command import remake_advice, remake_command
from sweeps.runner import Runner, WorkersLostError
from sweeps.swap import (
    TMP_MARK,
    has_leftovers,
    recover,
    swap_into_place,
    writer_alive,
    writer_path,
)

HIDDEN_ROOT = "zarr.json.incomplete"
"""Name of a store's root metadata while a sweep writes it (plain Zarr readers find none)."""


class DatasetError(LabInputError):
    """A dataset cannot be used as it is: missing, unreadable, incomplete or stale."""


class MissingDatasetError(DatasetError):
    """No dataset at the path."""


class CorruptDatasetError(DatasetError):
    """The dataset cannot be read, was never completed, or lacks what a sweep writes."""


class StaleDatasetError(DatasetError):
    """The dataset was computed for a different catalog, grid spec or package version."""


class UnverifiedDatasetError(StaleDatasetError):
    """The dataset was written before stores recorded file checksums: it cannot be checked.

    ``grid_name`` is the preset or spec name it was computed from.
    """

    def __init__(self, message: str, grid_name: object = None):
        super().__init__(message)
        self.grid_name = grid_name


class DatasetWriteError(DatasetError):
    """The file system refused a write (full disk, read-only folder, size limit, ...)."""


def _fix(path: Path) -> str:
    """How to write the store at ``path`` again: a command that runs as printed, with the
    experiment and grid its metadata names when it can still be read."""
    if is_url(path):  # an object store's sentence (its metadata is read elsewhere)
        return remake_advice(str(path))
    try:
        meta = json.loads(read_regular_file(Path(path) / files.ZARR_META, MAX_METADATA_BYTES,
                                            files.ZARR_META).decode("utf-8"))
        attrs = meta.get("attributes", {}) if isinstance(meta, dict) else {}
        attrs = attrs if isinstance(attrs, dict) else {}
    except (LocalStoreError, OSError, ValueError):
        attrs = {}
    return remake_advice(str(path), attrs.get(md.ATTR_EXPERIMENT), attrs.get(md.ATTR_NAME))


def corrupt(path: Path, detail: str) -> CorruptDatasetError:
    """The one-sentence error for damage found in the dataset at ``path``."""
    return CorruptDatasetError(f"The dataset at {path} is corrupt ({detail}); delete it and "
                               f"{_fix(path)}.")


class VerifiedStore(WrapperStore):
    """A read-only Zarr store that checks every recorded file against its checksum when read.

    A recorded file that is missing, unreadable or changed raises :class:`CorruptDatasetError`
    (instead of reading as fill values or failing to decompress); other keys pass through.
    """

    def __init__(self, store: LocalStore, digests: dict[str, str], path: Path):
        super().__init__(store)
        self._digests = digests
        self._path = path

    def _with_store(self, store: LocalStore) -> VerifiedStore:
        return type(self)(store, self._digests, self._path)

    async def get(self, key, prototype, byte_range=None):
        """The bytes of ``key``, checked against the manifest when it records ``key``."""
        try:
            check_chunk_file(self._path, key)
        except LocalStoreError as problem:
            raise corrupt(self._path, str(problem)) from None
        try:
            buffer = await self._store.get(key, prototype, byte_range)
        except OSError as exc:
            raise corrupt(self._path, f"{key} cannot be read: {files.os_reason(exc)}") from None
        expected = self._digests.get(key)
        if expected is None or byte_range is not None:
            return buffer
        if buffer is None:
            raise corrupt(self._path, f"its file {key} is missing")
        if file_digest(buffer.to_bytes()) != expected:
            raise corrupt(self._path, f"its file {key} does not match its checksum")
        return buffer

    async def _get_many(self, requests):
        for key, prototype, byte_range in requests:
            yield key, await self.get(key, prototype, byte_range)


def refuse_url(path: str | Path) -> None:
    """One sentence for a URL given where a local store is read or written (a URL made a
    ``Path`` would be a local folder named ``s3:``): :mod:`sweeps.remote_grid` handles URLs."""
    if is_url(path):
        raise LabInputError(f"{path} is a URL; this function takes a local path; open it with "
                            "lab.open_dataset(URL) or sweep to it with `inference-lab sweep --out "
                            "URL`.")


def check_replaceable(target: Path) -> None:
    """Refuse (one sentence) to write a dataset over anything this lab did not write."""
    if (target.exists() or target.is_symlink()) and not files.lab_zarr(target):
        what = "folder" if target.is_dir() else "file"
        raise DatasetError(f"{target} is a {what} this tool did not write, so a sweep will not "
                           "replace it; give another --out.")


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (psutil: the same answer on every platform)."""
    return writer_alive(pid, None)


def clear_leftovers(target: Path) -> None:
    """Remove temporaries of writers that died; restore a target lost mid-swap
    (:func:`sweeps.swap.recover`)."""
    recover(target)


def _hide_root(store: Path) -> None:
    (store / files.ZARR_META).rename(store / HIDDEN_ROOT)


def _finish(store: Path, digests: dict[str, str]) -> None:
    """Record every file's checksum and ``sweep_complete``, and restore the root metadata."""
    for folder, _dirs, names in os.walk(store):
        for name in names:
            key = (Path(folder) / name).relative_to(store).as_posix()
            if key not in digests and key not in (files.ZARR_META, HIDDEN_ROOT):
                digests[key] = file_digest((store / key).read_bytes())
    hidden = store / HIDDEN_ROOT
    meta = json.loads(hidden.read_text(encoding="utf-8"))
    meta.setdefault("attributes", {}).update({md.ATTR_DIGESTS: dict(sorted(digests.items())),
                                              md.ATTR_COMPLETE: 1})
    (store / files.ZARR_META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    hidden.unlink()
    consolidate(store)  # for plain xr.open_zarr; the lab reads the checksummed array metadata


def write_grid(ds: xr.Dataset, target: str | Path, run: Runner,
               writers: Callable[[str], list]) -> Path:
    """Write the lazy grid ``ds`` to the Zarr store ``target`` (replacing it only on success).

    Parameters
    ----------
    ds : xarray.Dataset
        A dask-backed grid from :meth:`sweeps.grid_kinds.GridKind.build`; its template
        (metadata, coordinates, attributes) is written first.
    target : path
        The ``.zarr`` directory to create or replace (only a store this lab wrote is replaced).
    run : Runner
        Where the chunks are computed and written.
    writers : callable
        ``writers(path)`` gives one delayed task per chunk that computes the chunk, writes
        its region and returns ``{store key: checksum}`` of the files it wrote
        (:func:`sweeps.build.region_tasks`).

    Returns
    -------
    Path
        ``target``.

    Raises
    ------
    DatasetError
        ``target`` holds something this lab did not write, or the disk refused a write (the
        previous dataset is then unchanged).
    """
    refuse_url(target)
    target = Path(target)
    if target.parent.is_dir() and has_leftovers(target):
        with contextlib.suppress(OSError):  # a refused write is reported below, in a sentence
            recover(target)  # a dataset lost mid-swap is back before it is checked
    check_replaceable(target)
    existed = target.exists()
    tmp = writer_path(target, TMP_MARK)
    created = [folder for folder in target.parents if not folder.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        ds.to_zarr(tmp, mode="w-", compute=False, consolidated=False, zarr_format=3)
        _hide_root(tmp)
        digests: dict[str, str] = {}
        for written in run.compute(*writers(str(tmp))):
            digests.update(written)
        _finish(tmp, digests)
        swap_into_place(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:  # innermost first: only the folders this write made
            with contextlib.suppress(OSError):
                folder.rmdir()
        kept = "the previous dataset is unchanged" if existed else "nothing was written"
        if files.is_disk_error(exc):
            raise DatasetWriteError(f"Could not write the dataset at {target}: "
                                    f"{files.os_reason(exc)}; {kept}.") from None
        if isinstance(exc, WorkersLostError):
            raise WorkersLostError(f"{str(exc).rstrip('.')} ({target}: {kept}).") from None
        raise
    return target


def write_experiment(kind: GridKind, spec: ExperimentSpec, grid_name: str, path: str | Path,
                     run: Runner) -> Path:
    """Compute ``spec`` of the grid ``kind`` and write it to the Zarr store ``path`` (safely:
    see :func:`write_grid`) on ``run``."""
    dtypes = output_dtypes(spec, kind.schema, kind.block)  # one probe for both
    return write_grid(kind.build(spec, grid_name, dtypes), path, run,
                      lambda tmp: region_tasks(spec, kind.schema, kind.block, tmp, dtypes))


def _stale_detail(ds: xr.Dataset, stored_spec: ExperimentSpec, spec: ExperimentSpec) -> str:
    new_axes = [k for k in spec.axes if k not in ds.dims]
    if new_axes:
        return (f"it has no '{new_axes[0]}' axis (the lab's grids gained it after the dataset "
                "was written)")
    changed_inputs = [k for k in spec.extra if stored_spec.extra.get(k) != spec.extra[k]]
    if changed_inputs:
        return f"its input changed ({', '.join(changed_inputs)})"
    try:
        stored = json.loads(ds.attrs[md.ATTR_CATALOG])
    except (TypeError, ValueError):
        stored = None
    if not isinstance(stored, dict):
        return f"its '{md.ATTR_CATALOG}' attribute is not the JSON a sweep writes"
    now = md.catalog_figures(spec)
    changed = [f"{kind[:-1]} '{key}'" for kind in ("models", "gpus")
               for key in now[kind] if not isinstance(stored.get(kind), dict)
               or stored[kind].get(key) != now[kind][key]]
    if changed:
        return f"the catalog figures of {', '.join(changed)} changed"
    version = md.package_version()
    if ds.attrs[md.ATTR_VERSION] != version:
        return (f"it was computed by inference-lab {ds.attrs[md.ATTR_VERSION]}, "
                f"not {version}")
    if ds.attrs.get(md.ATTR_MODELS) != md.models_fingerprint():
        return ("it was computed by other code or data of the lab's models (a formula, catalog "
                "or calibration row changed since)")
    return "its grid spec no longer matches its hash"


def open_grid(path: str | Path, *, check_stale: bool = True) -> xr.Dataset:
    """Open a sweep's Zarr dataset lazily, checking it is complete, intact and current.

    Parameters
    ----------
    path : path
        The ``.zarr`` directory.
    check_stale : bool
        Compare the stored hash with the spec's hash against today's catalog and version.

    Raises
    ------
    MissingDatasetError, CorruptDatasetError, StaleDatasetError
        With one sentence naming the path and the fix. Reading the returned dataset raises
        :class:`CorruptDatasetError` if a file is missing or changed later.
    """
    return open_grid_spec(path, check_stale=check_stale)[0]


def _missing_root(path: Path) -> CorruptDatasetError:
    """The one-sentence error for a store at ``path`` without its root ``zarr.json``."""
    if (path / HIDDEN_ROOT).is_file():
        what = ("was never completed (the sweep writing it stopped before its metadata "
                f"{files.ZARR_META} was written)")
    elif files.lab_zarr(path):
        what = f"has lost its metadata (its root {files.ZARR_META} is missing)"
    else:  # someone's folder, not a store the lab wrote: never advise deleting it
        return CorruptDatasetError(f"{path} is not a dataset: it holds no Zarr store (no root "
                                   f"{files.ZARR_META}); give the .zarr folder a sweep wrote.")
    return CorruptDatasetError(f"The dataset at {path} {what}; delete it and {_fix(path)}.")


def _root_attrs(path: Path) -> dict:
    """The attributes in the store's root metadata (read directly: they hold the manifest)."""
    if path.is_file():
        raise CorruptDatasetError(f"{path} is a file, not a dataset (a dataset is a Zarr "
                                  "store, a folder).")
    if path.is_dir() and not os.path.lexists(path / files.ZARR_META):
        raise _missing_root(path)
    try:
        meta = json.loads(_read_local_metadata(path).decode("utf-8"))
        attrs = meta.get("attributes", {}) if isinstance(meta, dict) else None
        if not isinstance(attrs, dict):
            raise ValueError("its root metadata is not a Zarr group's")
    except (OSError, ValueError) as exc:
        reason = files.os_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise CorruptDatasetError(f"The dataset at {path} is unreadable ({type(exc).__name__}: "
                                  f"{reason}); delete it and {_fix(path)}.") from None
    return attrs


def _read_local_metadata(path: Path) -> bytes:
    """The root metadata of the local store at ``path``: a regular file, bounded in size,
    never a link or a FIFO (:mod:`sweeps.local_store_checks`)."""
    try:
        return read_regular_file(path / files.ZARR_META, MAX_METADATA_BYTES, files.ZARR_META)
    except LocalStoreError as problem:
        raise corrupt(path, str(problem)) from None


def _check_local_store(path: Path) -> None:
    """Only regular files and folders inside the local store at ``path``, and no array claiming
    chunks or coordinates larger than the lab reads: else one sentence."""
    try:
        check_entries(path)
        check_arrays(path)
    except LocalStoreError as problem:
        raise corrupt(path, str(problem)) from None
    except OSError as error:
        raise corrupt(path, f"it cannot be listed: {files.os_reason(error)}") from None


def grid_name_of(path: Path) -> object:
    """The preset or spec name the store at ``path`` says it was computed from (None when its
    root metadata cannot be read)."""
    return stored_attribute(path, md.ATTR_NAME)


def stored_attribute(path: Path, name: str) -> object:
    """Root attribute ``name`` of the store at ``path`` (None when absent or unreadable)."""
    try:
        return _root_attrs(path).get(name)
    except CorruptDatasetError:
        return None


def _digests(path: Path, attrs: dict) -> dict[str, str]:
    digests = attrs.get(md.ATTR_DIGESTS)
    if digests is None:
        raise UnverifiedDatasetError(
            f"The dataset at {path} is stale: it was written before datasets recorded file "
            f"checksums, so it cannot be checked; {_fix(path)}.", attrs.get(md.ATTR_NAME))
    if not isinstance(digests, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
        raise corrupt(path, f"its '{md.ATTR_DIGESTS}' attribute is not a checksum list")
    return digests


def stored_spec(path: Path, raw: object, grid_name: object = None) -> ExperimentSpec:
    """The grid spec stored as ``raw`` (the ``grid_spec`` attribute), checked as a spec file
    would be; a value of the wrong shape is corrupt, one failing today's checks is stale."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        data = None
    shaped = (isinstance(data, dict) and isinstance(data.get("experiment"), str)
              and all(isinstance(data.get(k), dict) for k in ("axes", "constants"))
              and isinstance(data.get("extra", {}), dict)
              and all(isinstance(v, list) for v in data["axes"].values()))
    if not shaped:
        raise CorruptDatasetError(f"The dataset at {path} has an unreadable grid spec (its "
                                  f"'{md.ATTR_SPEC}' attribute is not the JSON a sweep writes); "
                                  f"delete it and {_fix(path)}.")
    try:
        schema = grid_kind(data["experiment"]).schema
        section = {**data["axes"], **data["constants"],
                   **{k: data[k] for k in OPTION_KEYS if k in data}}
        checked = expand_section(schema, section, md.ATTR_SPEC)
    except LabInputError as exc:
        command = remake_command(str(path), data["experiment"], grid_name)
        raise StaleDatasetError(f"The dataset at {path} is stale: {exc} Run `{command}` with "
                                "a current grid.") from None
    return ExperimentSpec(checked.experiment, checked.axes, checked.constants,
                          checked.variables, checked.chunk_cells, checked.float_dtype,
                          dict(data.get("extra", {})))


def _check_coordinates(ds: xr.Dataset, path: Path, spec: ExperimentSpec) -> None:
    """Every axis and constant coordinate equals the spec's values (none lost or edited)."""
    rules = {r.name: r for r in (*grid_kind(spec.experiment).schema.axes,
                                 *grid_kind(spec.experiment).schema.constants)}
    expected = {**spec.axes, **{k: [v] for k, v in spec.constants.items()}}
    for name, values in expected.items():
        if name not in ds.coords:
            raise corrupt(path, f"its '{name}' coordinate is missing")
        stored = np.asarray(ds[name].values).reshape(-1)
        want = coordinate_array(values, rules[name].kind)
        same = stored.shape == want.shape and all(
            a == b for a, b in zip(stored.tolist(), want.tolist(), strict=True))
        if not same:
            raise corrupt(path, f"its '{name}' coordinate differs from its grid spec")


def _check_files(path: Path, digests: dict[str, str]) -> None:
    """Every file the manifest records exists (a deleted chunk would read as fill values)."""
    root = str(path)
    missing = [key for key in digests if not os.path.isfile(os.path.join(root, key))]
    if missing:
        raise corrupt(path, f"its file {missing[0]} is missing"
                      + (f", and {len(missing) - 1} more" if len(missing) > 1 else ""))


def checked_against_spec(ds: xr.Dataset, stored: ExperimentSpec, where: str | Path, fix: str,
                         *, check_stale: bool) -> tuple[xr.Dataset, ExperimentSpec]:
    """``ds`` (opened from ``where``, a folder or a store URL) checked against its stored grid
    spec as finalised now: stale before corrupt, then its variables, shape and coordinates;
    returns the dataset's grid variables and the finalised spec. Local and object-store
    datasets share this one check."""
    try:
        spec = grid_kind(stored.experiment).schema.finalized(stored)
        expected = md.expected_hash(spec)
    except LabInputError as exc:
        command = remake_command(str(where), stored.experiment, ds.attrs.get(md.ATTR_NAME))
        raise StaleDatasetError(f"The dataset at {where} is stale: {exc} Run `{command}` with "
                                "a current grid.") from None
    ds.attrs.pop(md.ATTR_DIGESTS, None)
    # Stale before corrupt: a dataset of an older grid (one without an axis a newer lab added)
    # has another shape than today's reading of its spec, and is out of date, not damaged.
    if check_stale and ds.attrs[md.ATTR_HASH] != expected:
        raise StaleDatasetError(f"The dataset at {where} is stale: "
                                f"{_stale_detail(ds, stored, spec)}; {fix}.")
    absent = [v for v in spec.variables if v not in ds.data_vars]
    if absent or dict(ds.sizes) != {k: len(v) for k, v in spec.axes.items()}:
        what = f"lacks variable '{absent[0]}' of" if absent else "does not have the shape of"
        raise CorruptDatasetError(f"The dataset at {where} {what} its grid spec; "
                                  f"delete it and {fix}.")
    ds = ds[list(spec.variables)]
    _check_coordinates(ds, where, spec)
    return ds, spec


def is_export(attrs: dict) -> bool:
    """Whether root attributes ``attrs`` are a Zarr export's (``inference-lab export``): marked
    so, or (an export written before the mark) carrying no checksums and an export's history."""
    if attrs.get(md.ATTR_EXPORTED) in (1, "1", True):
        return True
    return md.ATTR_DIGESTS not in attrs and "export as zarr" in str(attrs.get("history", ""))


def open_export(path: str | Path) -> xr.Dataset | None:
    """The Zarr export at ``path`` as a lazy dataset (None when ``path`` is not one): its
    files checked as every local store's are (regular files, bounded metadata and chunks), but
    not against a sweep's checksums and grid spec, which an export of a selection does not
    carry. It was reported as "stale … written before checksums" with advice that replaced it
    with the whole grid."""
    path = Path(path)
    try:
        attrs = _root_attrs(path) if path.is_dir() else {}
    except CorruptDatasetError:
        return None
    if not is_export(attrs):
        return None
    _check_local_store(path)
    try:
        ds = xr.open_zarr(LocalStore(path, read_only=True), consolidated=False, zarr_format=3)
    except Exception as exc:
        raise CorruptDatasetError(f"The export at {path} is unreadable ({type(exc).__name__}: "
                                  f"{exc}); export it again.") from None
    ds.attrs.pop(md.ATTR_DIGESTS, None)
    return cf_units(ds)


def open_grid_spec(path: str | Path, *,
                   check_stale: bool = True) -> tuple[xr.Dataset, ExperimentSpec]:
    """:func:`open_grid`, and the dataset's stored grid spec as finalised now (what its hash
    was checked against), so a caller need not finalise it again."""
    refuse_url(path)
    path = Path(path)
    fix = _fix(path)
    if not path.exists() and has_leftovers(path):
        with contextlib.suppress(OSError):  # a read-only folder: report what is there
            recover(path)
    if not path.exists():
        raise MissingDatasetError(f"There is no dataset at {path}; {fix}.")
    attrs = _root_attrs(path)
    _check_local_store(path)
    missing = [a for a in md.REQUIRED_ATTRS if a not in attrs]
    if missing:
        raise CorruptDatasetError(f"The dataset at {path} is incomplete or not written by a "
                                  f"sweep (no '{missing[0]}' attribute); delete it and {fix}.")
    stored = stored_spec(path, attrs[md.ATTR_SPEC], attrs.get(md.ATTR_NAME))
    digests = _digests(path, attrs)
    try:
        ds = xr.open_zarr(VerifiedStore(LocalStore(path, read_only=True), digests, path),
                          consolidated=False, zarr_format=3)
    except CorruptDatasetError:
        raise
    except Exception as exc:
        raise CorruptDatasetError(f"The dataset at {path} is unreadable "
                                  f"({type(exc).__name__}: {exc}); delete it and {fix}.") \
            from None
    ds, spec = checked_against_spec(ds, stored, path, fix, check_stale=check_stale)
    _check_files(path, digests)
    return cf_units(ds), spec  # a store written before the CF units opens as a new one does
