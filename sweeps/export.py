"""Export any selection of a grid as CSV, Parquet, NetCDF or Zarr.

Selections are written as on the command line, ``dim=value``: one value (the dimension is
dropped and kept as a scalar coordinate), a comma-separated list (``batch=1,8,64``) or an
inclusive numeric range (``context=1024:8192``). Unknown dimensions or values get one sentence
listing the valid ones.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from lab.errors import LabInputError
from sweeps import export_record, files
from sweeps import metadata as md
from sweeps.axes import choose_chunks
from sweeps.conventions import (
    COLUMN_ATTRS,
    arrow_field_metadata,
    cf_attrs,
    cf_units,
    consolidate,
    flags_as_text,
    netcdf_encoding,
)
from sweeps.grid_schema import DEFAULT_CHUNK_CELLS

FORMATS = ("csv", "parquet", "netcdf", "zarr")
"""Export formats."""
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".nc": "netcdf", ".zarr": "zarr"}
"""File suffixes that imply a format when ``--format`` is not given."""
MAX_LISTED = 24
"""Longest list of valid values quoted in an error message."""


def _listed(values: Sequence) -> str:
    shown = [str(v) for v in values[:MAX_LISTED]]
    more = f", … ({len(values)} in all)" if len(values) > MAX_LISTED else ""
    return ", ".join(shown) + more


def _parse_value(text: str, dim: str, coord: np.ndarray):
    if coord.dtype.kind in "iuf":
        try:
            number = float(text)
        except ValueError:
            raise LabInputError(f"{dim}={text} is not a number; valid {dim} values: "
                                f"{_listed(list(coord))}.") from None
        return int(number) if coord.dtype.kind in "iu" and number.is_integer() else number
    return text


def _parse_one(item: str, ds: xr.Dataset, experiment: str):
    if "=" not in item:
        raise LabInputError(f"Selection '{item}' must look like dim=value (for example "
                            f"{next(iter(ds.dims))}={ds[next(iter(ds.dims))].values[0]}).")
    dim, text = (part.strip() for part in item.split("=", 1))
    if dim not in ds.dims:
        raise LabInputError(f"'{dim}' is not a dimension of the {experiment} dataset; valid: "
                            f"{', '.join(map(str, ds.dims))}.")
    coord = ds[dim].values
    valid = list(coord.tolist())
    if ":" in text and coord.dtype.kind in "iuf":
        low, high = (_parse_value(t, dim, coord) for t in text.split(":", 1))
        chosen = [v for v in valid if low <= v <= high]
        if not chosen:
            raise LabInputError(f"{dim}={text} holds no grid values; valid {dim} values: "
                                f"{_listed(valid)}.")
        return dim, chosen
    values = [_parse_value(t.strip(), dim, coord) for t in text.split(",")]
    for value in values:
        if value not in valid:
            raise LabInputError(f"{dim}={value} is not on the grid; valid {dim} values: "
                                f"{_listed(valid)}.")
    return dim, values[0] if len(values) == 1 else values


def parse_selection(items: Sequence[str], ds: xr.Dataset, experiment: str) -> dict:
    """``{dim: value or list}`` from ``dim=value`` strings, checked against ``ds``."""
    selection = {}
    for item in items:
        dim, value = _parse_one(item, ds, experiment)
        if dim in selection:
            raise LabInputError(f"'{dim}' is selected twice; give its values once, "
                                "comma-separated.")
        selection[dim] = value
    return selection


def select(ds: xr.Dataset, items: Sequence[str], experiment: str,
           variables: Sequence[str] | None = None) -> xr.Dataset:
    """The part of ``ds`` named by ``items`` (and only ``variables`` when given)."""
    if variables:
        unknown = [v for v in variables if v not in ds.data_vars]
        if unknown:
            raise LabInputError(f"'{unknown[0]}' is not a variable of the {experiment} "
                                f"dataset; valid: {', '.join(map(str, ds.data_vars))}.")
        ds = ds[list(variables)]
    return ds.sel(parse_selection(items, ds, experiment))


def portable(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with string coordinates as Python-object strings (what every writer accepts).

    Zarr reads strings back as numpy ``StringDType``; written as is, they would become Zarr's
    unstable fixed-length UTF-32 type. Object strings are written as variable-length UTF-8.
    """
    replace = {name: var.astype(object) for name, var in ds.variables.items()
               if var.dtype.kind in "UT" or isinstance(var.dtype, np.dtypes.StringDType)}
    out = ds.assign_coords({k: v for k, v in replace.items() if k in ds.coords})
    out = out.assign({k: v for k, v in replace.items() if k in ds.data_vars})
    for name in replace:
        out[name].attrs = dict(ds[name].attrs)
        out[name].encoding = {}
    return out


