"""Catalog records as labelled arrays, for broadcasting over many models or GPUs at once.

``model_table(["llama-3.1-8b", ...])`` is an ``xarray.Dataset`` along a ``model`` dimension whose
variables carry the same names as :class:`~lab.catalog.entries.ModelSpec`'s attributes, so the
decode formulas read a table exactly as they read a single record. It also carries the
mixture-of-experts and MLA fields of :class:`~lab.catalog.moe_spec.MoESpec` (0 for a dense
model: no experts, no latent) and a ``moe`` flag per model, by which the decode step and memory
formulas cost each model of a table as its own kind (:func:`lab.catalog.moe_spec.by_kind`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from lab.catalog.entries import GPUSpec, ModelSpec
from lab.catalog.loader import get_gpu
from lab.catalog.lookup import get_model
from lab.catalog.moe_spec import MoESpec, moe_field

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
MOE_FIELDS = {
    "moe": ("mixture-of-experts model (1) or dense (0)", "1"),
    "tied": ("LM head tied to the input embedding (1) or not (0)", "1"),
    "experts": ("routed experts per MoE layer E", "1"),
    "experts_per_token": ("routed experts per token k", "1"),
    "expert_intermediate": ("expert MLP intermediate size F_e", "1"),
    "shared_intermediate": ("shared-expert intermediate size F_s", "1"),
    "shared_expert_gate": ("shared-expert gate (1) or not (0)", "1"),
    "moe_layers": ("MoE layers M", "1"),
    "router_bias": ("router score-correction bias (1) or not (0)", "1"),
    "attention_bias": ("q/k/v biases (1) or not (0)", "1"),
    "qk_norm": ("per-head q/k norms (1) or not (0)", "1"),
    "kv_lora_rank": ("MLA KV latent d_c", "1"),
    "q_lora_rank": ("MLA query latent d_q", "1"),
    "qk_rope_head_dim": ("MLA RoPE head dimension d_r", "1"),
    "qk_nope_head_dim": ("MLA non-RoPE head dimension d_n", "1"),
    "v_head_dim": ("MLA value head dimension d_v", "1"),
    "window_layers": ("sliding-window layers W", "1"),
    "sliding_window": ("sliding window w", "tokens"),
    "chunk_layers": ("chunked-attention layers", "1"),
    "attention_chunk": ("attention chunk C", "tokens"),
}
"""The mixture-of-experts and MLA fields of a model table (0 for a dense model; flags 0/1)."""
GPU_FIELDS = {
    "capacity_bytes": ("memory capacity", "B"),
    "hbm_bw": ("HBM bandwidth", "B/s"),
    "peak_bf16": ("dense BF16 peak", "FLOP/s"),
    "peak_fp8": ("dense FP8 peak", "FLOP/s"),
    "interconnect_bw": ("interconnect bandwidth per device (bidirectional)", "B/s"),
}


def _moe_value(spec: ModelSpec, name: str) -> int:
    """``spec``'s value of the MoE table field ``name``: 0 (no experts, no latent, no flag) for
    a dense record, except its ``tied`` flag."""
    if name == "moe":
        return int(isinstance(spec, MoESpec))
    return int(getattr(spec, name) if name == "tied" else moe_field(spec, name))


def model_table(models: Sequence[str | ModelSpec], dim: str = "model") -> xr.Dataset:
    """Shape fields of ``models`` (dense and MoE alike: :data:`MODEL_FIELDS` and
    :data:`MOE_FIELDS`) as int64 variables along ``dim`` (coordinate: the ids)."""
    specs = [get_model(m) for m in models]
    columns = {name: [getattr(s, name) for s in specs] for name in MODEL_FIELDS}
    columns.update({name: [_moe_value(s, name) for s in specs] for name in MOE_FIELDS})
    labels = {**MODEL_FIELDS, **MOE_FIELDS}
    data = {
        name: xr.Variable(dim, np.array(values, dtype=np.int64),
                          {"long_name": labels[name][0], "units": labels[name][1]})
        for name, values in columns.items()
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
