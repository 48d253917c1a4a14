"""What one cached token costs: KV bytes per token and per page, and attention FLOPs per
(query, cached key) pair, for grouped-query attention (GQA) and multi-head latent attention
(MLA), at a KV-cache precision of its own.

Every function broadcasts over numbers, numpy arrays and xarray objects. ``model`` is a
:class:`~lab.catalog.moe_spec.MoESpec` (MLA when ``kv_lora_rank > 0``, else GQA). Units: bytes,
FLOP.

Formulas (``b_kv`` = 2 bytes for a BF16 cache, 1 for FP8: :func:`kv_bytes_per_element`, the
one place of the KV element sizes and of :data:`KV_PRECISIONS`)::

    GQA:  kv_tok = L · 2·K·h · b_kv,          per GPU kv_tok / tp (KV heads split)
    MLA:  kv_tok = L · (d_c + d_r) · b_kv,    per GPU kv_tok      (the latent is replicated)
    MLA's heads, uncompressed: L · H·(d_n + d_r + d_v) · b_kv  (the comparison, not a cache size
          the lab uses: what per-head keys and values of the same shape would take)
    bytes of n cached tokens per GPU = n · kv_tok / split   (split: tp for GQA, 1 for MLA):
          a decode step's KV reads, a page or block, a sequence's pages
    GQA:  FLOP per pair = 4 · L · H · h                 (q·k and p·v, 2 FLOP per MAC)
    MLA:  FLOP per pair = 2 · L · H · (2·d_c + d_r)     (absorbed form)

**MLA, absorbed form.** The cache holds, per token and layer, the latent ``c`` (``d_c``
elements) and the shared RoPE key (``d_r``). Decoding folds the key up-projection into the
query and the value up-projection into the output, so each head scores against the latent
directly: ``q̃ = W_UKᵀ q_n`` (``d_c`` wide) and ``q̃·c + q_r·k_r`` is ``d_c + d_r`` MACs per head
and pair; the weighted sum of latents is ``d_c`` MACs per head and pair. The two foldings are
per query token, not per pair, and are counted with the linear weights (they use the
``kv_b_proj`` weights once per token). Every GPU of a tensor-parallel group holds the whole
latent cache of its sequences (the heads are split, the latent is not), so MLA's KV bytes per
GPU do not fall with ``tp``.
"""

from __future__ import annotations

from lab.arrays import ArrayLike, where
from lab.catalog.moe_spec import moe_field

KV_PRECISIONS = ("bf16", "fp8")
"""KV-cache precisions: BF16 (2 bytes per element, the lab's default) and FP8 (1 byte)."""
KV_BYTES_PER_ELEMENT = 2
"""The default (BF16) KV cache: 2 bytes per element."""


