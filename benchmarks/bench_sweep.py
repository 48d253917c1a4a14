"""Sweep benchmarks: end-to-end cells/s against a plain Zarr write, and compute against a loop.

Run ``python benchmarks/bench_sweep.py`` (add ``--cluster`` to also time the job on a local
``distributed`` cluster of 2 worker processes). It prints:

1. **End to end** (build + compute + write Zarr) for the ``default`` decode grid and for one
   model's slice of the ``large`` preset (six float32 variables), in cells per second, beside
   plain Zarr writes of arrays with the same shapes, dtypes, chunks and values (computed
   beforehand, so only the writing is timed; through xarray and through zarr itself): the
   limit the job can approach.
2. **Compute alone**: the grid's block function (``lab.models.decode_metrics.decode_metrics`` over
   broadcast axes) per chunk, against a lean per-point loop in plain Python floats over the same
   formulas (every output of the record, the validity checks first, nothing cached across
   points), on the same cells.

Figures are best of ``--repeat`` runs (the machine is shared; the best is the least disturbed).
"""

from __future__ import annotations

import argparse
import itertools
import math
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import zarr

from lab.catalog import gpu_catalog, model_catalog
from sweeps.allocator import tune_allocator
from sweeps.axes import choose_chunks
from sweeps.build import block_slices, coordinate_array
from sweeps.grid_files import PRESETS, from_mapping, preset
from sweeps.grid_kinds import grid_kind
from sweeps.grids.decode import decode_block
from sweeps.runner import Runner, runner
from sweeps.store import write_experiment


