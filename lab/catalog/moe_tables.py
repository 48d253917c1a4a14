"""Mixture-of-experts records as labelled arrays, for broadcasting over many models at once.

``moe_model_table(["mixtral-8x7b", "deepseek-v3"])`` is an ``xarray.Dataset`` along a ``model``
dimension whose variables carry :class:`~lab.catalog.moe_spec.MoESpec`'s attribute names, so
:mod:`lab.catalog.moe_params`, :mod:`lab.models.moe` and :mod:`lab.models.kv_shapes` read a table exactly as
they read one record (flags become 0/1 integers).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from lab.catalog.moe_config import get_moe_model
from lab.catalog.moe_spec import MoESpec
from lab.catalog.tables import MODEL_FIELDS

MOE_FIELDS = {
    **MODEL_FIELDS,
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
}
"""Every integer field of a MoE record, with its long name and unit."""


def moe_model_table(models: Sequence[str | MoESpec], dim: str = "model") -> xr.Dataset:
    """Shape fields of ``models`` as int64 variables along ``dim`` (coordinate: the ids)."""
    specs = [get_moe_model(m) for m in models]
    data = {
        name: xr.Variable(dim, np.array([int(getattr(s, name)) for s in specs], dtype=np.int64),
                          {"long_name": long, "units": units})
        for name, (long, units) in MOE_FIELDS.items()
    }
    coords = {dim: xr.Variable(dim, np.array([s.id for s in specs], dtype=object),
                               {"long_name": "model id"})}
    return xr.Dataset(data, coords=coords)
