"""Text from outside (URL values, file names, messages quoting a file) shown as plain text."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import param

MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]{}()|~#!])")
"""Characters Markdown reads as markup (``<``/``&`` are escaped as HTML entities instead)."""


def markdown_literal(text: str) -> str:
    """``text`` escaped so a Markdown pane shows it character for character, no markup."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", escape(text, quote=False))


def shown_error(experiment: param.Parameterized) -> str | None:
    """The experiment's error sentence without server folders: a trace file by its name only.

    The trace loader names the file it read; on the page that is the uploaded (or shipped)
    file's name, never where the server keeps it.
    """
    return without_folders(experiment, experiment.error)


def without_folders(experiment: param.Parameterized, message: str | None) -> str | None:
    """``message`` (an error, or a note such as the sorted-rows one) naming the experiment's
    trace file by its name only, never by the server folder that holds it."""
    if not message or "trace" not in experiment.param:
        return message
    trace = Path(str(experiment.trace))
    return message.replace(str(trace), trace.name)
