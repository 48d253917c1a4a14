"""The shape of a mixture-of-experts (MoE) decoder, optionally with multi-head latent attention.

:class:`MoESpec` extends :class:`~lab.catalog.entries.ModelSpec` with the expert and MLA fields a
Hugging Face ``config.json`` gives. Every new field defaults to the value that means "dense,
grouped-query attention" (no experts, no latent), so a dense model's record is unchanged; the
catalog's dense records stay plain :class:`ModelSpec` objects.

The inherited fields keep their meaning: ``intermediate`` is the width of the *dense* MLP of
the dense layers (DeepSeek's first layers, Llama 4's ``intermediate_size_mlp``), ``kv_heads``
and ``head_dim`` are the config's values (for MLA the query/key head is
``qk_nope_head_dim + qk_rope_head_dim`` wide and no per-head K/V is cached: see
:mod:`lab.models.moe`), and ``total_params`` counts every expert.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lab.arrays import where
from lab.catalog.entries import ModelSpec

MOE_ARCHITECTURES = (
    "MixtralForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3MoeForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "Llama4ForConditionalGeneration",
    "MiniMaxM2ForCausalLM",
    "GptOssForCausalLM",
)
"""Mixture-of-experts architectures whose ``config.json`` the lab reads (Llama 4: its
``text_config``)."""

LAYER_KIND_ARCHITECTURES = ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
"""Dense architectures read into a :class:`MoESpec` (no experts) for their per-layer attention
kinds: Gemma 3's sliding-window and full layers (``Gemma3ForConditionalGeneration``: its
``text_config``; the vision encoder is not counted)."""

MLA_ARCHITECTURES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
"""Architectures with multi-head latent attention (MLA)."""


def moe_field(model, name: str):
    """``model.<name>``, or 0 when ``model`` has no such field: a plain dense
    :class:`ModelSpec` or a dense model table reads as "no experts, no latent, no biases"."""
    return getattr(model, name, 0)


def moe_rows(model) -> Any:
    """Which of ``model``'s records are mixture-of-experts models: ``True`` for a
    :class:`MoESpec`, ``False`` for a dense record (or a table without a ``moe`` field), else
    the table's ``moe`` flags as booleans, one per model (a ``model_table`` or a grid's view of
    it)."""
    if isinstance(model, MoESpec):
        return True
    flags = getattr(model, "moe", None)
    if flags is None:
        return False
    return flags != 0


def routes_experts(model) -> bool:
    """True for a model with routed experts or latent attention (MLA); False for a dense GQA
    model, a :class:`MoESpec` read only for its layer kinds (Gemma 3) included."""
    return bool(moe_field(model, "experts") or moe_field(model, "kv_lora_rank"))


def by_kind(model, dense: Callable[[], Any], moe: Callable[[], Any]) -> Any:
    """``dense()`` for a dense model, ``moe()`` for a mixture-of-experts one.

    For a table of models, each model's own: only ``dense()`` when every model is dense (so a
    dense grid chunk costs, and gives, exactly what it did before the MoE fields), only
    ``moe()`` when every model is MoE, else both, picked per model with
    :func:`~lab.arrays.where` (a tuple result elementwise). A dense model's value is the dense
    expression's, bit for bit.
    """
    rows = moe_rows(model)
    if rows is True:
        return moe()
    if rows is False or not np.any(rows):
        return dense()
    if np.all(rows):
        return moe()
    moe_value, dense_value = moe(), dense()
    if isinstance(dense_value, tuple):
        return tuple(where(rows, m, d) for m, d in zip(moe_value, dense_value, strict=True))
    return where(rows, moe_value, dense_value)


@dataclass(frozen=True)
class MoESpec(ModelSpec):
    """A decoder whose MLPs are (partly) mixtures of experts.

    Attributes (beyond :class:`ModelSpec`; counts are integers, 0 means "none")
    ----------
    experts : int
        Routed experts per MoE layer ``E`` (0: a dense model).
    experts_per_token : int
        Routed experts each token uses in a MoE layer, top-``k``.
    expert_intermediate : int
        Gated-MLP intermediate size of one routed expert ``F_e``.
    shared_intermediate : int
        Total intermediate size of the always-used shared expert(s) of a MoE layer ``F_s``
        (DeepSeek: ``n_shared_experts · moe_intermediate_size``; Qwen2-MoE:
        ``shared_expert_intermediate_size``; Llama 4: ``intermediate_size``; 0: none).
    shared_expert_gate : bool
        Qwen2-MoE's sigmoid gate on the shared expert, ``d`` weights per MoE layer.
    moe_layers : int
        Layers whose MLP is a mixture of experts; the other ``L − moe_layers`` have a dense MLP
        of width ``intermediate``.
    router_bias : bool
        DeepSeek-V3's per-expert score-correction bias, ``E`` values per MoE layer.
    attention_bias : bool
        q/k/v projection biases (Qwen2-MoE), ``H·h + 2·K·h`` per layer.
    qk_norm : bool
        Qwen3-MoE's per-head RMSNorm weights on q and k, ``2·h`` per layer (Llama 4's q/k norm
        has no weights).
    kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim : int
        MLA: the compressed KV latent ``d_c``, the query latent ``d_q`` (0: queries not
        compressed), the decoupled RoPE key/query head dim ``d_r``, the non-RoPE query/key head
        dim ``d_n`` and the value head dim ``d_v``; all 0 for GQA.
    attention_chunk : int
        Llama 4's chunked local attention (``attention_chunk_size``, tokens; 0: none): a
        chunked layer attends only within its ``attention_chunk``-token chunk.
    chunk_layers : int
        Layers with chunked attention (Llama 4: the RoPE layers, three of every four).
    sliding_window : int
        Window of a sliding-window layer ``w``, tokens (0: none): a query attends to itself
        and the ``w − 1`` tokens before it.
    window_layers : int
        Layers with sliding-window attention; the other ``L − window_layers − chunk_layers``
        attend over the whole context (:mod:`lab.models.layer_kinds`).
    attention_sinks : bool
        gpt-oss's learned sink logit per query head, ``H`` parameters per layer (no cache).
    output_bias : bool
        A bias on the attention output projection, ``d`` per layer (gpt-oss).
    expert_bias : bool
        Biases in every routed expert, ``2·F_e + d`` per expert (gpt-oss).
    extra_norms : int
        Norm weight vectors of width ``d`` per layer beyond the two of a Llama layer (Gemma 3's
        pre- and post-feed-forward norms: 2).
    """

    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0
    shared_expert_gate: bool = False
    moe_layers: int = 0
    router_bias: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    attention_chunk: int = 0
    chunk_layers: int = 0
    sliding_window: int = 0
    window_layers: int = 0
    attention_sinks: bool = False
    output_bias: bool = False
    expert_bias: bool = False
    extra_norms: int = 0

    @property
    def is_mla(self) -> bool:
        """True when attention is multi-head latent attention (a KV latent is cached)."""
        return self.kv_lora_rank > 0

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP, ``L − moe_layers``."""
        return self.layers - self.moe_layers
