"""What a grid section may contain for one experiment, and how it is checked.

Each experiment's grid module declares a :class:`Schema`: its axes (the dataset's dimensions,
named as the CLI flags), its constants (scalar inputs, also named as the flags) and every
variable it can store. :func:`expand_section` turns one TOML/dict section into a checked,
fully expanded :class:`ExperimentSpec` — every error one sentence naming the spec and key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lab.errors import LabInputError, shown, shown_number
from lab.limits import MAX_CHUNK_CELLS, MAX_GRID_CELLS
from sweeps.axes import expand_axis

DEFAULT_CHUNK_CELLS = 131_072
"""Cells per chunk unless a spec says otherwise (1 MB per float64 variable)."""
FLOAT_DTYPES = ("float64", "float32")
"""Storage types a spec may ask for; float64 keeps cells identical to the CLI's numbers."""


@dataclass(frozen=True)
class Rule:
    """One axis or constant: its type, bounds or choices, and its labels.

    Attributes
    ----------
    name : str
        Coordinate name (as the CLI flag, with ``-`` as ``_``).
    kind : {"int", "float", "str", "bool"}
        Value type.
    long_name, units : str
        Labels stored as the coordinate's attributes.
    low, high : float, optional
        Inclusive bounds for numbers.
    choices : callable, optional
        Returns the allowed values (for ids: the catalog's, in catalog order); ``"all"`` in
        a spec expands to them.
    default : Any
        Default value of a constant, or default axis entry.
    """

    name: str
    kind: str
    long_name: str
    units: str
    low: float | None = None
    high: float | None = None
    choices: Callable[[], tuple] | None = None
    default: Any = None

    def check(self, value: Any, where: str) -> Any:
        """``value`` checked against the rule and converted to its Python type."""
        if self.kind == "str":
            allowed = self.choices() if self.choices else None
            if not isinstance(value, str) or (allowed is not None and value not in allowed):
                listed = f" (valid: {', '.join(allowed)})" if allowed is not None else ""
                raise LabInputError(f"{where} has {shown(value)}, which is not a valid "
                                    f"{self.name}{listed}.")
            if not value.strip():
                raise LabInputError(f"{where} is empty; give a {self.name}.")
            return value
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise LabInputError(f"{where} must be true or false, not {shown(value)}.")
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise LabInputError(f"{where} has {shown(value)}, which is not a number.")
        if isinstance(value, float) and not math.isfinite(value):
            raise LabInputError(f"{where} has {value}, which is not a finite number.")
        if self.kind == "int" and isinstance(value, float) and not value.is_integer():
            raise LabInputError(f"{where} has {value}, which is not a whole number.")
        if (self.low is not None and value < self.low) or (
                self.high is not None and value > self.high):  # exact for any int size
            raise LabInputError(f"{where} has {shown_number(value)}, outside "
                                f"{shown_number(self.low)} to {shown_number(self.high)} "
                                f"{self.units}.")
        return int(value) if self.kind == "int" else float(value)


@dataclass(frozen=True)
class Schema:
    """The grid of one experiment: axes in dimension order, constants, storable variables."""

    experiment: str
    axes: tuple[Rule, ...]
    constants: tuple[Rule, ...]
    variables: Callable[[], tuple[str, ...]]
    description: str = ""
    finalize: Callable[[ExperimentSpec], ExperimentSpec] | None = None
    """Checks across fields (one sentence on failure) and fills ``extra`` (file hashes);
    run on every resolve and again on open, so a changed input file makes a dataset stale.
    It leaves every other field as it is (:func:`lab.open_dataset` relies on that)."""
    chunk_cells: int = DEFAULT_CHUNK_CELLS
    """Default cells per chunk (small where one cell is expensive)."""

    @property
    def dims(self) -> tuple[str, ...]:
        """Dimension names, in order."""
        return tuple(rule.name for rule in self.axes)

    def finalized(self, spec: ExperimentSpec) -> ExperimentSpec:
        """``spec`` after :attr:`finalize` (``spec`` itself when there is none)."""
        return self.finalize(spec) if self.finalize else spec


