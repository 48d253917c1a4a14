"""Read mixture-of-experts and MLA models: a Hugging Face ``config.json`` or a ``models.toml`` entry.

The architectures in :data:`~lab.catalog.moe_spec.MOE_ARCHITECTURES` become a
:class:`~lab.catalog.moe_spec.MoESpec` with every expert and latent-attention field checked.
Anything missing, malformed or out of range raises :class:`~lab.errors.CatalogError` with one
sentence naming the file and the ``config.json`` key.

:func:`lab.catalog.get_model` and the catalog (:mod:`lab.catalog.lookup`) call
:func:`moe_model_from_config` for these architectures; the decode step then reads
:mod:`lab.models.moe` and :mod:`lab.models.kv_shapes` (docs/model.md §0, "Mixture of experts, MLA
and KV precision").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lab.catalog.entries import SUPPORTED_ARCHITECTURES
from lab.catalog.loader import (
    _positive_number,
    _text,
    read_config_json,
)
from lab.catalog.moe_spec import (
    LAYER_KIND_ARCHITECTURES,
    MLA_ARCHITECTURES,
    MOE_ARCHITECTURES,
    MoESpec,
)
from lab.errors import CatalogError, shown, shown_number
from lab.limits import MAX_TOTAL_PARAMS, MODEL_FIELD_LIMITS, MOE_FIELD_LIMITS
from lab.models.moe_params import total_params

_LIMIT_OF = {
    "num_local_experts": "experts", "num_experts": "experts", "n_routed_experts": "experts",
    "num_experts_per_tok": "experts_per_token", "moe_intermediate_size": "expert_intermediate",
    "n_shared_experts": "shared_experts",
    "shared_expert_intermediate_size": "shared_intermediate",
    "kv_lora_rank": "kv_lora_rank", "q_lora_rank": "q_lora_rank",
    "qk_rope_head_dim": "qk_rope_head_dim", "qk_nope_head_dim": "qk_nope_head_dim",
    "v_head_dim": "v_head_dim", "decoder_sparse_step": "layer_step",
    "moe_layer_freq": "layer_step", "interleave_moe_layer_step": "layer_step",
    "attention_chunk_size": "attention_chunk", "intermediate_size_mlp": "intermediate_size",
    "experts_per_token": "experts_per_token", "sliding_window": "attention_chunk",
    "sliding_window_pattern": "layer_step", "no_rope_layer_interval": "layer_step",
    "max_window_layers": "layers",
}
_LIMITS = {**MODEL_FIELD_LIMITS, **MOE_FIELD_LIMITS,
           "layers": MODEL_FIELD_LIMITS["num_hidden_layers"]}

READ_ARCHITECTURES = MOE_ARCHITECTURES + LAYER_KIND_ARCHITECTURES
"""Every architecture this reader builds a :class:`MoESpec` for (mixture of experts, MLA, or a
dense model with per-layer attention kinds); a dense ``SUPPORTED_ARCHITECTURES`` config with a
sliding window is read here too (:func:`lab.catalog.lookup.model_from_entry`)."""

TEXT_CONFIG_ARCHITECTURES = ("Llama4ForConditionalGeneration", "Gemma3ForConditionalGeneration")
"""Multimodal architectures whose language model is the ``text_config`` (the vision encoder is
not counted)."""

GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                        "sliding_window": 4096, "sliding_window_pattern": 6,
                        "tie_word_embeddings": True, "head_dim": 256}
"""Gemma 3's ``Gemma3TextConfig`` defaults, which its published ``config.json`` files leave
out (transformers' ``models/gemma3/configuration_gemma3.py``)."""

LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding",
               "chunked_attention": "chunked"}
"""The ``layer_types`` values the lab models, and the kind each names."""


def _field(entry: dict, key: str, where: str) -> int:
    """A positive integer field, within its limit (``MODEL_FIELD_LIMITS`` or
    ``MOE_FIELD_LIMITS``)."""
    return _positive_number(entry, key, where, integer=True,
                            high=_LIMITS[_LIMIT_OF.get(key, key)])


def _optional(entry: dict, key: str, where: str, default: int = 0) -> int:
    """A positive integer field, or ``default`` when absent or null."""
    if entry.get(key) is None:
        return default
    return _field(entry, key, where)


def _count(entry: dict, key: str, where: str) -> int:
    """A non-negative integer field (0 allowed), ``0`` when absent or null."""
    value = entry.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return 0
    return _field(entry, key, where)


def _flag(entry: dict, key: str, where: str, default: bool = False) -> bool:
    value = entry.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CatalogError(f"{where} has '{key}' = {shown(value)}, which is not true/false.")
    return value


