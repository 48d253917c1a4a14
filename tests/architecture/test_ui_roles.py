"""``apps/ui``'s roles import one way (issue 37): a module imports only modules of its own role
or of the roles below it, bottom to top ``panel_compat`` < ``server`` < ``shell`` < ``parts`` <
``plots`` < ``views`` (docs/architecture.md, "Layers and the import rule").

Read from the source with :mod:`tests.architecture.import_graph`: every import statement
counts, lazy ones inside functions included, and so does a string value naming a module of a
role above (``"apps.ui.views.app:build_page"``), which an importlib call could load.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.architecture.import_graph import ROOT, import_graph, module_files

ROLES = ("panel_compat", "server", "shell", "parts", "plots", "views")
"""``apps/ui``'s roles from the bottom to the top: each imports only itself and those before it
(``panel_compat`` imports nothing of ``apps.ui``)."""


def role(module: str) -> str | None:
    """The role of an ``apps.ui`` module (``apps.ui.views.app`` → ``views``); None for a module
    outside the roles (``apps.ui`` itself, ``apps.inference_lab``)."""
    parts = module.split(".")
    if parts[:2] != ["apps", "ui"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ROLES else None


def upward_ui_edges(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a role into a role above it, as ``"source -> target (role < role)"``."""
    found = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = role(source), role(target)
            if low and high and ROLES.index(high) > ROLES.index(low):
                found.append(f"{source} -> {target} ({low} < {high})")
    return found


def _string_values(tree: ast.AST):
    prose = {id(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in prose:
            yield node.value


def upward_ui_strings(root: Path = ROOT) -> list[str]:
    """Each string value (not a docstring) of a role naming a module of a role above it."""
    files = module_files(root, ("apps",))
    found = []
    for name, path in files.items():
        low = role(name)
        if low is None:
            continue
        for text in _string_values(ast.parse(path.read_text(), filename=str(path))):
            for word in re.findall(r"[A-Za-z_][\w.]*", text):
                while word and word not in files and "." in word:
                    word = word.rpartition(".")[0]
                high = role(word) if word in files else None
                if high and ROLES.index(high) > ROLES.index(low):
                    found.append(f"{name} names {word} ({low} < {high})")
    return sorted(found)


def test_every_apps_ui_module_has_a_role():
    names = [name for name in module_files(ROOT, ("apps",)) if name.startswith("apps.ui.")]
    assert names and [name for name in names if role(name) is None] == []
    assert {role(name) for name in names} == set(ROLES)


def test_no_ui_role_imports_a_role_above_it():
    assert upward_ui_edges(import_graph(ROOT, ("apps",))) == []


def test_no_ui_role_names_a_module_of_a_role_above_it():
    assert upward_ui_strings() == []


def test_panel_compat_imports_nothing_of_apps_ui():
    graph = import_graph(ROOT, ("apps",))
    assert graph["apps.ui.panel_compat"] == set()


def test_the_check_sees_a_lazy_upward_import_and_a_string(tmp_path):
    ui = tmp_path / "apps" / "ui"
    for folder in (tmp_path / "apps", ui, ui / "shell", ui / "views"):
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
    (ui / "views" / "app.py").write_text("from apps.ui.shell import theme\n")
    (ui / "shell" / "theme.py").write_text(
        '"""Docs may name apps.ui.views.app."""\n\n\ndef f():\n'
        '    from apps.ui.views.app import build\n\n\nPAGE = "apps.ui.views.app:build"\n')
    assert upward_ui_edges(import_graph(tmp_path, ("apps",))) == [
        "apps.ui.shell.theme -> apps.ui.views.app (shell < views)"]
    assert upward_ui_strings(tmp_path) == [
        "apps.ui.shell.theme names apps.ui.views.app (shell < views)"]
