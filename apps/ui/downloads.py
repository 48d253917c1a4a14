"""Data downloads: a chart's data as CSV, a whole dataset as NetCDF."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable

import panel_material_ui as pmui
import xarray as xr


def dataset_csv(ds: xr.Dataset) -> str:
    """``ds`` flattened to CSV, one row per cell, SI units as in the data (see column names)."""
    frame = ds.to_dataframe().reset_index()
    return frame.to_csv(index=False)


def dataset_netcdf(ds: xr.Dataset) -> bytes:
    """``ds`` as NetCDF-4 bytes (h5netcdf engine), attrs and units kept."""
    handle, path = tempfile.mkstemp(suffix=".nc")
    os.close(handle)
    try:
        clean = ds.copy()
        for name, var in clean.variables.items():
            if var.dtype == object:
                clean[name] = var.astype(str)
        clean.to_netcdf(path, engine="h5netcdf")
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(path)


def csv_button(get_data: Callable[[], xr.Dataset], filename: str, label: str) -> pmui.FileDownload:
    """A download button that builds the CSV when clicked, from the data current then."""
    return pmui.FileDownload(callback=lambda: io.StringIO(dataset_csv(get_data())),
                             filename=filename, label=label,
                             embed=False)
