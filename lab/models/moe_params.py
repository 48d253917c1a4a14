"""Parameter counts of a mixture-of-experts decoder (optionally with MLA), from its shape.

Every function reads a :class:`~lab.catalog.moe_spec.MoESpec` (or any object with the same
attributes: an ``xarray.Dataset`` of many models broadcasts) and returns a count of parameters.
With Python integers in, the counts are exact integers.

Symbols: ``d`` hidden, ``L`` layers, ``M`` MoE layers (``L − M`` dense), ``H`` query heads, ``K``
KV heads, ``h`` head dim, ``F`` dense MLP width, ``E`` routed experts, ``k`` experts per token,
``F_e`` expert width, ``F_s`` shared-expert width, ``V`` vocabulary; MLA: ``d_c`` KV latent,
``d_q`` query latent, ``d_r`` RoPE head dim, ``d_n`` non-RoPE head dim, ``d_v`` value head dim.

Two conventions, both stated by the functions' names:

* **total** and **active** count *every* parameter, as :func:`lab.catalog.total_parameters`
  does for dense models: input embedding, LM head unless tied, norms, biases, routers. Active
  counts ``k`` of the ``E`` routed experts in each MoE layer instead of all ``E``.
* **linear** counts only the matrices a decode step multiplies, as ``N_lin`` of the dense
  decode model (``docs/model.md`` §0): the input embedding (a row lookup), the norms, biases
  and DeepSeek-V3's router bias are left out, the LM head is in.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, where
from lab.catalog.moe_spec import moe_field
from lab.catalog.params_count import gqa_attention_weights


def _choose(condition: ArrayLike, if_true: ArrayLike, if_false: ArrayLike) -> ArrayLike:
    """``if_true`` where ``condition`` else ``if_false``; for a single model (a plain bool) the
    chosen value itself, so Python integers stay exact however large."""
    if isinstance(condition, bool | np.bool_):
        return if_true if condition else if_false
    return where(condition, if_true, if_false)


def attention_weights(model) -> ArrayLike:
    """Linear weights of one layer's attention (count).

    GQA: ``d·H·h + 2·d·K·h + H·h·d`` (q, k, v, o). MLA: the query path
    ``d·d_q + d_q·H·(d_n + d_r)`` (``d·H·(d_n + d_r)`` when queries are not compressed,
    ``d_q = 0``), the joint KV down-projection with the decoupled RoPE key ``d·(d_c + d_r)``, the
    KV up-projection ``d_c·H·(d_n + d_v)`` and the output ``H·d_v·d``.
    """
    d, heads = model.hidden, model.heads
    d_c, d_q = moe_field(model, "kv_lora_rank"), moe_field(model, "q_lora_rank")
    d_r, d_n = moe_field(model, "qk_rope_head_dim"), moe_field(model, "qk_nope_head_dim")
    d_v = moe_field(model, "v_head_dim")
    gqa = gqa_attention_weights(d, heads, model.kv_heads, model.head_dim)
    query = _choose(d_q > 0, d * d_q + d_q * heads * (d_n + d_r), d * heads * (d_n + d_r))
    mla = query + d * (d_c + d_r) + d_c * heads * (d_n + d_v) + heads * d_v * d
    return _choose(moe_field(model, "kv_lora_rank") > 0, mla, gqa)


def attention_replicated_weights(model) -> ArrayLike:
    """Attention weights of one layer that tensor parallelism keeps whole on every GPU (count).

    MLA's down-projections, ``d·d_q + d·(d_c + d_r)``, are not split by head (vLLM holds them
    as replicated layers); 0 for GQA, whose projections are all split by head.
    """
    d_c = moe_field(model, "kv_lora_rank")
    mla = model.hidden * (moe_field(model, "q_lora_rank") + d_c
                          + moe_field(model, "qk_rope_head_dim"))
    return _choose(d_c > 0, mla, 0)


def attention_other_params(model) -> ArrayLike:
    """Non-matrix attention parameters of one layer: biases and norm weights (count).

    q/k/v biases ``H·h + 2·K·h`` when ``attention_bias``; Qwen3-MoE's and Gemma 3's q and k
    norms ``2·h``; MLA's latent norms ``d_q + d_c`` (``d_q = 0`` without a query latent);
    gpt-oss's output-projection bias ``d`` and its sink logits ``H`` (one per query head);
    Gemma 3's two extra norms ``2·d`` (``extra_norms · d``).
    """
    h = model.head_dim
    bias = moe_field(model, "attention_bias") * (model.heads * h + 2 * model.kv_heads * h)
    latent_norms = moe_field(model, "q_lora_rank") + moe_field(model, "kv_lora_rank")
    other = (moe_field(model, "output_bias") * model.hidden
             + moe_field(model, "attention_sinks") * model.heads
             + moe_field(model, "extra_norms") * model.hidden)
    return bias + moe_field(model, "qk_norm") * 2 * h + latent_norms + other


def expert_weights(model) -> ArrayLike:
    """Weights of one routed expert, a gated MLP ``3·d·F_e`` (count)."""
    return 3 * model.hidden * moe_field(model, "expert_intermediate")


def expert_bias_params(model) -> ArrayLike:
    """Biases of one routed expert, ``2·F_e + d`` (gate-up and down projections; gpt-oss) or 0
    (count). Not linear weights: a decode step's weight reads leave biases out."""
    return moe_field(model, "expert_bias") * (2 * moe_field(model, "expert_intermediate")
                                              + model.hidden)


