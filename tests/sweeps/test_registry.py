"""Writing a grid runs the block function once per chunk plus one dtype probe."""

from __future__ import annotations

from sweeps.axes import choose_chunks
from sweeps.build import block_slices
from sweeps.grid_files import from_mapping
from sweeps.grid_kinds import GRIDS, GridKind
from sweeps.grids import decode as decode_grid
from sweeps.runner import Runner
from sweeps.store import write_experiment
from tests.sweeps.conftest import SMALL_DECODE


def test_write_probes_dtypes_once(tmp_path):
    calls = []

    def counting(coords, constants):
        calls.append(coords)
        return decode_grid.decode_block(coords, constants)

    kind = GRIDS["decode"]
    counted = GridKind(kind.schema, counting, kind.units, kind.var_attrs)
    spec = from_mapping({"decode": SMALL_DECODE}, "test grid", "small").resolve("decode")
    write_experiment(counted, spec, "small", tmp_path / "g.zarr", Runner(None, "threads"))
    chunks = len(block_slices(spec.shape, choose_chunks(spec.shape, spec.chunk_cells)))
    assert chunks > 1
    assert len(calls) == chunks + 1
