"""Experiment 9's own-measurements upload: a CSV read in memory by ``lab``'s loader.

The bytes from the browser are parsed where they arrive (:func:`lab.measured.loader.parse_measurements`);
nothing is written to disk and no path from the page is ever opened. The file name is only
shown, escaped. A bad file is one sentence; the numbers on the page stay those of the data in
force.
"""

from __future__ import annotations

from html import escape

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from apps.ui.trace_upload import CappedFileInput, shown_name
from lab.errors import LabInputError
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.measured.experiment import FloorsAgainstMeasurements
from lab.measured.loader import USER_COLUMNS, parse_measurements

COLUMNS_HELP = "; ".join(f"{kind}: `{','.join(cols)}`" for kind, cols in USER_COLUMNS.items())
"""The accepted headers, as the page lists them."""


def limit_sentence() -> str:
    """The measurements' size limit (:data:`lab.limits.MAX_MEASUREMENT_BYTES`) as the end of a
    sentence."""
    return f"measurements up to {MAX_MEASUREMENT_BYTES / 1e6:.0f} MB are accepted"


class MeasurementsFileInput(CappedFileInput):
    """The capped file input, holding at most :data:`lab.limits.MAX_MEASUREMENT_BYTES` and
    saying so in the measurements' own words."""

    def __init__(self, **params):
        params.setdefault("max_file_size", MAX_MEASUREMENT_BYTES)
        super().__init__(**params)

    def limit_sentence(self) -> str:
        return limit_sentence()

    def size_text(self) -> str:
        return f"{MAX_MEASUREMENT_BYTES / 1e6:.0f} MB"


class MeasurementsUpload(Viewer):
    """Upload a measurements CSV, or go back to the shipped H100 data."""

    experiment = param.ClassSelector(class_=FloorsAgainstMeasurements,
                                     doc="The experiment whose data the upload replaces.")

    def __init__(self, **params):
        super().__init__(**params)
        self._file = MeasurementsFileInput(accept=".csv", multiple=False,
                                     label="Upload your measurements (CSV)",
                                     sizing_mode="stretch_width")
        self._file.on_refused = self._say
        self._reset = pmui.Button(label="Use the shipped H100 data", sizing_mode="stretch_width")
        self._status = pn.pane.HTML(self._describe(None), sizing_mode="stretch_width",
                                    css_classes=["lab-measured-status"])
        self._file.param.watch(self._uploaded, "value")
        self._reset.on_click(self._use_shipped)

    @staticmethod
    def _describe(name: str | None) -> str:
        shown = escape(shown_name(name)) if name else "the shipped H100 SXM measurements"
        return f"<p>Data: <em>{shown}</em></p>"

    def _say(self, sentence: str) -> None:
        self._status.object = f'<p class="lab-upload-problem" role="alert">{escape(sentence)}</p>'

    def _uploaded(self, event) -> None:
        data: bytes | None = event.new
        if not data:
            return
        name = shown_name(self._file.filename)
        if len(data) > MAX_MEASUREMENT_BYTES:
            self._say(f"{name} is {len(data) / 1e6:.1f} MB; {limit_sentence()}.")
            return
        try:
            table = parse_measurements(data, name)
        except LabInputError as exc:
            self._say(str(exc))
            return
        self.experiment.measurements = table
        self._status.object = self._describe(name)

    def _use_shipped(self, _event) -> None:
        self.experiment.measurements = None
        self._status.object = self._describe(None)

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown(f"**Your own measurements** (CSV, one kind per file; {COLUMNS_HELP}; "
                             "optional `dtype`)", sizing_mode="stretch_width"),
            self._file, self._reset, self._status, sizing_mode="stretch_width")
