"""Grids in object storage (issue 40): a real S3-compatible server (moto's server mode, local
port, no network) and a Dask cluster of worker processes that share no folder with the client.

Sweeps from the cluster into ``s3://``, the explorer, export and ``serve --datasets`` on the
S3-held store; a worker killed mid-sweep and the sweep process killed at every step of its
write; hostile and broken stores, each one sentence; a URL the lab cannot use is refused.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import lab
from cli.main import main
from lab.errors import LabInputError
from sweeps import metadata as md
from sweeps import pointer
from sweeps.grid_files import LARGE_VARIABLES, from_mapping
from sweeps.grid_kinds import grid_kind
from sweeps.object_store import OPTIONS_ENV, parse_storage_options
from sweeps.remote_grid import open_grid_url, write_experiment_url
from sweeps.runner import Runner
from sweeps.store import CorruptDatasetError, DatasetError, MissingDatasetError, open_grid
from tests.sweeps.conftest import SMALL_DECODE, write_small

CONTEXT_OLD = {"tokens": [1024, 4096], "window": [0, 4096], "variables": ["time_s", "doubling_ratio"]}
CONTEXT_NEW = {"tokens": [512, 2048], "window": [0, 4096], "variables": ["time_s", "doubling_ratio"]}
KILLED = 99


def _fs(endpoint):
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=endpoint)


def _same_cells(a: xr.Dataset, b: xr.Dataset) -> None:
    """Every variable of ``a`` and ``b`` equal cell by cell (NaN equal to NaN)."""
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def _context(url: str, section: dict, name: str) -> str:
    grid = from_mapping({"context": section}, "test grid", name)
    return write_experiment_url(grid_kind("context"), grid.resolve("context"), grid.name, url,
                                Runner(None, "threads"))


SMALL = {**SMALL_DECODE, "variables": list(LARGE_VARIABLES)}
"""The small decode grid with the ``large`` preset's eight variables (fewer objects to send)."""


@pytest.fixture(scope="module")
def local_small_path(tmp_path_factory):
    return write_small(tmp_path_factory.mktemp("ref") / "small.zarr", SMALL)


@pytest.fixture(scope="module")
def local_small(local_small_path):
    return open_grid(local_small_path)


# ---- 0. a URL the lab cannot use is refused, never a local folder named 's3:' -------------

@pytest.mark.parametrize("url", ["ftp://host/grids/decode.zarr", "nope://b/decode.zarr",
                                 "http://host/decode.zarr", "file:///tmp/x.zarr"])