def shared_weights(model) -> ArrayLike:
    """Weights of one MoE layer's shared expert(s), ``3·d·F_s`` plus Qwen2-MoE's shared-expert
    gate ``d`` (count; 0 without shared experts)."""
    gate = moe_field(model, "shared_expert_gate")
    return model.hidden * (3 * moe_field(model, "shared_intermediate") + gate)


def router_weights(model) -> ArrayLike:
    """Weights of one MoE layer's router, ``d·E`` (count)."""
    return model.hidden * moe_field(model, "experts")


def _embeddings(model) -> ArrayLike:
    return model.vocab * model.hidden * _choose(model.tied, 1, 2)


def _params_with_experts(model, experts_counted: ArrayLike) -> ArrayLike:
    """Every parameter, counting ``experts_counted`` routed experts per MoE layer."""
    d, layers, moe = model.hidden, model.layers, moe_field(model, "moe_layers")
    per_layer = attention_weights(model) + attention_other_params(model) + 2 * d
    per_moe_layer = (experts_counted * (expert_weights(model) + expert_bias_params(model))
                     + shared_weights(model)
                     + router_weights(model) + moe_field(model, "router_bias") * moe_field(model, "experts"))
    dense_mlp = 3 * d * model.intermediate
    return (_embeddings(model) + d + layers * per_layer + (layers - moe) * dense_mlp
            + moe * per_moe_layer)


def total_params(model) -> ArrayLike:
    """Every parameter, every expert (count): what memory holds.

    ``V·d·(2 − tied) + d + L·(attention + its biases and norms + 2·d)
    + (L − M)·3·d·F + M·(E·3·d·F_e + shared + d·E + router bias)``.
    """
    return _params_with_experts(model, moe_field(model, "experts"))


def active_params(model) -> ArrayLike:
    """Every parameter one token uses (count): :func:`total_params` with ``k`` routed experts
    per MoE layer instead of ``E`` (embeddings, norms and routers included)."""
    return _params_with_experts(model, moe_field(model, "experts_per_token"))


def active_params_without_input_embedding(model) -> ArrayLike:
    """:func:`active_params` less the input embedding ``V·d`` (a token reads one row of it)
    (count). DeepSeek and OpenAI quote activated parameters this way; Mistral, Qwen and Meta
    quote :func:`active_params` (docs/model.md §0, "Mixture of experts, MLA and KV precision")."""
    return active_params(model) - model.vocab * model.hidden


def shared_linear_params(model) -> ArrayLike:
    """Linear weights every decode step reads once whatever the batch (count).

    ``L·attention + (L − M)·3·d·F + M·(shared + d·E) + d·V``: attention, dense MLPs, shared
    experts, routers and the LM head; routed experts are extra (:func:`routed_linear_params`).
    """
    return (model.layers * attention_weights(model)
            + (model.layers - moe_field(model, "moe_layers")) * 3 * model.hidden * model.intermediate
            + moe_field(model, "moe_layers") * (shared_weights(model) + router_weights(model))
            + model.hidden * model.vocab)


def routed_linear_params(model, experts_read: ArrayLike) -> ArrayLike:
    """Linear weights of ``experts_read`` routed experts in each MoE layer, ``M·n·3·d·F_e``
    (count; ``experts_read`` may be fractional: an expected number)."""
    return moe_field(model, "moe_layers") * experts_read * expert_weights(model)


def active_linear_params(model) -> ArrayLike:
    """Linear weights one token multiplies (count): :func:`shared_linear_params` plus ``k``
    routed experts per MoE layer. Forward FLOPs per token are twice this (plus attention)."""
    return shared_linear_params(model) + routed_linear_params(model, moe_field(model, "experts_per_token"))


def replicated_linear_params(model) -> ArrayLike:
    """Linear weights tensor parallelism keeps whole on every GPU (count): MLA's
    down-projections, the routers and Qwen2-MoE's shared-expert gate,
    ``L·replicated attention + M·d·(E + gate)``."""
    gates = router_weights(model) + moe_field(model, "shared_expert_gate") * model.hidden
    return model.layers * attention_replicated_weights(model) + moe_field(model, "moe_layers") * gates
