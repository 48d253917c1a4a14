"""The import graph of the project's packages, read from the source (no module is imported).

Every ``import`` and ``from ... import`` statement counts, including the ones inside functions
(a lazy import is still a dependency). A name imported from a package counts as an import of
its submodule when the submodule exists, else of the package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("lab", "sweeps", "apps", "cli")
"""The packages from the bottom of the stack to the top: each imports only those before it."""


def module_files(root: Path = ROOT, packages=LAYERS) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    keep = len(base) - node.level + (1 if is_package else 0)
    prefix = ".".join(base[:keep])
    return f"{prefix}.{node.module}" if node.module else prefix


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``module`` (at ``path``) imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            names = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                     for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # ``import a.b.c`` of a module a.b.c
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph(root: Path = ROOT, packages=LAYERS) -> dict[str, set[str]]:
    """Module name → the project modules it imports."""
    files = module_files(root, packages)
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def layer(module: str, packages=LAYERS) -> int:
    """Position of ``module``'s top-level package in ``packages`` (0 is the bottom)."""
    return packages.index(module.split(".")[0])


def upward_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a lower layer into a higher one."""
    return sorted((source, target) for source, targets in graph.items() for target in targets
                  if layer(target) > layer(source))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _values(tree: ast.AST):
    """The string constants of ``tree`` that are values: not docstrings nor any other string
    standing alone as a statement (an attribute's docstring), which is never run as data."""
    prose = {id(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in prose:
            yield node


def modules_named_in_strings(package: str, root: Path = ROOT,
                             packages=LAYERS) -> list[tuple[str, str]]:
    """``(module of package, module of a layer above it)`` for every string value in
    ``package`` that names a module of a higher layer (``"sweeps.grids.decode"``, or
    ``"apps.ui.views.pages:own_pages"``): a name an importlib call could load, unseen by
    :func:`import_graph`."""
    files = module_files(root, packages)
    above = {name for name in files if layer(name, packages) > layer(package, packages)}
    found = set()
    for name, path in files.items():
        if name.split(".")[0] != package:
            continue
        for node in _values(ast.parse(path.read_text(), filename=str(path))):
            for word in re.findall(r"[A-Za-z_][\w.]*", node.value):
                while word and word not in above and "." in word:
                    word = word.rpartition(".")[0]
                if word in above and "." in word:
                    found.add((name, word))
    return sorted(found)


def dynamic_imports(root: Path = ROOT, packages=LAYERS) -> list[str]:
    """The modules that load a module by name (``importlib.import_module`` or
    ``__import__``): an import :func:`import_graph` cannot see."""
    found = []
    for name, path in module_files(root, packages).items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            called = node.func if isinstance(node, ast.Call) else None
            if (isinstance(called, ast.Attribute) and called.attr == "import_module") or \
                    (isinstance(called, ast.Name) and called.id in ("import_module", "__import__")):
                found.append(name)
                break
    return sorted(found)