def test_a_url_the_lab_cannot_store_grids_in_is_refused_in_one_sentence(url, tmp_path,
                                                                        monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--grid", "default", "--experiment", "context", "--out", url,
                 "--scheduler", "threads", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count(".") >= 1 and "Traceback" not in err and url.split("://")[0] in err
    assert list(tmp_path.iterdir()) == []  # nothing local was written


def test_export_to_a_url_and_open_dataset_of_a_bad_scheme_are_one_sentence(tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LabInputError, match="URL of a kind the lab cannot store grids in"):
        lab.open_dataset("nope://bucket/decode.zarr")
    assert main(["export", "-o", "s3://lab/out.csv"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_store_whose_package_is_missing_names_the_package(monkeypatch):
    import importlib

    registry = importlib.import_module("fsspec.registry")

    def missing(protocol):
        raise ImportError(f"Install gcsfs to access {protocol}")

    monkeypatch.setattr(registry, "get_filesystem_class", missing)
    with pytest.raises(LabInputError, match=r"needs the package gcsfs to reach gs:// storage; "
                                            r"run `pip install gcsfs`\."):
        lab.open_dataset("gs://bucket/grids/decode.zarr")


def test_storage_options_never_take_a_secret_from_the_command_line(tmp_path, monkeypatch):
    with pytest.raises(LabInputError, match=r"secret=env:NAME .* or secret=@FILE"):
        parse_storage_options(["secret=hunter2"])
    with pytest.raises(LabInputError, match="KEY=VALUE"):
        parse_storage_options(["endpoint_url"])
    monkeypatch.setenv("LAB_TEST_SECRET", "s3cr3t")
    (tmp_path / "key").write_text("AKIA\n", encoding="utf-8")
    assert parse_storage_options(["secret=env:LAB_TEST_SECRET", f"key=@{tmp_path / 'key'}",
                                  "endpoint_url=http://x:9000", "anon=false"]) == {
        "secret": "s3cr3t", "key": "AKIA", "endpoint_url": "http://x:9000", "anon": False}


# ---- 1-2. the sweep from worker processes, the explorer, export and serve --datasets -------

@pytest.fixture(scope="module")
def s3_small(s3_endpoint, process_cluster):
    """The small decode grid swept by the process cluster into S3 through the CLI."""
    from distributed import Client, get_task_stream

    url = "s3://lab/grids/small.zarr"
    toml = Path(os.environ.get("TMPDIR", "/tmp")) / f"lab-s3-grid-{os.getpid()}.toml"
    lines = ['name = "small"', "[decode]"] + [f"{k} = {v!r}".replace("'", '"')
                                             for k, v in SMALL.items()]
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Client(process_cluster) as client, get_task_stream(client) as stream:
        code = main(["sweep", "--grid", str(toml), "--out", url, "--quiet",
                     "--scheduler", process_cluster.scheduler_address,
                     "--storage-option", f"endpoint_url={s3_endpoint}"])
    toml.unlink()
    assert code == 0
    workers = {t["worker"] for t in stream.data if "write_region_url" in str(t["key"])}
    return url, workers


def test_a_sweep_from_worker_processes_writes_every_region_straight_to_s3(
        s3_small, s3_options, local_small, s3_endpoint):
    url, workers = s3_small
    assert len(workers) == 2  # both worker processes wrote regions
    ds = lab.open_dataset(url)
    assert ds.attrs[md.ATTR_NAME] == "small"
    _same_cells(ds, local_small)  # no differing cell from the local sweep
    fs = _fs(s3_endpoint)
    found = json.loads(fs.cat_file("lab/grids/small.zarr/" + pointer.POINTER))
    assert found["format"] == pointer.FORMAT
    assert len(fs.ls("lab/grids/small.zarr/versions")) == 1
    plain = xr.open_zarr(f"{url}/{found['current']}", storage_options=s3_options)  # plain xarray
    assert plain.attrs[md.ATTR_COMPLETE] == 1


def test_export_from_the_s3_dataset_matches_the_local_export(s3_small, s3_endpoint, tmp_path,
                                                             local_small_path):
    url, _ = s3_small
    out, local = tmp_path / "part.csv", tmp_path / "local.csv"
    assert main(["export", "--dataset", url, "--sel", "model=qwen3-8b", "tp=1",
                 "--storage-option", f"endpoint_url={s3_endpoint}", "-o", str(out)]) == 0
    assert main(["export", "--dataset", str(local_small_path), "--sel", "model=qwen3-8b",
                 "tp=1", "-o", str(local)]) == 0
    ours, theirs = (p.read_text(encoding="utf-8").splitlines() for p in (out, local))
    assert ours[0] == theirs[0] and sorted(ours) == sorted(theirs)  # the same rows and values


def test_the_explorer_draws_the_s3_held_dataset_listed_by_serve_datasets(
        s3_small, s3_options, monkeypatch, local_small):
    import panel as pn
    from bokeh.document import Document
    from panel.io.location import Location

    from apps.ui.views.grid import GridExplorer
    from cli.serve_cmd import checked_datasets
    from sweeps.catalog_of_datasets import DATASETS_ENV, dataset_names, open_named

    assert checked_datasets("s3://lab/grids/") == "s3://lab/grids"
    monkeypatch.setenv(DATASETS_ENV, "s3://lab/grids")
    assert "small" in dataset_names()
    with pytest.raises(MissingDatasetError, match=r"--out s3://lab/grids/decode\.zarr"):
        open_named("decode")
    document = Document()
    pn.state._locations[document] = Location(search="?view=grid&dataset=small&tp=1")
    view = GridExplorer(dataset=open_named("small"))
    view.__panel__().get_root(document)
    assert not (view.message.visible and view.message.object)
    view.choices.precision = "fp8"  # a change: read from S3 and redrawn
    heat = next(r for r in view._area.objects[0].object.renderers
                if type(r.glyph).__name__ == "Rect")
    shown = np.asarray(heat.data_source.data["step_time_s"])
    expected = local_small["step_time_s"].sel(model=view.choices.model, gpu=view.choices.gpu,
                                              tp=1, precision="fp8", kv_precision="bf16")
    assert np.allclose(np.sort(shown[np.isfinite(shown)]),
                       np.sort(expected.values[np.isfinite(expected.values)].ravel()) * 1e3)


def test_serve_passes_storage_options_through_its_environment_not_its_command_line(
        s3_endpoint, monkeypatch, tmp_path):
    from cli import serve_cmd

    seen = {}

    def execve(path, cmd, env):
        seen["cmd"], seen["env"] = cmd, env
        raise SystemExit(0)

    from apps.ui.server.page_gate import LIMIT_ENV
    from sweeps.catalog_of_datasets import DATASETS_ENV
    from sweeps.object_store import using_storage_options

    monkeypatch.setattr(serve_cmd.os, "execve", execve)
    monkeypatch.setenv("LAB_TEST_SECRET", "testing")
    for name in (OPTIONS_ENV, DATASETS_ENV, LIMIT_ENV):
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    with using_storage_options(None), pytest.raises(SystemExit):
        main(["serve", "--port", "0", "--datasets", "s3://lab/grids/", "--storage-option",
              f"endpoint_url={s3_endpoint}", "--storage-option", "secret=env:LAB_TEST_SECRET",
              "--storage-option", "key=env:LAB_TEST_SECRET"])
    # The server's environment only: a later server of this test process inherited
    # INFERENCE_LAB_DATA=s3://lab/grids from here and found no grid.
    assert dict(os.environ) == before
    assert json.loads(seen["env"][OPTIONS_ENV])["secret"] == "testing"
    assert seen["env"][DATASETS_ENV] == "s3://lab/grids"
    assert not any("testing" in part for part in seen["cmd"])
    with using_storage_options(None):
        assert main(["serve", "--datasets", "s3://no-such-bucket/grids/", "--storage-option",
                     f"endpoint_url={s3_endpoint}"]) == 2


# ---- 3. replacing without rename: a kill at any step, a worker killed mid-sweep ------------

def _killed_sweep(stop_at: int, url: str, endpoint: str) -> tuple[bool, list[str]]:
    """A sweep of ``CONTEXT_NEW`` to ``url`` in a forked child that ends itself with
    ``os._exit`` (no cleanup runs, as after ``kill -9``) before its step ``stop_at``: whether
    it was killed, and the steps it completed."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read)
            done: list[str] = []

            def step(name):
                if len(done) == stop_at:
                    os._exit(KILLED)
                done.append(name)
                os.write(write, f"{name}\n".encode())

            pointer._step = step
            grid = from_mapping({"context": CONTEXT_NEW}, "test grid", "new")
            write_experiment_url(grid_kind("context"), grid.resolve("context"), grid.name, url,
                                 Runner(None, "synchronous"))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    deadline = time.monotonic() + 120
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the sweep stopped at step {stop_at} did not end")
        time.sleep(0.05)
    with os.fdopen(read) as pipe:
        steps = pipe.read().split("\n")[:-1]
    code = os.waitstatus_to_exitcode(waited[1])
    assert code in (0, KILLED), code
    return code == KILLED, steps


def test_a_sweep_killed_at_any_step_leaves_the_previous_grid_readable(s3_options, s3_endpoint):
    url = "s3://lab/kills/context.zarr"
    _context(url, CONTEXT_OLD, "old")
    old = open_grid_url(url).load()
    _, steps = _killed_sweep(1_000, url, s3_endpoint)
    new = open_grid_url(url).load()
    assert steps == ["template", "regions", "finish", "pointer", "cleanup"]
    assert new.attrs[md.ATTR_NAME] == "new"
    fs = _fs(s3_endpoint)
    _context(url, CONTEXT_OLD, "old")
    for kill in range(len(steps)):  # only the last kill (after the pointer moved) ends "new"
        assert _killed_sweep(kill, url, s3_endpoint)[0]
        ds = open_grid_url(url)
        expected = new if kill > steps.index("pointer") else old
        assert ds.attrs[md.ATTR_NAME] == expected.attrs[md.ATTR_NAME], kill
        _same_cells(ds.load(), expected)
    # the next sweep finishes the work: only its own version is left
    _context(url, CONTEXT_OLD, "old")
    assert len(fs.ls("lab/kills/context.zarr/versions", refresh=True)) >= 1


def test_a_concurrent_reader_never_sees_a_half_written_grid(s3_options, s3_endpoint):
    """A reader opening the dataset while a sweep writes (stopped before its pointer) gets the
    previous grid; the abandoned version is never followed."""
    url = "s3://lab/readers/context.zarr"
    _context(url, CONTEXT_OLD, "old")
    assert _killed_sweep(3, url, s3_endpoint)[0]  # killed after "finish", before "pointer"
    assert open_grid_url(url).attrs[md.ATTR_NAME] == "old"
    versions = _fs(s3_endpoint).ls("lab/readers/context.zarr/versions", refresh=True)
    assert len(versions) == 2  # the finished but unnamed version is left for later cleanup
    reading = open_grid_url(url)  # a reader holding the version a newer sweep then replaces
    _context(url, CONTEXT_NEW, "newer")
    with pytest.raises(DatasetError, match="was replaced by a newer sweep while it was read; "
                                           "open it again"):
        reading.load()
    assert open_grid_url(url).attrs[md.ATTR_NAME] == "newer"


def test_only_replaced_versions_and_day_old_unnamed_ones_are_deleted():
    now = pointer.version_time("20261206T100000000000Z-1-abcdef01")
    present = ["20261206T100000000000Z-1-abcdef01",  # the new current
               "20261206T090000000000Z-2-abcdef02",  # the one the pointer replaced
               "20261206T095000000000Z-3-abcdef03",  # a live sweep's (younger than a day)
               "20261205T090000000000Z-4-abcdef04",  # a killed sweep's, a day old
               "mine-not-the-labs"]                  # a name the lab never makes
    assert pointer.versions_to_delete(present, present[0], [present[1]], now - 3600 * 20) == [
        present[1]]  # 20 h earlier, the killed sweep's version was 5 h old: kept
    assert pointer.versions_to_delete(present, present[0], [present[1]], now + 7200) == [
        present[1], present[3]]


def test_a_worker_killed_mid_sweep_is_survived_with_no_differing_cell(
        s3_endpoint, s3_options, process_cluster, tmp_path):
    from distributed import Client

    url = "s3://lab/workers/decode.zarr"
    section = {**SMALL_DECODE, "chunk_cells": 30, "variables": list(LARGE_VARIABLES)}
    reference = open_grid(write_small(tmp_path / "ref.zarr", section, "many"))
    previous = from_mapping({"decode": {**section, "chunk_cells": 200}}, "test grid", "small")
    write_experiment_url(grid_kind("decode"), previous.resolve("decode"), "small", url,
                         Runner(None, "threads"))
    grid = from_mapping({"decode": section}, "test grid", "many")
    fs = _fs(s3_endpoint)
    result = {}
    with Client(process_cluster) as client:
        def sweep():
            try:
                result["url"] = write_experiment_url(grid_kind("decode"), grid.resolve("decode"),
                                                     grid.name, url, Runner(client))
            except BaseException as exc:  # reported below
                result["error"] = exc

        pids = client.run(os.getpid)
        thread = threading.Thread(target=sweep)
        thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(  # a region is written: mid-sweep
                "/step_time_s/c/" in key for key in fs.find("lab/workers/decode.zarr/versions/")):
            time.sleep(0.05)
            fs.invalidate_cache()
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        assert thread.is_alive()  # killed mid-sweep
        assert open_grid_url(url).attrs[md.ATTR_NAME] == "small"  # the previous grid meanwhile
        thread.join(timeout=180)
    assert "error" not in result, result.get("error")
    ds = open_grid_url(url)
    assert ds.attrs[md.ATTR_NAME] == "many"
    _same_cells(ds, reference)


# ---- 4. hostile and broken stores: one sentence each ----------------------------------------

class _Hostile(http.server.BaseHTTPRequestHandler):
    mode = "denied"

    def _answer(self):
        if self.mode == "slow":
            time.sleep(3)
        body = (b'<?xml version="1.0"?><Error><Code>AccessDenied</Code>'
                b"<Message>Access Denied</Message></Error>")
        try:
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first: its timeout
            pass

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer  # noqa: N815

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile():
    """A local HTTP server answering every S3 request with 403 AccessDenied (or too slowly)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


QUICK = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 1,
                           "retries": {"max_attempts": 2, "mode": "standard"}}}


def test_hostile_stores_are_one_sentence_each(s3_endpoint, hostile, monkeypatch, capsys):
    from sweeps.object_store import set_storage_options

    def sweep(url, options):
        set_storage_options(None)
        args = ["sweep", "--grid", "default", "--experiment", "context", "--out", url,
                "--scheduler", "threads", "--quiet"]
        for key, value in options.items():
            args += ["--storage-option", f"{key}={json.dumps(value)}"]
        start = time.monotonic()
        code = main(args)
        set_storage_options(None)
        return code, capsys.readouterr().err.strip(), time.monotonic() - start

    cases = {
        "missing bucket": ("s3://no-such-bucket/g/context.zarr", {"endpoint_url": s3_endpoint},
                           "the bucket 'no-such-bucket' does not exist"),
        "no permission": ("s3://lab/g/context.zarr",
                          {"endpoint_url": f"http://127.0.0.1:{hostile.server_port}", **QUICK},
                          "access was refused"),
        "wrong endpoint": ("s3://lab/g/context.zarr",
                           {"endpoint_url": f"http://127.0.0.1:{_free_port()}", **QUICK},
                           "could not be reached"),
    }
    for name, (url, options, words) in cases.items():
        code, err, took = sweep(url, options)
        assert code == 2, (name, err)
        assert words in err and "Traceback" not in err and len(err.splitlines()) == 1, (name, err)
        assert took < 60, (name, took)
    _Hostile.mode = "slow"
    try:
        code, err, took = sweep("s3://lab/g/context.zarr",
                                {"endpoint_url": f"http://127.0.0.1:{hostile.server_port}",
                                 **QUICK})
    finally:
        _Hostile.mode = "denied"
    assert code == 2 and "did not answer" in err and took < 60, (err, took)


def test_a_damaged_store_is_the_same_sentence_as_a_local_one(s3_options, s3_endpoint,
                                                             monkeypatch):
    from sweeps import remote_grid

    url = "s3://lab/damaged/context.zarr"
    _context(url, CONTEXT_OLD, "old")
    with monkeypatch.context() as bounds:  # reads are bounded as a local store's are
        bounds.setattr(remote_grid, "MAX_FILE_BYTES", 8)
        with pytest.raises(CorruptDatasetError, match=r"MiB the lab reads\); delete it"):
            open_grid_url(url)
        bounds.undo()
        bounds.setattr(remote_grid, "MAX_CHUNK_BYTES", 8)
        with pytest.raises(CorruptDatasetError, match=r"claims chunks of .* when decoded"):
            open_grid_url(url)
    fs = _fs(s3_endpoint)
    current = json.loads(fs.cat_file("lab/damaged/context.zarr/" + pointer.POINTER))["current"]
    root = f"lab/damaged/context.zarr/{current}"
    chunk = sorted(p for p in fs.find(root) if "/c/" in p and "tokens" not in p)[0]
    key = chunk[len(root) + 1:]
    data = fs.cat_file(chunk)
    fs.pipe_file(chunk, data[:-1] + bytes([data[-1] ^ 1]))
    ds = open_grid_url(url)
    with pytest.raises(CorruptDatasetError, match=re.escape(
            f"The dataset at {url} is corrupt (its file {key} does not match its checksum); "
            f"delete it and run `inference-lab sweep --experiment EXPERIMENT --out {url}` to "
            "recompute it (EXPERIMENT: one of decode, ")):
        ds.load()
    fs.rm_file(chunk)
    with pytest.raises(CorruptDatasetError, match=re.escape(f"its file {key} is missing")):
        open_grid_url(url)
    fs.pipe_file("lab/damaged/context.zarr/" + pointer.POINTER, b"{not json")
    with pytest.raises(CorruptDatasetError, match="its pointer"):
        open_grid_url(url)
    _context(url, CONTEXT_NEW, "mended")  # a sweep replaces the damaged dataset
    assert open_grid_url(url).attrs[md.ATTR_NAME] == "mended"
    with pytest.raises(MissingDatasetError, match=re.escape(
            "There is no dataset at s3://lab/nothing/context.zarr; run `inference-lab sweep "
            "--experiment EXPERIMENT --out s3://lab/nothing/context.zarr` to recompute it "
            "(EXPERIMENT: one of decode, ")):
        lab.open_dataset("s3://lab/nothing/context.zarr")


def test_a_prefix_this_tool_did_not_write_is_never_replaced(s3_options, s3_endpoint):
    fs = _fs(s3_endpoint)
    fs.pipe_file("lab/theirs/context.zarr/notes.txt", b"mine")
    with pytest.raises(DatasetError, match="holds objects this tool did not write"):
        _context("s3://lab/theirs/context.zarr", CONTEXT_OLD, "old")
    assert fs.cat_file("lab/theirs/context.zarr/notes.txt") == b"mine"
