"""A writer killed at any step of replacing a dataset, then a recovery killed at any step of
its own: the next ``lab.open_dataset`` finds the old or the new dataset, never nothing, and
never computes over it (issue 33, item 8).

Kills are real: a child process replaces the dataset (or recovers it) through
:mod:`sweeps.swap` and ends itself with ``os._exit`` at step ``i``; the steps are counted by
letting it run to the end. Two datasets in the data directory: the ``default`` preset of the
context experiment replaced by the user's own grid spec, and a user's decode grid spec replaced
by another of the user's (the context experiment's grids: small and quick to open).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lab
from sweeps import datasets
from sweeps import metadata as md
from sweeps.grid_files import from_mapping
from sweeps.grid_kinds import grid_kind
from sweeps.paths import ENV_VAR
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment
from sweeps.swap import BIN_MARK, OLD_MARK, TMP_MARK

REPO = Path(__file__).resolve().parents[2]
KILLED = 99
"""Exit status of a child stopped at its step (as a ``kill -9`` would stop it)."""
CHILD = textwrap.dedent(f"""
    import os, sys
    from pathlib import Path
    from sweeps import swap

    stop_at, operation, *paths = sys.argv[1:]
    done = []

    def step(name):
        if len(done) == int(stop_at):
            os._exit({KILLED})
        done.append(name)
        print(name, flush=True)

    swap._step = step
    if operation == "swap":  # a writer whose new store is finished, as write_grid leaves it
        new, target = map(Path, paths)
        tmp = swap.writer_path(target, swap.TMP_MARK)
        new.rename(tmp)
        swap.swap_into_place(tmp, target)
    else:
        swap.recover(Path(paths[0]))
""")


def _child(stop_at: int, operation: str, *paths: Path) -> tuple[bool, list[str]]:
    """Run ``operation`` ("swap": ``paths`` are the finished new store and the target;
    "recover": the target) in a child killed before its step ``stop_at``: whether it was
    killed, and the steps it completed."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(stop_at), operation, *map(str, paths)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, KILLED), done.stderr
    return done.returncode == KILLED, done.stdout.split("\n")[:-1]


def _context_spec(path: Path, name: str, tokens: list[int]) -> Path:
    """The user's own grid spec ``name`` of the context experiment, written to ``path``."""
    grid = from_mapping({"context": {"tokens": tokens, "window": [0, 4096]}}, "test grid", name)
    return write_experiment(grid_kind("context"), grid.resolve("context"), grid.name, path,
                            Runner(None, "threads"))


@pytest.fixture(scope="module")
def masters(tmp_path_factory) -> dict[str, tuple[str, Path, Path]]:
    """Per case: the experiment, its old dataset and the new one that replaces it."""
    root = tmp_path_factory.mktemp("masters")
    return {
        "preset": ("context", datasets.compute_default("context", root / "default.zarr"),
                   _context_spec(root / "mine.zarr", "mine", [1024, 4096])),
        "user spec": ("context", _context_spec(root / "mine2.zarr", "mine", [512, 2048]),
                      _context_spec(root / "theirs.zarr", "theirs", [256])),
    }


def _values(path: Path, name: str) -> tuple[str, np.ndarray]:
    ds = open_grid(path)
    return ds.attrs[md.ATTR_NAME], ds[next(iter(ds.data_vars))].values


def _scenario(root: Path, experiment: str, old: Path, new: Path) -> tuple[Path, Path]:
    """A fresh data directory holding ``old`` as the dataset, and ``new`` staged beside it."""
    shutil.rmtree(root, ignore_errors=True)
    target = root / "grids" / f"{experiment}.zarr"
    shutil.copytree(old, target)
    staged = shutil.copytree(new, root / "staged.zarr")
    return target, staged


