"""The tests' own packages never take a product package's name (issue 28, item 5): with
``tests/__init__.py`` the folder ``tests/sweeps`` is ``tests.sweeps``, so ``import sweeps`` in
its conftest is the lab's ``sweeps`` whether or not the lab is installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sweeps

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_package_sits_inside_the_tests_package():
    packages = sorted(p.parent for p in (ROOT / "tests").rglob("__init__.py"))
    assert ROOT / "tests" in packages
    for package in packages:
        assert all((d / "__init__.py").exists()
                   for d in [package, *package.parents] if ROOT / "tests" in [d, *d.parents])


def test_sweeps_is_the_labs_package():
    assert Path(sweeps.__file__).resolve() == ROOT / "sweeps" / "__init__.py"


def test_sweeps_conftest_imports_from_the_checkout(tmp_path):
    """The sweeps tests' conftest imports as ``tests.sweeps.conftest`` with only the checkout
    on the path (as pytest's ``pythonpath = ["."]`` puts it), and its ``sweeps`` is the lab's."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, pathlib\n"
        f"sys.path[:0] = [{str(ROOT)!r}]\n"
        "import importlib\n"
        "conftest = importlib.import_module('tests.sweeps.conftest')\n"
        "import sweeps\n"
        f"assert pathlib.Path(sweeps.__file__).resolve().parent == pathlib.Path({str(ROOT)!r}) / 'sweeps'\n"
        "print('ok')\n")
    result = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"
