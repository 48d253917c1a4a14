"""Inference Lab: experiments in LLM inference engineering as explicit analytical models."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("inference-lab")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = ["__version__", "open_dataset"]


def __getattr__(name: str) -> Any:
    """``lab.open_dataset``: a lazy re-export of :func:`sweeps.datasets.open_dataset`.

    Datasets live a layer above the lab (:mod:`sweeps`); the name is resolved on first use so
    that importing ``lab`` never imports ``sweeps``.
    """
    if name == "open_dataset":
        from sweeps.datasets import open_dataset  # the one allowed upward name (lazy)

        return open_dataset
    raise AttributeError(f"module 'lab' has no attribute {name!r}")
