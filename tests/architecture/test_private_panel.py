"""Private Panel, Bokeh and panel-material-ui API is used in one module only,
``apps/ui/panel_compat.py`` (docs/architecture.md; issue 28, item 4), so an upgrade is checked
in one place: no other app module reads a private attribute of an object that is not its own,
overrides a private hook of a Panel class, or imports a private name from a library."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "apps" / "ui" / "panel_compat.py"
LIBRARIES = ("panel", "bokeh", "panel_material_ui", "param", "tornado")
HOOKS = {"_process_events", "_process_param_change", "_process_property_change",
         "_priority_changes", "_debounce", "_widgets", "_update_model", "_get_model"}
"""Private hooks of Panel's classes that a subclass could override."""


PRODUCT = ("apps", "lab", "sweeps", "cli")


def _defined(tree: ast.Module) -> set[str]:
    """Private names a module defines (functions, classes, attributes and names it assigns)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_")}


def product_privates() -> set[str]:
    """Private names the lab's own code defines outside panel_compat (never Panel's hooks)."""
    names = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if path != COMPAT:
                names |= _defined(ast.parse(path.read_text(), str(path)))
    return names - HOOKS


def violations(path: Path, own: set[str]) -> list[str]:
    """Private library API used in ``path``: a private name imported from a library, a
    private attribute the lab's code never defines (so a library's), a Panel hook overridden."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        where = f"{shown}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES:
            found += [f"{where} imports {a.name}" for a in node.names
                      if a.name.startswith("_") or any(p.startswith("_") for p in
                                                       (node.module or "").split("."))]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__") and node.attr not in own:
            found.append(f"{where} reads .{node.attr}")
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                name = (item.name if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                        else item.targets[0].id if isinstance(item, ast.Assign)
                        and isinstance(item.targets[0], ast.Name) else
                        item.target.id if isinstance(item, ast.AnnAssign)
                        and isinstance(item.target, ast.Name) else "")
                if name in HOOKS:
                    found.append(f"{where} overrides {name} in {node.name}")
    return found


def test_private_panel_api_only_in_panel_compat():
    modules = [p for p in (ROOT / "apps").rglob("*.py") if p != COMPAT]
    assert modules
    own = product_privates()
    found = [v for p in modules for v in violations(p, own)]
    assert found == [], "\n".join(found)


def test_the_check_finds_a_planted_use(tmp_path):
    # planted outside the source tree: a file in apps/ui, even briefly, fails the layout
    # tests that list apps/ui while they run beside this one
    planted = tmp_path / "planted.py"
    planted.write_text("import panel as pn\nfrom panel.io.document import _cleanup_doc\n"
                       "class W(pn.widgets.Select):\n    def _process_events(self, e):\n"
                       "        pass\n\ndef f(p):\n    return p._widgets\n")
    try:
        found = violations(planted, product_privates())
    finally:
        planted.unlink()
    assert len(found) == 3, found
