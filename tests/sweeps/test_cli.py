"""``inference-lab sweep``: output paths, and every bad input is one sentence with status 2."""

from __future__ import annotations

import pytest

from cli.main import main
from sweeps import runner
from sweeps.store import open_grid


def _grid(tmp_path, body: str):
    path = tmp_path / "g.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


SMALL = ('[decode]\nmodel = ["llama-3.1-8b"]\ngpu = ["h100-sxm"]\nbatch = [1, 8]\n'
         'context = [1024]\n[context]\ntokens = [1, 2, 1024]\n')


def test_sweep_writes_every_experiment_of_the_grid(tmp_path, capsys):
    code = main(["sweep", "--grid", _grid(tmp_path, SMALL), "--out", str(tmp_path / "out"),
                 "--scheduler", "threads"])
    assert code == 0
    out, err = capsys.readouterr()
    assert out.split() == [str(tmp_path / "out" / "decode.zarr"),
                           str(tmp_path / "out" / "context.zarr")]
    assert ("decode: 16 cells (model 1 × gpu 1 × tp 4 × precision 2 × kv_precision 1 × batch 2 × "
            "context 1)") in err
    assert open_grid(tmp_path / "out" / "context.zarr").sizes["tokens"] == 3


def test_sweep_one_experiment_to_a_zarr_path(tmp_path, capsys):
    out = tmp_path / "mine.zarr"
    code = main(["sweep", "--grid", _grid(tmp_path, SMALL), "--experiment", "context",
                 "--out", str(out), "--scheduler", "threads", "--quiet"])
    assert code == 0
    assert capsys.readouterr() == (f"{out}\n", "")
    assert open_grid(out).attrs["grid_name"] == "g"


@pytest.mark.parametrize("argv,message", [
    (["--grid", "nope"], "Grid 'nope' is neither a preset (default, large) nor a TOML file"),
    (["--experiment", "prefill"], "Grid 'g' has no [prefill] section; it covers decode, "
                                  "context."),
    (["--experiment", "decoder"], "There is no grid for experiment 'decoder'; valid: decode, "),
    (["--out", "x.zarr"], "--out x.zarr names one Zarr store but the sweep covers 2 "
                          "experiments"),
    (["--out", ""], "The --out name is empty; give a folder"),
    (["--out", "  "], "The --out name is empty; give a folder"),
    (["--scheduler", "threads", "--workers", "2"], "--workers sizes the local cluster only"),
    (["--workers", "0"], "--workers must be at least 1, not 0."),
    (["--workers", "100000"], "--workers is at most 64 worker processes of the local cluster, "
     "not 100000."),
])
def test_sweep_errors(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)  # a sweep the check let through writes here, not in the repo
    out = [] if "--out" in argv else ["--out", str(tmp_path / "grids")]
    base = ["sweep", "--grid", _grid(tmp_path, SMALL), *out, "--scheduler", "threads"]
    if "--scheduler" in argv or "--workers" in argv:
        base = base[:-2]
    if "--grid" in argv:
        base = ["sweep", "--scheduler", "threads"]
    code = main([*base, *argv])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"inference-lab: error: {message}")
    assert "Traceback" not in err


def test_unreachable_scheduler(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(runner, "CONNECT_TIMEOUT", "0.5s")
    code = main(["sweep", "--grid", _grid(tmp_path, SMALL), "--out", str(tmp_path / "g"),
                 "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 2
    assert "Could not connect to the Dask scheduler at 'tcp://127.0.0.1:9'" in \
        capsys.readouterr().err


@pytest.mark.parametrize("grid", ["mine", "large"])
def test_a_grid_other_than_the_default_needs_out(tmp_path, capsys, grid):
    """``sweep --grid mine.toml`` (or the ``large`` preset) without ``--out`` wrote over the
    data folder's default grid: the explorer and ``open_dataset("context")`` then read the
    user's grid under the lab's name. It is refused, and nothing is written."""
    from sweeps.paths import data_dir

    given = _grid(tmp_path, 'name = "mine"\n' + SMALL) if grid == "mine" else grid
    before = sorted(p.name for p in data_dir().glob("*.zarr"))
    code = main(["sweep", "--grid", given, "--experiment", "decode", "--scheduler", "threads"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"inference-lab: error: Grid '{grid}' is not the lab's default grid, "
                          f"so it is not written over the default datasets in {data_dir()}")
    assert sorted(p.name for p in data_dir().glob("*.zarr")) == before