@dataclass(frozen=True)
class ExperimentSpec:
    """A checked, expanded grid for one experiment: what one Zarr dataset holds.

    Attributes
    ----------
    experiment : str
        ``decode``, ``prefill``, ``prefix``, ``goodput`` or ``context``.
    axes : dict
        Dimension name → tuple of values, in dimension order.
    constants : dict
        Scalar inputs (stored as scalar coordinates).
    variables : tuple of str
        Variables to store (all of the experiment's outputs unless the spec narrows them).
    chunk_cells : int
        Target cells per chunk.
    float_dtype : str
        Storage type of float variables.
    """

    experiment: str
    axes: dict
    constants: dict
    variables: tuple[str, ...]
    chunk_cells: int = DEFAULT_CHUNK_CELLS
    float_dtype: str = "float64"
    extra: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        """Length of every axis."""
        return tuple(len(v) for v in self.axes.values())

    @property
    def cells(self) -> int:
        """Number of grid cells."""
        return int(np.prod(self.shape, dtype=np.int64))

    def to_dict(self) -> dict:
        """A JSON-ready description (stored in the dataset's ``grid_spec`` attribute)."""
        return {
            "experiment": self.experiment,
            "axes": {k: list(v) for k, v in self.axes.items()},
            "constants": dict(self.constants),
            "variables": list(self.variables),
            "chunk_cells": self.chunk_cells,
            "float_dtype": self.float_dtype,
            **({"extra": dict(self.extra)} if self.extra else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> ExperimentSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(
            experiment=data["experiment"],
            axes={k: tuple(v) for k, v in data["axes"].items()},
            constants=dict(data["constants"]),
            variables=tuple(data["variables"]),
            chunk_cells=int(data["chunk_cells"]),
            float_dtype=data["float_dtype"],
            extra=dict(data.get("extra", {})),
        )


OPTION_KEYS = ("variables", "chunk_cells", "float_dtype")
"""Keys of a section that are options rather than axes or constants."""


def expand_section(schema: Schema, section: Mapping, where: str) -> ExperimentSpec:
    """Check and expand one experiment's section of a grid spec.

    Missing axes and constants take the schema's defaults. The schema's ``finalize`` (cross-field
    checks, ``extra``) is not run here: :meth:`Schema.finalized` does that.

    Parameters
    ----------
    schema : Schema
        The experiment's schema.
    section : mapping
        Axis entries (lists or generator tables, ``"all"`` for id axes), constants and options.
    where : str
        Names the spec file and section in error messages.
    """
    known = {r.name for r in schema.axes} | {r.name for r in schema.constants} | set(OPTION_KEYS)
    unknown = sorted(set(section) - known)
    if unknown:
        raise LabInputError(f"{where} has unknown key '{unknown[0]}' "
                            f"(valid: {', '.join(sorted(known))}).")
    axes = {}
    for rule in schema.axes:
        entry = section.get(rule.name, rule.default)
        label = f"{where}.{rule.name}"
        if entry == "all" and rule.choices is not None:
            values = list(rule.choices())
        else:
            values = expand_axis(entry, label)
        values = [rule.check(v, label) for v in values]
        if len(set(values)) != len(values):
            raise LabInputError(f"{label} repeats a value; each value may appear once.")
        axes[rule.name] = tuple(values)
    cells = math.prod(len(values) for values in axes.values())
    if cells > MAX_GRID_CELLS:
        shape = " × ".join(f"{len(values):,}" for values in axes.values())
        raise LabInputError(f"{where} has {cells:,} cells ({shape}), more than the "
                            f"{MAX_GRID_CELLS:,} one grid may have.")
    constants = {}
    for rule in schema.constants:
        constants[rule.name] = rule.check(section.get(rule.name, rule.default),
                                          f"{where}.{rule.name}")
    available = schema.variables()
    variables = section.get("variables", list(available))
    bad = [v for v in variables if v not in available] if isinstance(variables, list) else [1]
    if bad or not variables:
        raise LabInputError(f"{where}.variables must be a non-empty list of "
                            f"{', '.join(available)}.")
    chunk_cells = section.get("chunk_cells", schema.chunk_cells)
    if (isinstance(chunk_cells, bool) or not isinstance(chunk_cells, int)
            or not 1 <= chunk_cells <= MAX_CHUNK_CELLS):
        raise LabInputError(f"{where}.chunk_cells must be a positive whole number, at most "
                            f"{MAX_CHUNK_CELLS:,}.")
    float_dtype = section.get("float_dtype", "float64")
    if float_dtype not in FLOAT_DTYPES:
        raise LabInputError(f"{where}.float_dtype must be one of {', '.join(FLOAT_DTYPES)}.")
    ordered = tuple(v for v in available if v in variables)
    return ExperimentSpec(schema.experiment, axes, constants, ordered, chunk_cells, float_dtype)
