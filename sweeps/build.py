"""Turn an experiment's block function into a lazy, chunked ``xarray.Dataset``.

A *block function* takes the 1-D coordinate values of one chunk (a dict, dimension order) and
the constants, calls the experiment's vectorised ``lab`` function with the axes shaped to
broadcast, and returns arrays that broadcast to the chunk's shape. :func:`build_dataset` maps it
over every chunk with :func:`xarray.map_blocks`: one task computes every variable of a chunk.
Output dtypes come from running the block function on the grid's first cell.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import xarray as xr
import zarr

from lab.unit_attrs import cf_unit_attrs
from sweeps.allocator import tune_in_dask_worker
from sweeps.axes import choose_chunks
from sweeps.grid_schema import ExperimentSpec, Schema

BlockFunction = Callable[[Mapping[str, np.ndarray], Mapping], dict]
"""``block(coords, constants) -> {variable: array broadcastable to the block's shape}``."""

INT8_VARIABLES = ("reason",)
"""Small integer codes stored as int8."""


def axis_view(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """``values`` (1-D) reshaped to lie along ``axis`` of an ``ndim``-D broadcast."""
    shape = [1] * ndim
    shape[axis] = len(values)
    return np.asarray(values).reshape(shape)


def storage_dtype(name: str, sample: np.ndarray, float_dtype: str) -> np.dtype:
    """The dtype a variable is stored with, from a sample of its values."""
    sample = np.asarray(sample)
    if sample.dtype == bool:
        return np.dtype(bool)
    if name in INT8_VARIABLES:
        return np.dtype(np.int8)
    if np.issubdtype(sample.dtype, np.integer):
        return np.dtype(np.int64)
    return np.dtype(float_dtype)


def coordinate_array(values, kind: str) -> np.ndarray:
    """Axis values as stored: strings as variable-length (object) strings, numbers native.

    Zarr 3 stores ``object`` string arrays with its stable variable-length UTF-8 type; numpy's
    fixed-width ``<U`` would be written as the unstable fixed-length UTF-32 type.
    """
    if kind == "str":
        return np.array([str(v) for v in values], dtype=object)
    if kind == "int":
        return np.array(values, dtype=np.int64)
    if kind == "bool":
        return np.array(values, dtype=bool)
    return np.array(values, dtype=np.float64)


def run_block(block: BlockFunction, spec: ExperimentSpec, coords: Mapping[str, np.ndarray],
              dtypes: Mapping[str, np.dtype]) -> dict[str, np.ndarray]:
    """Call ``block`` on one chunk's coordinates; return full-shape arrays in storage dtypes.

    Outputs that vary along fewer dimensions come back as read-only broadcast views (no copy).
    """
    tune_in_dask_worker()
    shape = tuple(len(v) for v in coords.values())
    raw = block(coords, spec.constants)
    return {name: np.broadcast_to(np.asarray(raw[name]), shape).astype(dtypes[name], copy=False)
            for name in spec.variables}


def output_dtypes(spec: ExperimentSpec, schema: Schema, block: BlockFunction) -> dict:
    """Storage dtype of every variable, from the block function run on the grid's first cell."""
    kinds = {r.name: r.kind for r in schema.axes}
    first = {dim: coordinate_array(spec.axes[dim][:1], kinds[dim]) for dim in schema.dims}
    sample = block(first, spec.constants)
    return {name: storage_dtype(name, sample[name], spec.float_dtype) for name in spec.variables}


def block_slices(shape: tuple[int, ...], chunks: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The index slices of every chunk of an array of ``shape`` cut into ``chunks``."""
    starts = [range(0, n, c) for n, c in zip(shape, chunks, strict=True)]
    return [tuple(slice(a, min(a + c, n)) for a, c, n in zip(start, chunks, shape, strict=True))
            for start in itertools.product(*starts)]


def file_digest(data: bytes) -> str:
    """Checksum of one stored file: BLAKE2b, 16 bytes, hex (what the manifest records)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_region(path: str, block: BlockFunction, spec: ExperimentSpec, kinds: Mapping,
                 dtypes: Mapping, region: tuple[slice, ...]) -> dict[str, str]:
    """Compute one chunk, write every variable's values into the Zarr store at ``path``, and
    return the checksum of every chunk file written (``{store key: digest}``).

    One task per chunk does both, on whichever worker runs it: no block travels between
    processes and memory holds one chunk at a time. Every chunk is stored, even one holding
    only fill values, so a missing chunk file always means damage. The arrays are opened one
    by one (the store's root metadata is hidden until the sweep completes).
    """
    coords = {dim: coordinate_array(spec.axes[dim][sl], kinds[dim])
              for dim, sl in zip(spec.axes, region, strict=True)}
    arrays = run_block(block, spec, coords, dtypes)
    store = zarr.storage.LocalStore(path)
    digests = {}
    for name, values in arrays.items():
        array = zarr.open_array(store, path=name, mode="r+", zarr_format=3)
        array = array.with_config({"write_empty_chunks": True})
        array[region] = values
        index = tuple(s.start // c for s, c in zip(region, array.chunks, strict=True))
        key = f"{name}/{array.metadata.encode_chunk_key(index)}"
        digests[key] = file_digest((Path(path) / key).read_bytes())
    return digests


def region_tasks(spec: ExperimentSpec, schema: Schema, block: BlockFunction,
                 path: str, dtypes: Mapping[str, np.dtype]) -> list:
    """One ``dask.delayed`` :func:`write_region` per chunk of ``spec`` (chunk-aligned).

    ``dtypes`` are the storage dtypes from :func:`output_dtypes`.
    """
    kinds = {r.name: r.kind for r in schema.axes}
    chunks = choose_chunks(spec.shape, spec.chunk_cells)
    task = dask.delayed(write_region, pure=False)
    return [task(path, block, spec, kinds, dtypes, region)
            for region in block_slices(spec.shape, chunks)]


def _block_to_dataset(placeholder: xr.DataArray, block: BlockFunction, spec: ExperimentSpec,
                      dtypes: Mapping[str, np.dtype]) -> xr.Dataset:
    coords = {dim: placeholder[dim].values for dim in placeholder.dims}
    arrays = run_block(block, spec, coords, dtypes)
    return xr.Dataset({name: (placeholder.dims, arr if arr.flags.writeable else arr.copy())
                       for name, arr in arrays.items()},
                      coords=placeholder.coords)


def build_dataset(spec: ExperimentSpec, schema: Schema, block: BlockFunction,
                  units: Mapping[str, tuple[str, str]], attrs: Mapping,
                  var_attrs: Mapping[str, dict] | None = None,
                  dtypes: Mapping[str, np.dtype] | None = None) -> xr.Dataset:
    """The lazy dataset of ``spec``: one dask chunk per block, every variable labelled.

    Parameters
    ----------
    spec : ExperimentSpec
        Axes, constants, variables, chunking and float type.
    schema : Schema
        Labels of the axes and constants.
    block : BlockFunction
        Computes one chunk by calling the experiment's ``lab`` function.
    units : mapping
        ``(long_name, units)`` of every variable.
    attrs : mapping
        Dataset attributes (provenance).
    var_attrs : mapping, optional
        Extra attributes per variable (flag meanings of codes).
    dtypes : mapping, optional
        Storage dtype of every variable from :func:`output_dtypes`; probed here when not given
        (pass it to share one probe with :func:`region_tasks`).

    Returns
    -------
    xarray.Dataset
        Dask-backed, chunked along :func:`~sweeps.axes.choose_chunks`.
    """
    rules = {r.name: r for r in (*schema.axes, *schema.constants)}
    dims = schema.dims
    coords = {}
    for dim in dims:
        rule = rules[dim]
        coords[dim] = xr.Variable(dim, coordinate_array(spec.axes[dim], rule.kind),
                                  {"long_name": rule.long_name, **cf_unit_attrs(rule.units)})
    for name, value in spec.constants.items():
        rule = rules[name]
        coords[name] = xr.Variable((), coordinate_array([value], rule.kind).reshape(()),
                                   {"long_name": rule.long_name, **cf_unit_attrs(rule.units)})
    if dtypes is None:
        dtypes = output_dtypes(spec, schema, block)
    shape = spec.shape
    chunks = choose_chunks(shape, spec.chunk_cells)
    placeholder = xr.DataArray(da.empty(shape, chunks=chunks, dtype=np.uint8), dims=dims,
                               coords={d: coords[d] for d in dims})
    template = xr.Dataset(
        {name: (dims, da.empty(shape, chunks=chunks, dtype=dtypes[name]))
         for name in spec.variables},
        coords=placeholder.coords,
    )
    result = xr.map_blocks(_block_to_dataset, placeholder, args=(block, spec, dtypes),
                           template=template)
    result = result.assign_coords({k: v for k, v in coords.items() if k not in dims})
    extra = var_attrs or {}
    for name in spec.variables:
        long_name, unit = units[name]
        result[name].attrs = {"long_name": long_name, **cf_unit_attrs(unit), **extra.get(name, {})}
    for dim in dims:
        result[dim].attrs = dict(coords[dim].attrs)
    result.attrs = dict(attrs)
    return result
