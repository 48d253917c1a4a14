"""Grids in object storage: written region by region from the workers, opened with every check.

The counterpart of :mod:`sweeps.store` for an fsspec URL (``s3://bucket/grids/decode.zarr``).
Writing (:func:`write_experiment_url`): the template goes to a new version of the dataset
(:mod:`sweeps.pointer`) with its root metadata hidden; every chunk is computed and written
straight to the store by the task that computed it, wherever it runs (nothing passes through
the client), returning the checksum of each object it wrote; the root metadata is restored with
every checksum and ``sweep_complete``; then the pointer is moved to the new version, and the
version it replaced is deleted. A sweep stopped at any moment leaves the previous dataset as it
was; a reader never sees a version that is not finished.

Opening (:func:`open_grid_spec_url`) follows the pointer and makes the same checks, with the
same sentences, as :func:`sweeps.store.open_grid_spec`; every object read later is checked
against its checksum. A failing store (a missing bucket, a refused permission, an endpoint that
cannot be reached, a request that keeps timing out) is one sentence too
(:func:`sweeps.object_store.store_error`).
"""

from __future__ import annotations

import contextlib
import json
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from zarr.storage import WrapperStore

from lab.errors import LabInputError
from lab.units import MIB
from sweeps import metadata as md
from sweeps import pointer
from sweeps.axes import choose_chunks
from sweeps.build import block_slices, coordinate_array, file_digest, output_dtypes, run_block
from sweeps.conventions import cf_units
from sweeps.grid_kinds import GridKind
from sweeps.grid_schema import ExperimentSpec
from sweeps.local_store_checks import MAX_CHUNK_BYTES, MAX_FILE_BYTES, MAX_METADATA_BYTES
from sweeps.object_store import (
    bound_retries,
    bucket,
    check_url,
    filesystem,
    join,
    options_for,
    store_error,
)
from sweeps.runner import Runner, WorkersLostError
from sweeps.store import (
    HIDDEN_ROOT,
    CorruptDatasetError,
    DatasetError,
    DatasetWriteError,
    MissingDatasetError,
    VerifiedStore,
    checked_against_spec,
    corrupt,
    stored_spec,
)

ZARR_META = "zarr.json"
MAX_POINTER_BYTES = 64 * 1024
"""Most bytes of a pointer object read (a pointer is a few hundred)."""
MAX_LISTED = 200
"""Most stores listed under a prefix (as for a local folder)."""


def _fix(url: str) -> str:
    """How to write the dataset at ``url`` again (its experiment unknown until it is read)."""
    from sweeps.remake_command import remake_advice

    return remake_advice(url)


def _failed(exc: BaseException, url: str, doing: str) -> LabInputError:
    """``exc``, raised by the store while ``doing``, as one sentence (an unforeseen failure
    names its type and first line)."""
    known = store_error(exc, url, doing)
    if known is not None:
        return known
    detail = (str(exc).strip().splitlines() or [""])[0][:200]
    return DatasetError(f"Could not {doing} {url} ({type(exc).__name__}"
                        + (f": {detail.rstrip('.')}" if detail else "") + ").")


