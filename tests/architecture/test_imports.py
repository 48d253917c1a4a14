"""Layers import one way (lab → sweeps → apps → cli), and no module imports itself back.

Read from the source: every import statement counts, lazy ones inside functions included. So
that nothing escapes the reading, no layer names a module above it in a string, only
``lab``'s registry loads modules by name (its own, lazily), and each upper layer's part of an
experiment (its grid, its page, its hand-written ``calc`` command) is registered by an
ordinary import, keyed by the experiment's slug in ``lab``'s registry.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from lab.experiments.registry import experiments
from tests.architecture.import_graph import (
    LAYERS,
    cycles,
    dynamic_imports,
    import_graph,
    layer,
    module_files,
    modules_named_in_strings,
    upward_edges,
)

ALLOWED_UPWARD = {("lab", "sweeps.datasets")}
"""``lab.open_dataset``: the documented lazy re-export of :func:`sweeps.datasets.open_dataset`
(resolved on first use by ``lab.__getattr__``, so importing ``lab`` never imports sweeps)."""
ENTRY_SCRIPTS = {"lab.__main__"}
"""``python -m lab`` runs the command line; no module imports an entry script."""
LOADS_BY_NAME = ["lab.experiments.registry"]
"""The one module loading modules by name: ``lab``'s records name their ``lab`` functions and
classes as ``"module:attribute"``, resolved on use so that reading them imports nothing heavy."""


def registrations() -> dict[str, dict[str, object]]:
    """Each upper layer's registration of experiments' parts: the registering module → the
    part registered for each experiment slug (a function or class, defined in the module the
    registration imports)."""
    from apps.ui.views.pages import own_pages
    from cli.calc_cmd import HAND_WRITTEN
    from sweeps.grids import grid_blocks

    return {"sweeps.grids": {slug: block[1] for slug, block in grid_blocks().items()},
            "apps.ui.views.pages": own_pages(),
            "cli.calc_cmd": dict(HAND_WRITTEN)}


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
    code = ("import sys, lab, lab.experiments, lab.points.serving_points; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sweeps', 'apps', 'cli'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lab_open_dataset_is_the_sweeps_function():
    import lab
    from sweeps.datasets import open_dataset

    assert lab.open_dataset is open_dataset


@pytest.mark.parametrize("package", LAYERS[:-1])
def test_no_layer_names_a_module_above_it_in_a_string(package):
    """A ``"module:attribute"`` string is an import the graph cannot see: ``lab``'s records name
    only ``lab`` objects, and the layers above register their own parts."""
    assert modules_named_in_strings(package) == []


def test_only_labs_registry_loads_modules_by_name():
    assert dynamic_imports() == LOADS_BY_NAME


def test_every_registration_is_an_ordinary_import_of_its_own_layer():
    graph = import_graph()
    for registrar, parts in registrations().items():
        assert layer(registrar) > layer("lab")
        for slug, part in parts.items():
            assert part.__module__ in graph[registrar], (registrar, slug)
            assert layer(part.__module__) == layer(registrar), (registrar, slug)


def test_every_registration_is_of_an_experiment_in_labs_registry():
    """Keyed by current slugs (not former names); the grids in the lab's order, their names
    (read without loading a block) the same as the blocks' keys."""
    from apps.ui.plots.page_descriptions import DESCRIPTIONS
    from sweeps.grids import GRID_NAMES, grid_blocks

    slugs = [record.slug for record in experiments()]
    for registrar, parts in {**registrations(), "apps.ui.plots.page_descriptions": DESCRIPTIONS}.items():
        assert set(parts) <= set(slugs), registrar
    assert tuple(grid_blocks()) == GRID_NAMES == tuple(s for s in slugs if s in GRID_NAMES)


def test_the_walker_sees_a_string_naming_a_module_above_and_a_load_by_name(tmp_path):
    for package in ("lab", "sweeps"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "sweeps" / "grid.py").write_text("")
    (tmp_path / "lab" / "a.py").write_text(
        '"""Docs may name sweeps.grid."""\nimport importlib\n'
        'GRID = "sweeps.grid:BLOCK"\n\n\ndef f():\n    return importlib.import_module(GRID)\n')
    assert modules_named_in_strings("lab", tmp_path, ("lab", "sweeps")) == [("lab.a", "sweeps.grid")]
    assert dynamic_imports(tmp_path, ("lab", "sweeps")) == ["lab.a"]


def test_asking_which_datasets_exist_loads_no_grid_block():
    """The dataset names come from :data:`sweeps.grids.GRID_NAMES`, apart from the blocks, so
    importing ``sweeps.datasets`` (``lab.open_dataset``) still loads neither Dask nor Zarr."""
    code = ("import sys, sweeps.datasets; "
            "print(sorted(m for m in ('dask', 'zarr', 'sweeps.grids.decode') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
