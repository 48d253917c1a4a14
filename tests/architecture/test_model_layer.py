"""``lab/models`` holds the formulas and reads only what lies below it: the catalog's records,
the arrays helpers, the limits and units; never a point, a derivation or an experiment (the
layers of ``lab`` that call the formulas)."""

from __future__ import annotations

from tests.architecture.import_graph import import_graph

ABOVE_THE_MODELS = ("lab.points", "lab.derivations", "lab.experiments", "lab.measured",
                    "lab.served")
"""The parts of ``lab`` that call the formulas (the measured and served packages' models read
``lab.models``, not the other way round)."""


def test_the_models_import_no_layer_that_calls_them():
    graph = import_graph()
    upward = sorted((source, target) for source, targets in graph.items()
                    if source.startswith("lab.models")
                    for target in targets if target.startswith(ABOVE_THE_MODELS))
    assert upward == []


def test_the_check_sees_such_an_import(tmp_path):
    (tmp_path / "lab" / "models").mkdir(parents=True)
    (tmp_path / "lab" / "points").mkdir()
    for folder in ("lab", "lab/models", "lab/points"):
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "lab" / "points" / "validity.py").write_text("")
    (tmp_path / "lab" / "models" / "metrics.py").write_text(
        "def f():\n    from lab.points.validity import decode_reason\n")
    graph = import_graph(tmp_path, ("lab",))
    assert graph["lab.models.metrics"] == {"lab.points.validity"}
