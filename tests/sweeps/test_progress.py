"""Sweep progress on standard error: ``\\r`` redraws on a terminal, plain lines otherwise;
``--performance-report`` refuses what cannot work in one sentence."""

from __future__ import annotations

import io
import sys

import dask.array as da
import pytest

from cli.main import main
from sweeps import progress
from sweeps.progress import PlainProgressBar, PlainSteps, in_process_bar
from sweeps.runner import _TextBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_steps_print_each_tenth_once():
    steps = PlainSteps()
    printed = [p for p in (0, 3, 9, 10, 15, 42, 42, 99, 100, 100) if steps.due(p)]
    assert printed == [0, 10, 42, 99, 100]


def test_in_process_bar_is_plain_into_a_file_and_redrawn_on_a_terminal():
    assert isinstance(in_process_bar(io.StringIO()), PlainProgressBar)
    assert not isinstance(in_process_bar(Terminal()), PlainProgressBar)


def test_plain_in_process_bar_writes_lines_without_carriage_returns():
    out = io.StringIO()
    with PlainProgressBar(out=out, minimum=0, dt=0.001):
        da.ones(1000, chunks=10).sum().compute(scheduler="threads")
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert lines[-1].startswith("[" + "#" * 40 + "] | 100% Completed | ")
    assert len(lines) == len(set(lines)) <= 11


def test_cluster_text_bar_is_plain_off_a_terminal(monkeypatch):
    for stream, redrawn in ((io.StringIO(), False), (Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        bar = _TextBar(4)
        for done in (0, 1, 1, 2, 4):
            bar.show(done)
        bar.close(4)
        text = stream.getvalue()
        assert ("\r" in text) is redrawn
        assert text.endswith("100% Completed | " + text.rsplit("| ", 1)[1])
        if not redrawn:
            assert [line.split("|")[1].strip() for line in text.splitlines()] == [
                "0% Completed", "25% Completed", "50% Completed", "100% Completed"]


def test_is_terminal_is_false_for_a_closed_stream():
    stream = io.StringIO()
    stream.close()
    assert not progress.is_terminal(stream)


@pytest.mark.parametrize(("argv", "words"), [
    (["--scheduler", "threads", "--performance-report", "r.html"], "needs a Dask cluster"),
    (["--performance-report", "{tmp}"], "is a folder"),
    (["--performance-report", "{tmp}/no/such/r.html"], "does not exist"),
])
def test_a_report_that_cannot_be_written_is_one_sentence_before_any_work(argv, words, tmp_path,
                                                                         capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["sweep", "--experiment", "prefill", "--out", str(tmp_path / "g"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not (tmp_path / "g").exists()


def test_a_report_never_replaces_an_existing_file(tmp_path, capsys):
    mine = tmp_path / "report.html"
    mine.write_text("my own report", encoding="utf-8")
    assert main(["sweep", "--experiment", "prefill", "--out", str(tmp_path / "g"),
                 "--performance-report", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "already exists and is not replaced" in err and err.count("\n") == 1
    assert mine.read_text(encoding="utf-8") == "my own report"
