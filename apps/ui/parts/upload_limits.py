"""How much a reader may upload, and how a browser-given file name is shown back.

Shared by the upload widget (:class:`apps.ui.parts.trace_upload.CappedFileInput`) and the pages'
uploads (:mod:`apps.ui.parts.trace_upload`, :mod:`apps.ui.parts.table_upload`)."""

from __future__ import annotations

from pathlib import Path

from lab.units import MIB

MAX_UPLOAD_BYTES = 20 * MIB
"""Largest trace accepted from the browser, bytes."""
MAX_CONFIG_UPLOAD_BYTES = MIB
"""Largest model ``config.json`` accepted from the browser, bytes (published ones are a few
KB; the lab reads files up to :data:`lab.limits.MAX_SPEC_BYTES`)."""
UPLOAD_CHUNK_BYTES = MIB
"""Size of each piece the browser sends an upload in, bytes (one websocket message each)."""
MAX_SHOWN_NAME_CHARS = 80
"""Longest file name shown back on the page, characters."""
MAX_REASON_CHARS = 160
"""Longest browser-side reason quoted when the browser stops an upload, characters."""


def limit_sentence() -> str:
    """The upload limit as the end of a sentence."""
    return f"traces up to {MAX_UPLOAD_BYTES // MIB} MiB are accepted"


def shown_name(name: str | None) -> str:
    """A browser-given file name cut to :data:`MAX_SHOWN_NAME_CHARS` (escape it to show it)."""
    text = Path(name or "trace.csv").name or "trace.csv"
    return text if len(text) <= MAX_SHOWN_NAME_CHARS else text[:MAX_SHOWN_NAME_CHARS] + "…"