@pytest.mark.parametrize("case", ["preset", "user spec"])
def test_a_kill_at_any_step_of_a_swap_or_its_recovery_keeps_a_dataset(masters, case, tmp_path,
                                                                       monkeypatch):
    experiment, old, new = masters[case]
    old_values, new_values = _values(old, experiment), _values(new, experiment)

    def computed(*args, **kwargs):
        raise AssertionError("recovery computed a dataset over one it did not find damaged")

    monkeypatch.setattr(datasets, "compute_default", computed)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "run" / "grids"))
    target, staged = _scenario(tmp_path / "run", experiment, old, new)
    _, swap_steps = _child(1_000, "swap", staged, target)
    assert swap_steps == ["aside", "in place", "bin", "delete"]
    outcomes = []
    for kill in range(len(swap_steps) + 1):
        recovery_kill = 0
        while True:
            target, staged = _scenario(tmp_path / "run", experiment, old, new)
            killed, _ = _child(kill, "swap", staged, target)
            assert killed == (kill < len(swap_steps))
            recovery_killed, _ = _child(recovery_kill, "recover", target)
            ds = lab.open_dataset(experiment)  # recovers what the killed recovery left
            name, values = ds.attrs[md.ATTR_NAME], ds[next(iter(ds.data_vars))].values
            expected = new_values if kill > swap_steps.index("in place") else old_values
            assert name == expected[0], (kill, recovery_kill)
            np.testing.assert_array_equal(values, expected[1])
            left = sorted(p.name for p in target.parent.iterdir())
            assert left == [f".{target.name}.lock", target.name] or left == [target.name], left
            outcomes.append((kill, recovery_kill, name))
            if not recovery_killed:
                break
            recovery_kill += 1
    # every state a kill can leave was met: before, between and after the two renames
    assert {name for *_, name in outcomes} == {old_values[0], new_values[0]}
    assert len(outcomes) >= 2 * len(swap_steps)


def test_a_dataset_lost_mid_swap_is_found_by_every_opener(masters, tmp_path):
    """``open_grid`` (the CLI's ``--dataset``, the explorer) and a new sweep restore it too."""
    experiment, old, new = masters["user spec"]
    target, staged = _scenario(tmp_path / "run", experiment, old, new)
    assert _child(1, "swap", staged, target)[0]  # killed between "aside" and "in place"
    assert not target.exists()
    assert sorted(p.name.split("-")[0] for p in target.parent.iterdir()) == \
        [f"{target.name}{OLD_MARK[:-1]}", f"{target.name}{TMP_MARK[:-1]}"]
    assert open_grid(target).attrs[md.ATTR_NAME] == open_grid(old).attrs[md.ATTR_NAME]
    assert [p.name for p in target.parent.iterdir()] == [target.name]
    target.rename(target.with_name(f"{target.name}{OLD_MARK}999999999-abc"))  # an older writer
    assert _context_spec(target, "again", [64]) == target  # a sweep: it replaces the old one
    assert open_grid(target).attrs[md.ATTR_NAME] == "again"
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_leftovers_of_a_writer_whose_process_id_was_reused_are_recovered(masters, tmp_path):
    """A container restarted: the dead writer's process id now belongs to a live process (this
    one), but it started at another time."""
    import os

    experiment, old, _ = masters["user spec"]
    target, _ = _scenario(tmp_path / "run", experiment, old, old)
    expected = open_grid(old).attrs[md.ATTR_NAME]
    target.rename(target.with_name(f"{target.name}{OLD_MARK}{os.getpid()}-12345-abcdef12"))
    (target.parent / f"{target.name}{BIN_MARK}{os.getpid()}-12345-abcdef13").mkdir()
    assert open_grid(target).attrs[md.ATTR_NAME] == expected
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_opening_an_intact_dataset_writes_nothing_beside_it(masters, tmp_path, monkeypatch):
    """No leftovers, no recovery: not even the lock file (the folder may be read-only)."""
    from sweeps.swap import has_leftovers

    experiment, old, _ = masters["user spec"]
    target, staged = _scenario(tmp_path / "run", experiment, old, old)
    staged.rename(tmp_path / "elsewhere.zarr")
    assert not has_leftovers(target)
    monkeypatch.setenv(ENV_VAR, str(target.parent))
    lab.open_dataset(experiment)
    assert [p.name for p in target.parent.iterdir()] == [target.name]
