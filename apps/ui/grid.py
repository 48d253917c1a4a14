"""Grid explorer: any decode variable over batch × context from the precomputed dataset.

The dataset is opened once per process (``pn.cache``) through ``lab.open_dataset("decode")``;
nothing is recomputed here. A dataset that cannot be opened, or whose files turn out missing or
damaged when a selection is read (deleted or replaced under the running server), is reported
on the page in one sentence, and the cache is dropped so the next page load opens it afresh.
URL values the page does not offer are reported in one sentence and not applied. The model
and GPU dropdowns show catalog names; the URL keeps ids. A redraw that takes more than 0.3 s
shows the busy note.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import holoviews as hv
import numpy as np
import panel as pn
import panel_material_ui as pmui
import param
import xarray as xr
from panel.viewable import Viewer

from apps.ui.busy import BusyNote
from apps.ui.charts import axis_label
from apps.ui.downloads import WholeDatasetDownload, csv_button
from apps.ui.grid_heatmap import grid_view, styled_heatmap
from apps.ui.input_extras import catalog_options
from apps.ui.inputs import InputMessage
from apps.ui.url_values import strict_selectors, url_problems
from lab.errors import LabInputError
from lab.points.decode_family import DecodeConfig

DEFAULTS = DecodeConfig()
"""The lab's default configuration (Llama 3.1 8B on H100 SXM, tp 1, BF16), shown first."""

SELECTORS = ("model", "gpu", "tp", "precision", "kv_precision")
"""Dimensions chosen with a selector; the heatmap spans batch × context. A dataset without one
of them (a grid written before the KV-precision axis) is shown without its selector."""


@pn.cache
def decode_grid() -> xr.Dataset:
    """The precomputed decode-family dataset (loaded on first use, cached per process).

    ``lab.open_dataset``, imported from its module: a stale editable install can leave the
    ``lab`` package itself resolved as a namespace (no ``__init__``) under ``panel serve``.
    """
    from sweeps.datasets import open_dataset

    return open_dataset("decode")


def page_sentence(exc: LabInputError) -> str:
    """A dataset error as the page shows it: the default dataset's folder is not shown, and the
    command recomputes it where the server reads it."""
    from sweeps.paths import dataset_path

    path = str(dataset_path("decode"))
    return (str(exc).replace(f"--out {path}", "--experiment decode")
            .replace(path, "the lab's decode dataset"))


def plottable(ds: xr.Dataset) -> list[str]:
    """Variables over batch × context that can be coloured (numbers, not flags or text)."""
    return [name for name, da in ds.data_vars.items()
            if {"batch", "context"} <= set(da.dims) and np.issubdtype(da.dtype, np.number)
            and not np.issubdtype(da.dtype, np.bool_)]


def selection(ds: xr.Dataset, **choices) -> xr.Dataset:
    """The batch × context slice of ``ds`` at the chosen model, GPU, tp, precision and KV
    precision (choices for dimensions ``ds`` does not have are ignored)."""
    return ds.sel({k: v for k, v in choices.items() if k in ds.dims})



def variable_options(ds: xr.Dataset, variables: list[str]) -> dict[str, str]:
    """``{shown label: variable}`` for the Variable dropdown: each variable by its long name
    and the unit it is drawn in (the heatmap's title), its name in brackets; the URL keeps the
    name."""
    return {f"{axis_label(ds[name])} [{name}]": name for name in variables}

