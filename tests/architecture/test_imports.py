"""Layers import one way (lab → sweeps → apps → cli), and no module imports itself back.

Read from the source: every import statement counts, lazy ones inside functions included.
"""

from __future__ import annotations

import subprocess
import sys

from tests.architecture.import_graph import LAYERS, cycles, import_graph, module_files, upward_edges

ALLOWED_UPWARD = {("lab", "sweeps.datasets")}
"""``lab.open_dataset``: the documented lazy re-export of :func:`sweeps.datasets.open_dataset`
(resolved on first use by ``lab.__getattr__``, so importing ``lab`` never imports sweeps)."""
ENTRY_SCRIPTS = {"lab.__main__"}
"""``python -m lab`` runs the command line; no module imports an entry script."""


def test_every_layer_is_found():
    names = module_files()
    assert {name.split(".")[0] for name in names} == set(LAYERS)
    assert "cli.main" in names and "sweeps.datasets" in names


def test_no_layer_imports_a_layer_above_it():
    graph = {name: targets for name, targets in import_graph().items()
             if name not in ENTRY_SCRIPTS}
    assert set(upward_edges(graph)) == ALLOWED_UPWARD


def test_there_is_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_walker_sees_an_upward_edge_and_a_cycle(tmp_path):
    for package in ("lab", "sweeps"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "lab" / "a.py").write_text("def f():\n    from sweeps import b\n")
    (tmp_path / "sweeps" / "b.py").write_text("from sweeps import c\n")
    (tmp_path / "sweeps" / "c.py").write_text("from . import b\n")
    graph = import_graph(tmp_path, ("lab", "sweeps"))
    assert upward_edges(graph) == [("lab.a", "sweeps.b")]
    assert cycles(graph) == [["sweeps.b", "sweeps.c"]]


def test_importing_lab_imports_nothing_above_it():
    code = ("import sys, lab, lab.experiments, lab.points.serving; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sweeps', 'apps', 'cli'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lab_open_dataset_is_the_sweeps_function():
    import lab
    from sweeps.datasets import open_dataset

    assert lab.open_dataset is open_dataset
