"""Experiment 6's prefix-ownership model: full shared blocks stored once, private tails.

Only **full** blocks of the shared prefix are shared; the partial last block and everything
after it belong to each request. Broadcasts over numbers, numpy arrays and xarray objects::

    s_blocks = floor(P / b)              tail = (P mod b) + U        priv = ceil(tail / b)
    with     = s_blocks + N · priv       without = N · ceil((P + U) / b)
    bytes    = blocks · b · kv_tok / tp  owned(req) = priv + s_blocks / N
    (kv_tok: :func:`lab.models.kv_shapes.kv_bytes_per_token`, BF16 unless ``kv_precision``)
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, ceil_div, where
from lab.models.kv_shapes import kv_tokens_bytes

UNITS = {
    "shared_blocks": ("shared prefix blocks (stored once)", "blocks"),
    "tail_tokens": ("private tokens per request", "tokens"),
    "private_blocks_per_request": ("private blocks per request", "blocks"),
    "blocks_with_cache": ("KV blocks with prefix caching", "blocks"),
    "blocks_without_cache": ("KV blocks without prefix caching", "blocks"),
    "block_bytes": ("bytes per KV block per GPU", "B"),
    "bytes_with_cache": ("KV memory with prefix caching per GPU", "B"),
    "bytes_without_cache": ("KV memory without prefix caching per GPU", "B"),
    "bytes_saved": ("KV memory saved per GPU", "B"),
    "saved_fraction": ("share of KV memory saved", "1"),
    "owned_blocks_per_request": ("blocks owned per request (amortised)", "blocks"),
}
"""``(long_name, units)`` of every output of :func:`prefix_metrics`."""


def prefix_metrics(
    model,
    tp: ArrayLike,
    prefix: ArrayLike,
    own: ArrayLike,
    requests: ArrayLike,
    block: ArrayLike,
    kv_precision: ArrayLike = "bf16",
) -> dict:
    """Blocks and bytes of ``requests`` sequences sharing a ``prefix``-token prompt.

    Parameters
    ----------
    model
        A :class:`~lab.catalog.ModelSpec` or a ``model_table`` Dataset (read by attribute).
    tp : int
        Tensor-parallel degree (KV heads are sharded over it).
    prefix : int
        Shared prefix tokens ``P`` (≥ 0).
    own : int
        Tokens each request adds after the prefix, ``U`` (≥ 0).
    requests : int
        Requests sharing the prefix, ``N`` (≥ 1).
    block : int
        KV block (page) size ``b``, tokens (≥ 1).
    kv_precision : str
        The KV cache's precision (``kv_tok``'s ``b_kv``): experiment 6 has no input for it and
        costs a BF16 cache, the default.

    Returns
    -------
    dict
        Keys as in :data:`UNITS`; block counts are integers, bytes are per GPU.
    """
    shared = prefix // block
    tail = prefix % block + own
    private = ceil_div(tail, block)
    with_cache = shared + requests * private
    without_cache = requests * ceil_div(prefix + own, block)
    block_bytes = kv_tokens_bytes(model, tp, block, kv_precision)
    bytes_with = with_cache * block_bytes
    bytes_without = without_cache * block_bytes
    saved = where(without_cache > 0,
                  1.0 - with_cache / np.maximum(without_cache, 1), 0.0)
    return {
        "shared_blocks": shared,
        "tail_tokens": tail,
        "private_blocks_per_request": private,
        "blocks_with_cache": with_cache,
        "blocks_without_cache": without_cache,
        "block_bytes": block_bytes,
        "bytes_with_cache": bytes_with,
        "bytes_without_cache": bytes_without,
        "bytes_saved": bytes_without - bytes_with,
        "saved_fraction": saved,
        "owned_blocks_per_request": private + shared / requests,
    }
