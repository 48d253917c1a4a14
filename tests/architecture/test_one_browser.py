"""Every Chromium this repository starts (tests, benchmarks, the screenshot script) is started
with ``tests.apps.lab_browser.CHROMIUM_ARGS``: headless Debian Chromium that reaches nothing
but loopback (house rule 7), defined once, so a benchmark or a screenshot cannot reach the
network or measure a browser configured otherwise than the tests'."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("benchmarks", "docs", "tests")


def _launches(tree: ast.Module) -> list[ast.Call]:
    """The ``….chromium.launch(…)`` calls of a module."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "launch"
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "chromium"]


def test_every_chromium_started_here_has_the_tests_arguments():
    seen, wrong = 0, []
    for folder in SCRIPTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for call in _launches(ast.parse(path.read_text(encoding="utf-8"))):
                seen += 1
                args = {k.arg: ast.unparse(k.value) for k in call.keywords}
                if args.get("args") != "CHROMIUM_ARGS" or args.get("executable_path") != "CHROMIUM":
                    wrong.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert seen >= 5, "the check found fewer Chromium launches than the repository has"
    assert not wrong, f"Chromium started without lab_browser's CHROMIUM and CHROMIUM_ARGS: {wrong}"


def test_no_script_defines_its_own_chromium_arguments():
    defined = []
    for folder in SCRIPTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path in (ROOT / "tests" / "apps" / "lab_browser.py", Path(__file__).resolve()):
                continue
            text = path.read_text(encoding="utf-8")
            if "--disable-gpu" in text or "--proxy-server" in text:
                defined.append(str(path.relative_to(ROOT)))
    assert defined == [], f"Chromium's arguments defined outside lab_browser: {defined}"