def netcdf_engine() -> str:
    """The first NetCDF-4 writer installed: ``h5netcdf`` (with h5py) or ``netcdf4``."""
    import importlib.util

    if importlib.util.find_spec("h5py") and importlib.util.find_spec("h5netcdf"):
        return "h5netcdf"
    if importlib.util.find_spec("netCDF4"):
        return "netcdf4"
    raise LabInputError("NetCDF export needs h5netcdf with h5py, or netCDF4; install one "
                        "(pip install h5py).")


def format_for(path: str | Path, fmt: str | None) -> str:
    """The export format: ``fmt`` if given, else from the file suffix."""
    if fmt:
        if fmt not in FORMATS:
            raise LabInputError(f"Format '{fmt}' is not one of {', '.join(FORMATS)}.")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise LabInputError(f"Cannot tell the format of '{path}'; give --format "
                            f"({', '.join(FORMATS)}) or a {', '.join(SUFFIXES)} name.")
    return SUFFIXES[suffix]


def _frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per cell, the inputs first (dimensions, then scalar coordinates such as a
    selected model and the grid's constants), then the variables."""
    frame = ds.to_dataframe().reset_index() if ds.dims else ds.expand_dims("cell").to_dataframe()
    frame = frame.reset_index(drop=True).drop(columns=["cell"], errors="ignore")
    order = []
    try:  # the grid's own order: its axes, then its constants
        spec = json.loads(ds.attrs.get(md.ATTR_SPEC, "{}"))
    except (TypeError, ValueError):
        spec = None
    if isinstance(spec, dict):
        order = [key for part in (spec.get("axes"), spec.get("constants"))
                 if isinstance(part, dict) for key in part]
    names = [*order, *map(str, ds.dims), *map(str, ds.coords)]
    leading = list(dict.fromkeys(name for name in names if name in frame))
    return frame[leading + [c for c in frame.columns if c not in leading]]


def column_attrs(ds: xr.Dataset) -> dict:
    """``{name: {"units", "counted_as", "long_name"}}`` of every variable and coordinate (those
    of the three it has)."""
    return {str(k): {a: v.attrs[a] for a in COLUMN_ATTRS if a in v.attrs}
            for k, v in ds.variables.items()}


def check_output(path: str | Path) -> Path:
    """``path`` as an export target, refused with one sentence unless it is new or holds
    something this lab wrote (nothing else is ever replaced)."""
    if not str(path).strip():
        raise LabInputError("The output name is empty; give a file name with -o.")
    path = Path(path)
    try:
        present = path.exists() or path.is_symlink()
    except OSError as exc:  # a name too long, a folder that cannot be searched
        raise LabInputError(f"Could not write {path}: {files.os_reason(exc)}; nothing was "
                            "written.") from None
    if present and not files.lab_written(path):
        if path.is_file() and export_record.changed_since(path):  # not "did not write"
            raise LabInputError(f"{path} was exported by this tool but has changed since, so it "
                                "is yours and not replaced; give a new name with -o.")
        what = "a folder" if path.is_dir() else "a file"
        raise LabInputError(f"{path} is {what} this tool did not write, so it is not replaced; "
                            "give a new name with -o.")
    return path


def _write_file(ds: xr.Dataset, path: Path, fmt: str) -> None:
    """Write ``ds`` (made portable) as ``fmt`` to the new path ``path``."""
    if fmt == "csv":
        _frame(flags_as_text(ds)).to_csv(path, index=False)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        flat = flags_as_text(ds)
        table = pa.Table.from_pandas(_frame(flat), preserve_index=False)
        meta = {"attrs": {k: v for k, v in ds.attrs.items() if isinstance(v, str)},
                "columns": column_attrs(flat)}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"inference_lab": json.dumps(meta).encode()})
        pq.write_table(arrow_field_metadata(table, column_attrs(flat)), path)
    elif fmt == "netcdf":
        ds = ds.load()
        for item in (ds, *ds.variables.values()):
            item.attrs = {k: int(v) if isinstance(v, bool) else v for k, v in item.attrs.items()}
        # Built in memory, written by Python: HDF5 never meets a failing write (a full disk or
        # a file size limit once crashed it); the OS error comes back as an exception.
        path.write_bytes(bytes(ds.to_netcdf(engine=netcdf_engine(),
                                            encoding=netcdf_encoding(ds))))
    else:
        for name in ds.variables:
            ds[name].encoding = {}
        if ds.dims:
            sizes = tuple(ds.sizes.values())
            ds = ds.chunk(dict(zip(ds.sizes, choose_chunks(sizes, DEFAULT_CHUNK_CELLS),
                                   strict=True)))
        ds.attrs[md.ATTR_EXPORTED] = 1  # opened as an export, not checked as a sweep's grid
        ds.to_zarr(path, mode="w-", consolidated=False, zarr_format=3)
        consolidate(path)


