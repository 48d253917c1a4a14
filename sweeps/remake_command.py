"""The ``inference-lab sweep`` command that writes a dataset again at a given path or URL.

A sentence about a missing, stale or damaged store ends with the command that fixes it; the
command must run as printed: a store path ending in ``.zarr`` holds one experiment, so the
sweep needs ``--experiment``, and a grid other than the default needs ``--grid`` (a sweep of
another grid without ``--out`` is refused).
"""

from __future__ import annotations

import shlex

from sweeps.paths import DATASET_NAMES

EXPERIMENT_PLACEHOLDER = "EXPERIMENT"
"""Stands for the experiment when the store no longer says which (its metadata is lost)."""
GRID_PLACEHOLDER = "YOUR_GRID.toml"
"""Stands for a user's grid file (a store records its grid's name, not its file)."""


def remake_command(out: str, experiment: object = None, grid_name: object = None) -> str:
    """The sweep that writes ``out`` (a path or URL, quoted for a shell) again: of
    ``experiment`` (a placeholder when unknown) and of grid ``grid_name`` (the default when
    unknown; a preset by its name; any other grid as :data:`GRID_PLACEHOLDER`)."""
    from sweeps.grid_files import PRESETS

    parts = ["inference-lab sweep"]
    if isinstance(grid_name, str) and grid_name != "default":
        parts.append(f"--grid {grid_name if grid_name in PRESETS else GRID_PLACEHOLDER}")
    if str(out).rstrip("/").endswith(".zarr"):
        parts.append("--experiment " + (experiment if experiment in DATASET_NAMES
                                        else EXPERIMENT_PLACEHOLDER))
    parts.append(f"--out {shlex.quote(str(out))}")
    return " ".join(parts)


def remake_advice(out: str, experiment: object = None, grid_name: object = None) -> str:
    """"run `COMMAND` to recompute it" (:func:`remake_command`), saying what a placeholder in
    it stands for."""
    command = remake_command(out, experiment, grid_name)
    advice = f"run `{command}` to recompute it"
    if EXPERIMENT_PLACEHOLDER in command.split():
        advice += f" ({EXPERIMENT_PLACEHOLDER}: one of " \
                  f"{', '.join(DATASET_NAMES)})"
    if GRID_PLACEHOLDER in command.split():
        advice += f" ({GRID_PLACEHOLDER}: the grid file it was swept from)"
    return advice
