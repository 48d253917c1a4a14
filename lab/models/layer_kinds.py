"""Per-layer attention kinds: what full, sliding-window and chunked layers hold, read and count.

A model is a list of layer kinds (:class:`~lab.catalog.moe_spec.MoESpec`'s ``window_layers``
with window ``w`` = ``sliding_window``, ``chunk_layers`` with chunk ``C`` = ``attention_chunk``;
the other ``L − window_layers − chunk_layers`` layers are full causal). Every function
broadcasts over numbers, numpy arrays and xarray objects; a model without those fields (a plain
:class:`~lab.catalog.entries.ModelSpec`) is all full layers. Units: tokens, pairs, pages.

The masks, as Hugging Face transformers' ``masking_utils`` writes them, for a query at position
``i`` (0-based) and a key at ``j ≤ i``:

* **full** causal: every ``j ≤ i``, ``i + 1`` keys;
* **sliding window** of ``w``: ``j > i − w``, ``min(i + 1, w)`` keys (itself and the ``w − 1``
  before it: gpt-oss ``w = 128``, Gemma 3 ``w = 1024``);
* **chunked** of ``C``: ``⌊j/C⌋ = ⌊i/C⌋``, ``(i mod C) + 1`` keys (Llama 4's RoPE layers,
  ``C = 8192``).

Per decoding sequence at context ``S`` (the new token is at position ``S``)::

    held (unpaged)  = F·(S + 1) + W·min(S + 1, w) + K·((S mod C) + 1)     layer-tokens
    read per step   = F·S + W·min(S, w − 1) + K·(S mod C)                  layer-tokens
    pages (ideal)   = F·⌈(S+1)/P⌉ + W·(⌊S/P⌋ − ⌊max(0, S−w+1)/P⌋ + 1)
                      + K·(⌊S/P⌋ − ⌊C·⌊S/C⌋/P⌋ + 1)                       layer-pages
    pages (full length, every layer) = L·⌈(S+1)/P⌉

with ``F``, ``W``, ``K`` the full, window and chunk layers. "Read" counts the cached keys
besides the new token's own, as the full layers' ``S`` always has (docs/model.md §0). The ideal
paged figure is what a per-layer-kind allocator holds: vLLM's hybrid KV cache manager keeps
one page size for every layer group and frees the pages a window or chunk has left
(https://docs.vllm.ai/en/latest/design/hybrid_kv_cache_manager/). With it disabled, vLLM
"regards sliding window attention as full attention in KV cache manager (blocks are allocated
for all tokens)" (``FullAttentionSpec``, https://docs.vllm.ai/en/v0.11.0/api/vllm/v1/
kv_cache_interface.html): the full-length figure.

Prefill of ``n`` tokens from an empty cache, (query, key) pairs per layer, diagonal included::

    full     n(n + 1)/2
    window   n(n + 1)/2 for n ≤ w, else w(w + 1)/2 + (n − w)·w
    chunked  q·C(C + 1)/2 + r(r + 1)/2,   q = ⌊n/C⌋, r = n mod C

and for the queries at positions ``[a, b)`` (a prefill chunk after ``a`` cached tokens) the
difference of the two prefixes: each query's count depends only on its own position.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, ceil_div, where
from lab.catalog.moe_spec import moe_field

KIND_NAMES = {"full": "full", "sliding": "sliding-window", "chunked": "chunked"}
"""Each layer kind's name in prose."""


def window_layers(model) -> ArrayLike:
    """Sliding-window layers ``W`` (count; 0 for a model without them)."""
    return moe_field(model, "window_layers")


def chunk_layers(model) -> ArrayLike:
    """Chunked-attention layers ``K`` (count; 0 for a model without them)."""
    return moe_field(model, "chunk_layers")


def full_layers(model) -> ArrayLike:
    """Full causal layers ``F = L − W − K`` (count)."""
    return model.layers - window_layers(model) - chunk_layers(model)


def has_local_layers(model) -> bool:
    """True when any layer of ``model`` (any model of a table) slides or attends in chunks."""
    return bool(np.any(window_layers(model)) or np.any(chunk_layers(model)))


def _window(model) -> ArrayLike:
    """``w``, 1 where the model has none (never used there: its window layers are 0)."""
    return np.maximum(moe_field(model, "sliding_window"), 1)


def _chunk(model) -> ArrayLike:
    """``C``, 1 where the model has none (never used there: its chunk layers are 0)."""
    return np.maximum(moe_field(model, "attention_chunk"), 1)


def held_layer_tokens(model, context: ArrayLike) -> ArrayLike:
    """Layer-tokens of KV one sequence at ``context`` holds, unpaged, the next token's slot
    included: ``F·(S+1) + W·min(S+1, w) + K·((S mod C) + 1)`` (tokens × layers)."""
    s = context
    return (full_layers(model) * (s + 1)
            + window_layers(model) * np.minimum(s + 1, _window(model))
            + chunk_layers(model) * (s % _chunk(model) + 1))


def read_layer_tokens(model, context: ArrayLike) -> ArrayLike:
    """Layer-tokens of cached KV one decode step of a sequence at ``context`` reads:
    ``F·S + W·min(S, w − 1) + K·(S mod C)`` (tokens × layers)."""
    s = context
    return (full_layers(model) * s
            + window_layers(model) * np.minimum(s, _window(model) - 1)
            + chunk_layers(model) * (s % _chunk(model)))


