"""Grid specs: built-in presets and user TOML files naming each experiment's axes.

A spec has an optional ``name`` and one table per experiment; anything left out takes the
experiment's defaults (the ``default`` preset is every table empty but for the decode
family's two KV-cache precisions)::

    name = "h100-long-context"

    [decode]
    model = ["llama-3.1-8b", "llama-3.1-70b"]   # or "all" (catalog order)
    gpu = ["h100-sxm", "h200"]
    tp = [1, 2, 4, 8]
    precision = ["bf16", "fp8"]
    kv_precision = ["bf16", "fp8"]               # KV-cache precision (left out: bf16)
    batch = { pow2 = [1, 1024] }                 # powers of two and the points between
    context = { logspace = [1024, 131072], num = 32 }
    budget = 0.9                                 # constants, named as the CLI flags
    variables = ["step_time_s", "aggregate_tokens_per_s", "valid", "reason"]  # optional
    chunk_cells = 131072                         # optional: cells per chunk
    float_dtype = "float64"                      # optional: or "float32"
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lab.errors import LabInputError, shown
from lab.limits import MAX_BATCH, MAX_SPEC_BYTES
from lab.models.kv_shapes import KV_PRECISIONS
from sweeps.grid_kinds import GRIDS, grid_kind
from sweeps.grid_schema import ExperimentSpec, expand_section

LARGE_VARIABLES = ["linear_time_s", "step_time_s", "aggregate_tokens_per_s",
                   "per_sequence_tokens_per_s", "memory_remaining_bytes", "max_sequences",
                   "valid", "reason"]
"""What the ``large`` preset stores: six float32 figures plus the validity flag and code."""

PRESETS: dict[str, dict] = {
    "default": {**{experiment: {} for experiment in GRIDS},
                "decode": {"kv_precision": list(KV_PRECISIONS)}},
    "large": {
        "decode": {
            "batch": {"range": [1, MAX_BATCH]},
            "context": {"logspace": [128, 131072], "num": 121},
            "variables": LARGE_VARIABLES,
            "float_dtype": "float32",
            "chunk_cells": 1_048_576,
        },
    },
}
"""Built-in grids. ``default``: every experiment with its default axes (every catalog model and
GPU, tp 1/2/4/8, bf16/fp8 weights, batch 1–1024 and context 128–131,072 on powers of two and the
points between) and the decode family with both KV-cache precisions (bf16, fp8; a spec that
names no ``kv_precision`` takes bf16 alone). ``large``: the decode family at every batch 1–1024
and 121 log-spaced contexts with a BF16 KV cache — over 2×10^8 cells, the scale benchmark."""


@dataclass(frozen=True)
class GridSpec:
    """A named grid: one section (possibly empty: all defaults) per experiment.

    Attributes
    ----------
    name : str
        Stored in every dataset as ``grid_name``.
    sections : dict
        Experiment name → its raw section.
    source : str
        ``preset`` or the file it was read from (for error messages).
    """

    name: str
    sections: dict = field(default_factory=dict)
    source: str = "preset"

    @property
    def experiments(self) -> tuple[str, ...]:
        """Experiments this spec covers."""
        return tuple(self.sections)

    def resolve(self, experiment: str) -> ExperimentSpec:
        """The checked, expanded spec of ``experiment``."""
        return grid_kind(experiment).schema.finalized(self.expand(experiment))

    def expand(self, experiment: str) -> ExperimentSpec:
        """:meth:`resolve` without the schema's ``finalize`` (no cross-field checks, no
        ``extra``)."""
        kind = grid_kind(experiment)
        if experiment not in self.sections:
            raise LabInputError(f"Grid '{self.name}' has no [{experiment}] section; it covers "
                                f"{', '.join(self.experiments) or 'nothing'}.")
        return expand_section(kind.schema, self.sections[experiment],
                              f"{self.source} [{experiment}]")


def preset(name: str) -> GridSpec:
    """A built-in grid; ``default`` covers every experiment that has a grid."""
    sections = PRESETS[name]
    if not sections:
        sections = {experiment: {} for experiment in GRIDS}
    return GridSpec(name, {k: dict(v) for k, v in sections.items()}, f"preset '{name}'")


def from_mapping(data: Mapping, source: str, default_name: str) -> GridSpec:
    """A :class:`GridSpec` from parsed TOML (or any mapping); every error one sentence."""
    sections = {}
    for key, value in data.items():
        if key == "name":
            continue
        if key not in GRIDS:
            raise LabInputError(f"{source} has a [{shown(key, quoted=False)}] section, but the "
                                f"experiments with grids are {', '.join(GRIDS)}.")
        if not isinstance(value, Mapping):
            raise LabInputError(f"{source}: '{key}' must be a table ([{key}]).")
        sections[key] = dict(value)
    if not sections:
        raise LabInputError(f"{source} has no experiment sections; add one of "
                            f"{', '.join(f'[{k}]' for k in GRIDS)}.")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise LabInputError(f"{source}: 'name' must be a non-empty string.")
    return GridSpec(name, sections, source)


def load_grid(grid: str) -> GridSpec:
    """A preset by name or a spec from a TOML file path.

    Raises
    ------
    LabInputError
        Unknown preset and no such file, unreadable TOML, or an invalid section.
    """
    if grid in PRESETS:
        return preset(grid)
    path = Path(grid)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name the OS cannot look up (too long, a NUL)
        is_file = False
    if not is_file:
        raise LabInputError(f"Grid {shown(grid)} is neither a preset ({', '.join(PRESETS)}) "
                            "nor a TOML file that exists.")
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise LabInputError(f"{path} is larger than the {MAX_SPEC_BYTES:,} bytes a grid "
                                "spec may have.")
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise LabInputError(f"{path} cannot be read ({exc.strerror}).") from None
    except RecursionError:
        raise LabInputError(f"{path} nests arrays or tables too deeply to be read.") from None
    except UnicodeDecodeError as exc:
        raise LabInputError(f"{path} is not UTF-8 text (byte {exc.start + 1:,} is not).") \
            from None
    except tomllib.TOMLDecodeError as exc:
        raise LabInputError(f"{path} is not valid TOML ({exc}).") from None
    except ValueError as exc:
        if isinstance(exc, LabInputError):
            raise
        # e.g. an integer of more digits than Python converts
        raise LabInputError(f"{path} is not valid TOML "
                            f"({shown(str(exc), quoted=False, limit=120)}).") from None
    return from_mapping(data, str(path), path.stem)
