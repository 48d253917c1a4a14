"""An upload that replaces an experiment's shipped table with the reader's own CSV.

The bytes from the browser are parsed where they arrive, by the experiment's loader in
``lab``; nothing is written to disk and no path from the page is ever opened. The file name
is only shown, escaped. A bad file is one sentence; the numbers on the page stay those of the
data in force. Subclasses say what the table is (:meth:`TableUpload.parse`), how it is put
in force (:meth:`TableUpload.use`) and the words on the page.
"""

from __future__ import annotations

from html import escape
from typing import ClassVar

import panel as pn
import panel_material_ui as pmui
from panel.viewable import Viewer

from apps.ui.parts.trace_upload import CappedFileInput, shown_name
from lab.errors import LabInputError
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.units import MIB

WRAP_CSS = "code, p { overflow-wrap: anywhere; word-break: break-word; }"
"""Lets a long list of column names break anywhere instead of widening the inputs column."""


def limit_sentence() -> str:
    """The measurements' size limit (:data:`lab.limits.MAX_MEASUREMENT_BYTES`) as the end of a
    sentence."""
    return f"measurements up to {MAX_MEASUREMENT_BYTES // MIB} MiB are accepted"


def file_class(status_class: str) -> str:
    """The CSS class of an upload's file input, named after its status line's
    (``lab-plan-status`` → ``lab-plan-file``)."""
    return status_class.removesuffix("-status") + "-file"


class MeasurementsFileInput(CappedFileInput):
    """The capped file input, holding at most :data:`lab.limits.MAX_MEASUREMENT_BYTES` and
    saying so in the measurements' own words."""

    def __init__(self, **params):
        params.setdefault("max_file_size", MAX_MEASUREMENT_BYTES)
        super().__init__(**params)

    def limit_sentence(self) -> str:
        return limit_sentence()

    def size_text(self) -> str:
        return f"{MAX_MEASUREMENT_BYTES // MIB} MiB"


class TableUpload(Viewer):
    """Upload a CSV of measurements, or go back to the shipped data (``experiment``: the
    experiment whose ``measurements`` the upload replaces, a parameter of the subclass)."""

    file_label: ClassVar[str] = "Upload your measurements (CSV)"
    reset_label: ClassVar[str] = "Use the shipped data"
    shipped_text: ClassVar[str] = "the shipped data"
    status_class: ClassVar[str] = "lab-upload-status"
    file_input: ClassVar[type[CappedFileInput]] = MeasurementsFileInput
    """The capped widget, holding at most its ``max_bytes`` and saying so in its own words."""

    def __init__(self, **params):
        super().__init__(**params)
        # No ``accept``: the widget would drop a file of another type in the browser without
        # a word; every file reaches the parser instead, which says what is wrong with it.
        self._file = self.file_input(multiple=False, label=self.file_label,
                                     css_classes=[file_class(self.status_class)],
                                     sizing_mode="stretch_width")
        self._file.on_refused = self._say
        self._reset = pmui.Button(label=self.reset_label, sizing_mode="stretch_width")
        self._status = pn.pane.HTML(self._describe(None), sizing_mode="stretch_width",
                                    css_classes=[self.status_class],
                                    stylesheets=[WRAP_CSS])  # a long file or model name wraps
        self._in_force: str | None = None  # the reader's file in force (None: shipped)
        self._file.param.watch(self._uploaded, "value")
        self._reset.on_click(self._use_shipped)

    def parse(self, data: bytes, name: str):
        """The table in ``data`` (file ``name``), or :class:`LabInputError` in one sentence."""
        raise NotImplementedError

    def use(self, table) -> None:
        """Put ``table`` in force (None: the shipped data); raise :class:`LabInputError` in one
        sentence, with the data in force kept, when the experiment cannot use it."""
        self.experiment.measurements = table

    def help_markdown(self) -> str:
        """What the file must hold, as Markdown."""
        raise NotImplementedError

    def setup_inputs(self) -> list:
        """Inputs shown between the help and the file input (none here)."""
        return []

    def _describe(self, name: str | None) -> str:
        """The status line: the data in force (``name``: the reader's file; None: shipped)."""
        shown = escape(shown_name(name)) if name else self.shipped_text
        return f"<p>Data: <em>{shown}</em></p>"

    def _say(self, sentence: str, refused: bool = True) -> None:
        """The problem in one sentence, and beneath it what is still in force; the file input
        of a ``refused`` file is emptied (it went on naming the refused file, as if it were in
        force). A problem with the file in force (a plan that cannot rank it) keeps it."""
        if refused and (self._file.value is not None or self._file.filename):
            self._file.clear()
        self._status.object = (f'<p class="lab-upload-problem" role="alert">{escape(sentence)}'
                               f"</p>{self._describe(self._in_force)}")

    def _uploaded(self, event) -> None:
        data: bytes | None = event.new
        if not data:
            return
        self._load(data, shown_name(self._file.filename))

    def _load(self, data: bytes, name: str) -> None:
        """Parse ``data`` (file ``name``) and put it in force, or say in one sentence why not."""
        if len(data) > self._file.limit_bytes():
            self._say(f"{name} is {len(data) / MIB:.1f} MiB; {self._file.limit_sentence()}.")
            return
        try:
            self.use(self.parse(data, name))
        except LabInputError as exc:  # a bad file, or data its experiment cannot use
            self._say(str(exc))
            return
        self._in_force = name
        self._status.object = self._describe(name)

    def forget_file(self) -> None:
        """Empty the file input, so choosing the same file again is an upload again."""
        self._file.clear()

    def _use_shipped(self, _event) -> None:
        self.use(None)
        self.forget_file()
        self._in_force = None
        self._status.object = self._describe(None)

    def __panel__(self):
        help_text = pn.pane.Markdown(self.help_markdown(), sizing_mode="stretch_width",
                                     stylesheets=[WRAP_CSS])  # long column lists wrap
        return pn.Column(help_text, *self.setup_inputs(),
                         self._file, self._reset, self._status, sizing_mode="stretch_width")
