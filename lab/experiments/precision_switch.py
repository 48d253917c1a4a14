"""Experiment 4: FP8 linear layers, and why decode is not twice as fast."""

from __future__ import annotations

import numpy as np
import xarray as xr

from lab.derivations.decode_steps import precision_steps
from lab.errors import LabInputError
from lab.experiments.base import Card, Prediction
from lab.experiments.decode_inputs import (
    DecodeExperiment,
    context_axis,
    decode_config,
    ep_parameter,
    labelled,
    layer_mix_cards,
)
from lab.units import fmt_gb, fmt_ms

CHART_BATCHES = (1, 8, 64, 256)
"""Batches drawn as separate speed-up curves (plus the current batch)."""


class PrecisionSwitch(DecodeExperiment):
    """BF16 against FP8 linear layers for the same configuration."""

    number = 4
    slug = "precision"
    title = "Precision"
    headline = "Half the weight bytes. Not half the time."
    prediction = Prediction(
        question="Switch the linear weights to FP8: does decode get twice as fast?",
        choices=("Yes, twice as fast", "Faster, but less than twice", "No faster"),
        answer=1,
    )
    limits = (
        "FP8 is idealised native linear arithmetic at the GPU's dense FP8 peak: scale "
        "overheads, mixed-precision exceptions and quality loss are not modelled. The KV cache "
        "keeps its own precision (the KV precision input, BF16 by default) and attention "
        "arithmetic stays BF16, so switching the linear precision does not speed up "
        "attention. A GPU without an FP8 peak cannot run fp8."
    )
    sources = ("Dense FP8 peaks: the catalog (inference-lab catalog), each with its source.",)

    ep = ep_parameter()

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """BF16 and FP8 of ``values``' configuration; a GPU without an FP8 peak is refused as
        such (the comparison needs it; the ``precision`` input is not this experiment's)."""
        _, gpu = decode_config(values).resolved()
        if not gpu.has_fp8:
            raise LabInputError(f"Experiment 4 compares BF16 with FP8 linear layers, and the "
                                f"{gpu.name} has no FP8 peak; choose a GPU with one.")
        return super().calculate(values)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The decode configuration but its precision: both are computed."""
        model, gpu, names = super().inputs_used(values)
        return model, gpu, tuple(n for n in names if n != "precision")

    def cards(self) -> list[Card]:
        r = self.result
        bf16, fp8 = r["bf16"], r["fp8"]
        return [
            Card("BF16 step", fmt_ms(bf16["step_time_s"]),
                 f"attention {fmt_ms(bf16['attention_time_s'])}"),
            Card("FP8 step", fmt_ms(fp8["step_time_s"]),
                 f"attention {fmt_ms(fp8['attention_time_s'])} (still BF16)"),
            Card("Speed-up", f"{r['speedup']:.2f}×", "t_step(BF16) / t_step(FP8)"),
            Card("Sequences that fit",
                 f"{int(bf16['max_sequences']):,} → {int(fp8['max_sequences']):,}",
                 f"weights {fmt_gb(bf16['memory_params_bytes'])} → "
                 f"{fmt_gb(fp8['memory_params_bytes'])}"),
            *layer_mix_cards(self.model_spec(), self.context),
        ]

    def steps(self):
        model, gpu = self.config().resolved()
        return precision_steps(self.result, model, gpu)

    def explanation(self) -> str:
        r = self.result
        bf16, fp8 = r["bf16"], r["fp8"]
        kv = self.kv_precision.upper()       # the KV cache keeps its own precision in both runs
        article = "an" if kv.startswith("F") else "a"
        return (f"Faster, but only {r['speedup']:.2f}×. FP8 halves the linear weight reads "
                f"({fmt_ms(bf16['linear_time_s'])} → {fmt_ms(fp8['linear_time_s'])}), but the "
                f"attention phase reads {article} {kv} KV cache and stays at "
                f"{fmt_ms(fp8['attention_time_s'])}, so the longer the context, the closer the "
                f"speed-up falls toward 1×. The halved weights do free memory: "
                f"{int(bf16['max_sequences']):,} → {int(fp8['max_sequences']):,} sequences fit.")

    def chart_data(self) -> xr.Dataset:
        """Speed-up against context for several batches."""
        model = self.model_spec()
        context = labelled(context_axis(self.context, model.max_context), "context", "context",
                           "tokens")
        batches = np.unique(np.append(CHART_BATCHES, self.batch)).astype(np.int64)
        batch = labelled(batches, "batch", "batch", "sequences")
        bf16 = self.sweep(context=context, batch=batch, precision="bf16")["step_time_s"]
        fp8 = self.sweep(context=context, batch=batch, precision="fp8")["step_time_s"]
        speedup = (bf16 / fp8).assign_attrs(long_name="FP8 speed-up over BF16", units="×")
        return xr.Dataset({
            "speedup": speedup,
            "step_time_bf16_s": bf16.assign_attrs(long_name="BF16 step time", units="s"),
            "step_time_fp8_s": fp8.assign_attrs(long_name="FP8 step time", units="s"),
        }).assign_coords(context=context["context"], batch=batch["batch"])
