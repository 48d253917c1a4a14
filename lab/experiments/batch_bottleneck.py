"""Experiment 1: a bigger batch, a different bottleneck."""

from __future__ import annotations

from typing import ClassVar

import param
import xarray as xr

from lab.catalog.moe_spec import moe_field
from lab.derivations.decode_steps import decode_steps
from lab.experiments.base import Card, Prediction
from lab.experiments.decode_inputs import (
    DecodeExperiment,
    all_to_all_card,
    allreduce_parameters,
    batch_axis,
    decode_config,
    ep_parameter,
    labelled,
    layer_mix_cards,
    with_units,
)
from lab.limits import MAX_BATCH
from lab.models.moe import all_experts_weight_bytes, experts_touched
from lab.models.moe_params import active_params
from lab.points.decode_points import calc_decode
from lab.units import fmt_gb, fmt_int, fmt_ms, fmt_params, fmt_rate

EXPERTS_TOUCHED_ATTRS = {"long_name": "distinct experts read per MoE layer", "units": "experts"}
"""Long name and unit of the ``experts_touched`` chart variable (mixture-of-experts models)."""


class BatchBottleneck(DecodeExperiment):
    """Batch and the bottleneck: how the ideal decode step grows with the batch."""

    number = 1
    slug = "decode"
    title = "Batch and the bottleneck"
    headline = "A bigger batch. A different bottleneck."
    prediction = Prediction(
        question="If you double the batch, does each person get their next token sooner?",
        choices=("Yes, sooner", "About the same", "No, a little later"),
        answer=2,
    )
    limits = (
        "Decode and memory: dense Llama-style GQA with evenly sharded KV heads (tp 1, 2, 4 or "
        "8). Linear weight reads exclude the input embedding lookup and norms. The latency model "
        "adds sequential linear and attention phase floors; it leaves out launch gaps, "
        "communication, sampling, softmax overhead, activation traffic, KV writes and cache "
        "effects. FP8 is idealised native linear arithmetic. Memory counts all parameters at a "
        "uniform precision, BF16 KV (FP8 as an input) with page rounding, and a chosen reserve. Dense vendor "
        "peaks, not achieved performance. Mixture-of-experts models: uniform, independent "
        "routing (E·(1 − (1 − k/E)^B) experts read per layer; skewed routers read fewer), "
        "experts split by tensor parallelism, or with expert parallelism (ep > 1) E/ep to each "
        "of ep groups of tp GPUs, the batch spread evenly over the groups and the all-to-all "
        "dispatch and combine added as a labelled extension (a bandwidth floor: no latency, "
        "overlap or skew); every expert resident; MLA's latent KV is replicated across the tp "
        "group."
    )

    ep = ep_parameter()
    command_line_extras: ClassVar[dict[str, param.Parameter]] = {
        **allreduce_parameters(),
        "measured_attention": param.Boolean(
            default=False, label="Measured attention (experiment 9)",
            doc="also show the measured decode attention kernel (real H100 SXM data, "
            "experiment 9) beside the ideal attention phase, where the model's head shape, tp, "
            "batch and context were measured"),
    }
    sources = (
        "GPU peaks and model shapes: the catalog (inference-lab catalog), each with its source.",
        "vLLM CacheConfig: block size 16 (vllm/config/cache.py).",
    )

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The decode configuration, and ``--measured-attention`` when it is on."""
        model, gpu, names = super().inputs_used(values)
        return model, gpu, (*names, *(("measured_attention",) if values.get(
            "measured_attention") else ()))

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """The decode record; with ``measured_attention`` also experiment 9's measured
        attention kernel for this configuration (:mod:`lab.measured.overlay`)."""
        result = super().calculate(values)
        if not values.get("measured_attention"):
            return result
        from lab.measured.measured_loader import SHIPPED_SOURCE
        from lab.measured.overlay import measured_attention

        config = decode_config(values)
        model, gpu = config.resolved()
        found = measured_attention(model, gpu, config.tp, config.batch, config.context,
                                   result["attention_time_s"])
        measured = {**{k: v for k, v in found.items() if k != "point"}, "source": SHIPPED_SOURCE}
        return {**result, "measured_attention": measured}

    @classmethod
    def text_lines(cls, result: dict, values: dict) -> tuple[list[str], list[str]]:
        """The measured attention's sentence after the derivation, when asked for."""
        measured = result.get("measured_attention")
        return [], [measured["sentence"]] if measured else []

    def cards(self) -> list[Card]:
        r = self.result
        bottleneck = "HBM" if r["linear_bottleneck"] == "hbm" else "Compute"
        memory_value = (fmt_gb(r["memory_remaining_bytes"]) if r["fits"]
                        else f"{fmt_gb(-r['memory_remaining_bytes'])} over")
        return [
            Card("Ideal step time", fmt_ms(r["step_time_s"]),
                 "Sequential linear + attention phases"),
            Card("Aggregate ceiling", fmt_rate(r["aggregate_tokens_per_s"]),
                 f"{fmt_rate(r['per_sequence_tokens_per_s'])} per sequence"),
            Card("Linear bottleneck", bottleneck,
                 f"Ridge at batch {fmt_int(r['ridge_batch'])}"),
            Card("What attention adds", fmt_ms(r["attention_time_s"]),
                 f"KV reads {fmt_gb(r['kv_read_bytes'])} / GPU"),
            Card("Memory remaining" if r["fits"] else "Over budget", memory_value,
                 f"inside the {fmt_gb(r['memory_budget_bytes'])} budget" if r["fits"]
                 else f"beyond the {fmt_gb(r['memory_budget_bytes'])} budget"),
            *(self.expert_cards() if self.is_moe() else []),
            *layer_mix_cards(self.model_spec(), self.context),
            *([all_to_all_card(r, self.ep, self.tp)] if self.ep > 1 else []),
        ]

    def is_moe(self) -> bool:
        """True when the current model routes tokens to experts (a mixture of experts)."""
        return moe_field(self.model_spec(), "experts") > 0

    def experts_touched(self, batch=None):
        """Distinct routed experts one MoE layer reads at ``batch`` (default: the current
        batch), uniform routing (count; :func:`lab.models.moe.experts_touched`)."""
        model = self.model_spec()
        return experts_touched(model.experts, model.experts_per_token,
                               self.batch if batch is None else batch)

    def all_experts_weight_bytes(self) -> float:
        """Weight bytes per GPU of a step that reads every expert: where the weight reads of a
        mixture-of-experts model level off as the batch grows (B)."""
        return float(all_experts_weight_bytes(self.model_spec(), self.tp, self.precision,
                                              self.ep))

    def expert_cards(self) -> list[Card]:
        """Total against active parameters, and the experts the current batch touches."""
        model, r = self.model_spec(), self.result
        return [
            Card("Parameters", f"{fmt_params(model.total_params)} total",
                 f"{fmt_params(active_params(model))} active per token: {model.experts_per_token}"
                 f" of {model.experts} experts, input embedding included"),
            Card("Experts read per MoE layer",
                 f"{float(self.experts_touched()):.2f} of {model.experts}",
                 f"batch {self.batch:,}, uniform routing: "
                 f"{fmt_gb(r['linear_weight_bytes'])} of weights read / GPU"),
        ]

    def steps(self):
        model, gpu = self.config().resolved()
        return decode_steps(self.result, model, gpu)

    def explanation(self) -> str:
        r = self.result
        doubled = calc_decode(self.config(batch=min(2 * self.batch, MAX_BATCH)))
        return (
            f"Each person's next token comes a little later, not sooner. At batch {self.batch} "
            f"a step takes {fmt_ms(r['step_time_s'])}; at batch {doubled['inputs']['batch']} it "
            f"takes {fmt_ms(doubled['step_time_s'])}. {self._weights_sentence(doubled)}: "
            f"the aggregate ceiling rises from "
            f"{fmt_rate(r['aggregate_tokens_per_s'])} to "
            f"{fmt_rate(doubled['aggregate_tokens_per_s'])}. But every sequence brings its own "
            f"KV cache to read, so the attention phase grows from "
            f"{fmt_ms(r['attention_time_s'])} to {fmt_ms(doubled['attention_time_s'])}, and "
            f"past batch {fmt_int(r['ridge_batch'])} the linear phase turns compute-bound too."
        )

    def _weights_sentence(self, doubled: dict) -> str:
        """How the weight reads change from this batch to ``doubled``'s and why a bigger batch
        rides along (no final stop)."""
        r = self.result
        if not self.is_moe():
            return (f"The weights ({fmt_gb(r['linear_weight_bytes'])} per GPU) are read once "
                    "per step whatever the batch, so while the linear phase is HBM-bound a "
                    "bigger batch rides along almost free")
        model, batch = self.model_spec(), doubled["inputs"]["batch"]
        return (f"The attention and shared weights are read once per step whatever the batch, "
                f"the experts only when a token is routed to them: "
                f"{float(self.experts_touched()):.2f} of {model.experts} per MoE layer at batch "
                f"{self.batch}, {float(self.experts_touched(batch)):.2f} at batch {batch} "
                "(uniform routing). So the weight reads grow from "
                f"{fmt_gb(r['linear_weight_bytes'])} to {fmt_gb(doubled['linear_weight_bytes'])}"
                f" per GPU and stop at {fmt_gb(self.all_experts_weight_bytes())} once every "
                "expert is read; while the linear phase is HBM-bound a bigger batch costs only "
                "the experts it adds")

    def chart_data(self):
        """Step time and its two phases (``linear_time_s``, ``attention_time_s``: their sum),
        aggregate and fit against batch (powers of two plus the current batch); for a
        mixture-of-experts model also the weight reads and the experts each MoE layer reads
        (``experts_touched``)."""
        batch = labelled(batch_axis(self.batch), "batch", "batch", "sequences")
        out = self.sweep(batch=batch)
        names = ("step_time_s", "aggregate_tokens_per_s", "per_sequence_tokens_per_s", "fits",
                 "memory_remaining_bytes", "linear_time_s", "attention_time_s")
        if not self.is_moe():
            return with_units(out, names, batch)
        ds = with_units(out, (*names, "linear_weight_bytes"), batch)
        touched = xr.DataArray(self.experts_touched(batch["batch"].values), dims="batch",
                               attrs=EXPERTS_TOUCHED_ATTRS)
        return ds.assign(experts_touched=touched)
