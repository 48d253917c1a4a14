"""Shared fixtures for the whole suite."""

from __future__ import annotations

import os
import tempfile

import pytest

from lab.catalog import get_gpu, get_model

SERVER_ENVIRONMENT = ("INFERENCE_LAB_DATASETS", "INFERENCE_LAB_DATA",
                      "INFERENCE_LAB_STORAGE_OPTIONS", "INFERENCE_LAB_PAGES_AT_ONCE",
                      "INFERENCE_LAB_BASIC_AUTH", "PANEL_BASIC_AUTH", "PANEL_COOKIE_SECRET")
"""Variables a served lab reads from the environment it inherits."""


def pytest_configure(config):
    """The lab's per-user state (the record of CSV exports, :mod:`sweeps.export_record`) goes
    to a folder of this test process, never the user's home; subprocesses inherit it."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="inference-lab-test-state-")


@pytest.fixture(autouse=True)
def _server_environment_left_as_found():
    """Every test leaves the variables a served lab reads as it found them: a test that left
    INFERENCE_LAB_DATASETS=s3://lab/grids set made the next lab its worker served find no grid
    (a failure that depended on which worker ran which file first)."""
    before = {name: os.environ.get(name) for name in SERVER_ENVIRONMENT}
    yield
    after = {name: os.environ.get(name) for name in SERVER_ENVIRONMENT}
    assert after == before, f"the test changed the server environment: {before} -> {after}"


@pytest.fixture
def llama8b():
    return get_model("llama-3.1-8b")


@pytest.fixture
def h100():
    return get_gpu("h100-sxm")