def kv_bytes_per_element(kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """Bytes per cached K or V element: 2 for ``"bf16"``, 1 for ``"fp8"`` (B).

    A plain Python int for a string, so a scalar configuration keeps plain arithmetic."""
    if isinstance(kv_precision, str):
        return 1 if kv_precision == "fp8" else KV_BYTES_PER_ELEMENT
    return where(kv_precision == "fp8", 1, KV_BYTES_PER_ELEMENT)


def _has_latent(model) -> bool:
    """False when ``model`` has no ``kv_lora_rank`` field at all (a plain dense record or a
    dense table): its expressions are then GQA's alone, with no selection."""
    return hasattr(model, "kv_lora_rank")


def kv_elements_per_token_layer(model) -> ArrayLike:
    """Cached elements per token per layer (count): ``2·K·h`` for GQA, ``d_c + d_r`` for MLA."""
    gqa = 2 * model.kv_heads * model.head_dim
    if not _has_latent(model):
        return gqa
    mla = moe_field(model, "kv_lora_rank") + moe_field(model, "qk_rope_head_dim")
    return where(moe_field(model, "kv_lora_rank") > 0, mla, gqa)


def kv_split(model, tp: ArrayLike) -> ArrayLike:
    """GPUs one token's KV cache is split over (count): ``tp`` for GQA (the KV heads are
    split), 1 for MLA (the latent is replicated on every GPU of the group)."""
    if not _has_latent(model):
        return tp
    return where(moe_field(model, "kv_lora_rank") > 0, 1, tp)


def head_kv_elements_per_token_layer(model) -> ArrayLike:
    """Elements per token per layer the attention heads would cache as per-head keys and
    values, without a latent (count): ``2·K·h`` for GQA (what it caches), ``H·(d_n + d_r) +
    H·d_v`` for MLA (every head's key, RoPE part included, and value, as an implementation that
    does not keep the latent caches them): what MLA's ``d_c + d_r`` is compared with."""
    gqa = kv_elements_per_token_layer(model)  # GQA's rows; MLA's are replaced below
    mha = model.heads * (moe_field(model, "qk_nope_head_dim") + moe_field(model, "qk_rope_head_dim")
                         + moe_field(model, "v_head_dim"))
    return where(moe_field(model, "kv_lora_rank") > 0, mha, gqa)


def head_kv_bytes_per_token(model, kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """KV-cache bytes per token over all layers, whole model, had the heads cached their keys
    and values (:func:`head_kv_elements_per_token_layer`) (B)."""
    return (model.layers * head_kv_elements_per_token_layer(model)
            * kv_bytes_per_element(kv_precision))


def kv_bytes_per_token(model, kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """KV-cache bytes per token over all layers, the whole model (B): ``L·2·K·h·b_kv`` for GQA,
    ``L·(d_c + d_r)·b_kv`` for MLA; ``b_kv`` 2 for a BF16 cache (the default), 1 for FP8."""
    return model.layers * kv_elements_per_token_layer(model) * kv_bytes_per_element(kv_precision)


def kv_bytes_per_token_per_gpu(model, tp: ArrayLike, kv_precision: ArrayLike = "bf16"
                               ) -> ArrayLike:
    """KV-cache bytes per token one GPU holds (B): ``kv_tok / tp`` for GQA (split by KV heads),
    MLA's latent whole on every GPU of the group (:func:`kv_split`)."""
    return kv_bytes_per_token(model, kv_precision) / kv_split(model, tp)


def kv_bytes_per_layer_token_per_gpu(model, tp: ArrayLike, kv_precision: ArrayLike = "bf16"
                                     ) -> ArrayLike:
    """KV bytes one GPU holds per token per layer (B): ``2·K·h·b_kv / tp`` for GQA, MLA's
    ``(d_c + d_r)·b_kv`` whole. Every layer kind caches the same per token
    (:mod:`lab.models.layer_kinds` counts the tokens each kind holds)."""
    whole = kv_elements_per_token_layer(model) * kv_bytes_per_element(kv_precision)
    return whole / kv_split(model, tp)


def kv_tokens_bytes(model, tp: ArrayLike, kv_tokens: ArrayLike,
                    kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """KV bytes of ``kv_tokens`` cached tokens in all on one GPU (B):
    ``kv_tokens · kv_tok / tp`` (MLA: ``/ 1``, :func:`kv_split`). What a decode step reads, a
    page or block of ``page`` tokens holds, or a sequence's pages hold."""
    return 1.0 * kv_tokens * kv_bytes_per_token(model, kv_precision) / kv_split(model, tp)


def attention_flops_per_pair(model) -> ArrayLike:
    """Attention FLOPs per (query, cached key) pair over all layers and heads (FLOP).

    GQA ``4·L·H·h`` (q·k and p·v, 2 FLOP per MAC); MLA in the absorbed form
    ``2·L·H·(2·d_c + d_r)``.
    """
    gqa = 4 * model.layers * model.heads * model.head_dim
    if not _has_latent(model):
        return gqa
    d_c = moe_field(model, "kv_lora_rank")
    mla = 2 * model.layers * model.heads * (2 * d_c + moe_field(model, "qk_rope_head_dim"))
    return where(d_c > 0, mla, gqa)


def attention_flops(model, tp: ArrayLike, kv_tokens: ArrayLike) -> ArrayLike:
    """Attention FLOPs one GPU does in a decode step over ``kv_tokens`` cached tokens (FLOP):
    the heads are split across the ``tp`` GPUs for GQA and MLA alike."""
    return 1.0 * kv_tokens * attention_flops_per_pair(model) / tp
