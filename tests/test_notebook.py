"""The example notebook (docs/notebook.ipynb) runs top to bottom and shows the real figures.

The notebook is executed in a fresh kernel (the interpreter running the tests) with nbclient;
nothing is downloaded. The assertions read its outputs: the printed figures of experiment 1's
acceptance case and of experiment 5's worked case, the one-sentence error for bad input, and
the full view (cards, chart, calculation, limits) rendered by ``ExperimentView``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbclient  # nbclient, nbformat and ipykernel are in the test extras
import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebook.ipynb"


KERNEL = "inference-lab-test"
"""A kernel spec written for the test, so the kernel is this interpreter whatever else is
installed."""


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after execution (an error in any cell fails here)."""
    jupyter_path = tmp_path_factory.mktemp("jupyter")
    spec_dir = jupyter_path / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Inference Lab tests", "language": "python"}), encoding="utf-8")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(jupyter_path))
        client = nbclient.NotebookClient(notebook, timeout=120, kernel_name=KERNEL,
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    return notebook


def _stdout(notebook) -> str:
    return "".join(out.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                   for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")


def _html_of(cell) -> str:
    return "".join(out.data.get("text/html", "") for out in cell.outputs
                   if out.output_type in ("execute_result", "display_data"))


def _cell_using(notebook, text: str):
    return next(cell for cell in notebook.cells if cell.cell_type == "code" and text in cell.source)


def test_notebook_is_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_notebook_prints_the_acceptance_figures(executed):
    out = _stdout(executed)
    assert "Ideal step time: 7.04 ms" in out
    assert "Aggregate ceiling: 1,136 tok/s  (142 tok/s per sequence)" in out
    assert "What attention adds: 2.56 ms" in out
    assert "Memory remaining: 43.33 GB" in out
    assert "step time: 7.045 ms" in out
    assert "Linear weight reads = 7,504,658,432 params × 2 B / 1 = 15.01 GB / GPU" in out
    assert "Step floor = 4.48 + 2.56 = 7.04 ms" in out


def test_notebook_changes_inputs_and_reports_bad_input(executed):
    out = _stdout(executed)
    assert "batch   16: step   9.61 ms,    1,665 tok/s aggregate" in out
    assert "None | NVIDIA A100 SXM 80GB has no FP8 peak, so fp8 is not available on it" in out
    assert "back to batch 8 on the H100: 7.04 ms" in out
    assert "chunk  2048: 8 steps, TTFT 1,079.04 ms, ITL during prefill 134.88 ms" in out
    assert "chunk   512: 32 steps, TTFT 1,367.04 ms, ITL during prefill 42.72 ms" in out


def test_notebook_renders_the_full_view(executed):
    html = _html_of(_cell_using(executed, "view = ExperimentView(experiment=exp"))
    for shown in ("A bigger batch. A different bottleneck.", "Ideal step time", "7.04 ms",
                  "1,136 tok/s", "43.33 GB", "Show the calculation", "Limits"):
        assert shown in html, shown
    assert '"name":"Figure"' in html  # the Bokeh chart
    prefill_html = _html_of(_cell_using(executed, "ExperimentView(experiment=prefill"))
    assert "Smaller chunks. Later first token." in prefill_html
    assert "1,367.04 ms" in prefill_html