def _layer_list(entry: dict, key: str, where: str, layers: int) -> set[int]:
    """A list of layer indices, each in ``[0, layers)``."""
    value = entry.get(key)
    if value is None:
        return set()
    if not isinstance(value, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in value):
        raise CatalogError(f"{where} has '{key}' = {shown(value)}, which is not a list of layer "
                           f"indices from 0 to {layers - 1:,}.")
    return set(value)


def _layer_types(text: dict, where: str, layers: int) -> list[str] | None:
    """``layer_types`` as a list of kinds (``full``, ``sliding``, ``chunked``), or None."""
    value = text.get("layer_types")
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != layers:
        raise CatalogError(f"{where} has 'layer_types' = {shown(value)}, which is not a list of "
                           f"{layers:,} layer types.")
    for item in value:
        if not isinstance(item, str) or item not in LAYER_TYPES:
            raise CatalogError(
                f"{where} has a layer of type {shown(item)} in 'layer_types', which the lab does "
                f"not model (it models {', '.join(LAYER_TYPES)}).")
    return [LAYER_TYPES[item] for item in value]


def _rule_kinds(text: dict, where: str, architecture: str, layers: int) -> list[str]:
    """Each layer's kind by the architecture's own rule when ``layer_types`` is absent
    (transformers' defaults for the architecture's config)."""
    full = ["full"] * layers
    if architecture in ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"):
        step = _optional(text, "sliding_window_pattern", where, default=6)
        return ["full" if (i + 1) % step == 0 else "sliding" for i in range(layers)]
    if architecture == "GptOssForCausalLM":  # GptOssConfig's default: the even layers slide
        return ["sliding" if (i + 1) % 2 else "full" for i in range(layers)]
    if architecture == "Llama4ForConditionalGeneration":
        if text.get("attention_chunk_size") is None:
            return full
        rope = text.get("no_rope_layers")
        if rope:  # 1: a RoPE layer, which attends within its chunk; 0: a NoPE layer, full
            if not isinstance(rope, list) or len(rope) != layers or any(
                    isinstance(r, bool) or r not in (0, 1) for r in rope):
                raise CatalogError(f"{where} has 'no_rope_layers' = {shown(rope)}, which is not "
                                   f"a list of {layers:,} values 0 or 1.")
            return ["chunked" if r else "full" for r in rope]
        step = _optional(text, "no_rope_layer_interval", where, default=4)
        return ["full" if (i + 1) % step == 0 else "chunked" for i in range(layers)]
    if architecture in ("MixtralForCausalLM", "MistralForCausalLM"):
        return ["sliding"] * layers if text.get("sliding_window") is not None else full
    if text.get("use_sliding_window") is True:  # Qwen2/Qwen3 (MoE): from max_window_layers on
        if text.get("max_window_layers") is None:
            raise CatalogError(f"{where} enables sliding-window attention without "
                               "'max_window_layers', the first layer that slides.")
        first = _count(text, "max_window_layers", where)
        return ["sliding" if i >= first else "full" for i in range(layers)]
    return full


def _kind_fields(text: dict, where: str, architecture: str, layers: int) -> dict:
    """The per-layer attention kinds of ``text``: how many layers slide (and their window) and
    how many attend within chunks (and the chunk), from ``layer_types`` or the architecture's
    rule (:func:`_rule_kinds`)."""
    kinds = _layer_types(text, where, layers) or _rule_kinds(text, where, architecture, layers)
    window_layers, chunk_layers = kinds.count("sliding"), kinds.count("chunked")
    window = chunk = 0
    if window_layers:
        if text.get("sliding_window") is None:
            raise CatalogError(f"{where} has sliding-window layers but no 'sliding_window'.")
        window = _field(text, "sliding_window", where)
    if chunk_layers:
        if text.get("attention_chunk_size") is None:
            raise CatalogError(f"{where} has chunked-attention layers but no "
                               "'attention_chunk_size'.")
        chunk = _field(text, "attention_chunk_size", where)
    return {"window_layers": window_layers, "sliding_window": window,
            "chunk_layers": chunk_layers, "attention_chunk": chunk}


