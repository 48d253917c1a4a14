"""The benchmarks and the docs' scripts name only what exists: every ``from X import Y`` in
them (at the top or inside a function) resolves against the code at hand, so a renamed
function breaks a test here, not a benchmark months later (``bench_upload_download.py`` asked
for ``apps.ui.views.grid.decode_grid`` long after it was gone). Modules of the ``bench`` extra
(pyproject.toml), which the test install lacks, are left out."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "docs").glob("*.py")])
BENCH_EXTRA = ("sklearn", "aiconfigurator")
"""Top-level modules of pyproject.toml's ``bench`` extra (scikit-learn, aiconfigurator)."""
SCRIPT_FOLDERS = ("benchmarks",)
"""Sibling modules a script may import by their bare name (it runs with its folder first on
``sys.path``)."""


def _names(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every absolute ``from module import name`` of a script."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in BENCH_EXTRA or node.module == "__future__":
                continue
            found.extend((node.lineno, node.module, alias.name) for alias in node.names)
    return found


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_script_imports_exists(path, monkeypatch):
    for folder in SCRIPT_FOLDERS:
        monkeypatch.syspath_prepend(str(ROOT / folder))
    missing = []
    for line, module, name in _names(path):
        imported = importlib.import_module(module)
        if name != "*" and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: {module}.{name}")
    assert not missing, f"{path.name} imports what does not exist: {missing}"


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 15