def effective_context(model, context: ArrayLike) -> ArrayLike:
    """The context a model of only full layers would read for the same KV bytes:
    :func:`read_layer_tokens` ``/ L`` (tokens); ``S`` itself when every layer is full."""
    if not has_local_layers(model):
        return context
    return where(window_layers(model) + chunk_layers(model) > 0,
                 read_layer_tokens(model, context) / model.layers, context)


def window_pages(context: ArrayLike, window: ArrayLike, page: ArrayLike) -> ArrayLike:
    """Pages a sliding-window layer holds at ``context``: those covering positions
    ``max(0, S − w + 1)`` to ``S`` (count)."""
    first = np.maximum(context - window + 1, 0)
    return context // page - first // page + 1


def chunk_pages(context: ArrayLike, chunk: ArrayLike, page: ArrayLike) -> ArrayLike:
    """Pages a chunked layer holds at ``context``: those covering its chunk's start
    ``C·⌊S/C⌋`` to ``S`` (count)."""
    return context // page - (chunk * (context // chunk)) // page + 1


def paged_layer_tokens(model, context: ArrayLike, page: ArrayLike) -> ArrayLike:
    """Layer-token slots of the pages one sequence holds, each layer kind paged on its own
    (the ideal; vLLM's hybrid KV cache manager): ``P ×`` the layer-pages of the module
    docstring (tokens × layers)."""
    full = ceil_div(context + 1, page)
    return page * (full_layers(model) * full
                   + window_layers(model) * window_pages(context, _window(model), page)
                   + chunk_layers(model) * chunk_pages(context, _chunk(model), page))


def full_length_layer_tokens(model, context: ArrayLike, page: ArrayLike) -> ArrayLike:
    """Layer-token slots when every layer holds the whole context, as an allocator without
    layer kinds does: ``L · ⌈(S+1)/P⌉ · P`` (tokens × layers)."""
    return model.layers * ceil_div(context + 1, page) * page


def causal_pairs(n: ArrayLike) -> ArrayLike:
    """(query, key) pairs of full causal attention over ``n`` tokens, diagonal included:
    ``n(n+1)/2``."""
    return n * (n + 1) // 2


def window_pairs(n: ArrayLike, window: ArrayLike) -> ArrayLike:
    """Pairs of sliding-window attention of ``w`` over ``n`` tokens:
    ``n(n+1)/2`` up to ``n = w``, then ``w`` more per token."""
    m = np.minimum(n, window)
    return causal_pairs(m) + (n - m) * window


def chunk_pairs(n: ArrayLike, chunk: ArrayLike) -> ArrayLike:
    """Pairs of chunked attention of ``C`` over ``n`` tokens: ``q·C(C+1)/2 + r(r+1)/2``."""
    q, r = n // chunk, n % chunk
    return q * causal_pairs(chunk) + causal_pairs(r)


def layer_pairs(model, n: ArrayLike) -> ArrayLike:
    """Pairs summed over the layers for a prefill of ``n`` tokens from an empty cache
    (pairs × layers): ``F·n(n+1)/2 + W·window_pairs + K·chunk_pairs``."""
    return (full_layers(model) * causal_pairs(n)
            + window_layers(model) * window_pairs(n, _window(model))
            + chunk_layers(model) * chunk_pairs(n, _chunk(model)))


def layer_pairs_between(model, start: ArrayLike, end: ArrayLike) -> ArrayLike:
    """Pairs summed over the layers of the queries at positions ``[start, end)`` (a prefill
    chunk after ``start`` cached tokens): ``layer_pairs(end) − layer_pairs(start)``."""
    return layer_pairs(model, end) - layer_pairs(model, start)


def read_layer_tokens_between(model, start: ArrayLike, end: ArrayLike) -> ArrayLike:
    """Layer-tokens the queries at positions ``[start, end)`` read besides their own key, summed:
    ``Σ_{S=start}^{end−1}`` :func:`read_layer_tokens` ``(S)`` ``= layer_pairs_between(start, end)
    − L·(end − start)`` (each query's pairs less its diagonal; tokens × layers). A verification
    step of ``k`` drafted tokens at context ``S`` reads ``[S, S + k + 1)``."""
    return layer_pairs_between(model, start, end) - model.layers * (end - start)


def layer_mix(model) -> str:
    """The layer mix in words: ``"18 sliding-window layers of 128 tokens, 18 full"``,
    ``"36 chunked layers of 8,192 tokens, 12 full"``, or ``"48 full layers"``."""
    parts = []
    window, chunk, full = (int(window_layers(model)), int(chunk_layers(model)),
                           int(full_layers(model)))
    if window:
        parts.append(f"{window:,} sliding-window layers of {int(model.sliding_window):,} tokens")
    if chunk:
        parts.append(f"{chunk:,} chunked layers of {int(model.attention_chunk):,} tokens")
    if not parts:
        return f"{full:,} full layers"
    if full:
        parts.append(f"{full:,} full")
    return ", ".join(parts)
