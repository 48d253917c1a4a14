"""Each experiment's grid block: its spec section's schema and its block function.

This package registers the grids: :data:`GRID_NAMES` says which experiments of
:mod:`lab.experiments.registry` have one (by slug, in the lab's order) and
:func:`grid_blocks` imports each block from its module. The names stand apart so that asking
which datasets exist (:data:`sweeps.paths.DATASET_NAMES`) loads neither Dask nor Zarr, which
every block module imports; ``tests/architecture/test_imports.py`` checks that the two agree.
"""

from __future__ import annotations

GRID_NAMES = ("decode", "prefill", "prefix", "goodput", "context", "speculative", "plan")
"""The experiments with a grid, by slug, in the lab's order: the dataset names."""


def grid_blocks() -> dict[str, tuple]:
    """Each grid's block by experiment slug, in :data:`GRID_NAMES` order:
    ``(schema, block function, variable labels[, extra variable attributes])``."""
    from sweeps.grids.decode import DECODE_GRID
    from sweeps.grids.plan_grid import PLAN_GRID
    from sweeps.grids.serving_grid import CONTEXT_GRID, GOODPUT_GRID, PREFILL_GRID, PREFIX_GRID
    from sweeps.grids.speculative_grid import SPECULATIVE_GRID

    return {"decode": DECODE_GRID, "prefill": PREFILL_GRID, "prefix": PREFIX_GRID,
            "goodput": GOODPUT_GRID, "context": CONTEXT_GRID, "speculative": SPECULATIVE_GRID,
            "plan": PLAN_GRID}