def _fsspec_store(url: str, options: Mapping[str, Any], *, read_only: bool = False):
    from zarr.storage import FsspecStore

    bound_retries(url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fsspec's asynchronous-wrapping notes
        return FsspecStore.from_url(url, storage_options=dict(options), read_only=read_only)


class _Recording(WrapperStore):
    """A Zarr store wrapper that records the checksum of every object written through it."""

    def __init__(self, store):
        super().__init__(store)
        self.digests: dict[str, str] = {}

    def _with_store(self, store) -> _Recording:
        other = type(self)(store)
        other.digests = self.digests
        return other

    async def set(self, key, value):
        """Record ``value``'s checksum under ``key``, then write it."""
        self.digests[key] = file_digest(value.to_bytes())
        await self._store.set(key, value)


def write_region_url(url: str, options: Mapping[str, Any], block, spec: ExperimentSpec,
                     kinds: Mapping, dtypes: Mapping, region: tuple[slice, ...]) -> dict[str, str]:
    """Compute one chunk and write every variable's values into the Zarr store at ``url``;
    return the checksum of every object written (``{store key: digest}``), computed from the
    bytes sent (no object is read back)."""
    import zarr

    coords = {dim: coordinate_array(spec.axes[dim][sl], kinds[dim])
              for dim, sl in zip(spec.axes, region, strict=True)}
    arrays = run_block(block, spec, coords, dtypes)
    store = _Recording(_fsspec_store(url, options))
    for name, values in arrays.items():
        array = zarr.open_array(store, path=name, mode="r+", zarr_format=3)
        array = array.with_config({"write_empty_chunks": True})
        array[region] = values
    return {key: digest for key, digest in store.digests.items()
            if not key.endswith(ZARR_META)}


def region_tasks_url(spec: ExperimentSpec, kind: GridKind, url: str,
                     options: Mapping[str, Any], dtypes: Mapping[str, np.dtype]) -> list:
    """One ``dask.delayed`` :func:`write_region_url` per chunk of ``spec`` (chunk-aligned)."""
    import dask

    kinds = {r.name: r.kind for r in kind.schema.axes}
    chunks = choose_chunks(spec.shape, spec.chunk_cells)
    task = dask.delayed(write_region_url, pure=False)
    return [task(url, dict(options), kind.block, spec, kinds, dtypes, region)
            for region in block_slices(spec.shape, chunks)]


def _versions(fs, root: str) -> list[str]:
    """The version ids present under ``root`` (none when the folder is empty or absent)."""
    try:
        entries = fs.ls(f"{root}/{pointer.VERSIONS}", detail=False, refresh=True)
    except FileNotFoundError:
        return []
    return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries)


def _check_sizes(url: str, sizes: Mapping[str, int]) -> None:
    """Every object of the version within the bounds a local store's files have
    (:mod:`sweeps.local_store_checks`), before any is read: else one sentence."""
    for key, size in sorted(sizes.items()):
        limit = MAX_METADATA_BYTES if key.endswith(ZARR_META) else MAX_FILE_BYTES
        if size > limit:
            raise corrupt(url, f"its file {key} holds {size / MIB:,.0f} MiB, more than the "
                               f"{limit // MIB} MiB the lab reads")


def _check_chunks(url: str, ds: xr.Dataset) -> None:
    """Every variable claims chunks of at most ``MAX_CHUNK_BYTES`` decoded (as a local
    store's must), before any of its chunks is read."""
    for name, var in ds.data_vars.items():
        chunks = var.encoding.get("chunks") or var.shape
        decoded = math.prod(chunks) * var.dtype.itemsize
        if decoded > MAX_CHUNK_BYTES:
            raise corrupt(url, f"its variable '{name}' claims chunks of {decoded / MIB:,.0f} MiB "
                               f"each when decoded, more than the {MAX_CHUNK_BYTES // MIB} MiB "
                               "the lab reads")


def _bucket_answers(fs, url: str) -> None:
    """Raise the store's own error when the bucket of ``url`` is missing, refuses access or
    cannot be reached (``exists`` would answer False to all three)."""
    try:
        fs.ls(bucket(url), detail=False, refresh=True)
    except FileNotFoundError as exc:
        if "bucket" in str(exc).lower() or str(exc).strip("/") == bucket(url):
            raise FileNotFoundError("The specified bucket does not exist") from exc
        raise


