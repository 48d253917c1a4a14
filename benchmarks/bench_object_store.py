"""The ``large`` decode grid (or a slice of it) swept to a local S3 server against local disk, and
the grid explorer's redraw on the S3-held store against the local one.

Starts moto's S3 server (``moto_server``, a separate process on a free local port: no network)
and runs ``inference-lab sweep --grid FILE --experiment decode --workers 2`` twice as a
subprocess, once with ``--out`` on local disk and once with ``--out s3://bench/...``, sampling
the resident memory of the sweep's process tree (the sweep and its worker processes; the S3
server is sampled apart) every 0.1 s. The grid is the ``large`` preset's decode section, cut to
the first ``--models`` models and ``--gpus`` GPUs (the whole preset, 25 × 18, is about 5 GB
compressed: more than an in-memory S3 server on a 2-core machine holds in reasonable time).

The explorer is measured server-side, without a browser: the grid page (``GridExplorer``) is
built on each store and its selectors changed ``--changes`` times (a GPU change reads the new
GPU's chunks, a tp change is cut from the block already read); the median time of a change is
the redraw's server time (Bokeh model update included, browser drawing excluded).

    python benchmarks/bench_object_store.py --models 2 --gpus 9
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
               "AWS_DEFAULT_REGION": "us-east-1"}


def tree_rss(proc: psutil.Process) -> int:
    """RSS (bytes) of ``proc`` and all its descendants."""
    total = 0
    try:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        pass
    return total


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def grid_file(folder: Path, models: int, gpus: int) -> tuple[Path, int]:
    """The large preset's decode section cut to the first models and GPUs, as a TOML file."""
    from sweeps.grid_files import PRESETS, load_grid

    spec = load_grid("large").resolve("decode")
    section = {**PRESETS["large"]["decode"], "model": list(spec.axes["model"][:models]),
               "gpu": list(spec.axes["gpu"][:gpus])}
    lines = ['name = "large-slice"', "[decode]"]
    for key, value in section.items():
        if isinstance(value, dict):  # an inline table: {range = [1, 1024]}
            value_text = "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + "}"
        else:
            value_text = json.dumps(value)
        lines.append(f"{key} = {value_text}")
    path = folder / "large-slice.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from sweeps.grid_files import load_grid as load

    return path, load(str(path)).resolve("decode").cells


def sweep(grid: Path, out: str, extra: list[str], env: dict, server: psutil.Process | None
          ) -> dict:
    """Run one sweep; its wall time and peak memory (the sweep's tree; the server apart)."""
    cmd = [sys.executable, "-m", "cli", "sweep", "--grid", str(grid), "--experiment", "decode",
           "--workers", "2", "--quiet", "--out", out, *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    peak = peak_server = 0
    base_server = server.memory_info().rss if server else 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(ps))
        if server:
            peak_server = max(peak_server, server.memory_info().rss)
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    _, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"sweep failed: {err[-2000:]}")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(peak / 1e6, 1),
            "server_rss_growth_mb": round((peak_server - base_server) / 1e6, 1) if server else None}


def redraws(ds, changes: int) -> dict:
    """Median server-side time (ms) of a GPU change and of a tp change on the grid page."""
    import panel as pn
    from bokeh.document import Document
    from panel.io.location import Location

    from apps.ui.views.grid import GridExplorer

    document = Document()
    pn.state._locations[document] = Location(search="?view=grid")
    view = GridExplorer(dataset=ds)
    view.__panel__().get_root(document)
    gpus = [str(g) for g in ds["gpu"].values]
    tps = [int(t) for t in ds["tp"].values]
    out = {}
    for name, values in (("gpu", gpus), ("tp", tps)):
        times = []
        for i in range(changes):
            value = values[(values.index(getattr(view.choices, name)) + 1 + i) % len(values)]
            if value == getattr(view.choices, name):
                value = values[(values.index(value) + 1) % len(values)]
            start = time.perf_counter()
            setattr(view.choices, name, value)
            times.append((time.perf_counter() - start) * 1e3)
        out[f"{name}_change_median_ms"] = round(statistics.median(times), 1)
        out[f"{name}_change_max_ms"] = round(max(times), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=2, help="models of the large preset kept")
    parser.add_argument("--gpus", type=int, default=9, help="GPUs of the large preset kept")
    parser.add_argument("--changes", type=int, default=20, help="explorer changes measured")
    parser.add_argument("--json", help="write the results here (default: "
                        "benchmarks/results/object-store-DATE.json)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-object-store-"))
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {**os.environ, **CREDENTIALS, "PYTHONPATH": str(REPO)}
    server_proc = subprocess.Popen([shutil.which("moto_server") or "moto_server", "-H",
                                    "127.0.0.1", "-p", str(port)], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import boto3

        os.environ.update(CREDENTIALS)
        for _ in range(100):
            try:
                boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
                break
            except Exception:
                time.sleep(0.1)
        grid, cells = grid_file(work, args.models, args.gpus)
        local_out = str(work / "decode.zarr")
        url = "s3://bench/grids/decode.zarr"
        server = psutil.Process(server_proc.pid)
        results = {"local": sweep(grid, local_out, [], env, None),
                   "s3": sweep(grid, url, ["--storage-option", f"endpoint_url={endpoint}"], env,
                               server)}
        from sweeps.datasets import open_dataset
        from sweeps.object_store import set_storage_options

        set_storage_options({"endpoint_url": endpoint})
        explorer = {"local": redraws(open_dataset(local_out), args.changes),
                    "s3": redraws(open_dataset(url), args.changes)}
        record = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 1e9:.0f} GB",
            "load_average_at_start": os.getloadavg(),
            "grid": f"large preset's decode section, first {args.models} models × first "
                    f"{args.gpus} GPUs", "cells": cells,
            "scheduler": "the sweep's local cluster, 2 worker processes (--workers 2)",
            "sweep": results,
            "sweep_time_ratio_s3_over_local": round(results["s3"]["seconds"]
                                                    / results["local"]["seconds"], 2),
            "sweep_peak_memory_ratio_s3_over_local": round(results["s3"]["peak_rss_mb"]
                                                           / results["local"]["peak_rss_mb"], 2),
            "explorer_server_side": explorer,
            "explorer_note": "server-side redraw (GridExplorer selector change, Bokeh models "
                             "updated), no browser; median of the changes",
            "explorer_gpu_change_ratio_s3_over_local": round(
                explorer["s3"]["gpu_change_median_ms"] / explorer["local"]["gpu_change_median_ms"],
                2),
            "explorer_tp_change_ratio_s3_over_local": round(
                explorer["s3"]["tp_change_median_ms"] / explorer["local"]["tp_change_median_ms"],
                2),
        }
    finally:
        server_proc.terminate()
        server_proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(record, indent=2))
    target = Path(args.json) if args.json else (
        REPO / "benchmarks" / "results" / f"object-store-{datetime.now(UTC):%Y-%m-%d}.json")
    runs = []
    if target.is_file():  # the day's earlier runs are kept: {"runs": [...]}
        earlier = json.loads(target.read_text(encoding="utf-8"))
        runs = earlier.get("runs", [earlier]) if isinstance(earlier, dict) else []
    target.write_text(json.dumps({"runs": [*runs, record]}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
