"""Experiment 2: how many sequences fit beside the weights."""

from __future__ import annotations

import numpy as np
import xarray as xr

from lab.catalog.moe_spec import moe_field
from lab.derivations.decode_steps import memory_steps
from lab.experiments.base import Card, Prediction
from lab.experiments.decode_inputs import DecodeExperiment, context_axis, labelled, with_units
from lab.limits import MAX_CONTEXT, TP_DEGREES
from lab.models import layer_kinds
from lab.models.kv_shapes import head_kv_bytes_per_token, kv_bytes_per_element, kv_bytes_per_token
from lab.models.memory import full_length_kv_bytes_per_sequence
from lab.points.decode_points import calc_memory
from lab.units import MIB, fmt_gb, fmt_int, fmt_number


class SequencesFit(DecodeExperiment):
    """Weights, a paged KV cache and a budget: the sequence count each context allows."""

    number = 2
    slug = "memory"
    title = "How many sequences fit"
    headline = "Longer contexts. Fewer seats."
    prediction = Prediction(
        question="Double the context: how many sequences still fit?",
        choices=("The same number", "About half as many", "About a quarter as many"),
        answer=1,
    )
    limits = (
        "All parameters are resident at one uniform precision; the KV cache is paged (BF16 "
        "unless the KV precision is FP8), "
        "each sequence holding ceil((S + 1) / page) pages so the next token has a slot. "
        "Activations, fragmentation beyond the last page, CUDA graphs and allocator overhead "
        "are folded into the reserve you choose. The 90 % budget and 4 GB reserve are "
        "illustrative inputs, not vLLM defaults. A mixture-of-experts model holds every expert; "
        "an MLA model (DeepSeek-V2/V3) caches its latent whole on every GPU of the tp group, "
        "so its KV per sequence does not fall with tp."
    )
    sources = (
        "vLLM CacheConfig: block size 16, gpu_memory_utilization (vllm/config/cache.py).",
        "Model shapes from each config.json (inference-lab catalog).",
    )

    def cards(self) -> list[Card]:
        r = self.result
        fits_text = (f"{int(r['max_sequences']):,}" if r["weights_fit"]
                     else "0 (weights alone exceed the budget)")
        return [
            Card("Weights per GPU", fmt_gb(r["memory_params_bytes"]),
                 f"{self.precision.upper()}, tp {self.tp}"),
            Card("KV per sequence", fmt_gb(r["kv_bytes_per_sequence"]),
                 f"{self.context:,} tokens + 1, in {self.page}-token pages"
                 + (", FP8 KV cache" if self.kv_precision == "fp8" else "")),
            Card("Free for KV", fmt_gb(r["free_for_kv_bytes"]),
                 f"budget {fmt_gb(r['memory_budget_bytes'])} − weights − reserve"),
            Card("Max sequences", fits_text, "floor(free / KV per sequence)"),
            Card("Page-rounding waste",
                 f"{fmt_number(r['page_waste_bytes_per_sequence'] / MIB)} MiB",
                 "padding in each sequence's last page"),
            *([self.latent_card()] if self.is_mla() else []),
            *(self.layer_kind_cards() if "layer_mix" in r else []),
        ]

    def layer_kind_cards(self) -> list[Card]:
        """Sliding-window or chunked layers: the layer mix, and the KV per sequence and the
        sequences that fit had every layer been held full length (an allocator without layer
        kinds)."""
        r = self.result
        return [
            Card("Layer mix", r["layer_mix"],
                 "each kind holds its own pages: a window layer its last w tokens, a chunked "
                 "layer its current chunk (vLLM's hybrid KV cache manager)"),
            Card("Every layer full length", fmt_gb(r["kv_bytes_per_sequence_full_length"]),
                 f"KV per sequence, {int(r['max_sequences_full_length']):,} sequences fit "
                 "(an allocator without layer kinds)"),
        ]

    def is_mla(self) -> bool:
        """True when the current model caches a multi-head latent (MLA) instead of K and V."""
        return moe_field(self.model_spec(), "kv_lora_rank") > 0

    def latent_card(self) -> Card:
        """MLA: the latent KV per token, replicated across the tp group, beside what the same
        heads would cache as per-head keys and values."""
        model = self.model_spec()
        latent = int(kv_bytes_per_token(model, self.kv_precision))
        heads = int(head_kv_bytes_per_token(model, self.kv_precision))
        return Card(
            "KV per token (MLA latent)", f"{fmt_int(latent)} B",
            f"({model.kv_lora_rank} + {model.qk_rope_head_dim}) × {model.layers} layers × "
            f"{int(kv_bytes_per_element(self.kv_precision))} B on every GPU: the latent is "
            f"replicated across the tp group, not split by tp. Per-head K and V of the same "
            f"{model.heads} heads: {fmt_int(heads)} B ({heads / latent:.1f}×)")

    def steps(self):
        model, gpu = self.config().resolved()
        return memory_steps(self.result, model, gpu)

    def explanation(self) -> str:
        r = self.result
        doubled = calc_memory(self.config(context=min(2 * self.context, MAX_CONTEXT)))
        if not r["weights_fit"]:
            return (f"None fit either way: the weights alone ({fmt_gb(r['memory_params_bytes'])} "
                    f"per GPU) leave {fmt_gb(r['free_for_kv_bytes'])} for the KV cache.")
        return (
            f"About half as many. The free memory ({fmt_gb(r['free_for_kv_bytes'])}) does not "
            f"change with context, but each sequence's KV cache grows from "
            f"{fmt_gb(r['kv_bytes_per_sequence'])} to {fmt_gb(doubled['kv_bytes_per_sequence'])}, "
            f"so {int(r['max_sequences']):,} sequences at {self.context:,} tokens become "
            f"{int(doubled['max_sequences']):,} at {doubled['inputs']['context']:,}. Page "
            "rounding and the floor keep it from being exactly half."
        )

    def chart_data(self) -> xr.Dataset:
        """Max sequences against context, one series per tp (NaN where tp is invalid)."""
        model = self.model_spec()
        context = labelled(context_axis(self.context, model.max_context), "context", "context",
                           "tokens")
        tp = labelled(np.array(TP_DEGREES, dtype=np.int64), "tp", "tensor parallel", "GPUs")
        out = self.sweep(context=context, tp=tp)
        names = ("max_sequences", "kv_bytes_per_sequence", "free_for_kv_bytes")
        if not layer_kinds.has_local_layers(model):
            return with_units(out, names, context, tp)
        # a window flattens KV per sequence against context; every layer full length does not
        full = (full_length_kv_bytes_per_sequence(model, tp, context, self.page,
                                                  self.kv_precision)
                * (out["kv_bytes_per_sequence"] * 0 + 1))  # NaN where tp is invalid
        ds = with_units(out, names, context, tp)
        return ds.assign(kv_bytes_per_sequence_full_length=full.assign_attrs(
            long_name="paged KV bytes per sequence per GPU, every layer full length",
            units="B"))