class GridExplorer(Viewer):
    """Selectors for model, GPU, tp, precision, KV precision and variable; a heatmap; CSV and
    NetCDF."""

    variable = param.Selector(default=None, objects=[], label="Variable",
                              doc="Decode variable coloured over batch × context.")
    model = param.Selector(default=None, objects=[], label="Model", doc="Catalog model.")
    gpu = param.Selector(default=None, objects=[], label="GPU", doc="Catalog GPU.")
    tp = param.Selector(default=None, objects=[], label="Tensor parallel",
                        doc="GPUs the model is sharded over.")
    precision = param.Selector(default=None, objects=[], label="Precision",
                               doc="Linear-layer weights and arithmetic.")
    kv_precision = param.Selector(default=None, objects=[], label="KV cache precision",
                                  doc="Bytes per cached K or V element: bf16 2, fp8 1.")

    def __init__(self, dataset: xr.Dataset | None = None, **params):
        super().__init__(**params)
        self.message = InputMessage()
        self.busy = BusyNote()
        self._plot = None
        self._selectors: list[str] = []
        try:
            self._ds = decode_grid() if dataset is None else dataset
        except LabInputError as exc:
            self._ds = None
            self.message.say(page_sentence(exc))
            return
        self._selectors = [dim for dim in SELECTORS if dim in self._ds.dims]
        variables = plottable(self._ds)
        self.param.variable.objects = variables
        if self.variable is None:
            self.variable = ("step_time_s" if "step_time_s" in variables else variables[0])
        for dim in self._selectors:
            values = [v.item() if hasattr(v, "item") else v for v in self._ds[dim].values]
            self.param[dim].objects = values
            if getattr(self, dim) is None:
                preferred = getattr(DEFAULTS, dim)
                setattr(self, dim, preferred if preferred in values else values[0])
        strict_selectors(self, ["variable", *self._selectors])
        self.message.say(" ".join(self._sync_url(["variable", *self._selectors])))
        # A new element per change, not a DynamicMap: the plot is rebuilt whole, so its
        # colour bar, scale and cells always belong to the variable shown.
        self._plot = pn.pane.HoloViews(self._view(), sizing_mode="stretch_width",
                                       min_height=480)
        self.param.watch(self._redraw, ["variable", *self._selectors])

    def _sync_url(self, names: list[str]) -> list[str]:
        """Keep ``names`` in the URL; return a sentence per URL value the page refused (those
        are dropped from the query first, so the URL shows the value in force)."""
        location = pn.state.location
        if location is None:
            return []
        accepted, problems = url_problems(self, names, location.search)
        if problems:
            kept = [(k, v) for k, v in parse_qsl(location.search[1:], keep_blank_values=True)
                    if k not in names or k in accepted]
            location.search = "?" + urlencode(kept) if kept else ""
        location.sync(self, names, on_error=self._url_refused)
        return problems

    def _url_refused(self, values: dict) -> None:
        _accepted, problems = url_problems(self, list(values), "?" + urlencode(values))
        self.message.say(" ".join(problems) or "The link's values were not applied.")

    def current(self) -> xr.Dataset:
        """The batch × context slice on screen."""
        return selection(self._ds, **{d: getattr(self, d) for d in self._selectors})

    def _redraw(self, *_events) -> None:
        """Draw the current choices; the busy note shows until the redraw has gone out (its
        end is scheduled after any part of the update the pane defers to the next tick)."""
        self.busy.begin()
        try:
            self._plot.object = self._view()
        finally:
            pn.state.execute(self.busy.end, schedule=True)

    def _view(self) -> hv.Element:
        """The heatmap of the current choices with its over-budget cells crossed."""
        try:
            return grid_view(self.current(), self.variable)
        except LabInputError:
            return self._heatmap(self.variable, self.model, self.gpu, self.tp,
                                 self.precision, self.kv_precision)

    def _heatmap(self, variable, model, gpu, tp, precision,
                 kv_precision: str | None = None) -> hv.HeatMap:
        """The styled heatmap of one selection (``kv_precision`` None: the one on screen)."""
        kv = self.kv_precision if kv_precision is None else kv_precision
        try:
            return styled_heatmap(selection(self._ds, model=model, gpu=gpu, tp=tp,
                                            precision=precision, kv_precision=kv).load(),
                                  variable)
        except LabInputError as exc:  # the dataset was deleted or damaged under the server
            decode_grid.clear()
            self.message.say(page_sentence(exc))
            return hv.HeatMap([], ["batch", "context"], [variable]).opts(
                responsive=True, height=460, title="No data: see the message on the left")

    def __panel__(self):
        if self._ds is None:
            return pn.Column(pn.pane.Markdown("# Grid explorer"), self.message,
                             sizing_mode="stretch_width")
        shown = ["variable", *self._selectors]
        widgets = pn.Param(self, parameters=shown, show_name=False,
                           widgets={n: {"type": pmui.Select, "css_classes": [f"lab-grid-{n}"],
                                        "sizing_mode": "stretch_width"}
                                    for n in shown},
                           sizing_mode="stretch_width", default_layout=pn.Column)
        for name in ("model", "gpu"):
            widgets._widgets[name].options = catalog_options(name, self.param[name].objects)
        widgets._widgets["variable"].options = variable_options(
            self._ds, self.param.variable.objects)
        netcdf = WholeDatasetDownload(dataset=self._ds, filename="decode-grid.nc",
                                      label="Whole dataset (NetCDF)")
        csv = csv_button(self.current, "decode-grid-selection.csv", "Selection (CSV)")
        intro = ("# Grid explorer\n\nThe precomputed decode grid (model × GPU × tp × precision × "
                 "KV cache precision × batch × context), read as it was computed. Grey cells are invalid "
                 "configurations, crossed cells do not fit the memory budget; hover a cell "
                 "for every variable. Signed variables (memory remaining) are coloured red "
                 "below 0 and blue above; `reason` is coloured by its meaning.")
        return pn.Column(self.busy, pn.pane.Markdown(intro, sizing_mode="stretch_width"),
                         pn.Row(pn.Column(self.message, widgets, csv, netcdf.button,
                                          netcdf.message,
                                          width=300), self._plot,
                                sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")
