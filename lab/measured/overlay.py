"""Experiment 1's optional overlay: the measured decode attention kernel beside the ideal phase.

Where the shipped H100 SXM data holds the selected model's head shape (Q-K-h) at its tp, batch
and context, the measured one-layer time × L is the measured attention phase of one step; the
ideal one is experiment 1's ``attention_time_s`` (docs/model.md §9).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import xarray as xr

from lab.catalog import GPUSpec, ModelSpec
from lab.errors import LabInputError
from lab.measured.calc import Selection, measured_table, point_record, select_point
from lab.measured.measured_loader import SHIPPED_GPU, SHIPPED_SOURCE


@lru_cache(maxsize=1)
def _shipped_table() -> xr.Dataset:
    return measured_table()


def measured_attention(model: ModelSpec, gpu: GPUSpec, tp: int, batch: int, context: int,
                       ideal_attention_s: float) -> dict:
    """The measured attention phase of one decode step for a decode configuration, if measured.

    Returns ``available`` (bool) and ``sentence`` (what is shown, either way); when available
    also ``per_layer_s``, ``measured_s`` (× L), ``ideal_s``, ``ratio`` and ``point`` (the record).
    """
    shape = f"{model.heads}-{model.kv_heads}-{model.head_dim}"
    if getattr(gpu, "id", "") != SHIPPED_GPU:
        return {"available": False,
                "sentence": "Measured attention: the shipped measurements are from an H100 SXM "
                            f"only, not the {gpu.name}."}
    table = _shipped_table()
    try:
        index = select_point(table, Selection(kind="decode", shape=shape, tp=int(tp),
                                              batch=int(batch), context=int(context)))
    except LabInputError as exc:
        return {"available": False,
                "sentence": f"Measured attention: no real kernel was measured for this "
                            f"configuration. {exc}"}
    p = point_record(table, index)
    measured = p["latency_s"] * model.layers
    return {"available": True, "point": p, "per_layer_s": p["latency_s"], "measured_s": measured,
            "ideal_s": ideal_attention_s, "ratio": measured / ideal_attention_s,
            "sentence": (f"Measured attention (real kernel, not the lab's model): "
                         f"{p['latency_s'] * 1e6:,.2f} µs per layer for {shape} at tp {p['tp']}, "
                         f"batch {p['batch']:,} × {p['context']:,} tokens, × {model.layers} "
                         f"layers = {measured * 1e3:,.2f} ms against the ideal attention phase "
                         f"of {ideal_attention_s * 1e3:,.2f} ms ({measured / ideal_attention_s:,.2f}"
                         f"×). Source: {SHIPPED_SOURCE}.")}


def measured_attention_series(model: ModelSpec, gpu: GPUSpec, tp: int, batches, context: int,
                              ideal_attention_s) -> dict:
    """:func:`measured_attention` at each of ``batches`` (one context), where measured.

    ``ideal_attention_s`` holds experiment 1's ideal attention phase at each batch, s. Returns
    ``batch`` (the measured batches, int64), ``measured_s`` (per-layer time × L, s),
    ``per_layer_s`` (s) and ``ideal_s`` (s) over those batches, all empty when the shipped H100
    SXM data has no point for the model's shape at this tp and context; and ``source``.
    """
    rows = [measured_attention(model, gpu, tp, int(b), context, float(ideal))
            for b, ideal in zip(batches, ideal_attention_s, strict=True)]
    found = [r for r in rows if r["available"]]
    return {"batch": np.array([r["point"]["batch"] for r in found], dtype=np.int64),
            "measured_s": np.array([r["measured_s"] for r in found], dtype=float),
            "per_layer_s": np.array([r["per_layer_s"] for r in found], dtype=float),
            "ideal_s": np.array([r["ideal_s"] for r in found], dtype=float),
            "source": SHIPPED_SOURCE}
