"""Data downloads: a chart's data as CSV, a whole dataset as NetCDF.

The whole dataset is large (the decode grid is ~140 MB in memory). Its NetCDF is built once
per server process, chunk by chunk from the lazy dataset and compressed (~10 MB), and every
download sends those bytes; one download is prepared at a time per process, and a second
request meanwhile gets a sentence instead of a second copy in memory.
"""

from __future__ import annotations

import asyncio
import io
import tempfile
import threading
from collections.abc import Callable
from html import escape
from pathlib import Path

import panel as pn
import panel_material_ui as pmui
import param
import xarray as xr
from panel.viewable import Viewer

from apps.ui.panel_compat import OffLoopFileDownload
from apps.ui.shell.held_size import BUTTON_WIDTH
from lab.errors import LabInputError
from sweeps.conventions import cf_attrs, cf_units
from sweeps.export import netcdf_engine, portable, write
from sweeps.metadata import ATTR_DIGESTS

NETCDF_COMPRESSION = {"zlib": True, "complevel": 1, "shuffle": True}
"""HDF5 encoding of every numeric variable of a whole-dataset NetCDF (lossless)."""
MAX_CACHED_FILES = 2
"""Whole-dataset NetCDF files kept in memory per process (one per dataset object served)."""

DOWNLOAD_LOCK = threading.Lock()
"""Held while a whole-dataset download is prepared and sent: one at a time per process."""
_files: dict[int, tuple[xr.Dataset, bytes]] = {}


def _exported(ds: xr.Dataset, fmt: str, suffix: str) -> bytes:
    """``ds`` written by the CLI's exporter (:func:`sweeps.export.write`), as bytes."""
    with tempfile.TemporaryDirectory(prefix="inference-lab-download-") as folder:
        return write(ds, Path(folder) / f"data{suffix}", fmt).read_bytes()


def dataset_csv(ds: xr.Dataset) -> str:
    """``ds`` flattened to CSV, one row per cell, inputs first, SI units as in the data."""
    return _exported(ds, "csv", ".csv").decode("utf-8")


def dataset_netcdf(ds: xr.Dataset) -> bytes:
    """``ds`` as NetCDF-4 bytes, attrs and units kept (the CLI exporter's file)."""
    return _exported(ds, "netcdf", ".nc")


def compressed_netcdf(ds: xr.Dataset) -> bytes:
    """``ds`` as compressed NetCDF-4 bytes, without loading it whole.

    Values, coordinates and attributes are those of :func:`sweeps.export.write` (booleans in
    attributes as 0/1, strings as variable-length UTF-8); numeric variables are deflated, and
    a lazy (dask-backed) dataset is written chunk by chunk. Built in memory: HDF5 never meets
    a failing disk write.
    """
    out = cf_units(portable(ds))
    out.attrs = {**{k: v for k, v in out.attrs.items() if k != ATTR_DIGESTS},  # as the CLI export
                 **cf_attrs("serve: whole-dataset NetCDF download",
                            out.attrs.get("history"))}
    for item in (out, *out.variables.values()):
        item.attrs = {k: int(v) if isinstance(v, bool) else v for k, v in item.attrs.items()}
    encoding = {name: dict(NETCDF_COMPRESSION) for name, var in out.data_vars.items()
                if var.dtype.kind in "iufb"}
    return bytes(out.to_netcdf(engine=netcdf_engine(), encoding=encoding))


def whole_dataset_netcdf(ds: xr.Dataset) -> bytes:
    """The compressed NetCDF of ``ds``, built on first request and kept for the next ones.

    Call with :data:`DOWNLOAD_LOCK` held (as :class:`WholeDatasetButton` does).
    """
    cached = _files.get(id(ds))
    if cached is not None and cached[0] is ds:
        return cached[1]
    while len(_files) >= MAX_CACHED_FILES:
        _files.pop(next(iter(_files)))
    data = compressed_netcdf(ds)
    _files[id(ds)] = (ds, data)
    return data


def busy_sentence() -> str:
    """What a second visitor reads while a whole-dataset download is being prepared."""
    return ("Another whole-dataset download is being prepared on this server; try again in "
            "a minute.")


class WholeDatasetButton(OffLoopFileDownload):
    """A download button for a whole dataset: prepared off the event loop, one at a time.

    ``on_message`` gets one sentence when the download cannot start (another is running) or
    the file cannot be written, and None when a download went out.
    """

    def __init__(self, dataset: xr.Dataset, on_message: Callable[[str | None], None],
                 **params):
        super().__init__(**params)
        self._dataset = dataset
        self._on_message = on_message

    async def prepare(self) -> None:
        if not DOWNLOAD_LOCK.acquire(blocking=False):
            self._on_message(busy_sentence())
            return
        try:
            data = await asyncio.to_thread(whole_dataset_netcdf, self._dataset)
            self.send(data)
        except LabInputError as exc:
            self._on_message(str(exc))
        else:
            self._on_message(None)
        finally:
            DOWNLOAD_LOCK.release()



class WholeDatasetDownload(Viewer):
    """The whole-dataset NetCDF button and, below it, why a download did not start.

    Lay out :attr:`button` and :attr:`message` where they belong, or the view itself.
    """

    dataset = param.ClassSelector(class_=xr.Dataset, doc="The dataset offered whole.")
    filename = param.String(default="dataset.nc", doc="Name the browser saves the file as.")
    label = param.String(default="Whole dataset (NetCDF)", doc="Button text.")

    def __init__(self, **params):
        super().__init__(**params)
        self.message = pn.pane.HTML("", visible=False, sizing_mode="stretch_width",
                                    css_classes=["lab-download-message"])
        self.button = WholeDatasetButton(self.dataset, self._say, filename=self.filename,
                                         label=self.label)

    def _say(self, sentence: str | None) -> None:
        text = f'<p role="alert">{escape(sentence)}</p>' if sentence else ""
        self.message.param.update(object=text, visible=bool(sentence))

    def __panel__(self):
        return pn.Column(self.button, self.message, sizing_mode="stretch_width", margin=0)


def csv_button(get_data: Callable[[], xr.Dataset], filename: str, label: str) -> pmui.FileDownload:
    """A download button that builds the CSV when clicked, from the data current then."""
    return pmui.FileDownload(callback=lambda: io.StringIO(dataset_csv(get_data())),
                             filename=filename, label=label, embed=False,
                             width=BUTTON_WIDTH)


def inputs_lines(inputs: dict) -> str:
    """The inputs a chart came from, as ``# name = value`` lines (a file by its name only)."""
    lines = ["# inputs this chart was computed from:"]
    for name, value in inputs.items():
        shown = Path(value).name if name == "trace" and isinstance(value, str) else value
        lines.append(f"# {name} = {shown}")
    return "\n".join(lines) + "\n"


def chart_csv(ds: xr.Dataset, inputs: dict) -> str:
    """The inputs the chart came from as a block of ``#`` lines, then the chart data as CSV:
    ``pandas.read_csv(path, comment="#")`` skips the block and reads the header and rows
    (lines at the end were read as rows of empty cells)."""
    return inputs_lines(inputs) + dataset_csv(ds)


def chart_csv_button(get: Callable[[], tuple[xr.Dataset, dict]], filename: str,
                     label: str) -> pmui.FileDownload:
    """A download button for :func:`chart_csv` of the chart data current when clicked."""
    return pmui.FileDownload(callback=lambda: io.StringIO(chart_csv(*get())),
                             filename=filename, label=label, embed=False,
                             width=BUTTON_WIDTH)