def _missing_parents(path: Path) -> list[Path]:
    return [p for p in path.parents if not p.exists()][::-1]


def write(ds: xr.Dataset, path: str | Path, fmt: str) -> Path:
    """Write ``ds`` to ``path`` as ``fmt``, replacing only an earlier export of this lab.

    CSV is plain (one row per cell, a column per coordinate and variable, ``reason`` as text
    and ``reason_code`` its code). Parquet keeps the dataset attributes and every column's
    ``units``/``counted_as``/``long_name`` in its schema metadata (key ``inference_lab``) and
    in each field's metadata. NetCDF and Zarr keep every attribute. Every ``units`` is a CF
    unit UDUNITS-2 and plain pint parse (:func:`~sweeps.conventions.cf_units`).

    The data goes to a hidden temporary name beside ``path`` and is renamed into place once
    complete: a failure (full disk, read-only folder, a file where a folder should be, a name
    too long, a file size limit) leaves nothing behind and raises one sentence.

    Raises
    ------
    LabInputError
        ``path`` holds something this lab did not write, or the write failed.
    """
    if fmt not in FORMATS:
        raise LabInputError(f"Format '{fmt}' is not one of {', '.join(FORMATS)}.")
    path = check_output(path)
    ds = cf_units(portable(ds))
    ds.attrs = {**{k: v for k, v in ds.attrs.items() if k != md.ATTR_DIGESTS},
                **cf_attrs(f"export as {fmt}, selection: "
                           f"{ds.attrs.get('selection', 'all')}", ds.attrs.get("history"))}
    created = _missing_parents(path)
    tmp = files.temporary_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(ds, tmp, fmt)
        files.replace(tmp, path)
        if fmt == "csv":  # a CSV says nothing of its writer: the lab keeps a record
            export_record.remember(path)
    except BaseException as exc:
        removed = files.remove(tmp)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, OSError) and files.is_disk_error(exc):
            left = "nothing was written" if removed else f"the partial file {tmp} is left"
            raise LabInputError(f"Could not write {path}: {files.os_reason(exc)}; "
                                f"{left}.") from None
        raise
    return path
