"""Data downloads: a chart's data as CSV, a whole dataset as NetCDF."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path

import panel_material_ui as pmui
import xarray as xr

from sweeps.export import write


def _exported(ds: xr.Dataset, fmt: str, suffix: str) -> bytes:
    """``ds`` written by the CLI's exporter (:func:`sweeps.export.write`), as bytes."""
    with tempfile.TemporaryDirectory(prefix="inference-lab-download-") as folder:
        return write(ds, Path(folder) / f"data{suffix}", fmt).read_bytes()


def dataset_csv(ds: xr.Dataset) -> str:
    """``ds`` flattened to CSV, one row per cell, inputs first, SI units as in the data."""
    return _exported(ds, "csv", ".csv").decode("utf-8")


def dataset_netcdf(ds: xr.Dataset) -> bytes:
    """``ds`` as NetCDF-4 bytes, attrs and units kept."""
    return _exported(ds, "netcdf", ".nc")


def csv_button(get_data: Callable[[], xr.Dataset], filename: str, label: str) -> pmui.FileDownload:
    """A download button that builds the CSV when clicked, from the data current then."""
    return pmui.FileDownload(callback=lambda: io.StringIO(dataset_csv(get_data())),
                             filename=filename, label=label,
                             embed=False)
