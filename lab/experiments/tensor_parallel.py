"""Experiment 3: tensor parallelism, the ideal speed-up and what it leaves out."""

from __future__ import annotations

import numpy as np
import xarray as xr

from lab.derivations.decode_steps import tp_steps
from lab.experiments.base import Card, Prediction
from lab.experiments.decode_inputs import (
    DecodeExperiment,
    all_to_all_card,
    allreduce_parameters,
    ep_parameter,
    labelled,
    with_units,
)
from lab.limits import MAX_LAYOUT_GPUS, TP_DEGREES
from lab.units import fmt_gb, fmt_ms, fmt_rate


class TensorParallel(DecodeExperiment):
    """Shard the model over tp GPUs: every per-GPU term divides by tp."""

    number = 3
    slug = "tp"
    title = "Tensor parallelism"
    headline = "More GPUs. The same work per GPU."
    prediction = Prediction(
        question="Spread the model over 8 GPUs: does one user's next token come 8× sooner?",
        choices=("Yes, 8× sooner in this ideal model", "Sooner, but well under 8×",
                 "No sooner at all"),
        answer=0,
    )
    limits = (
        "The ideal model divides weights, KV reads and FLOPs evenly by tp and charges nothing "
        "for communication, so the speed-up is exactly tp and throughput per GPU is unchanged. "
        "The labelled all-reduce extension adds two ring all-reduces of the BF16 activations "
        "per layer at the per-direction link bandwidth plus a fixed latency per collective; it "
        "leaves out overlap with compute, topology and congestion. With expert parallelism "
        "(ep > 1, a mixture of experts) each of ep groups of tp GPUs holds E/ep experts and "
        "runs 1/ep of the batch; the all-to-all dispatch and combine are added as a second "
        "labelled extension (uniform routing, a bandwidth floor), and tp degrees with ep × tp "
        f"over {MAX_LAYOUT_GPUS} GPUs are unavailable."
    )
    sources = (
        "Interconnect bandwidths per device: the catalog (inference-lab catalog).",
        "Ring all-reduce cost 2·(tp−1)/tp of the payload per GPU (Patarasuk & Yuan, 2009).",
    )

    allreduce, allreduce_latency_us = allreduce_parameters().values()
    ep = ep_parameter()

    def current(self) -> dict:
        """The record for the selected tp."""
        return next(e for e in self.result["records"] if e["tp"] == self.tp)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The decode configuration but its tp: every tp is computed (the page's tp picks the
        cards' column)."""
        model, gpu, names = super().inputs_used(values)
        return model, gpu, tuple(n for n in names if n != "tp")

    def cards(self) -> list[Card]:
        entry = self.current()
        if not entry["valid"]:
            return [Card(f"tp {self.tp}", "unavailable", entry["reason"])]
        speedup = entry.get("speedup_vs_tp1")
        return [
            Card("Step time", fmt_ms(entry["step_time_s"]), f"tp {self.tp}"),
            Card("Speed-up vs tp 1", f"{speedup:.2f}×" if speedup else "n/a",
                 "per-sequence latency"),
            Card("Per sequence", fmt_rate(entry["per_sequence_tokens_per_s"]),
                 f"{fmt_rate(entry['aggregate_tokens_per_s'])} per group"),
            Card("Per GPU", fmt_rate(entry["aggregate_tokens_per_s_per_gpu"]),
                 "aggregate ceiling ÷ tp" if self.ep == 1 else "aggregate ceiling ÷ (ep × tp)"),
            Card("Memory per GPU",
                 fmt_gb(entry["memory_params_bytes"] + entry["memory_kv_bytes"]),
                 "weights + KV"),
            *([all_to_all_card(entry, self.ep, self.tp)] if self.ep > 1 else []),
        ]

    def steps(self):
        model, gpu = self.config().resolved()
        return tp_steps(self.result, model, gpu)

    def explanation(self) -> str:
        records = {e["tp"]: e for e in self.result["records"]}
        one, eight = records[1], records[8]
        if not one["valid"] or not eight["valid"]:
            bad = one if not one["valid"] else eight
            return f"This model cannot be split that way: {bad['reason']}"
        per_gpu = (f"Throughput per GPU stays {fmt_rate(one['aggregate_tokens_per_s_per_gpu'])}"
                   f" → {fmt_rate(eight['aggregate_tokens_per_s_per_gpu'])}.")
        if not self.allreduce:
            return (f"In this ideal model, yes: every per-GPU term divides by tp, so the step "
                    f"falls from {fmt_ms(one['step_time_s'])} to {fmt_ms(eight['step_time_s'])}"
                    f", exactly {eight['speedup_vs_tp1']:.2f}× sooner. {per_gpu} Turn on the "
                    "all-reduce extension to see what the ideal model leaves out.")
        return (f"With the all-reduce estimate, no: the step falls from "
                f"{fmt_ms(one['step_time_s'])} to {fmt_ms(eight['step_time_s'])}, only "
                f"{eight['speedup_vs_tp1']:.2f}× sooner, because "
                f"{fmt_ms(eight['allreduce_time_s'])} of every step is communication that does "
                f"not shrink with tp. {per_gpu}")

    def chart_data(self) -> xr.Dataset:
        """Step time, rates and memory per GPU against tp (NaN where tp is invalid)."""
        tp = labelled(np.array(TP_DEGREES, dtype=np.int64), "tp", "tensor parallel", "GPUs")
        out = self.sweep(tp=tp)
        data = with_units(out, ("step_time_s", "per_sequence_tokens_per_s",
                                "aggregate_tokens_per_s", "aggregate_tokens_per_s_per_gpu",
                                "allreduce_time_s", "valid", "reason"), tp)
        memory = out["memory_params_bytes"] + out["memory_kv_bytes"]
        data["memory_per_gpu_bytes"] = memory.assign_attrs(long_name="weights + KV per GPU",
                                                           units="B")
        if self.ep > 1:  # ep × tp over one node: not a modelled layout
            fits = tp * self.ep <= MAX_LAYOUT_GPUS
            data = data.assign({name: data[name].where(fits) for name in data.data_vars
                                if name not in ("valid", "reason")})
            data = data.assign(valid=data["valid"] & fits)
        return data.assign_coords(tp=tp["tp"])
