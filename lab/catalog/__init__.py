"""GPU and model catalogs (data files with sources) and bring-your-own loaders."""

from lab.catalog.entries import SUPPORTED_ARCHITECTURES, GPUSpec, ModelSpec
from lab.catalog.loader import (
    get_gpu,
    gpu_catalog,
    load_gpu_file,
)
from lab.catalog.lookup import get_model, load_model_config, model_catalog
from lab.catalog.params_count import total_parameters
from lab.catalog.tables import gpu_table, model_table

__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "GPUSpec",
    "ModelSpec",
    "get_gpu",
    "get_model",
    "gpu_catalog",
    "gpu_table",
    "load_gpu_file",
    "load_model_config",
    "model_catalog",
    "model_table",
    "total_parameters",
]
