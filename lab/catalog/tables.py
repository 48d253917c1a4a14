"""Catalog records as labelled arrays, for broadcasting over many models or GPUs at once.

``model_table(["llama-3.1-8b", ...])`` is an ``xarray.Dataset`` along a ``model`` dimension whose
variables carry the same names as :class:`~lab.catalog.entries.ModelSpec`'s attributes, so the
decode formulas read a table exactly as they read a single record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from lab.catalog.entries import GPUSpec, ModelSpec
from lab.catalog.loader import get_gpu, get_model

MODEL_FIELDS = {
    "hidden": ("hidden size d", "1"),
    "layers": ("decoder layers L", "1"),
    "heads": ("query heads H", "1"),
    "kv_heads": ("key/value heads K", "1"),
    "head_dim": ("head dimension h", "1"),
    "intermediate": ("MLP intermediate size F", "1"),
    "vocab": ("vocabulary size V", "1"),
    "total_params": ("total parameters", "1"),
    "max_context": ("maximum context", "tokens"),
}
GPU_FIELDS = {
    "capacity_bytes": ("memory capacity", "B"),
    "hbm_bw": ("HBM bandwidth", "B/s"),
    "peak_bf16": ("dense BF16 peak", "FLOP/s"),
    "peak_fp8": ("dense FP8 peak", "FLOP/s"),
    "interconnect_bw": ("interconnect bandwidth per device (bidirectional)", "B/s"),
}


def model_table(models: Sequence[str | ModelSpec], dim: str = "model") -> xr.Dataset:
    """Shape fields of ``models`` as int64 variables along ``dim`` (coordinate: the ids)."""
    specs = [get_model(m) for m in models]
    data = {
        name: xr.Variable(dim, np.array([getattr(s, name) for s in specs], dtype=np.int64),
                          {"long_name": long, "units": units})
        for name, (long, units) in MODEL_FIELDS.items()
    }
    coords = {dim: xr.Variable(dim, np.array([s.id for s in specs], dtype=object),
                               {"long_name": "model id"})}
    return xr.Dataset(data, coords=coords)


def gpu_table(gpus: Sequence[str | GPUSpec], dim: str = "gpu") -> xr.Dataset:
    """Peaks of ``gpus`` as float64 variables along ``dim`` (NaN FP8 peak where there is none)."""
    specs = [get_gpu(g) for g in gpus]
    data = {
        name: xr.Variable(dim, np.array([getattr(s, name) for s in specs], dtype=np.float64),
                          {"long_name": long, "units": units})
        for name, (long, units) in GPU_FIELDS.items()
    }
    coords = {dim: xr.Variable(dim, np.array([s.id for s in specs], dtype=object),
                               {"long_name": "GPU id"})}
    return xr.Dataset(data, coords=coords)
