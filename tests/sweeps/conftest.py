"""Fixtures for the sweeps tests: small grids, written once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sweeps.grid_files import from_mapping, preset
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment

SMALL_DECODE = {
    "model": ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"],
    "gpu": ["h100-sxm", "l4", "tpu-v5e"],
    "tp": [1, 2, 8],
    "precision": ["bf16", "fp8"],
    "batch": [1, 8, 64],
    "context": [1024, 8192, 65536],
    "chunk_cells": 200,
}
"""A decode grid with every reason code present, in several chunks."""


def write_small(path: Path, section: dict | None = None, name: str = "small") -> Path:
    """Write a small decode grid to ``path`` on the threaded scheduler."""
    grid = from_mapping({"decode": section or SMALL_DECODE}, "test grid", name)
    return write_experiment(grid_kind("decode"), grid.resolve("decode"), grid.name, path,
                                     Runner(None, "threads"))


@pytest.fixture(scope="session")
def default_decode(tmp_path_factory):
    """The ``default`` preset's decode grid, written to Zarr and opened again."""
    grid = preset("default")
    path = tmp_path_factory.mktemp("grids") / "decode.zarr"
    write_experiment(grid_kind("decode"), grid.resolve("decode"), grid.name, path, Runner(None, "threads"))
    return open_grid(path)


@pytest.fixture(scope="session")
def small_decode_master(tmp_path_factory):
    """The small decode grid, written once per session (do not modify: copy it)."""
    return write_small(tmp_path_factory.mktemp("small") / "small.zarr")


@pytest.fixture
def small_decode(small_decode_master, tmp_path):
    """A private copy of the small decode grid (path), free to modify."""
    return Path(shutil.copytree(small_decode_master, tmp_path / "small.zarr"))
