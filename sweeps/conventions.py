"""What other tools expect of the lab's files: CF attributes, consolidated Zarr metadata,
compressed NetCDF, flag codes as text and per-column units in CSV/Parquet exports.

- Every dataset a sweep writes and every export carries the CF global attributes
  ``Conventions``, ``history`` (one line per program that made or changed the file, oldest
  first, each starting with its UTC time) and ``date_created`` (ISO 8601, UTC).
- A Zarr store gets consolidated metadata, so a plain ``xarray.open_zarr(path)`` opens it
  without a warning (the lab itself reads each array's own, checksummed metadata).
- NetCDF numeric variables are deflated (lossless).
- Every ``units`` attribute is a CF unit UDUNITS-2 and plain pint both parse: counts are
  ``"1"`` and their rates ``"1/s"``, with what is counted in ``counted_as`` (``"tokens"``);
  bytes ``"byte"``, gigabytes ``"Gbyte"`` (:mod:`lab.unit_attrs`).
- In the flat exports (CSV, Parquet) a flag variable (``reason``) is its meaning as text
  (``valid``, ``tp_heads``, …), followed by its integer code (``reason_code``); a Parquet
  column carries its ``units``, ``counted_as`` and ``long_name`` in its Arrow field metadata.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import xarray as xr

from lab.unit_attrs import COUNTED_AS, cf_unit_attrs

CONVENTIONS = "CF-1.10"
"""The CF conventions version the attributes follow."""
NETCDF_COMPRESSION = {"zlib": True, "complevel": 1, "shuffle": True}
"""HDF5 encoding of every numeric NetCDF variable (lossless deflate)."""


def package_version() -> str:
    """The installed ``inference-lab`` version (``0.0.0`` from an uninstalled source tree)."""
    try:
        return version("inference-lab")
    except PackageNotFoundError:
        return "0.0.0"


def now_iso() -> str:
    """The current UTC time as ISO 8601 to the second, ``2026-12-03T15:09:47Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cf_attrs(action: str, history: str | None = None) -> dict:
    """``Conventions``, ``history`` and ``date_created`` for a file made now by ``action``.

    ``history`` is the earlier history (of the dataset an export was made from); the new line
    is appended to it.
    """
    stamp = now_iso()
    line = f"{stamp} inference-lab {package_version()}: {action}"
    return {"Conventions": CONVENTIONS,
            "history": f"{history}\n{line}" if history else line,
            "date_created": stamp}


def consolidate(store: str | Path) -> None:
    """Write consolidated metadata into the Zarr store ``store`` (its root ``zarr.json``).

    Zarr 3 warns that consolidated metadata is not in its format's specification yet; it is
    what xarray looks for first, so the lab writes it knowingly and silences that warning.
    """
    import zarr

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
        zarr.consolidate_metadata(str(store))


def netcdf_encoding(ds: xr.Dataset) -> dict:
    """Per-variable NetCDF encoding: every numeric data variable deflated."""
    return {name: dict(NETCDF_COMPRESSION) for name, var in ds.data_vars.items()
            if var.dtype.kind in "iufb"}


FLAG_VARIABLES = ("reason",)
"""Variables of the lab's datasets that are flag codes (``flag_values``/``flag_meanings``)."""
CODE_SUFFIX = "_code"
"""Suffix of the integer code column a flag variable keeps in the flat exports
(``reason_code``)."""
OLD_TEXT_SUFFIX = "_text"
"""Suffix of the text column earlier flat exports carried (``reason_text``), still recognised
as the lab's when an export is replaced."""


def flags_as_text(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with each flag variable (``flag_values``/``flag_meanings``) as text, for the flat
    exports.

    ``reason`` becomes its meaning: ``"valid"`` for 0 and the word of ``flag_meanings`` for each
    other code (``"tp_heads"``, ``"no_fp8"``, …); the integer code follows it as ``reason_code``
    with the flag attributes.
    """
    variables = {}
    for name, var in ds.data_vars.items():
        values, meanings = var.attrs.get("flag_values"), var.attrs.get("flag_meanings")
        if values is None or not isinstance(meanings, str):
            variables[name] = var
            continue
        lookup = dict(zip(np.atleast_1d(values).tolist(), meanings.split(), strict=True))
        codes = np.asarray(var.values)
        text = codes.astype(str).astype(object)          # a code without a meaning stays a number
        for code, word in lookup.items():
            text[codes == code] = word
        long_name = str(var.attrs.get("long_name", name))
        variables[name] = xr.Variable(var.dims, text, {"long_name": f"{long_name} (as text)"})
        variables[f"{name}{CODE_SUFFIX}"] = var.variable
    return xr.Dataset(variables, coords=ds.coords, attrs=ds.attrs)


def cf_units(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with every variable's and coordinate's ``units`` a CF unit UDUNITS-2 and plain
    pint both parse, what a count counts in ``counted_as`` (see :mod:`lab.unit_attrs`).

    A dataset already in these units comes back unchanged.
    """
    out = ds.copy()
    for name, var in ds.variables.items():
        if "units" in var.attrs:
            out[name].attrs = {**var.attrs, **cf_unit_attrs(str(var.attrs["units"]))}
    return out


COLUMN_ATTRS = ("units", COUNTED_AS, "long_name")
"""Attributes of a variable a flat export keeps per column (Parquet: Arrow field metadata)."""


def arrow_field_metadata(table, columns: dict):
    """``table`` (pyarrow) with each column's :data:`COLUMN_ATTRS` as field metadata."""
    import pyarrow as pa

    fields = []
    for field in table.schema:
        attrs = columns.get(field.name, {})
        meta = {k.encode(): str(v).encode() for k, v in attrs.items() if k in COLUMN_ATTRS}
        fields.append(field.with_metadata({**(field.metadata or {}), **meta}) if meta else field)
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))
