"""Experiment 7: raise the batch cap — throughput rises, goodput under a contract does not."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import param
import xarray as xr

from lab.derivations.serving_steps import goodput_steps
from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.command_line import cli
from lab.experiments.decode_inputs import configuration_parameter, decode_config
from lab.experiments.serving_common import dataset
from lab.limits import (
    MAX_BATCH,
    MAX_MS,
    MIN_LIMIT_MS,
)
from lab.models.goodput import UNITS, load_trace, simulate
from lab.models.goodput.metrics import good_mask
from lab.models.goodput.sweep import DEFAULT_CAPS, cap_sweep
from lab.models.inputs import DecodeInputs
from lab.points.decode_points import DecodeConfig, prepare
from lab.points.serving_points import DEFAULT_TRACE, GOODPUT_DEFAULTS, calc_goodput, simulation_inputs
from lab.units import MS, fmt_ms, fmt_number, fmt_rate

D = GOODPUT_DEFAULTS
DEFAULTS = DecodeConfig()
MODEL = "model configuration"
MEMORY = "memory (with --memory-check)"
"""The ``--help`` groups of the decode configuration's and the memory check's flags."""


class GoodputContract(Experiment):
    """Goodput under a contract: a trace served by deterministic continuous batching."""

    number = 7
    slug = "goodput"
    title = "Goodput under a contract"
    headline = "More throughput. Fewer kept promises."
    prediction = Prediction(
        question="Raise the batch cap and throughput rises. Does goodput?",
        choices=("Yes, it rises too", "It rises, then falls", "It stays flat"),
        answer=1,
    )
    limits = (
        "A deterministic continuous-batching model of an authored, synthetic trace: FCFS "
        "admission under a batch cap (and optionally a KV memory check at final lengths), a "
        "linear prefill curve and experiment 1's ideal decode step (each request reading its "
        "own keys per layer kind: full, sliding-window, chunked). No preemption, chunked "
        "prefill, speculative decoding, sampling or network time; it does not reproduce a "
        "particular engine release."
    )
    sources = (
        "vLLM scheduler (continuous batching, max_num_seqs) for implementation context.",
        "Zhong et al., DistServe: goodput under TTFT and TPOT SLOs (OSDI 2024).",
    )

    trace = param.String(default=str(DEFAULT_TRACE), label="Trace CSV",
                         doc="Path to a CSV with request_id,arrival_s,prompt_tokens,output_tokens.",
                         metadata=cli(stdin=True, default_shown="the shipped "
                                      "datasets/traces/default.csv"))
    batch_cap = param.Integer(default=D["batch_cap"], bounds=(1, MAX_BATCH),
                              label="Batch cap M (requests)", doc="Most requests running at once.")
    ttft_ms = param.Number(default=D["ttft_ms"], bounds=(MIN_LIMIT_MS, MAX_MS), label="TTFT limit (ms)",
                           doc="Contract: time to first token T1.")
    tpot_ms = param.Number(default=D["tpot_ms"], bounds=(MIN_LIMIT_MS, MAX_MS), label="TPOT limit (ms)",
                           doc="Contract: time per output token T2.")
    c0_ms = param.Number(default=D["c0_ms"], bounds=(0, MAX_MS), label="c0 (ms per step)",
                         doc="Fixed prefill cost of a step that admits requests.")
    c1_ms = param.Number(default=D["c1_ms"], bounds=(0, MAX_MS), step=0.005,
                         label="c1 (ms per token)", doc="Prefill cost per admitted prompt token.")
    memory_check = param.Boolean(default=False, label="Memory check",
                                 doc="Admit only while every running request's final KV fits.")
    model = configuration_parameter("model", group=MODEL, doc="Catalog model.")
    gpu = configuration_parameter("gpu", group=MODEL, doc="Catalog GPU.")
    tp = configuration_parameter("tp", group=MODEL, doc="GPUs the model is sharded over.")
    precision = configuration_parameter("precision", group=MODEL, doc="Linear-layer precision.")
    budget = configuration_parameter("budget", group=MEMORY, doc="For the memory check.")
    reserve_gb = configuration_parameter("reserve_gb", group=MEMORY, step=None,
                                         doc="GB held back, for the memory check.")
    page = configuration_parameter("page", group=MEMORY,
                                   doc="Tokens per KV page, for the memory check.")
    kv_precision = configuration_parameter(
        "kv_precision", group=MODEL,
        doc="KV cache elements: BF16 (2 B) or FP8 (1 B): KV reads and the memory check's KV "
        "bytes.")
    command_line_extras: ClassVar[dict[str, param.Parameter]] = {
        "per_request": param.Boolean(
            default=False, label="Per request",
            doc="also list every request's TTFT, TPOT and whether it is good"),
    }

    def decode_config(self) -> DecodeConfig:
        """Model, GPU, tp, precision and memory inputs as a
        :class:`~lab.points.decode_points.DecodeConfig`."""
        return decode_config(self.inputs())

    def compute(self) -> dict:
        return self.calculate(self.inputs())

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """The trace served under the contract; every request's figures with ``per_request``."""
        return calc_goodput(trace=values["trace"], batch_cap=values["batch_cap"],
                            ttft_ms=values["ttft_ms"], tpot_ms=values["tpot_ms"],
                            c0_ms=values["c0_ms"], c1_ms=values["c1_ms"],
                            memory_check=values["memory_check"], decode=decode_config(values),
                            with_requests=values.get("per_request", False))

    @classmethod
    def derivation(cls, result: dict, values: dict):
        return goodput_steps(result)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The trace, the contract, the prefill curve and the decode configuration; the memory
        inputs only with the memory check."""
        memory = (("memory_check", "budget", "reserve_gb", "page") if values["memory_check"]
                  else ())
        return True, True, ("trace", "batch_cap", "ttft_ms", "tpot_ms", "c0_ms", "c1_ms", "tp",
                            "precision", "kv_precision", *memory,
                            *(("per_request",) if values.get("per_request") else ()))

    @classmethod
    def text_lines(cls, result: dict, values: dict) -> tuple[list[str], list[str]]:
        """The trace's note before the inputs; with ``per_request`` every request after."""
        before = [f"Note: {result['trace_note']}"] if result["trace_note"] else []
        if not values.get("per_request"):
            return before, []
        after = ["\nrequest_id  arrival_s  prompt  output  TTFT        TPOT      good"]
        for r in result["per_request"]:
            head = (f"{r['request_id']:<11} {r['arrival_s']:>9.3f} {r['prompt_tokens']:>7} "
                    f"{r['output_tokens']:>7}  ")
            after.append(head + ("rejected: never fits in memory" if r["rejected"] else
                                 f"{fmt_ms(r['ttft_s']):>11} {fmt_ms(r['tpot_s']):>9}"
                                 f"  {'yes' if r['good'] else 'no'}"))
        return before, after

    def _inputs(self) -> DecodeInputs:
        """The simulation's decode and memory inputs, converted as the CLI and the grid do."""
        config = self.decode_config().with_(context=1)
        return simulation_inputs(config, *prepare(config))

    def cards(self) -> list[Card]:
        r = self.result
        return [
            Card("Goodput", f"{fmt_number(r['goodput_rps'])} req/s",
                 f"{r['good_requests']:,} of {r['requests']:,} meet the contract"),
            Card("Throughput", fmt_rate(r["throughput_tokens_per_s"]),
                 f"over {fmt_number(r['makespan_s'], 2)} s"),
            Card("Attainment", f"{fmt_number(r['attainment'] * 100, 1)} %",
                 f"TTFT ≤ {fmt_ms(r['inputs']['ttft_limit_s'])}, "
                 f"TPOT ≤ {fmt_ms(r['inputs']['tpot_limit_s'])}"),
            Card("Median TTFT / TPOT", f"{fmt_ms(r['ttft_p50_s'])} / {fmt_ms(r['tpot_p50_s'])}",
                 f"{r['rejected_requests']:,} rejected by memory" if r["rejected_requests"]
                 else "every request served"),
            *([Card("Layer mix", r["layer_mix"],
                    "each decoding request reads its own keys per layer kind: a window "
                    "layer at most w − 1, a chunked layer those of its chunk")]
              if "layer_mix" in r else []),
        ]

    def steps(self):
        return goodput_steps(self.result)

    def sweep(self, caps=DEFAULT_CAPS) -> dict:
        """Goodput, throughput and the rest against the batch cap (one simulation per cap)."""
        inputs = self._inputs()
        caps = np.unique(np.append(np.asarray(caps), self.batch_cap))
        return cap_sweep(load_trace(self.trace), caps, inputs, self.c0_ms * MS, self.c1_ms * MS,
                         self.ttft_ms * MS, self.tpot_ms * MS, memory_check=self.memory_check)

    def explanation(self) -> str:
        s = self.sweep()
        best = int(np.argmax(s["goodput_rps"]))
        caps, gp, th = s["batch_cap"], s["goodput_rps"], s["throughput_tokens_per_s"]
        return (
            f"It rises, then falls. Throughput climbs with every cap, from "
            f"{fmt_rate(th[0])} at M = {caps[0]} to {fmt_rate(th[-1])} at M = {caps[-1]}, "
            f"because bigger batches share each weight read. Goodput peaks at "
            f"{fmt_number(gp[best])} req/s at M = {caps[best]} and is "
            f"{fmt_number(gp[-1])} req/s at M = {caps[-1]}: small caps leave requests queueing "
            f"past the TTFT limit, large caps make every step carry more decoders and more "
            f"prefill, so TPOT breaks the {fmt_ms(self.tpot_ms * MS)} limit."
        )

    def chart_data(self) -> xr.Dataset:
        """Goodput and throughput (and attainment, medians) against the batch cap."""
        s = self.sweep()
        return dataset("batch_cap", s["batch_cap"], "batch cap", "requests", s, UNITS,
                       ("goodput_rps", "throughput_tokens_per_s", "attainment", "good_requests",
                        "ttft_p50_s", "tpot_p50_s"))

    def scatter_data(self) -> xr.Dataset:
        """Per-request TTFT and TPOT (and whether each is good) for the contract-box scatter."""
        trace = load_trace(self.trace)
        sim = simulate(trace, self._inputs(), self.batch_cap, self.c0_ms * MS, self.c1_ms * MS,
                       memory_check=self.memory_check)
        good = good_mask(sim, self.ttft_ms * MS, self.tpot_ms * MS)
        ds = xr.Dataset(
            {"ttft_s": ("request", sim.ttft_s, {"long_name": "time to first token",
                                                "units": "s"}),
             "tpot_s": ("request", sim.tpot_s, {"long_name": "time per output token",
                                                "units": "s"}),
             "good": ("request", good, {"long_name": "meets the contract", "units": "1"}),
             "rejected": ("request", sim.rejected, {"long_name": "never fits in memory",
                                                    "units": "1"})},
            coords={"request": ("request", np.asarray(trace.ids),
                                {"long_name": "request id", "units": "1"})},
            attrs={"ttft_limit_s": self.ttft_ms * MS, "tpot_limit_s": self.tpot_ms * MS},
        )
        return ds