def best_of(repeat: int, func) -> float:
    """Shortest wall time of ``repeat`` calls of ``func``, seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


GRIDS = {
    "default": lambda: preset("default"),
    "large-slice": lambda: from_mapping(
        {"decode": {**PRESETS["large"]["decode"], "model": ["llama-3.1-8b"]}},
        "large preset, one model", "large-slice"),
}
"""Grids timed end to end: the default (30 float64 variables) and one model's slice of the
``large`` preset (six float32 variables plus the validity flag and code)."""


def end_to_end(repeat: int, run: Runner, workdir: Path, grid) -> tuple[float, int]:
    """Seconds to build, compute and write the decode grid of ``grid``; its cell count."""
    spec = grid.resolve("decode")

    def once():
        write_experiment(grid_kind("decode"), spec, grid.name, workdir / "job.zarr", run)

    return best_of(repeat, once), spec.cells


def plain_writes(repeat: int, workdir: Path, grid) -> tuple[float, float]:
    """Seconds for plain writes of the same arrays (dtypes, chunks, values), computed first.

    Returns the time of ``xarray.Dataset.to_zarr`` (dask, threaded) and of ``zarr`` itself
    (each chunk of each variable assigned from memory, 2 threads).
    """
    spec = grid.resolve("decode")
    computed = grid_kind("decode").build(spec, grid.name).compute(scheduler="threads")
    chunks = choose_chunks(spec.shape, spec.chunk_cells)
    data = computed.chunk(dict(zip(spec.axes, chunks, strict=True)))

    def with_xarray():
        target = workdir / "plain.zarr"
        shutil.rmtree(target, ignore_errors=True)
        data.to_zarr(target, mode="w-", consolidated=False, zarr_format=3, compute=True)

    arrays = {name: computed[name].values for name in spec.variables}

    def with_zarr():
        target = workdir / "plain-zarr.zarr"
        shutil.rmtree(target, ignore_errors=True)
        group = zarr.open_group(target, mode="w", zarr_format=3)
        out = {name: group.create_array(name, shape=a.shape, dtype=a.dtype, chunks=chunks)
               for name, a in arrays.items()}

        def region(index):
            for name, a in arrays.items():
                out[name][index] = a[index]

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(region, block_slices(spec.shape, chunks)))

    return best_of(repeat, with_xarray), best_of(repeat, with_zarr)


def _blocks(spec) -> list[dict]:
    coords = {d: (coordinate_array(v, "str") if d in ("model", "gpu", "precision", "kv_precision")
                  else np.asarray(v, dtype=np.int64)) for d, v in spec.axes.items()}
    size = choose_chunks(spec.shape, spec.chunk_cells)
    starts = [range(0, n, c) for n, c in zip(spec.shape, size, strict=True)]
    return [{d: v[a:a + c] for (d, v), a, c in zip(coords.items(), start, size, strict=True)}
            for start in itertools.product(*starts)]


def compute_alone(repeat: int, threads: int) -> tuple[float, int]:
    """Seconds for the block function over every chunk of the default grid."""
    spec = preset("default").resolve("decode")
    blocks = _blocks(spec)
    tune_allocator()  # as the sweep's run_block does in every process

    def once():
        if threads == 1:
            for block in blocks:
                decode_block(block, spec.constants)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(lambda b: decode_block(b, spec.constants), blocks))

    return best_of(repeat, once), spec.cells


def point(m, g, tp, fp8, batch, context, budget, reserve, page, kv_fp8=False):
    """Every decode-family output of one cell in plain Python floats (None when invalid); a
    dense model (the loop's models), the KV cache in FP8 with ``kv_fp8``."""
    d, L, H, K, h = m.hidden, m.layers, m.heads, m.kv_heads, m.head_dim
    if (H % tp or K % tp or tp not in (1, 2, 4, 8) or (fp8 and math.isnan(g.peak_fp8))
            or context > m.max_context):
        return None
    bw = g.hbm_bw
    nbytes = 1 if fp8 else 2
    peak = g.peak_fp8 if fp8 else g.peak_bf16
    n_lin = L * (d * H * h + 2 * d * K * h + H * h * d + 3 * d * m.intermediate) + d * m.vocab
    w = 1.0 * n_lin * nbytes / tp
    flops = 2.0 * n_lin * batch / tp
    t_hbm = w / bw
    t_comp = flops / peak
    t_lin = max(t_hbm, t_comp)
    kv_tok = 2 * L * K * h * (1 if kv_fp8 else 2)
    kv_tokens = batch * context
    kv_read = 1.0 * kv_tokens * kv_tok / tp
    att_flops = 1.0 * kv_tokens * 4 * L * H * h / tp
    t_att_mem = kv_read / bw
    t_att_comp = att_flops / g.peak_bf16
    t_att = max(t_att_mem, t_att_comp)
    step = t_lin + t_att
    pages = -(-(context + 1) // page)
    per_seq = 1.0 * pages * page * kv_tok / tp
    params = 1.0 * m.total_params * nbytes / tp
    budget_b = budget * g.capacity_bytes
    mem_kv = batch * per_seq
    remaining = budget_b - params - mem_kv - reserve
    free = budget_b - params - reserve
    waste = 1.0 * (pages * page - (context + 1)) * kv_tok / tp
    max_seqs = math.floor(free / per_seq) if free > 0 else 0.0
    return (w, flops, t_hbm, t_comp, t_lin, t_comp > t_hbm, kv_read, att_flops, t_att_mem,
            t_att_comp, t_att, step, batch / step, 1.0 / step, peak * nbytes / (2.0 * bw),
            0.0, batch / step / tp, params, mem_kv, budget_b, reserve, remaining,
            remaining >= 0, per_seq, free, waste, max_seqs, free > 0)


def python_loop(repeat: int, models: int) -> tuple[float, int]:
    """Seconds for the plain-Python loop over the default grid's first ``models`` models."""
    spec = preset("default").resolve("decode")
    c = spec.constants
    reserve = c["reserve_gb"] * 1e9
    ms = [model_catalog()[i] for i in spec.axes["model"][:models]]
    gs = [gpu_catalog()[i] for i in spec.axes["gpu"]]
    axes = spec.axes

    def once():
        for m in ms:
            for g in gs:
                for tp in axes["tp"]:
                    for precision in axes["precision"]:
                        fp8 = precision == "fp8"
                        for kv_precision in axes["kv_precision"]:
                            kv_fp8 = kv_precision == "fp8"
                            for batch in axes["batch"]:
                                for context in axes["context"]:
                                    point(m, g, tp, fp8, batch, context, c["budget"], reserve,
                                          c["page"], kv_fp8)

    cells = spec.cells // len(axes["model"]) * models
    return best_of(repeat, once), cells


def check_loop_matches() -> None:
    """The loop's figures equal the grid's (same formulas), or the comparison is void."""
    from lab.points.decode_points import DecodeConfig, calc_decode

    m, g = model_catalog()["llama-3.1-8b"], gpu_catalog()["h100-sxm"]
    got = point(m, g, 1, False, 8, 8192, 0.9, 4e9, 16)
    want = calc_decode(DecodeConfig())
    assert math.isclose(got[11], want["step_time_s"], rel_tol=1e-12)
    assert math.isclose(got[21], want["memory_remaining_bytes"], rel_tol=1e-12)
    assert got[26] == want["max_sequences"]
    got = point(m, g, 1, False, 8, 8192, 0.9, 4e9, 16, kv_fp8=True)
    assert math.isclose(got[11], calc_decode(DecodeConfig(kv_precision="fp8"))["step_time_s"],
                        rel_tol=1e-12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cluster", action="store_true",
                        help="also time the job on a local cluster of 2 worker processes")
    args = parser.parse_args()
    check_loop_matches()
    workdir = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        for label, make in GRIDS.items():
            grid = make()
            spec = grid.resolve("decode")
            seconds, cells = end_to_end(args.repeat, Runner(None, "threads"), workdir, grid)
            plain_xr, plain_zarr = plain_writes(args.repeat, workdir, grid)
            print(f"End to end, {label} decode grid ({cells:,} cells, {len(spec.variables)} "
                  f"variables, {spec.float_dtype} floats, threaded scheduler):")
            for name, t in (("sweep job (build + compute + write)", seconds),
                            ("plain write, xarray.to_zarr", plain_xr),
                            ("plain write, zarr directly", plain_zarr)):
                print(f"  {name:38s} {t:6.2f} s  {cells / t / 1e6:6.2f} M cells/s")
            print(f"  job time / plain write time: {seconds / plain_xr:.2f}× (xarray), "
                  f"{seconds / plain_zarr:.2f}× (zarr)")
            if args.cluster:
                with runner(None, 2) as run:
                    seconds_c, _ = end_to_end(args.repeat, run, workdir, grid)
                print(f"  {'sweep job, local cluster of 2 workers':38s} {seconds_c:6.2f} s  "
                      f"{cells / seconds_c / 1e6:6.2f} M cells/s")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    one, cells = compute_alone(args.repeat, 1)
    two, _ = compute_alone(args.repeat, 2)
    loop, loop_cells = python_loop(args.repeat, 3)
    loop_rate = loop_cells / loop
    print("Compute alone (every output of the record, default grid chunks):")
    print(f"  vectorised, 1 thread:  {cells / one / 1e6:7.2f} M cells/s")
    print(f"  vectorised, 2 threads: {cells / two / 1e6:7.2f} M cells/s")
    print(f"  plain-Python loop ({loop_cells:,} cells): {loop_rate / 1e6:7.3f} M cells/s")
    print(f"  ratio vectorised / loop: {cells / one / loop_rate:.0f}× (1 thread), "
          f"{cells / two / loop_rate:.0f}× (2 threads)")


if __name__ == "__main__":
    main()
