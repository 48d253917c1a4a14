"""The datasets a page may open, by name: each experiment's grid, the ``large`` preset and every
other sweep the lab wrote into the datasets folder.

The folder is ``$INFERENCE_LAB_DATASETS`` (set by ``inference-lab serve --datasets DIR``) or
the lab's data directory (:func:`sweeps.paths.data_dir`). A name is the store's folder name
without ``.zarr``; only names of letters, digits and ``. _ -`` are listed, and a page chooses
among the listed names only, so no path ever comes from a page. Opening never computes: a
missing dataset is one sentence naming the command that writes it (computing the ``large``
preset takes a minute and 1.9 GB, far too much inside a page request).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from lab.errors import LabInputError
from sweeps.object_store import is_url
from sweeps.paths import DATASET_NAMES, data_dir

if TYPE_CHECKING:
    import xarray as xr

DATASETS_ENV = "INFERENCE_LAB_DATASETS"
"""Environment variable naming the folder whose datasets the grid explorer lists."""

PRESET_STORES = {"large": "decode"}
"""Datasets listed even before they are written: a preset's name → the experiment it covers."""

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A listable dataset name (the store's folder name without ``.zarr``)."""

MAX_LISTED = 200
"""Most stores of the folder listed (the experiments' and presets' names always are)."""


def datasets_dir() -> Path | str:
    """The folder the explorer lists: ``$INFERENCE_LAB_DATASETS`` (a folder, or an object store
    prefix such as ``s3://bucket/grids/``) or the data directory."""
    override = os.environ.get(DATASETS_ENV)
    if is_url(override):
        return override.rstrip("/")
    return Path(override).expanduser() if override else data_dir()


def _folder(directory: str | Path | None) -> Path | str:
    if directory is None:
        return datasets_dir()
    return str(directory).rstrip("/") if is_url(directory) else Path(directory)


def _stores(directory: Path | str) -> list[str]:
    """Names of the ``NAME.zarr`` folders in ``directory`` (none when it cannot be listed)."""
    if is_url(directory):
        from sweeps.remote_grid import list_stores

        return list_stores(directory, NAME)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    names = []
    for entry in entries:
        stem = entry.name[:-5] if entry.name.endswith(".zarr") else None
        if stem and NAME.fullmatch(stem) and not stem.startswith("."):
            try:
                if entry.is_dir() and stays_inside(Path(entry.path), Path(directory)):
                    names.append(stem)
            except OSError:
                continue
        if len(names) >= MAX_LISTED:
            break
    return names


def stays_inside(path: Path, folder: Path) -> bool:
    """Whether the local ``path`` (a store, maybe a symbolic link) resolves inside ``folder``:
    a link out of the datasets folder is neither listed nor opened (issue 38)."""
    if not path.is_symlink():
        return True
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def dataset_names(directory: str | Path | None = None) -> list[str]:
    """Every dataset name the explorer offers: the experiments' grids, the presets, then the
    folder's other stores (user sweeps), alphabetically."""
    folder = _folder(directory)
    known = [*DATASET_NAMES, *PRESET_STORES]
    return known + [n for n in _stores(folder) if n not in known]


def making_command(name: str, directory: str | Path | None = None) -> str:
    """The command that writes dataset ``name`` where the explorer reads it."""
    folder = _folder(directory)
    store = shell_quoted(dataset_location(folder, name))
    out = "" if folder == data_dir() else f" --out {store}"
    if name in DATASET_NAMES:
        return f"inference-lab sweep --experiment {name}{out}"
    if name in PRESET_STORES:
        return (f"inference-lab sweep --grid {name} --experiment {PRESET_STORES[name]} "
                f"--out {store}")
    return f"inference-lab sweep --grid YOUR_GRID.toml --out {store}"


def shell_quoted(path: Path | str) -> str:
    """``path`` as a shell command takes it, pasteable as it is (quoted when it holds a space,
    a quote or any other character the shell would read)."""
    return shlex.quote(str(path))


def dataset_location(folder: Path | str, name: str) -> Path | str:
    """Where dataset ``name`` of ``folder`` is (a path, or a URL under an object store prefix)."""
    return f"{folder}/{name}.zarr" if is_url(folder) else folder / f"{name}.zarr"


def open_named(name: str, directory: str | Path | None = None) -> xr.Dataset:
    """The dataset ``name`` of the explorer's folder, lazily, never computed here.

    Raises
    ------
    LabInputError
        ``name`` is not listed; or the dataset is missing, stale or damaged (one sentence,
        naming the command that writes it).
    """
    from sweeps.datasets import open_dataset
    from sweeps.store import MissingDatasetError

    folder = _folder(directory)
    if name not in dataset_names(folder):
        raise LabInputError(f"There is no dataset '{name[:40]}' here; the datasets are "
                            f"{', '.join(dataset_names(folder)[:16])}.")
    path = dataset_location(folder, name)
    if is_url(path):
        from sweeps.remote_grid import exists_url

        there = exists_url(path)
    else:
        if not stays_inside(path, folder):  # a preset's name linked out of the folder
            raise LabInputError(f"There is no dataset '{name[:40]}' here; a dataset of the "
                                "folder is a folder inside it, not a link out of it.")
        there = path.exists()
    if not there:
        raise MissingDatasetError(f"The dataset '{name}' has not been computed yet; run "
                                  f"`{making_command(name, folder)}` to write it.")
    # An explicit path: a stale or damaged store is reported, never recomputed in a request.
    return open_dataset(path)
