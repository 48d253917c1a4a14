"""The decode family's grid (experiments 1–4):
``model × gpu × tp × precision × kv_precision × batch × context``.

Each chunk calls :func:`lab.models.decode_metrics.decode_metrics` — the function behind ``calc
decode --json`` — with the catalog tables and axes shaped to broadcast, so every cell equals the
CLI's number for the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from lab.catalog import gpu_table, model_table
from lab.limits import MAX_ALLREDUCE_LATENCY_US, MAX_BATCH, MAX_CONTEXT, TP_DEGREES
from lab.models.decode_metrics import UNITS, decode_metrics
from lab.models.decode_step import PRECISIONS
from lab.models.inputs import DecodeInputs
from lab.models.memory import DEFAULT_BUDGET_FRACTION, DEFAULT_PAGE_TOKENS, DEFAULT_RESERVE_BYTES
from lab.models.parallel import DEFAULT_ALLREDUCE_LATENCY_S
from lab.points.decode_points import allreduce_options, memory_options
from lab.points.validity import REASON_TEXT, Reason
from lab.units import GB, US_PER_S
from sweeps.build import axis_view
from sweeps.common_rules import (
    budget_rule,
    gpu_rule,
    kv_precision_rule,
    model_rule,
    page_rule,
    precision_rule,
    reserve_rule,
    tp_rule,
)
from sweeps.grid_schema import Rule, Schema

DIMS = ("model", "gpu", "tp", "precision", "kv_precision", "batch", "context")
"""Dimensions of the decode grid, in order."""

VARIABLE_UNITS = {
    **UNITS,
    "valid": ("configuration is valid", "1"),
    "reason": ("why the configuration is invalid (0: valid)", "1"),
}
"""``(long_name, units)`` of every variable of the decode grid."""


def _variables() -> tuple[str, ...]:
    return tuple(VARIABLE_UNITS)


def reason_attrs() -> dict:
    """CF flag attributes of the ``reason`` code variable."""
    return {
        "flag_values": [int(r) for r in Reason],
        "flag_meanings": " ".join(r.name.lower() for r in Reason),
        "flag_descriptions": [REASON_TEXT[r] for r in Reason],
    }


SCHEMA = Schema(
    experiment="decode",
    axes=(
        model_rule("all"),
        gpu_rule("all"),
        tp_rule(list(TP_DEGREES)),
        precision_rule(list(PRECISIONS)),
        kv_precision_rule(["bf16"]),  # the default preset takes both (sweeps.grid_files)
        Rule("batch", "int", "batch", "sequences", 1, MAX_BATCH, default={"pow2": [1, MAX_BATCH]}),
        Rule("context", "int", "context", "tokens", 1, MAX_CONTEXT,
             default={"pow2": [128, 131072]}),
    ),
    constants=(
        budget_rule(DEFAULT_BUDGET_FRACTION),
        reserve_rule(DEFAULT_RESERVE_BYTES / GB),
        page_rule(DEFAULT_PAGE_TOKENS),
        Rule("allreduce", "bool", "all-reduce extension on", "1", default=False),
        Rule("allreduce_latency_us", "float", "latency per collective", "µs", 0,
             MAX_ALLREDUCE_LATENCY_US,
             default=DEFAULT_ALLREDUCE_LATENCY_S * US_PER_S),
    ),
    variables=_variables,
    description="Experiments 1–4: the ideal decode step, memory fit, tensor parallelism and "
    "precision (linear layers and KV cache), cell by cell (invalid cells NaN, `valid` False, `reason` code).",
)


@lru_cache(maxsize=64)
def _table_view(kind: str, ids: tuple[str, ...], axis: int, ndim: int) -> SimpleNamespace:
    """A catalog table's fields (``model_table``/``gpu_table``) as numpy arrays along ``axis``.

    Cached per chunk's ids: building the xarray table costs as much as a chunk's arithmetic.
    """
    table = model_table(list(ids)) if kind == "model" else gpu_table(list(ids))
    return SimpleNamespace(**{name: axis_view(table[name].values, axis, ndim)
                              for name in table.data_vars})


def decode_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """Every decode-family output for one chunk (arrays broadcastable to its shape).

    Parameters
    ----------
    coords : mapping
        1-D values of ``model``, ``gpu`` (ids), ``tp``, ``precision``, ``kv_precision``,
        ``batch``, ``context``.
    constants : mapping
        ``budget``, ``reserve_gb`` (GB), ``page`` (tokens), ``allreduce``,
        ``allreduce_latency_us`` (µs) — converted exactly as
        :func:`lab.points.decode_points.calc_decode` does.
    """
    ndim = len(DIMS)
    model = _table_view("model", tuple(str(m) for m in coords["model"]), 0, ndim)
    gpu = _table_view("gpu", tuple(str(g) for g in coords["gpu"]), 1, ndim)
    tp = axis_view(np.asarray(coords["tp"], dtype=np.int64), 2, ndim)
    precision = axis_view(np.asarray(coords["precision"], dtype=str), 3, ndim)
    kv_precision = axis_view(np.asarray(coords["kv_precision"], dtype=str), 4, ndim)
    batch = axis_view(np.asarray(coords["batch"], dtype=np.int64), 5, ndim)
    context = axis_view(np.asarray(coords["context"], dtype=np.int64), 6, ndim)
    memory = memory_options(constants["budget"], constants["reserve_gb"], constants["page"])
    inputs = DecodeInputs(model, gpu, tp, precision, batch, context, **memory,
                          kv_precision=kv_precision)
    return decode_metrics(inputs, **allreduce_options(constants["allreduce"],
                                                      constants["allreduce_latency_us"]))


DECODE_GRID = (SCHEMA, decode_block, VARIABLE_UNITS, lambda: {"reason": reason_attrs()})
"""The grid block of experiment 1 (registered in :mod:`sweeps.grids`)."""
