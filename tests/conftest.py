"""Shared fixtures for the whole suite."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from lab.catalog import get_gpu, get_model

SERVER_ENVIRONMENT = ("INFERENCE_LAB_DATASETS", "INFERENCE_LAB_DATA",
                      "INFERENCE_LAB_STORAGE_OPTIONS", "INFERENCE_LAB_PAGES_AT_ONCE",
                      "INFERENCE_LAB_BASIC_AUTH", "PANEL_BASIC_AUTH", "PANEL_COOKIE_SECRET")
"""Variables a served lab reads from the environment it inherits."""


DATA_FOLDER_OWNER = "INFERENCE_LAB_TEST_DATA_OWNER"
"""Set (to the process id) by the test run that made the data folder, which removes it."""


def pytest_configure(config):
    """The lab's per-user state (the record of CSV exports, :mod:`sweeps.export_record`) goes
    to a folder of this test process, never the user's home; subprocesses inherit it.

    The data folder (``$INFERENCE_LAB_DATA``, the default grids) is a new one per test run,
    shared by its workers (they start after this hook and inherit it), never the checkout's
    ``datasets/grids`` nor the user's own folder: a user's sweep written there (a grid of
    their own under a default name, reported as stale) made the served lab's grid pages
    fail, and the suite's writes must not replace the user's data."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="inference-lab-test-state-")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["INFERENCE_LAB_DATA"] = tempfile.mkdtemp(prefix="inference-lab-test-data-")
        os.environ[DATA_FOLDER_OWNER] = str(os.getpid())


def pytest_unconfigure(config):
    """The run that made the data folder removes it (about 50 MB of grids)."""
    if os.environ.get(DATA_FOLDER_OWNER) == str(os.getpid()):
        shutil.rmtree(os.environ.get("INFERENCE_LAB_DATA", ""), ignore_errors=True)


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
