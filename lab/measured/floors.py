"""The lab's floor for each measured kernel, with the formulas of experiments 1 and 8.

Nothing is re-derived here: decode attention is
:func:`lab.models.decode_step.attention_phase` on one layer, prefill attention counts pairs
with :func:`lab.models.context_growth.dense_pairs` at
:func:`lab.models.kv_shapes.attention_flops_per_pair` FLOP each, and a GEMM reads its
operands at :func:`lab.models.weight_formats.weight_bytes` bytes and runs at
:func:`lab.models.decode_step.peak_flops` (docs/model.md §9). Every function
broadcasts over numpy arrays; results are SI (bytes, FLOP, seconds)::

    decode   bytes = B·S·(2·K·h·2)/tp          FLOP = 4·B·S·H·h/tp           peak(bf16)
    prefill  bytes = n·(2·H·h + 2·K·h)·2       FLOP = 4·H·h · n(n+1)/2       peak(bf16)
    GEMM     bytes = (k·n + m·k + m·n)·bytes(p) FLOP = 2·m·k·n                peak(p)
    floor    = max(bytes / BW, FLOP / peak)    ratio = measured / floor
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from lab.arrays import ArrayLike
from lab.catalog import GPUSpec
from lab.models.context_growth import dense_pairs
from lab.models.decode_step import attention_phase, bf16_peak_flops, peak_flops
from lab.models.kv_shapes import KV_BYTES_PER_ELEMENT, attention_flops_per_pair
from lab.models.weight_formats import weight_bytes

UNITS = {
    "bytes": ("bytes the kernel must move at least", "B"),
    "flops": ("FLOPs the kernel must do", "FLOP"),
    "memory_time_s": ("memory floor bytes / BW", "s"),
    "compute_time_s": ("compute floor FLOP / peak", "s"),
    "floor_s": ("the lab's floor, the larger of the two", "s"),
    "ratio": ("measured / floor", "1"),
    "excess_s": ("measured − floor", "s"),
    "achieved_bandwidth": ("achieved bandwidth bytes / measured", "B/s"),
    "achieved_flops": ("achieved FLOP/s, FLOP / measured", "FLOP/s"),
    "compute_bound": ("the floor is the compute floor", "1"),
    "below_floor": ("measured faster than the floor allows", "1"),
}
"""``(long_name, units)`` of every output of :func:`floors`."""


@dataclass(frozen=True)
class OneLayer:
    """The attention shape of one layer, as :mod:`lab.models.decode_step` reads a model (heads in all)."""

    heads: ArrayLike
    kv_heads: ArrayLike
    head_dim: ArrayLike
    layers: int = 1


def decode_attention(heads: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike, tp: ArrayLike,
                     batch: ArrayLike, context: ArrayLike, gpu: GPUSpec) -> dict:
    """Experiment 1's attention phase for one layer: ``batch·context`` cached tokens."""
    phase = attention_phase(OneLayer(heads, kv_heads, head_dim), gpu, tp=tp,
                            kv_tokens=batch * context)
    return {"bytes": phase["kv_read_bytes"], "flops": phase["attention_flops"],
            "memory_time_s": phase["attention_memory_time_s"],
            "compute_time_s": phase["attention_compute_time_s"]}


def prefill_attention(heads: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike,
                      tokens: ArrayLike, gpu: GPUSpec) -> dict:
    """Causal attention over ``tokens``: experiment 8's pairs at ``4·H·h`` FLOP each.

    The memory floor reads Q, K and V and writes O once in BF16: ``n·(2·H·h + 2·K·h)·2`` B.
    """
    layer = OneLayer(heads, kv_heads, head_dim)
    flops = 1.0 * dense_pairs(tokens) * attention_flops_per_pair(layer)
    nbytes = 1.0 * tokens * (2 * heads * head_dim + 2 * kv_heads * head_dim) * KV_BYTES_PER_ELEMENT
    return {"bytes": nbytes, "flops": flops, "memory_time_s": nbytes / gpu.hbm_bw,
            "compute_time_s": flops / bf16_peak_flops(gpu)}


def gemm(m: ArrayLike, k: ArrayLike, n: ArrayLike, precision: ArrayLike, gpu: GPUSpec) -> dict:
    """One GEMM: the weight, the input and the output once at ``bytes(p)``; ``2·m·k·n`` FLOP."""
    nbytes = 1.0 * (k * n + m * k + m * n) * weight_bytes(precision)
    flops = 2.0 * m * k * n
    return {"bytes": nbytes, "flops": flops, "memory_time_s": nbytes / gpu.hbm_bw,
            "compute_time_s": flops / peak_flops(gpu, precision)}


def compare(parts: dict, latency_s: ArrayLike) -> dict:
    """The floor, ``measured / floor`` and the achieved rates from one kind's ``parts``."""
    floor = np.maximum(parts["memory_time_s"], parts["compute_time_s"])
    ratio = latency_s / floor
    return {**parts, "floor_s": floor, "ratio": ratio, "excess_s": latency_s - floor,
            "achieved_bandwidth": parts["bytes"] / latency_s,
            "achieved_flops": parts["flops"] / latency_s,
            "compute_bound": parts["compute_time_s"] > parts["memory_time_s"],
            "below_floor": ratio < 1.0}


def floors(table: xr.Dataset, gpu: GPUSpec) -> dict:
    """Every output of :data:`UNITS` for every point of a measurements table (numpy arrays).

    ``table`` is a Dataset from :mod:`lab.measured.measured_loader`; each kind's points are computed
    with its own formula and the results put back in point order.
    """
    kind = np.asarray(table["kind"].values).astype(str)
    col = {name: np.asarray(table[name].values) for name in
           ("heads", "kv_heads", "head_dim", "tp", "batch", "context", "m", "k", "n")}
    dtype = np.asarray(table["dtype"].values).astype(str)
    latency = np.asarray(table["latency_s"].values, dtype=float)
    size = kind.size
    out = {name: np.full(size, np.nan) for name in UNITS}
    for name in ("compute_bound", "below_floor"):
        out[name] = np.zeros(size, dtype=bool)
    for which in ("decode", "prefill", "gemm"):
        sel = kind == which
        if not sel.any():
            continue
        c = {name: values[sel] for name, values in col.items()}
        if which == "decode":
            parts = decode_attention(c["heads"], c["kv_heads"], c["head_dim"], c["tp"],
                                     c["batch"], c["context"], gpu)
        elif which == "prefill":
            parts = prefill_attention(c["heads"], c["kv_heads"], c["head_dim"], c["context"], gpu)
        else:
            parts = gemm(c["m"], c["k"], c["n"], dtype[sel], gpu)
        for name, values in compare(parts, latency[sel]).items():
            out[name][sel] = values
    return out
