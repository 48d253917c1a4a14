"""Parameter counts computed from a model's configuration."""

from __future__ import annotations


def gqa_attention_weights(hidden, heads, kv_heads, head_dim):
    """Linear weights of one layer's grouped-query attention: q, k, v, o
    ``d·H·h + 2·d·K·h + H·h·d`` (count; integers or arrays of them)."""
    d, H, K, h = hidden, heads, kv_heads, head_dim
    return d * H * h + 2 * d * K * h + H * h * d


def linear_params_per_layer(hidden, heads, kv_heads, head_dim, intermediate):
    """Linear-layer weights of one decoder layer: q, k, v, o
    (:func:`gqa_attention_weights`) and the gated MLP ``3·d·F`` (count; integers or arrays of
    them)."""
    return gqa_attention_weights(hidden, heads, kv_heads, head_dim) + 3 * hidden * intermediate


def total_parameters(
    *,
    architecture: str,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    vocab: int,
    tied: bool,
    attention_bias: bool = False,
) -> int:
    """Every parameter of a dense GQA decoder, as an exact integer.

    Counts the input embedding ``V·d``, the LM head ``V·d`` unless tied, per layer the q, k, v, o
    projections ``d·H·h + 2·d·K·h + H·h·d``, the gated MLP ``3·d·F`` and two RMSNorms ``2·d``,
    and the final norm ``d``. Qwen2 adds q/k/v biases ``H·h + 2·K·h`` per layer (as does any
    model with ``attention_bias``); Qwen3 adds per-head q and k norms ``2·h`` per layer.
    """
    d, L, H, K, h, F, V = hidden, layers, heads, kv_heads, head_dim, intermediate, vocab
    per_layer = linear_params_per_layer(d, H, K, h, F) + 2 * d
    if architecture == "Qwen2ForCausalLM" or attention_bias:
        per_layer += H * h + 2 * K * h
    if architecture == "Qwen3ForCausalLM":
        per_layer += 2 * h
    embeddings = V * d if tied else 2 * V * d
    return embeddings + L * per_layer + d
