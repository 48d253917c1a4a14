"""Experiments 1–2's memory model: weights plus a paged KV cache inside a budget.

All functions broadcast over numbers, numpy arrays and xarray objects; results in bytes::

    mem_params = P_total · bytes(p) / tp
    pages(S)   = ceil((S + 1) / page)          # the cache holds the next token too
    mem_kv     = B · pages(S) · page · kv_tok / tp    # kv_tok at the KV precision (BF16 default)
    budget     = fraction · capacity
    remaining  = budget − mem_params − mem_kv − reserve
    free       = budget − mem_params − reserve
    max_seqs   = floor(free / (pages(S) · page · kv_tok / tp)), 0 when free ≤ 0

A mixture-of-experts or MLA model (:class:`~lab.catalog.moe_spec.MoESpec`) holds every expert
(:func:`lab.models.moe.resident_weight_bytes`: MLA down-projections and routers whole on every
GPU) and its KV per GPU from :func:`lab.models.kv_shapes.kv_bytes_per_token_per_gpu` (MLA's
latent replicated, not split by tp).

With expert parallelism (``ep > 1``, :mod:`lab.models.expert_parallel`) a GPU holds ``E/ep``
of the routed experts (``resident_weight_bytes`` with ``ep``) and the KV of ``B/ep`` of the
layout's ``B`` sequences; ``max_seqs`` counts the whole layout, ``ep`` groups.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, apply_mask, ceil_div, where
from lab.catalog.moe_spec import by_kind
from lab.models import kv_shapes, layer_kinds, moe
from lab.models.inputs import (  # noqa: F401  (the defaults, re-exported where they are used)
    DEFAULT_BUDGET_FRACTION,
    DEFAULT_PAGE_TOKENS,
    DEFAULT_RESERVE_BYTES,
    DecodeInputs,
)
from lab.models.weight_formats import weight_bytes


def pages(context: ArrayLike, page: ArrayLike) -> ArrayLike:
    """KV pages one sequence holds at ``context`` tokens, counting the next token: ceil((S+1)/page)."""
    return ceil_div(context + 1, page)


def params_bytes(model, tp: ArrayLike, precision: ArrayLike, ep: ArrayLike = 1) -> ArrayLike:
    """Resident parameter bytes per GPU, every parameter (every expert) at the uniform
    precision (B); a mixture of experts over ``ep`` groups holds ``E/ep`` experts a group."""
    return by_kind(model,
                   lambda: 1.0 * model.total_params * weight_bytes(precision) / tp,
                   lambda: 1.0 * moe.resident_weight_bytes(model, tp, precision, ep))


def kv_bytes_per_sequence(model, tp: ArrayLike, context: ArrayLike, page: ArrayLike,
                          kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """Paged KV cache bytes per GPU for one sequence at ``context`` tokens, the cache at
    ``kv_precision`` (B). A model with sliding-window or chunked layers holds each layer kind's
    own pages (:func:`lab.models.layer_kinds.paged_layer_tokens`)."""
    every = kv_shapes.kv_tokens_bytes(model, tp, pages(context, page) * page, kv_precision)
    return _local_or(model, lambda: layer_kinds.paged_layer_tokens(model, context, page),
                     every, tp, kv_precision)


def _local_or(model, layer_tokens, every: ArrayLike, tp: ArrayLike,
              kv_precision: ArrayLike) -> ArrayLike:
    """``layer_tokens()`` layer-tokens in bytes per GPU where the model has sliding-window or
    chunked layers, else ``every`` (the all-full expression, bit for bit)."""
    if not layer_kinds.has_local_layers(model):
        return every
    local = 1.0 * layer_tokens() * kv_shapes.kv_bytes_per_layer_token_per_gpu(model, tp,
                                                                               kv_precision)
    return where(layer_kinds.window_layers(model) + layer_kinds.chunk_layers(model) > 0,
                 local, every)


def full_length_kv_bytes_per_sequence(model, tp: ArrayLike, context: ArrayLike,
                                      page: ArrayLike, kv_precision: ArrayLike = "bf16"
                                      ) -> ArrayLike:
    """Paged KV bytes per GPU for one sequence when every layer holds the whole context, as an
    allocator without layer kinds does (vLLM with its hybrid KV cache manager disabled) (B)."""
    return (1.0 * layer_kinds.full_length_layer_tokens(model, context, page)
            * kv_shapes.kv_bytes_per_layer_token_per_gpu(model, tp, kv_precision))


def memory_budget(gpu, fraction: ArrayLike) -> ArrayLike:
    """Bytes the engine may use on one GPU: ``fraction · capacity`` (B)."""
    return fraction * gpu.capacity_bytes


def free_memory(budget: ArrayLike, weights: ArrayLike, reserve_bytes: ArrayLike) -> ArrayLike:
    """Bytes left for the KV cache: ``budget − weights − reserve`` (B)."""
    return budget - weights - reserve_bytes


def kv_free_bytes(model, gpu, *, tp: ArrayLike, precision: ArrayLike,
                  budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION,
                  reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES,
                  ep: ArrayLike = 1) -> ArrayLike:
    """Bytes left for the KV cache on one GPU for a model and GPU (B): experiment 2's free."""
    return free_memory(memory_budget(gpu, budget_fraction),
                       params_bytes(model, tp, precision, ep), reserve_bytes)


