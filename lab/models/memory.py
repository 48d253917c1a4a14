"""Experiments 1–2's memory model: weights plus a paged BF16 KV cache inside a budget.

All functions broadcast over numbers, numpy arrays and xarray objects; results in bytes::

    mem_params = P_total · bytes(p) / tp
    pages(S)   = ceil((S + 1) / page)          # the cache holds the next token too
    mem_kv     = B · pages(S) · page · kv_tok / tp
    budget     = fraction · capacity
    remaining  = budget − mem_params − mem_kv − reserve
    free       = budget − mem_params − reserve
    max_seqs   = floor(free / (pages(S) · page · kv_tok / tp)), 0 when free ≤ 0
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, apply_mask, ceil_div, where
from lab.models.decode_step import bytes_per_weight, kv_bytes_per_token

DEFAULT_BUDGET_FRACTION = 0.90
"""Share of the GPU's capacity the engine may use (illustrative, not a vLLM default)."""
DEFAULT_RESERVE_BYTES = 4e9
"""Bytes held back for activations and runtime (illustrative)."""
DEFAULT_PAGE_TOKENS = 16
"""KV cache page (block) size, tokens."""


def pages(context: ArrayLike, page: ArrayLike) -> ArrayLike:
    """KV pages one sequence holds at ``context`` tokens, counting the next token: ceil((S+1)/page)."""
    return ceil_div(context + 1, page)


def params_bytes(model, tp: ArrayLike, precision: ArrayLike) -> ArrayLike:
    """Resident parameter bytes per GPU, every parameter at the uniform precision (B)."""
    return 1.0 * model.total_params * bytes_per_weight(precision) / tp


def kv_bytes_per_sequence(model, tp: ArrayLike, context: ArrayLike, page: ArrayLike) -> ArrayLike:
    """Paged KV cache bytes per GPU for one sequence at ``context`` tokens (B)."""
    return 1.0 * pages(context, page) * page * kv_bytes_per_token(model) / tp


def memory_budget(gpu, fraction: ArrayLike) -> ArrayLike:
    """Bytes the engine may use on one GPU: ``fraction · capacity`` (B)."""
    return fraction * gpu.capacity_bytes


def free_memory(budget: ArrayLike, weights: ArrayLike, reserve_bytes: ArrayLike) -> ArrayLike:
    """Bytes left for the KV cache: ``budget − weights − reserve`` (B)."""
    return budget - weights - reserve_bytes


def kv_free_bytes(model, gpu, tp: ArrayLike, precision: ArrayLike,
                  budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION,
                  reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES) -> ArrayLike:
    """Bytes left for the KV cache on one GPU for a model and GPU (B): experiment 2's free."""
    return free_memory(memory_budget(gpu, budget_fraction), params_bytes(model, tp, precision),
                       reserve_bytes)


def memory_fit(
    model,
    gpu,
    tp: ArrayLike,
    precision: ArrayLike,
    batch: ArrayLike,
    context: ArrayLike,
    budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION,
    reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES,
    page: ArrayLike = DEFAULT_PAGE_TOKENS,
    mask: ArrayLike | None = None,
) -> dict:
    """Memory per GPU for ``batch`` sequences at ``context``: the experiment-1 card.

    ``remaining = (budget − weights − reserve) − KV``: the small terms first, so a grid makes
    one full-size pass. ``mask`` (1 or NaN per cell) is applied to the terms, and so to what is
    derived from them. Returns ``memory_params_bytes``, ``memory_kv_bytes``,
    ``memory_budget_bytes``, ``memory_reserve_bytes``, ``memory_remaining_bytes`` (B) and
    ``fits`` (bool).
    """
    out = apply_mask({
        "memory_params_bytes": params_bytes(model, tp, precision),
        "memory_kv_bytes": batch * kv_bytes_per_sequence(model, tp, context, page),
        "memory_budget_bytes": memory_budget(gpu, budget_fraction),
        "memory_reserve_bytes": reserve_bytes * 1.0,
    }, mask)
    free = free_memory(out["memory_budget_bytes"], out["memory_params_bytes"],
                       out["memory_reserve_bytes"])
    out["memory_remaining_bytes"] = free - out["memory_kv_bytes"]
    out["fits"] = out["memory_remaining_bytes"] >= 0
    return out


def sequence_capacity(
    model,
    gpu,
    tp: ArrayLike,
    precision: ArrayLike,
    context: ArrayLike,
    budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION,
    reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES,
    page: ArrayLike = DEFAULT_PAGE_TOKENS,
    mask: ArrayLike | None = None,
) -> dict:
    """How many sequences of ``context`` tokens fit beside the weights: experiment 2.

    ``mask`` (1 or NaN per cell) is applied to every number. Returns
    ``kv_bytes_per_sequence``, ``free_for_kv_bytes``, ``page_waste_bytes_per_sequence`` (bytes
    of padding in the last page, B), ``max_sequences`` (count; 0 when the weights alone do not
    fit) and ``weights_fit`` (bool).
    """
    held_tokens = pages(context, page) * page
    out = apply_mask({
        "kv_bytes_per_sequence": kv_bytes_per_sequence(model, tp, context, page),
        "free_for_kv_bytes": kv_free_bytes(model, gpu, tp, precision, budget_fraction,
                                           reserve_bytes),
        "page_waste_bytes_per_sequence":
            1.0 * (held_tokens - (context + 1)) * kv_bytes_per_token(model) / tp,
    }, mask)
    free = out["free_for_kv_bytes"]
    max_seqs = where(free > 0, np.floor(free / out["kv_bytes_per_sequence"]), 0.0)
    out["max_sequences"] = max_seqs if mask is None else max_seqs * mask
    out["weights_fit"] = free > 0
    return out
