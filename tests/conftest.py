"""Shared fixtures for the whole suite."""

from __future__ import annotations

import pytest

from lab.catalog import get_gpu, get_model


@pytest.fixture
def llama8b():
    return get_model("llama-3.1-8b")


@pytest.fixture
def h100():
    return get_gpu("h100-sxm")
