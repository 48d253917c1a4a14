"""Peak memory and time of the ``large`` decode grid (over 2×10^8 cells) written to Zarr.

Runs ``inference-lab sweep --grid large --experiment decode`` as a subprocess and samples the
resident memory of its whole process tree (the sweep and, for a local cluster, its worker
processes) every 0.1 s. Prints the cells, wall time, cells/s, peak RSS (the tree's sum and the
largest single process) and the size on disk. ``--scheduler`` is passed through: ``threads``
(default here), an address of a running ``dask scheduler``, or ``local`` for the sweep's own
local cluster (``--workers``). With an address, the workers are separate processes: their memory
is sampled too when ``--worker-pids`` names them.

    python benchmarks/bench_large_grid.py --scheduler threads
    python benchmarks/bench_large_grid.py --scheduler tcp://127.0.0.1:8786 --worker-pids 123 456
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from sweeps.grid_files import load_grid
from sweeps.store import open_grid


def tree_rss(procs: list[psutil.Process]) -> tuple[int, int]:
    """Sum and maximum RSS (bytes) over ``procs`` and all their descendants."""
    seen: dict[int, int] = {}
    for proc in procs:
        try:
            for p in [proc, *proc.children(recursive=True)]:
                seen[p.pid] = p.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return sum(seen.values()), max(seen.values(), default=0)


def disk_size(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scheduler", default="threads",
                        help="threads, local, or a scheduler address (default: threads)")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes with --scheduler local (default: 2)")
    parser.add_argument("--worker-pids", type=int, nargs="*", default=[],
                        help="pids of separately started dask workers to sample as well")
    parser.add_argument("--out", help="output directory (default: a temporary one, removed)")
    args = parser.parse_args()

    spec = load_grid("large").resolve("decode")
    workdir = Path(args.out or tempfile.mkdtemp(prefix="bench-large-"))
    target = workdir / "decode.zarr"
    cmd = [sys.executable, "-m", "lab", "sweep", "--grid", "large", "--experiment", "decode",
           "--out", str(target), "--quiet"]
    if args.scheduler == "local":
        cmd += ["--workers", str(args.workers)]
    else:
        cmd += ["--scheduler", args.scheduler]
    workers = [psutil.Process(pid) for pid in args.worker_pids]
    base_sum, _ = tree_rss(workers)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[1])
    me = psutil.Process(proc.pid)
    peak_sum = peak_max = 0
    while proc.poll() is None:
        total, largest = tree_rss([me, *workers])
        peak_sum, peak_max = max(peak_sum, total), max(peak_max, largest)
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"sweep failed with status {proc.returncode}")
    ds = open_grid(target)
    assert dict(ds.sizes) == {k: len(v) for k, v in spec.axes.items()}
    size = disk_size(target)
    print(f"Large decode grid: {spec.cells:,} cells "
          f"({' × '.join(str(n) for n in spec.shape)}), {len(spec.variables)} variables "
          f"({spec.float_dtype} floats), chunks of ~{spec.chunk_cells:,} cells")
    print(f"  scheduler: {args.scheduler}")
    print(f"  wall time: {seconds:.1f} s  ({spec.cells / seconds / 1e6:.2f} M cells/s)")
    print(f"  peak RSS, whole process tree: {peak_sum / 1e9:.2f} GB"
          + (f" (workers' baseline before the run {base_sum / 1e9:.2f} GB)" if workers else ""))
    print(f"  peak RSS, largest single process: {peak_max / 1e9:.2f} GB")
    print(f"  on disk: {size / 1e9:.2f} GB")
    if not args.out:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
