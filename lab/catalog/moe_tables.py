"""Mixture-of-experts records as labelled arrays, for broadcasting over many models at once.

``moe_model_table(["mixtral-8x7b", "deepseek-v3"])`` is :func:`lab.catalog.tables.model_table`
of mixture-of-experts models only (ids of the catalog's MoE entries or ``config.json`` paths):
an ``xarray.Dataset`` along a ``model`` dimension whose variables carry
:class:`~lab.catalog.moe_spec.MoESpec`'s attribute names, so :mod:`lab.models.moe_params`,
:mod:`lab.models.moe` and :mod:`lab.models.kv_shapes` read a table exactly as they read one
record (flags become 0/1 integers).
"""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

from lab.catalog.lookup import get_moe_model
from lab.catalog.moe_spec import MoESpec
from lab.catalog.tables import model_table


def moe_model_table(models: Sequence[str | MoESpec], dim: str = "model") -> xr.Dataset:
    """Shape fields of the mixture-of-experts ``models`` as int64 variables along ``dim``
    (coordinate: the ids); a dense model is refused in one sentence."""
    return model_table([get_moe_model(m) for m in models], dim)