def _architecture(entry: dict, where: str, dense: bool = False) -> str:
    archs = entry.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs else entry.get("architecture")
    if architecture is None:
        raise CatalogError(f"{where} is missing the field 'architectures'.")
    if dense and architecture in SUPPORTED_ARCHITECTURES:
        return architecture
    if not isinstance(architecture, str) or architecture not in READ_ARCHITECTURES:
        dense = (" (a dense model: read it with lab.catalog.get_model)"
                 if architecture in SUPPORTED_ARCHITECTURES else "")
        raise CatalogError(
            f"{where} has architecture {shown(architecture)}, which is not a mixture-of-experts "
            f"model the lab reads{dense} (supported: {', '.join(MOE_ARCHITECTURES)})."
        )
    return architecture


def _moe_fields(text: dict, where: str, architecture: str, layers: int) -> dict:
    """The expert fields of ``text`` (the config, or Llama 4's ``text_config``); none for a
    dense architecture."""
    if architecture in LAYER_KIND_ARCHITECTURES or architecture in SUPPORTED_ARCHITECTURES:
        return {"experts": 0, "expert_intermediate": 0, "moe_layers": 0}
    if architecture == "GptOssForCausalLM":  # every layer a MoE layer; biased experts and router
        return {"experts": _field(text, "num_local_experts", where),
                "expert_intermediate": _field(text, "intermediate_size", where),
                "moe_layers": layers, "router_bias": True, "expert_bias": True}
    if architecture in ("MixtralForCausalLM", "MiniMaxM2ForCausalLM"):  # experts of width F
        experts = _field(text, "num_local_experts", where)
        return {"experts": experts, "expert_intermediate": _field(text, "intermediate_size", where),
                "moe_layers": layers}
    if architecture in ("Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"):
        experts = _field(text, "num_experts", where)
        step = _optional(text, "decoder_sparse_step", where, default=1)
        dense_only = _layer_list(text, "mlp_only_layers", where, layers)
        moe = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
        shared = (_count(text, "shared_expert_intermediate_size", where)
                  if architecture == "Qwen2MoeForCausalLM" else 0)
        return {"experts": experts, "expert_intermediate": _field(text, "moe_intermediate_size",
                                                                  where),
                "moe_layers": moe, "shared_intermediate": shared,
                "shared_expert_gate": shared > 0}
    if architecture in MLA_ARCHITECTURES:
        experts = _field(text, "n_routed_experts", where)
        width = _field(text, "moe_intermediate_size", where)
        first_dense = text.get("first_k_dense_replace", 0)
        if isinstance(first_dense, bool) or not isinstance(first_dense, int) or not (
                0 <= first_dense <= layers):
            raise CatalogError(f"{where} has 'first_k_dense_replace' = {shown(first_dense)}, "
                               f"which is not a layer count from 0 to {layers:,}.")
        step = _optional(text, "moe_layer_freq", where, default=1)
        moe = sum(1 for i in range(first_dense, layers) if i % step == 0)
        return {"experts": experts, "expert_intermediate": width, "moe_layers": moe,
                "shared_intermediate": _count(text, "n_shared_experts", where) * width,
                "router_bias": architecture == "DeepseekV3ForCausalLM"}
    # Llama4ForConditionalGeneration (text_config): one shared expert as wide as a routed one.
    experts = _field(text, "num_local_experts", where)
    width = _field(text, "intermediate_size", where)
    if text.get("moe_layers") is not None:
        moe = len(_layer_list(text, "moe_layers", where, layers))
    else:
        step = _optional(text, "interleave_moe_layer_step", where, default=1)
        moe = len(range(step - 1, layers, step))
    return {"experts": experts, "expert_intermediate": width, "moe_layers": moe,
            "shared_intermediate": width}


def _mla_fields(text: dict, where: str) -> dict:
    return {"kv_lora_rank": _field(text, "kv_lora_rank", where),
            "q_lora_rank": _optional(text, "q_lora_rank", where),
            "qk_rope_head_dim": _field(text, "qk_rope_head_dim", where),
            "qk_nope_head_dim": _field(text, "qk_nope_head_dim", where),
            "v_head_dim": _field(text, "v_head_dim", where)}


def _text_config(entry: dict, where: str, architecture: str) -> dict:
    """The language model's keys: the config itself, or the ``text_config`` of a multimodal
    architecture; Gemma 3's with its ``Gemma3TextConfig`` defaults filled in."""
    text = entry
    if architecture in TEXT_CONFIG_ARCHITECTURES:
        text = entry.get("text_config")
        if not isinstance(text, dict):
            raise CatalogError(f"{where} is missing the object 'text_config' (the "
                               f"{architecture} language model).")
    if architecture in LAYER_KIND_ARCHITECTURES:
        text = {**GEMMA3_TEXT_DEFAULTS, **{k: v for k, v in text.items() if v is not None}}
        if architecture == "Gemma3ForConditionalGeneration" and "tie_word_embeddings" in entry:
            text["tie_word_embeddings"] = entry["tie_word_embeddings"]
    return text


