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
from lab.catalog.moe_params import total_params
from lab.catalog.moe_spec import MLA_ARCHITECTURES, MOE_ARCHITECTURES, MoESpec
from lab.errors import CatalogError, shown, shown_number
from lab.limits import MAX_TOTAL_PARAMS, MODEL_FIELD_LIMITS, MOE_FIELD_LIMITS

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
}
_LIMITS = {**MODEL_FIELD_LIMITS, **MOE_FIELD_LIMITS}


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


def _refuse_sliding_window(entry: dict, where: str, architecture: str) -> None:
    """Sliding-window attention is refused: its KV cache and reads are not modelled."""
    if entry.get("use_sliding_window") is True or (
            architecture == "MixtralForCausalLM" and entry.get("sliding_window")):
        raise CatalogError(
            f"{where} enables sliding-window attention ('sliding_window' "
            f"{shown(entry.get('sliding_window'))}), which the decode model does not describe "
            "(it keeps and reads every cached token)."
        )


def _architecture(entry: dict, where: str) -> str:
    archs = entry.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs else entry.get("architecture")
    if architecture is None:
        raise CatalogError(f"{where} is missing the field 'architectures'.")
    if not isinstance(architecture, str) or architecture not in MOE_ARCHITECTURES:
        dense = (" (a dense model: read it with lab.catalog.get_model)"
                 if architecture in SUPPORTED_ARCHITECTURES else "")
        raise CatalogError(
            f"{where} has architecture {shown(architecture)}, which is not a mixture-of-experts "
            f"model the lab reads{dense} (supported: {', '.join(MOE_ARCHITECTURES)})."
        )
    return architecture


def _moe_fields(text: dict, where: str, architecture: str, layers: int) -> dict:
    """The expert fields of ``text`` (the config, or Llama 4's ``text_config``)."""
    if architecture == "MixtralForCausalLM":
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
            "shared_intermediate": width,
            "attention_chunk": _optional(text, "attention_chunk_size", where)}


def _mla_fields(text: dict, where: str) -> dict:
    return {"kv_lora_rank": _field(text, "kv_lora_rank", where),
            "q_lora_rank": _optional(text, "q_lora_rank", where),
            "qk_rope_head_dim": _field(text, "qk_rope_head_dim", where),
            "qk_nope_head_dim": _field(text, "qk_nope_head_dim", where),
            "v_head_dim": _field(text, "v_head_dim", where)}


def moe_model_from_config(entry: dict, where: str, *, model_id: str, name: str) -> MoESpec:
    """Build a :class:`MoESpec` from Hugging Face ``config.json`` keys.

    ``where`` names the file (and entry) in error messages. Llama 4's shape is read from its
    ``text_config`` (the vision encoder is not counted).
    """
    if not isinstance(entry, dict):
        raise CatalogError(f"{where} does not hold a JSON object of configuration fields.")
    architecture = _architecture(entry, where)
    text = entry
    if architecture == "Llama4ForConditionalGeneration":
        text = entry.get("text_config")
        if not isinstance(text, dict):
            raise CatalogError(f"{where} is missing the object 'text_config' (Llama 4's "
                               "language model).")
    _refuse_sliding_window(text, where, architecture)
    hidden = _field(text, "hidden_size", where)
    layers = _field(text, "num_hidden_layers", where)
    heads = _field(text, "num_attention_heads", where)
    kv_heads = _optional(text, "num_key_value_heads", where, default=heads)
    if heads % kv_heads:
        raise CatalogError(f"{where} has num_attention_heads {heads}, which is not a multiple "
                           f"of num_key_value_heads {kv_heads}.")
    fields = _moe_fields(text, where, architecture, layers)
    top_k = _field(text, "num_experts_per_tok", where)
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
    attention_bias = (architecture == "Qwen2MoeForCausalLM"
                      or (architecture not in MLA_ARCHITECTURES
                          and _flag(text, "attention_bias", where)))
    spec = MoESpec(
        id=model_id, name=name, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, intermediate=intermediate,
        vocab=_field(text, "vocab_size", where), tied=tied, total_params=0,
        max_context=_field(text, "max_position_embeddings", where), architecture=architecture,
        source=_text(entry, "source"), checked=_text(entry, "checked"),
        notes=_text(entry, "notes"), experts_per_token=top_k,
        attention_bias=attention_bias, qk_norm=architecture == "Qwen3MoeForCausalLM",
        **fields, **mla,
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


def decode_refusal(model: MoESpec) -> str:
    """Why the decode model cannot describe ``model`` exactly (one sentence), or ``""``.

    Llama 4 attends within ``attention_chunk_size``-token chunks in three of every four layers:
    the tokens such a layer reads, and those an engine keeps, depend on the position in the
    chunk and on the engine, which the decode step does not model.
    """
    if model.attention_chunk:
        return (f"{model.id} attends within {model.attention_chunk:,}-token chunks in three of "
                "every four layers (Llama 4's chunked attention), which the decode model does "
                "not describe: it keeps and reads every cached token in every layer.")
    return ""