def memory_fit(inputs: DecodeInputs, mask: ArrayLike | None = None) -> dict:
    """Memory per GPU for ``inputs.batch`` sequences at ``inputs.context``: the experiment-1 card.

    ``remaining = (budget − weights − reserve) − KV``: the small terms first, so a grid makes
    one full-size pass. ``mask`` (1 or NaN per cell) is applied to the terms, and so to what is
    derived from them. Returns ``memory_params_bytes``, ``memory_kv_bytes``,
    ``memory_budget_bytes``, ``memory_reserve_bytes``, ``memory_remaining_bytes`` (B) and
    ``fits`` (bool).
    """
    model, tp, page = inputs.model, inputs.tp, inputs.page
    group_batch = inputs.batch if moe.no_expert_parallelism(inputs.ep) else inputs.batch / inputs.ep
    out = apply_mask({
        "memory_params_bytes": params_bytes(model, tp, inputs.precision, inputs.ep),
        "memory_kv_bytes": group_batch * kv_bytes_per_sequence(model, tp, inputs.context, page,
                                                               inputs.kv_precision),
        "memory_budget_bytes": memory_budget(inputs.gpu, inputs.budget_fraction),
        "memory_reserve_bytes": inputs.reserve_bytes * 1.0,
    }, mask)
    free = free_memory(out["memory_budget_bytes"], out["memory_params_bytes"],
                       out["memory_reserve_bytes"])
    out["memory_remaining_bytes"] = free - out["memory_kv_bytes"]
    out["fits"] = out["memory_remaining_bytes"] >= 0
    return out


def _waste_bytes(model, tp: ArrayLike, context: ArrayLike, page: ArrayLike,
                     kv_precision: ArrayLike) -> ArrayLike:
    """Padding bytes of one sequence's pages, one GPU (B): every layer's last page, or for a
    model with local layers each kind's pages less the tokens it holds."""
    every = kv_shapes.kv_tokens_bytes(model, tp, pages(context, page) * page - (context + 1),
                                      kv_precision)
    return _local_or(model, lambda: (layer_kinds.paged_layer_tokens(model, context, page)
                                     - layer_kinds.held_layer_tokens(model, context)),
                     every, tp, kv_precision)


def sequence_capacity(inputs: DecodeInputs, mask: ArrayLike | None = None) -> dict:
    """How many sequences of ``inputs.context`` tokens fit beside the weights: experiment 2.

    ``inputs.batch`` is not used.
    ``mask`` (1 or NaN per cell) is applied to every number. Returns
    ``kv_bytes_per_sequence``, ``free_for_kv_bytes``, ``page_waste_bytes_per_sequence`` (bytes
    of padding in the last page, B), ``max_sequences`` (count; 0 when the weights alone do not
    fit; with ``ep > 1`` the whole layout's, ``ep`` times one group's) and ``weights_fit``
    (bool).
    """
    model, tp, context, page = inputs.model, inputs.tp, inputs.context, inputs.page
    out = apply_mask({
        "kv_bytes_per_sequence": kv_bytes_per_sequence(model, tp, context, page,
                                                       inputs.kv_precision),
        "free_for_kv_bytes": kv_free_bytes(model, inputs.gpu, tp=tp, precision=inputs.precision,
                                           budget_fraction=inputs.budget_fraction,
                                           reserve_bytes=inputs.reserve_bytes, ep=inputs.ep),
        "page_waste_bytes_per_sequence": _waste_bytes(model, tp, context, page,
                                                      inputs.kv_precision),
    }, mask)
    free = out["free_for_kv_bytes"]
    max_seqs = where(free > 0, np.floor(free / out["kv_bytes_per_sequence"]), 0.0)
    if not moe.no_expert_parallelism(inputs.ep):  # every group holds as many
        max_seqs = inputs.ep * max_seqs
    out["max_sequences"] = max_seqs if mask is None else max_seqs * mask
    out["weights_fit"] = free > 0
    return out