def moe_model_from_config(entry: dict, where: str, *, model_id: str, name: str,
                          dense: bool = False) -> MoESpec:
    """Build a :class:`MoESpec` from Hugging Face ``config.json`` keys.

    ``where`` names the file (and entry) in error messages. Llama 4's and Gemma 3's shapes are
    read from their ``text_config`` (the vision encoder is not counted). Each layer's attention
    kind (full, sliding window, chunked) comes from ``layer_types`` or the architecture's rule.
    ``dense`` also accepts a dense ``SUPPORTED_ARCHITECTURES`` config (one with a sliding
    window: :func:`lab.catalog.lookup.model_from_entry`).
    """
    if not isinstance(entry, dict):
        raise CatalogError(f"{where} does not hold a JSON object of configuration fields.")
    architecture = _architecture(entry, where, dense)
    text = _text_config(entry, where, architecture)
    hidden = _field(text, "hidden_size", where)
    layers = _field(text, "num_hidden_layers", where)
    heads = _field(text, "num_attention_heads", where)
    kv_heads = _optional(text, "num_key_value_heads", where, default=heads)
    if heads % kv_heads:
        raise CatalogError(f"{where} has num_attention_heads {heads}, which is not a multiple "
                           f"of num_key_value_heads {kv_heads}.")
    fields = {**_moe_fields(text, where, architecture, layers),
              **_kind_fields(text, where, architecture, layers)}
    top_k = _field(text, "num_experts_per_tok", where) if fields["experts"] else 0
    if top_k > fields["experts"]:
        raise CatalogError(f"{where} has 'num_experts_per_tok' = {top_k:,}, more than its "
                           f"{fields['experts']:,} routed experts.")
    mla = {}
    if architecture in MLA_ARCHITECTURES:
        mla = _mla_fields(text, where)
        head_dim = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
        if _flag(text, "attention_bias", where):
            raise CatalogError(f"{where} sets 'attention_bias' on latent attention, which the "
                               "lab does not count.")
    elif text.get("head_dim") is not None:
        head_dim = _field(text, "head_dim", where)
    elif hidden % heads:
        raise CatalogError(f"{where} is missing the field 'head_dim' and hidden_size {hidden} "
                           f"is not a multiple of num_attention_heads {heads}.")
    else:
        head_dim = hidden // heads
    dense_key = "intermediate_size_mlp" if architecture == "Llama4ForConditionalGeneration" \
        else "intermediate_size"
    intermediate = _field(text, dense_key, where)
    tied = _flag(text, "tie_word_embeddings", where,
                 default=_flag(entry, "tie_word_embeddings", where))
    attention_bias = (architecture in ("Qwen2MoeForCausalLM", "Qwen2ForCausalLM")
                      or (architecture not in MLA_ARCHITECTURES
                          and _flag(text, "attention_bias", where)))
    gpt_oss = architecture == "GptOssForCausalLM"
    gemma = architecture in LAYER_KIND_ARCHITECTURES
    spec = MoESpec(
        id=model_id, name=name, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, intermediate=intermediate,
        vocab=_field(text, "vocab_size", where), tied=tied, total_params=0,
        max_context=_field(text, "max_position_embeddings", where), architecture=architecture,
        source=_text(entry, "source"), checked=_text(entry, "checked"),
        notes=_text(entry, "notes"), experts_per_token=top_k,
        attention_bias=attention_bias,
        qk_norm=architecture in ("Qwen3MoeForCausalLM", "Qwen3ForCausalLM") or gemma,
        attention_sinks=gpt_oss, output_bias=gpt_oss and attention_bias,
        extra_norms=2 if gemma else 0, **fields, **mla,
    )
    total = int(total_params(spec))
    if total > MAX_TOTAL_PARAMS:
        raise CatalogError(f"{where} describes {total:,} parameters, beyond the "
                           f"{MAX_TOTAL_PARAMS:,} the lab accepts.")
    declared = entry.get("total_params")
    if declared is not None and declared != total:
        raise CatalogError(f"{where} declares 'total_params' = {shown_number(declared)}, "
                           f"but its shape gives {total:,}.")
    return replace(spec, total_params=total)


def load_moe_config(path: str | Path) -> MoESpec:
    """A mixture-of-experts model from a Hugging Face ``config.json`` on disk (id = its
    folder's name)."""
    entry, model_id, name = read_config_json(path)
    return moe_model_from_config(entry, str(Path(path)), model_id=model_id, name=name)
