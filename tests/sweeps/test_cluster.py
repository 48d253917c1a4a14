"""The sweep job on a real ``distributed`` cluster with two worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from distributed import Client, LocalCluster, get_task_stream

from cli.main import main
from sweeps.store import open_grid
from tests.sweeps.conftest import SMALL_DECODE, write_small


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as local:
        yield local


def _grid_file(tmp_path):
    path = tmp_path / "grid.toml"
    lines = ["[decode]"] + [f"{k} = {v!r}".replace("'", '"') for k, v in SMALL_DECODE.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_sweep_runs_on_an_existing_cluster(cluster, tmp_path, small_decode, capsys):
    out = tmp_path / "cluster.zarr"
    with Client(cluster) as client, get_task_stream(client) as stream:
        code = main(["sweep", "--grid", str(_grid_file(tmp_path)), "--out", str(out),
                     "--scheduler", cluster.scheduler_address])
        assert len(client.scheduler_info()["workers"]) == 2
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)
    assert "2 workers" in captured.err
    workers = {task["worker"] for task in stream.data}
    assert workers and workers <= {w.worker_address for w in cluster.workers.values()}
    on_cluster = open_grid(out)
    threaded = open_grid(small_decode)
    for name in threaded.data_vars:
        np.testing.assert_array_equal(on_cluster[name].values, threaded[name].values)



def test_sweep_starts_a_local_cluster_with_two_workers(tmp_path, capsys):
    out = tmp_path / "local.zarr"
    code = main(["sweep", "--grid", str(_grid_file(tmp_path)), "--out", str(out),
                 "--workers", "2"])
    assert code == 0
    captured = capsys.readouterr()
    assert "Dask cluster at tcp://127.0.0.1" in captured.err and "(2 workers)" in captured.err
    assert open_grid(out).sizes["model"] == 3


def test_killed_worker_mid_write_is_replaced_and_the_sweep_completes(cluster, tmp_path):
    import os
    import signal
    import threading
    import time

    out = write_small(tmp_path / "decode.zarr")
    grid = tmp_path / "many.toml"
    grid.write_text('name = "many"\n[decode]\nchunk_cells = 4096\n'
                    'model = ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"]\n', encoding="utf-8")
    result = {}

    def sweep():
        result["code"] = main(["sweep", "--grid", str(grid), "--out", str(out),
                               "--scheduler", cluster.scheduler_address, "--quiet"])

    with Client(cluster) as client:
        pids = client.run(os.getpid)
        thread = threading.Thread(target=sweep)
        thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(
                tmp_path.glob("decode.zarr.tmp-*/step_time_s/c/*")):
            time.sleep(0.01)
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        assert open_grid(out).attrs["grid_name"] == "small"
        thread.join(timeout=120)
    assert result["code"] == 0
    ds = open_grid(out)
    assert ds.attrs["grid_name"] == "many" and ds.sizes["gpu"] == 18
    assert not np.isnan(ds["step_time_s"].sel(model="qwen3-8b", gpu="h100-sxm", tp=1,
                                               precision="bf16", kv_precision="bf16", batch=8,
                                               context=8192).values)


def test_sweep_stops_in_one_sentence_when_every_worker_is_lost(tmp_path, capsys, monkeypatch):
    import subprocess
    import sys
    import threading
    import time

    from sweeps import runner

    monkeypatch.setattr(runner, "WORKER_LOSS_TIMEOUT_S", 2.0)
    out = write_small(tmp_path / "decode.zarr")
    before = open_grid(out)["step_time_s"].values
    grid = tmp_path / "many.toml"
    grid.write_text('name = "many"\n[decode]\nchunk_cells = 4096\n'
                    'model = ["llama-3.1-8b", "qwen3-8b", "llama-3.1-70b"]\n', encoding="utf-8")
    result = {}
    with LocalCluster(n_workers=0, processes=True, dashboard_address=":0") as local:
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", local.scheduler_address,
             "--no-nanny", "--nthreads", "1", "--no-dashboard"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            thread = threading.Thread(target=lambda: result.update(code=main(
                ["sweep", "--grid", str(grid), "--out", str(out), "--scheduler",
                 local.scheduler_address, "--quiet"])), daemon=True)
            thread.start()
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not list(
                    tmp_path.glob("decode.zarr.tmp-*/step_time_s/c/*")):
                time.sleep(0.01)
            worker.kill()
            worker.wait(timeout=30)
            thread.join(timeout=90)
            assert not thread.is_alive(), "the sweep still waits for workers that are gone"
        finally:
            worker.kill()
    assert result["code"] == 2
    err = capsys.readouterr().err
    assert err == ("inference-lab: error: Every Dask worker was lost and none joined within "
                   f"2 s; the work was stopped ({out}: the previous dataset is unchanged).\n")
    np.testing.assert_array_equal(open_grid(out)["step_time_s"].values, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decode.zarr", "many.toml"]


def test_sweep_prints_the_dashboard_and_saves_a_performance_report(cluster, tmp_path, capsys):
    out, report = tmp_path / "report.zarr", tmp_path / "sweep-report.html"
    code = main(["sweep", "--grid", str(_grid_file(tmp_path)), "--out", str(out),
                 "--scheduler", cluster.scheduler_address, "--performance-report", str(report)])
    assert code == 0
    err = capsys.readouterr().err
    dashboard = cluster.dashboard_link
    assert f"Dask dashboard: {dashboard}\n" in err
    assert err.index("Dask dashboard:") < err.index("Completed")    # printed at the start
    assert "\r" not in err                       # captured stderr is no terminal: plain lines
    assert f"Dask performance report: {report}\n" in err
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "Dask Performance Report" in html


def _file_size_limit(limit: int):
    """``preexec_fn``: a file size limit of ``limit`` bytes (``ulimit -f``), writes past it
    failing with ``EFBIG`` (``SIGXFSZ`` ignored, as a shell that set the limit leaves it)."""
    import resource
    import signal

    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_sweep_at_the_file_size_limit_on_a_local_cluster_is_one_sentence(tmp_path):
    """``ulimit -f 16; sweep --quiet``: only the sentence (no worker logs or tracebacks), and
    nothing left behind, not even the folder the sweep made for its output."""
    import subprocess
    import sys
    from pathlib import Path

    grid = tmp_path / "big.toml"
    grid.write_text('name = "big"\n[decode]\nchunk_cells = 65536\n'
                    'model = ["llama-3.1-8b", "qwen3-8b"]\n', encoding="utf-8")
    out = tmp_path / "out" / "decode.zarr"
    done = subprocess.run([sys.executable, "-m", "lab", "sweep", "--grid", str(grid), "--out",
                           str(out), "--workers", "2", "--quiet"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=180, preexec_fn=_file_size_limit(16_384))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"inference-lab: error: Could not write the dataset at {out}: the "
                           "file size limit was reached; nothing was written.\n")
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.toml"]


def test_a_failed_task_is_summarised_and_the_running_ones_finish_first(cluster, tmp_path,
                                                                       capsys):
    """The caller removes the output once the error returns: no task may still write there
    (a straggler used to recreate an empty ``.tmp-`` folder)."""
    import errno
    import time
    from pathlib import Path

    import dask

    from sweeps.runner import Runner

    late = tmp_path / "late"

    def fail():
        time.sleep(0.3)
        raise OSError(errno.EFBIG, "File too large")

    def slow(path):
        time.sleep(2.0)
        Path(path).write_text("written after the failure", encoding="utf-8")

    with Client(cluster) as client:
        run = Runner(client, progress=True)
        with pytest.raises(OSError, match="File too large"):
            run.compute(dask.delayed(fail, pure=False)(),
                        dask.delayed(slow, pure=False)(str(late)))
        assert late.exists(), "the error returned while a task was still writing"
    err = capsys.readouterr().err
    assert err.endswith("1 of 2 tasks failed on the workers (the first: OSError: [Errno 27] "
                        "File too large).\n"), err
    assert "Traceback" not in err
