"""Experiment 7's own-trace upload: a CSV from the reader's machine, validated by ``lab``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from lab.experiments.base import Experiment

MAX_UPLOAD_BYTES = 20 * 2**20
"""Largest trace accepted from the browser, bytes."""


class TraceUpload(Viewer):
    """Upload a trace CSV (``request_id,arrival_s,prompt_tokens,output_tokens``) or go back to
    the shipped one. The file is checked by the same loader the CLI uses; a bad file shows its
    one-sentence reason in place of the numbers."""

    experiment = param.ClassSelector(class_=Experiment, doc="An experiment with a trace input.")

    def __init__(self, **params):
        super().__init__(**params)
        self._default = self.experiment.trace
        self._file = pmui.FileInput(accept=".csv", multiple=False, label="Upload a trace CSV",
                                    sizing_mode="stretch_width")
        self._reset = pmui.Button(label="Use the shipped trace", sizing_mode="stretch_width")
        self._status = pn.pane.Markdown(self._describe(), sizing_mode="stretch_width")
        self._file.param.watch(self._uploaded, "value")
        self._reset.on_click(self._use_default)
        self._dir: Path | None = None

    def _describe(self, name: str | None = None) -> str:
        return f"Trace: *{name or Path(self._default).name}*"

    def _uploaded(self, event) -> None:
        data: bytes | None = event.new
        if not data:
            return
        name = Path(self._file.filename or "trace.csv").name
        if len(data) > MAX_UPLOAD_BYTES:
            self._status.object = (f"{name} is {len(data) / 2**20:.1f} MiB; traces up to "
                                   f"{MAX_UPLOAD_BYTES // 2**20} MiB are accepted.")
            return
        path = self._folder() / name
        path.write_bytes(data)
        self.experiment.trace = str(path)
        self._status.object = self._describe(name)

    def _folder(self) -> Path:
        """This session's upload folder, removed when the session ends."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="inference-lab-trace-"))
            folder = self._dir
            if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
                pn.state.on_session_destroyed(lambda _ctx: shutil.rmtree(folder, True))
        return self._dir

    def _use_default(self, _event) -> None:
        self.experiment.trace = self._default
        self._status.object = self._describe()

    def __panel__(self):
        return pn.Column(
            pn.pane.Markdown("**Your own trace** (CSV with `request_id,arrival_s,"
                             "prompt_tokens,output_tokens`)", sizing_mode="stretch_width"),
            self._file, self._reset, self._status, sizing_mode="stretch_width")
