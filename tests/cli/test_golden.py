"""Every recorded ``inference-lab`` output, byte for byte (``tests/cli/golden/``).

The text and ``--json`` outputs and the one-sentence errors (with their exit status) of the
``calc`` subcommands were recorded before the subcommands were generated from the experiments'
``param`` classes; any difference fails here. ``--help`` texts are recorded too, so a change to
one is seen (and re-recorded on purpose, see ``record_golden.py``).
"""

from __future__ import annotations

import sys

import pytest
from golden_cases import CASES, ERROR_CASES, HELP_CASES, OUTPUT_CASES
from golden_run import RECORDED_PYTHON, golden_path, render, worded_by_argparse


def _ids(cases):
    return [name for name, _, _ in cases]


def _skip_other_argparse(name: str) -> None:
    if worded_by_argparse(name) and sys.version_info[:2] != RECORDED_PYTHON:
        pytest.skip(f"argparse words this differently outside Python "
                    f"{'.'.join(map(str, RECORDED_PYTHON))}")


def test_every_case_has_a_recording_and_names_are_unique():
    names = _ids(CASES)
    assert len(names) == len(set(names))
    missing = [n for n in names if not golden_path(n).is_file()]
    assert missing == []


@pytest.mark.parametrize(("name", "argv", "stdin"), OUTPUT_CASES + ERROR_CASES,
                         ids=_ids(OUTPUT_CASES + ERROR_CASES))
def test_output_is_byte_identical(name, argv, stdin):
    _skip_other_argparse(name)
    assert render(argv, stdin) == golden_path(name).read_text(encoding="utf-8")


def test_errors_are_one_sentence_with_status_2():
    for name, _argv, _stdin in ERROR_CASES:
        text = golden_path(name).read_text(encoding="utf-8")
        assert "exit: 2\n--- stdout\n--- stderr\n" in text, name
        stderr = text.split("--- stderr\n", 1)[1]
        assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, name


@pytest.mark.parametrize(("name", "argv", "stdin"), HELP_CASES, ids=_ids(HELP_CASES))
def test_help_is_as_recorded(name, argv, stdin):
    _skip_other_argparse(name)
    assert render(argv, stdin) == golden_path(name).read_text(encoding="utf-8")
