"""Fixtures for the sweeps tests: small grids, written once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sweeps.grid_files import from_mapping, preset
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import open_grid, write_experiment

SMALL_DECODE = {
    "model": ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"],
    "gpu": ["h100-sxm", "l4", "tpu-v5e"],
    "tp": [1, 2, 8],
    "precision": ["bf16", "fp8"],
    "batch": [1, 8, 64],
    "context": [1024, 8192, 65536],
    "chunk_cells": 200,
}
"""A decode grid with every reason code present, in several chunks."""


def write_small(path: Path, section: dict | None = None, name: str = "small") -> Path:
    """Write a small decode grid to ``path`` on the threaded scheduler."""
    grid = from_mapping({"decode": section or SMALL_DECODE}, "test grid", name)
    return write_experiment(grid_kind("decode"), grid.resolve("decode"), grid.name, path,
                                     Runner(None, "threads"))


@pytest.fixture(scope="session")
def default_decode(tmp_path_factory):
    """The ``default`` preset's decode grid, written to Zarr and opened again."""
    grid = preset("default")
    path = tmp_path_factory.mktemp("grids") / "decode.zarr"
    write_experiment(grid_kind("decode"), grid.resolve("decode"), grid.name, path, Runner(None, "threads"))
    return open_grid(path)


@pytest.fixture(scope="session")
def small_decode_master(tmp_path_factory):
    """The small decode grid, written once per session (do not modify: copy it)."""
    return write_small(tmp_path_factory.mktemp("small") / "small.zarr")


@pytest.fixture
def small_decode(small_decode_master, tmp_path):
    """A private copy of the small decode grid (path), free to modify."""
    return Path(shutil.copytree(small_decode_master, tmp_path / "small.zarr"))


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-compatible server (moto's server mode) on a free local port, no network, with
    the bucket ``lab``; credentials the standard way (``AWS_*`` environment variables, which
    worker processes started later inherit). Yields the endpoint URL."""
    import logging
    import os

    pytest.importorskip("moto.server")
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="lab")
    yield endpoint
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def s3_options(s3_endpoint):
    """This process's storage options name the local S3 server (reset afterwards)."""
    from sweeps.object_store import set_storage_options

    set_storage_options({"endpoint_url": s3_endpoint})
    yield {"endpoint_url": s3_endpoint}
    set_storage_options(None)


@pytest.fixture(scope="session")
def process_cluster(s3_endpoint):
    """A Dask ``LocalCluster`` of two single-threaded worker *processes*, each with a temporary
    folder of its own (nothing shared with the client but the S3 server)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster:
        yield cluster
