"""Every page reads its URL through one validated place, :class:`apps.ui.shell.url_sync.UrlInputs`.

A new page cannot forget it by accident: no other module of ``apps`` may touch the page's
location (``pn.state.location``) or Panel's ``Location.sync``, and the raw request arguments
(``pn.state.session_args``) are read only for the page's name and its theme.
"""

from __future__ import annotations

import ast
from pathlib import Path

APPS = Path(__file__).resolve().parents[2] / "apps"

ROAD = "ui/shell/url_sync.py"
"""The one module that reads a page's URL into its inputs."""

SESSION_ARGS_READERS = {"ui/views/app.py": "view", "ui/shell/browser_state.py": "theme"}
"""Modules that read a raw request argument, and the one argument each reads."""


def uses(path: Path, attribute: str) -> list[int]:
    """Lines of ``path`` that access an attribute named ``attribute``."""
    tree = ast.parse(path.read_text(), str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == attribute]


def location_uses(path: Path) -> list[int]:
    """Lines of ``path`` that read ``<…>.state.location`` or call ``<location>.sync(…)``."""
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if (node.attr == "location" and owner_name == "state") or (
                node.attr == "sync" and "location" in owner_name):
            lines.append(node.lineno)
    return lines


def modules() -> list[tuple[str, Path]]:
    return [(p.relative_to(APPS).as_posix(), p) for p in sorted(APPS.rglob("*.py"))]


def test_only_the_url_road_touches_the_page_location():
    found = {name: location_uses(path) for name, path in modules() if name != ROAD}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_raw_request_arguments_are_read_only_for_the_page_name_and_theme():
    readers = {name for name, path in modules() if uses(path, "session_args")}
    assert readers == set(SESSION_ARGS_READERS)
    for name, argument in SESSION_ARGS_READERS.items():
        assert f'"{argument}"' in (APPS / name).read_text() or "VIEW_ARG" in (APPS / name).read_text()


def test_the_road_is_used_by_every_page_that_keeps_inputs_in_its_url():
    users = {name for name, path in modules() if "UrlInputs(" in path.read_text()}
    assert {"ui/views/experiment_view.py", "ui/views/derivation.py", "ui/views/grid.py",
            "ui/views/measured_page.py"} <= users
