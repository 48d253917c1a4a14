"""Names by role (issue 28, item 5): no two modules of the lab's code share a file name, so a
name found in a traceback, a profile or a search says which module it is; and ``apps/ui`` is
grouped by role (docs/architecture.md, "Where things live")."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.architecture.test_ui_roles import ROLES

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("lab", "sweeps", "apps", "cli")
SHARED_NAMES = {"__init__.py", "__main__.py"}
UI_ROLES = set(ROLES) - {"panel_compat"}
"""The role packages of ``apps/ui`` (their import order: :mod:`tests.architecture.test_ui_roles`)."""


def test_no_two_modules_share_a_file_name():
    where = defaultdict(list)
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if path.name not in SHARED_NAMES:
                where[path.name].append(path.relative_to(ROOT).as_posix())
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert shared == {}


def test_apps_ui_is_grouped_by_role():
    ui = ROOT / "apps" / "ui"
    loose = sorted(p.name for p in ui.glob("*.py") if p.name not in SHARED_NAMES)
    assert loose == ["panel_compat.py"]  # the one module for private Panel API
    assert {p.name for p in ui.iterdir() if p.is_dir() and (p / "__init__.py").exists()} \
        == UI_ROLES
