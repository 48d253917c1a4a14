"""Inference Lab: eight experiments in LLM inference engineering as explicit analytical models."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("inference-lab")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

from lab.datasets import open_dataset

__all__ = ["__version__", "open_dataset"]
