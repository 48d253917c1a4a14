"""Run one golden case in this process and render what it printed, as stored in ``golden/``.

The rendering is the exit status, standard output and standard error, with the repository's
absolute path replaced by ``<repo>`` (the shipped trace's default path is absolute) so the
recording holds on any checkout. ``COLUMNS`` is fixed, so ``--help`` wraps the same everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
from pathlib import Path

from cli.main import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
COLUMNS = "100"
RECORDED_PYTHON = (3, 11)
"""The Python the recordings were made with: ``argparse`` words its ``--help`` and its usage
errors differently in later versions, so those recordings are compared on this one only."""
ARGPARSE_MARK = "(see inference-lab"
"""In a recorded error, the mark of a usage error worded by ``argparse``."""
LARGEST_KEPT = 100_000
"""Standard output longer than this many characters is recorded as its SHA-256 and length
(the full JSON of experiments 9 and 11 is about a megabyte)."""


def worded_by_argparse(name: str) -> bool:
    """True for a ``--help`` recording or a usage error ``argparse`` worded."""
    return name.startswith("help-") or ARGPARSE_MARK in golden_path(name).read_text("utf-8")


def golden_path(name: str) -> Path:
    """The recording of case ``name``."""
    return GOLDEN / f"{name}.txt"


def render(argv: tuple[str, ...], stdin: str | None) -> str:
    """Run ``inference-lab ARGV`` from the repository root with ``stdin`` (a file under the
    repository) on standard input; the recording's text."""
    data = (REPO / stdin).read_bytes() if stdin else b""
    out, err = io.StringIO(), io.StringIO()
    saved = os.getcwd(), sys.stdin, os.environ.get("COLUMNS")
    os.chdir(REPO)
    os.environ["COLUMNS"] = COLUMNS
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(argv))
            except SystemExit as exc:  # pragma: no cover - main catches argparse's exits
                status = exc.code
    finally:
        os.chdir(saved[0])
        sys.stdin = saved[1]
        if saved[2] is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved[2]
    stdout = out.getvalue().replace(str(REPO), "<repo>")
    if len(stdout) > LARGEST_KEPT:
        digest = hashlib.sha256(stdout.encode("utf-8")).hexdigest()
        stdout = f"sha256 {digest}, {len(stdout)} characters\n"
    text = (f"$ inference-lab {' '.join(argv)}" + (f" < {stdin}" if stdin else "") + "\n"
            f"exit: {status}\n--- stdout\n{stdout}--- stderr\n{err.getvalue()}")
    return text.replace(str(REPO), "<repo>")
