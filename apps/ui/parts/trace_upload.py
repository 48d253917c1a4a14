"""Experiment 7's own-trace upload: a CSV from the reader's machine, validated by ``lab``.

The upload is capped before it is held: the browser refuses a file over the limit, and the
server counts the chunks as they arrive and drops an upload as soon as it declares or sends
more than the limit. Names from the browser are shown escaped and never used as a path.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from html import escape
from pathlib import Path

import panel as pn
import panel_material_ui as pmui
import param
from panel.viewable import Viewer

from apps.ui.panel_compat import LimitedFileInput
from apps.ui.parts.upload_limits import (  # noqa: F401 (the limits, importable from here too)
    MAX_REASON_CHARS,
    MAX_SHOWN_NAME_CHARS,
    MAX_UPLOAD_BYTES,
    UPLOAD_CHUNK_BYTES,
    limit_sentence,
    shown_name,
)
from apps.ui.shell.held_size import hold_sizes
from apps.ui.shell.plain_text import shown_error, without_folders
from lab.errors import LabInputError
from lab.experiments.base import Experiment
from lab.table_files import checked_text
from lab.units import MIB


class CappedFileInput(LimitedFileInput):
    """The lab's upload widget: :class:`~apps.ui.panel_compat.LimitedFileInput` with the limits
    of :mod:`apps.ui.parts.upload_limits` (a trace's; another upload names its own)."""

    max_bytes = MAX_UPLOAD_BYTES
    chunk_bytes = UPLOAD_CHUNK_BYTES
    max_reason_chars = MAX_REASON_CHARS

    def limit_sentence(self) -> str:
        return limit_sentence()

    def shown_name(self, name: str) -> str:
        return shown_name(name)


def stored_name(name: str | None) -> str:
    """A safe file name for an upload: letters, digits, ``.-_`` only; never hidden or empty."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name or "").name).lstrip(".")[:80]
    return stem if stem.lower().endswith(".csv") else f"{stem or 'trace'}.csv"


class TraceUpload(Viewer):
    """Upload a trace CSV (``request_id,arrival_s,prompt_tokens,output_tokens``) or go back to
    the shipped one. The file is checked by the same loader the CLI uses; a bad file shows its
    one-sentence reason in place of the numbers."""

    experiment = param.ClassSelector(class_=Experiment, doc="An experiment with a trace input.")

    def __init__(self, **params):
        super().__init__(**params)
        self._default = self.experiment.trace
        self._file = CappedFileInput(multiple=False, label="Upload a trace CSV",  # no accept:
                                     css_classes=["lab-trace-file"],  # see TableUpload
                                     sizing_mode="stretch_width")
        self._file.on_refused = self._say
        self._reset = pmui.Button(label="Use the shipped trace", sizing_mode="stretch_width")
        self._status = pn.pane.HTML(self._describe(), sizing_mode="stretch_width")
        self._file.param.watch(self._uploaded, "value")
        self._reset.on_click(self._use_default)
        self._dir: Path | None = None
        self._uploads = 0
        """Uploads so far; each is kept in its own folder, so a new file always reloads."""
        self._note = pn.pane.HTML(pn.bind(self._note_html, self.experiment.param.result),
                                  sizing_mode="stretch_width", css_classes=["lab-trace-note"])

    def _describe(self, name: str | None = None) -> str:
        shown = escape(shown_name(name) if name else Path(self._default).name)
        return f"<p>Trace: <em>{shown}</em></p>"

    def _say(self, sentence: str) -> None:
        """The problem in one sentence; the file input is emptied (it went on naming the
        refused file, as if it were in force)."""
        if self._file.value is not None or self._file.filename:
            self._file.clear()
        self._status.object = f'<p class="lab-upload-problem" role="alert">{escape(sentence)}</p>'

    def _note_html(self, result) -> str:
        """The loader's note on the trace (rows sorted by arrival), as the CLI prints it but
        naming the file only (never the server folder an upload is kept in)."""
        note = without_folders(self.experiment, (result or {}).get("trace_note"))
        return f'<p class="lab-trace-sorted">Note: {escape(note)}</p>' if note else ""

    def _uploaded(self, event) -> None:
        data: bytes | None = event.new
        if data is None:
            return
        name = shown_name(self._file.filename)
        if not data.strip():
            self._say(f"{name} is empty; a trace needs the header "
                      "request_id,arrival_s,prompt_tokens,output_tokens and one row per request.")
            return
        if len(data) > MAX_UPLOAD_BYTES:
            self._say(f"{name} is {len(data) / MIB:.1f} MiB; {limit_sentence()}.")
            return
        try:  # not text: said under the reader's own file name (not the .csv name it would be
            # stored under), before it is kept, so the trace in force stays
            checked_text(data, name, "Trace", "a text CSV file", MAX_UPLOAD_BYTES)
        except LabInputError as exc:
            self._say(str(exc))
            return
        previous = Path(self.experiment.trace).parent
        self._uploads += 1
        folder = self._folder() / f"upload-{self._uploads}"
        folder.mkdir()
        path = folder / stored_name(self._file.filename)
        path.write_bytes(data)
        self.experiment.trace = str(path)
        if previous.parent == self._dir:
            shutil.rmtree(previous, ignore_errors=True)
        problem = shown_error(self.experiment)
        if problem:
            self._say(problem)
        else:
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
        return hold_sizes(pn.Column(
            pn.pane.Markdown("**Your own trace** (CSV with `request_id,arrival_s,"
                             "prompt_tokens,output_tokens`)", sizing_mode="stretch_width"),
            self._file, self._status, self._note, self._reset, sizing_mode="stretch_width"))
