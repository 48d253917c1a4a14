"""Which experiments have grids, and how each one's dataset is built.

:data:`GRIDS` maps an experiment name to its :class:`GridKind`: the schema of its spec
section, the block function calling its ``lab`` function, its variables' labels and extra
variable attributes, built from each block :mod:`sweeps.grids` registers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from sweeps.build import BlockFunction, build_dataset
from sweeps.grid_schema import ExperimentSpec, Schema
from sweeps.grids import grid_blocks
from sweeps.metadata import dataset_attrs
from sweeps.paths import DATASET_NAMES


@dataclass(frozen=True)
class GridKind:
    """Everything needed to build one experiment's dataset from its spec."""

    schema: Schema
    block: BlockFunction
    units: Mapping[str, tuple[str, str]]
    var_attrs: Callable[[], dict] = field(default=dict)

    def build(self, spec: ExperimentSpec, grid_name: str,
              dtypes: Mapping[str, np.dtype] | None = None) -> xr.Dataset:
        """The lazy dataset of ``spec`` with every label and provenance attribute.

        ``dtypes`` (from :func:`~sweeps.build.output_dtypes`) saves probing the block again.
        """
        attrs = dataset_attrs(spec, grid_name, self.schema.description)
        return build_dataset(spec, self.schema, self.block, self.units, attrs,
                             self.var_attrs(), dtypes)


GRIDS: dict[str, GridKind] = {name: GridKind(*block) for name, block in grid_blocks().items()}
"""Experiments with a grid, by name."""


def grid_kind(experiment: str) -> GridKind:
    """The :class:`GridKind` of ``experiment``; a one-sentence error naming the valid ones."""
    from lab.errors import LabInputError

    if experiment not in GRIDS:
        missing = experiment in DATASET_NAMES
        detail = " (its lab function is not available in this version)" if missing else ""
        raise LabInputError(f"There is no grid for experiment '{experiment}'{detail}; "
                            f"valid: {', '.join(GRIDS)}.")
    return GRIDS[experiment]
