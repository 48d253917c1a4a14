"""Fuzz every loader: whatever the bytes, only a one-sentence LabInputError may escape.

Each test writes a hostile file (see :mod:`fuzz_inputs`) and loads it; a model or GPU that
loads is then used by the calculations that read it, so a value the loader let through cannot
fail later either. Set ``LAB_FUZZ_EXAMPLES`` to draw more examples than the suite's 200.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fuzz_inputs import (
    FUZZ_SETTINGS,
    config_json_files,
    gpu_toml_files,
    model_dicts,
    spec_toml_files,
    trace_csv_files,
)
from hypothesis import given

from lab.catalog import gpu_table, load_gpu_file, load_model_config, model_table
from lab.catalog.loader import model_from_config
from lab.errors import LabInputError
from lab.models.goodput import load_trace
from lab.points.decode_points import DecodeConfig, calc_decode, calc_precision
from lab.points.serving_points import calc_context, calc_goodput
from sweeps.grid_files import load_grid
from sweeps.grid_kinds import GRIDS
from sweeps.grid_schema import OPTION_KEYS

LONGEST_MESSAGE = 1000
"""Characters a one-sentence message may take: room for a temporary path and a list of valid
names (the decode grid's variables take ~600), none for a hostile value shown whole."""


def only_input_errors(function, *args, **kwargs):
    """Call ``function``; a :class:`LabInputError` must be one short sentence. Any other
    exception propagates (the test fails with it). Returns the result or None."""
    try:
        return function(*args, **kwargs)
    except LabInputError as exc:
        message = str(exc)
        assert message and "\n" not in message, repr(message)
        assert len(message) <= LONGEST_MESSAGE, message[:200]
        return None


def _written(data: bytes, folder: str, name: str) -> Path:
    path = Path(folder) / name
    path.write_bytes(data)
    return path


def check_config_json(data: bytes) -> None:
    """Load a ``config.json``; if it loads, every decode calculation reading it must work."""
    with tempfile.TemporaryDirectory() as folder:
        model = only_input_errors(load_model_config, _written(data, folder, "config.json"))
    if model is not None:
        check_model_in_use(model)


def check_model_in_use(model) -> None:
    """The calculations and tables that read a loaded model raise only LabInputError."""
    model_table([model])
    config = DecodeConfig(model=model, context=min(model.max_context, 8192))
    only_input_errors(calc_decode, config)
    only_input_errors(calc_context, tokens=4096, from_model=config)


def check_model_dict(entry: dict) -> None:
    """Build a model from a parsed ``config.json`` object (as the catalog does)."""
    model = only_input_errors(model_from_config, entry, "fuzz", model_id="fuzz", name="fuzz")
    if model is not None:
        check_model_in_use(model)


def check_gpu_toml(data: bytes) -> None:
    """Load a GPU TOML; if it loads, the tables and calculations reading it must work."""
    with tempfile.TemporaryDirectory() as folder:
        gpu = only_input_errors(load_gpu_file, _written(data, folder, "gpu.toml"))
    if gpu is not None:
        gpu_table([gpu])
        config = DecodeConfig(gpu=gpu)
        only_input_errors(calc_decode, config)
        only_input_errors(calc_precision, config)
        only_input_errors(calc_context, tokens=4096, from_model=config)
        only_input_errors(calc_context, tokens=4096, from_model=config.with_(precision="fp8"))


def check_trace_csv(data: bytes) -> None:
    """Load a trace CSV; if it loads, ``calc goodput`` on it must work."""
    with tempfile.TemporaryDirectory() as folder:
        path = _written(data, folder, "trace.csv")
        trace = only_input_errors(load_trace, path)
        if trace is not None:
            assert len(trace) >= 1
            only_input_errors(calc_goodput, trace=path, batch_cap=4, memory_check=True)


SPEC_KEYS = {name: tuple(rule.name for rule in (*kind.schema.axes, *kind.schema.constants))
             + OPTION_KEYS for name, kind in GRIDS.items()}
"""Keys each experiment's section may hold."""


def check_spec_toml(data: bytes) -> None:
    """Load a grid spec and resolve every experiment it names (no grid is computed)."""
    with tempfile.TemporaryDirectory() as folder:
        grid = only_input_errors(load_grid, str(_written(data, folder, "spec.toml")))
        if grid is not None:
            for experiment in grid.experiments:
                only_input_errors(grid.resolve, experiment)


@FUZZ_SETTINGS
@given(config_json_files())
def test_config_json_fuzz(data):
    check_config_json(data)


@FUZZ_SETTINGS
@given(model_dicts())
def test_model_fields_fuzz(entry):
    check_model_dict(entry)


@FUZZ_SETTINGS
@given(gpu_toml_files())
def test_gpu_toml_fuzz(data):
    check_gpu_toml(data)


@FUZZ_SETTINGS
@given(trace_csv_files())
def test_trace_csv_fuzz(data):
    check_trace_csv(data)


@FUZZ_SETTINGS
@given(spec_toml_files(tuple(GRIDS), SPEC_KEYS))
def test_spec_toml_fuzz(data):
    check_spec_toml(data)