def _read_pointer(fs, root: str, url: str) -> dict | None:
    """The dataset's pointer (None when there is none); one sentence when it is damaged."""
    try:
        raw = fs.cat_file(f"{root}/{pointer.POINTER}", start=0, end=MAX_POINTER_BYTES)
    except FileNotFoundError:
        return None
    try:
        return pointer.parse_pointer(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptDatasetError(f"The dataset at {url} is corrupt (its pointer "
                                  f"{pointer.POINTER} is unreadable: {exc}); delete it and "
                                  f"{_fix(url)}.") from None


def check_replaceable_url(url: str, options: Mapping[str, Any] | None = None) -> str:
    """``url`` checked (:func:`sweeps.object_store.check_url`); refuse (one sentence) a prefix
    holding anything this lab did not write. The bucket must exist and be readable."""
    url = check_url(url)
    fs, root = filesystem(url, options)
    try:
        _bucket_answers(fs, url)
        if fs.isfile(root):
            raise DatasetError(f"{url} is an object this tool did not write, so a sweep will not "
                               "replace it; give another --out.")
        try:
            found = _read_pointer(fs, root, url) is not None
        except CorruptDatasetError:  # a damaged pointer: replaced, as a damaged local store is
            found = False
        try:
            entries = fs.ls(root, detail=False, refresh=True)
        except FileNotFoundError:
            entries = []
    except LabInputError:
        raise
    except Exception as exc:
        raise _failed(exc, url, "write to") from None
    names = {e.rstrip("/").rsplit("/", 1)[-1] for e in entries}
    foreign = names - {pointer.POINTER, pointer.VERSIONS}
    if not found and pointer.VERSIONS in names:
        foreign |= {v for v in _versions(fs, root) if not pointer.VERSION_ID.fullmatch(v)}
    if foreign:
        raise DatasetError(f"{url} holds objects this tool did not write, so a sweep will not "
                           "replace it; give another --out.")
    return url


def _finish(fs, version_root: str, version_url: str, opts: Mapping[str, Any],
            digests: dict[str, str]) -> None:
    """Record every object's checksum and ``sweep_complete``, and restore the root metadata."""
    import zarr

    for path in fs.find(version_root):
        key = path[len(version_root) + 1:]
        if key not in digests and key not in (ZARR_META, HIDDEN_ROOT):
            digests[key] = file_digest(fs.cat_file(path))
    meta = json.loads(fs.cat_file(f"{version_root}/{HIDDEN_ROOT}"))
    meta.setdefault("attributes", {}).update({md.ATTR_DIGESTS: dict(sorted(digests.items())),
                                              md.ATTR_COMPLETE: 1})
    fs.pipe_file(f"{version_root}/{ZARR_META}", json.dumps(meta, indent=2).encode())
    fs.rm_file(f"{version_root}/{HIDDEN_ROOT}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
        zarr.consolidate_metadata(_fsspec_store(version_url, opts))


def _delete(fs, paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            fs.rm(path, recursive=True)


def write_experiment_url(kind: GridKind, spec: ExperimentSpec, grid_name: str, url: str,
                         run: Runner, options: Mapping[str, Any] | None = None) -> str:
    """Compute ``spec`` of the grid ``kind`` and write it to the dataset at ``url`` (see the
    module docstring) on ``run``; returns ``url``.

    Raises
    ------
    DatasetError
        ``url`` holds objects this lab did not write, or the store refused or failed a write
        (the previous dataset is then unchanged).
    """
    url = check_replaceable_url(url, options)
    opts = options_for(url, options)
    fs, root = filesystem(url, options)
    version = pointer.new_version()
    version_url = join(url, pointer.version_path(version))
    version_root = f"{root}/{pointer.version_path(version)}"
    moved = False
    try:
        try:
            old = _read_pointer(fs, root, url)
        except CorruptDatasetError:
            old = None
        dtypes = output_dtypes(spec, kind.schema, kind.block)
        ds = kind.build(spec, grid_name, dtypes)
        pointer._step("template")
        ds.to_zarr(version_url, mode="w-", compute=False, consolidated=False, zarr_format=3,
                   storage_options=opts)
        fs.pipe_file(f"{version_root}/{HIDDEN_ROOT}", fs.cat_file(f"{version_root}/{ZARR_META}"))
        fs.rm_file(f"{version_root}/{ZARR_META}")
        pointer._step("regions")
        digests: dict[str, str] = {}
        for written in run.compute(*region_tasks_url(spec, kind, version_url, opts, dtypes)):
            digests.update(written)
        pointer._step("finish")
        _finish(fs, version_root, version_url, opts, digests)
        replaced = []
        if old is not None:
            replaced = [pointer.current_version(old),
                        *(r.split("/", 1)[1] for r in old.get("replaced", []))]
        pointer._step("pointer")
        fs.pipe_file(f"{root}/{pointer.POINTER}", pointer.pointer_bytes(version, replaced))
        moved = True
        pointer._step("cleanup")
        present = _versions(fs, root)
        _delete(fs, [f"{root}/{pointer.version_path(v)}" for v in
                     pointer.versions_to_delete(present, version, replaced)])
    except BaseException as exc:
        if not moved:
            with contextlib.suppress(Exception):
                _delete(fs, [version_root])
            kept = "the previous dataset is unchanged" if old_exists(fs, root) \
                else "nothing was written"
        else:
            kept = "the new dataset is in place"
        sentence = store_error(exc, url, "write")
        if sentence is not None:
            raise DatasetWriteError(f"Could not write the dataset at {url}: "
                                    f"{str(sentence).split(': ', 1)[1].rstrip('.')}; {kept}.") \
                from None
        if isinstance(exc, WorkersLostError):
            raise WorkersLostError(f"{str(exc).rstrip('.')} ({url}: {kept}).") from None
        raise
    return url


def old_exists(fs, root: str) -> bool:
    """Whether a pointer is there (best effort: False when the store cannot be asked)."""
    try:
        return fs.exists(f"{root}/{pointer.POINTER}")
    except Exception:
        return False


def exists_url(url: str) -> bool:
    """Whether a dataset (its pointer) is at ``url``."""
    fs, root = filesystem(url)
    try:
        return fs.exists(f"{root}/{pointer.POINTER}")
    except Exception as exc:
        raise _failed(exc, url, "read") from None


class RemoteVerifiedStore(VerifiedStore):
    """:class:`sweeps.store.VerifiedStore` over an object store: a store's failure is one
    sentence, and an object missing because a newer sweep replaced the version being read says
    so."""

    def __init__(self, store, digests: dict[str, str], path: str, pointer_key: str = "",
                 version: str = ""):
        super().__init__(store, digests, path)
        self._pointer_key = pointer_key
        self._version = version

    def _with_store(self, store) -> RemoteVerifiedStore:
        return type(self)(store, self._digests, self._path, self._pointer_key, self._version)

    async def get(self, key, prototype, byte_range=None):
        """The bytes of ``key``, checked against the manifest when it records ``key``."""
        try:
            buffer = await self._store.get(key, prototype, byte_range)
        except Exception as exc:
            raise _failed(exc, self._path, "read") from None
        expected = self._digests.get(key)
        if expected is None or byte_range is not None:
            return buffer
        if buffer is None:
            if await self._replaced():
                raise DatasetError(f"The dataset at {self._path} was replaced by a newer sweep "
                                   "while it was read; open it again.")
            raise corrupt(self._path, f"its file {key} is missing")
        if file_digest(buffer.to_bytes()) != expected:
            raise corrupt(self._path, f"its file {key} does not match its checksum")
        return buffer

    async def _replaced(self) -> bool:
        try:
            raw = await self._store.fs._cat_file(self._pointer_key)
            return pointer.current_version(pointer.parse_pointer(raw)) != self._version
        except Exception:
            return False


def open_grid_spec_url(url: str, *, check_stale: bool = True,
                       options: Mapping[str, Any] | None = None
                       ) -> tuple[xr.Dataset, ExperimentSpec]:
    """:func:`sweeps.store.open_grid_spec` for the dataset at ``url``: the version its pointer
    names, with the same checks and sentences."""
    url = check_url(url, "The dataset")
    fix = _fix(url)
    fs, root = filesystem(url, options)
    try:
        found = _read_pointer(fs, root, url)
        if found is None:
            _bucket_answers(fs, url)
            if _versions(fs, root):
                raise CorruptDatasetError(
                    f"The dataset at {url} was never completed (the sweep writing it stopped "
                    f"before its pointer {pointer.POINTER} was written); delete it and {fix}.")
            if fs.isdir(root):
                raise CorruptDatasetError(f"The dataset at {url} is not one a sweep wrote (it "
                                          f"has no {pointer.POINTER}); {fix} elsewhere.")
            raise MissingDatasetError(f"There is no dataset at {url}; {fix}.")
        version = pointer.current_version(found)
        version_root = f"{root}/{found['current']}"
        sizes = {p[len(version_root) + 1:]: (info.get("size") or 0)
                 for p, info in fs.find(version_root, detail=True).items()}
        listed = set(sizes)
        _check_sizes(url, sizes)
        try:
            meta = json.loads(fs.cat_file(f"{version_root}/{ZARR_META}"))
            attrs = meta.get("attributes", {}) if isinstance(meta, dict) else None
            if not isinstance(attrs, dict):
                raise ValueError("its root metadata is not a Zarr group's")
        except FileNotFoundError:
            raise CorruptDatasetError(f"The dataset at {url} has lost its metadata (its root "
                                      f"{ZARR_META} is missing); delete it and {fix}.") from None
        except ValueError as exc:
            raise CorruptDatasetError(f"The dataset at {url} is unreadable ({type(exc).__name__}: "
                                      f"{exc}); delete it and {fix}.") from None
    except LabInputError:
        raise
    except Exception as exc:
        raise _failed(exc, url, "read the dataset at") from None
    missing = [a for a in md.REQUIRED_ATTRS if a not in attrs]
    if missing:
        raise CorruptDatasetError(f"The dataset at {url} is incomplete or not written by a "
                                  f"sweep (no '{missing[0]}' attribute); delete it and {fix}.")
    stored = stored_spec(url, attrs[md.ATTR_SPEC], attrs.get(md.ATTR_NAME))
    digests = attrs.get(md.ATTR_DIGESTS)
    if not isinstance(digests, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
        raise corrupt(url, f"its '{md.ATTR_DIGESTS}' attribute is not a checksum list")
    try:
        inner = _fsspec_store(join(url, found["current"]), options_for(url, options),
                              read_only=True)
        ds = xr.open_zarr(RemoteVerifiedStore(inner, digests, url, f"{root}/{pointer.POINTER}",
                                              version), consolidated=False, zarr_format=3)
    except LabInputError:
        raise
    except Exception as exc:
        raise _failed(exc, url, "read the dataset at") if store_error(exc, url, "read") else \
            CorruptDatasetError(f"The dataset at {url} is unreadable ({type(exc).__name__}: "
                                f"{exc}); delete it and {fix}.") from None
    _check_chunks(url, ds)
    ds, spec = checked_against_spec(ds, stored, url, fix, check_stale=check_stale)
    lost = [key for key in digests if key not in listed]
    if lost:
        raise corrupt(url, f"its file {lost[0]} is missing"
                      + (f", and {len(lost) - 1} more" if len(lost) > 1 else ""))
    return cf_units(ds), spec


def open_grid_url(url: str, *, check_stale: bool = True) -> xr.Dataset:
    """:func:`open_grid_spec_url`'s dataset."""
    return open_grid_spec_url(url, check_stale=check_stale)[0]


def open_grid_url_options(url: str, options: Mapping[str, Any] | None = None) -> xr.Dataset:
    """The dataset at ``url`` opened with the storage ``options`` (None: this process's)."""
    return open_grid_spec_url(url, options=options)[0]


def list_stores(prefix: str, pattern) -> list[str]:
    """Names of the ``NAME.zarr`` datasets directly under ``prefix`` (``pattern`` checks a name);
    none when the prefix cannot be listed."""
    fs, root = filesystem(prefix)
    try:
        entries = fs.ls(root, detail=True, refresh=True)
    except Exception:
        return []
    names = []
    for entry in sorted(entries, key=lambda e: e["name"]):
        base = entry["name"].rstrip("/").rsplit("/", 1)[-1]
        stem = base[:-5] if base.endswith(".zarr") else None
        if stem and entry.get("type") == "directory" and pattern.fullmatch(stem) \
                and not stem.startswith("."):
            names.append(stem)
        if len(names) >= MAX_LISTED:
            break
    return names


def check_prefix(prefix: str) -> str:
    """``--datasets``' URL, checked: its bucket exists and can be listed (one sentence if not)."""
    prefix = check_url(prefix, "--datasets")
    fs, root = filesystem(prefix)
    try:
        _bucket_answers(fs, prefix)
        with contextlib.suppress(FileNotFoundError):
            fs.ls(root, detail=False, refresh=True)
    except Exception as exc:
        raise _failed(exc, prefix, "list") from None
    return prefix
