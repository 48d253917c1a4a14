"""Where datasets live: ``datasets/grids/`` in the repository, or ``$INFERENCE_LAB_DATA``."""

from __future__ import annotations

import os
from pathlib import Path

from sweeps.grids import GRID_NAMES

DATASET_NAMES = GRID_NAMES
"""Every dataset name :func:`lab.open_dataset` knows: the experiments with a grid
(:mod:`sweeps.grids`)."""
ENV_VAR = "INFERENCE_LAB_DATA"
"""Environment variable naming the directory of the grids (overrides the default)."""
REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """Directory holding ``<experiment>.zarr``.

    ``$INFERENCE_LAB_DATA`` when set; else ``datasets/grids`` of the source tree (an editable
    install or a clone); else ``grids`` in the user cache directory for a regular install
    (:func:`platformdirs.user_cache_dir`: ``~/.cache/inference-lab`` on Linux,
    ``~/Library/Caches/inference-lab`` on macOS, ``%LOCALAPPDATA%\\inference-lab\\Cache`` on
    Windows; ``$XDG_CACHE_HOME`` is honoured on Linux).
    """
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    if (REPO_ROOT / "pyproject.toml").is_file():
        return REPO_ROOT / "datasets" / "grids"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("inference-lab", appauthor=False)) / "grids"


def dataset_path(name: str, directory: str | Path | None = None) -> Path:
    """Path of the Zarr store of dataset ``name`` (in ``directory`` or :func:`data_dir`)."""
    return Path(directory or data_dir()) / f"{name}.zarr"
