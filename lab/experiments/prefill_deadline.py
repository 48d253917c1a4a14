"""Experiment 5: a long prompt arrives while users decode — chunked prefill and its deadline."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import param

from lab.derivations.serving_steps import prefill_steps
from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.command_line import cli
from lab.experiments.decode_inputs import (
    DECODE_CONFIGURATION,
    LINE,
    DecodeExperiment,
    decode_config,
)
from lab.experiments.serving_common import dataset
from lab.limits import MAX_CONTEXT, MAX_MS, MIN_LIMIT_MS
from lab.models.prefill import UNITS, prefill_metrics
from lab.points.serving_points import PREFILL_DEFAULTS, calc_prefill
from lab.units import fmt_count, fmt_ms

D = PREFILL_DEFAULTS


class PrefillDeadline(Experiment):
    """Prefill deadline: TTFT of a chunked prompt against the decoders' inter-token latency."""

    number = 5
    slug = "prefill"
    title = "Prefill deadline"
    headline = "Smaller chunks. Later first token."
    prediction = Prediction(
        question="A 16k-token prompt arrives while users are decoding. Does a smaller chunk "
        "get its first token out sooner?",
        choices=("Yes, sooner", "No change", "No, later"),
        answer=2,
    )
    limits = (
        "Prefill cost follows a specified linear curve c(n) = c0 + c1·n, synthetic and not "
        "measured; the decode batch costs a fixed d per step (an input or experiment 1's ideal "
        "step). One prompt is prefilled at a time; scheduling overheads, attention's growth "
        "with the prompt inside a chunk and other arrivals are left out. It does not reproduce "
        "a particular engine release."
    )
    sources = (
        "vLLM documentation, chunked prefill and scheduler configuration "
        "(max_num_batched_tokens).",
        "Agrawal et al., Sarathi-Serve: taming throughput-latency tradeoff (OSDI 2024).",
    )

    prompt = param.Integer(default=D["prompt"], bounds=(1, MAX_CONTEXT), label="Prompt (tokens)",
                           doc="Prompt tokens P to prefill.")
    chunk = param.Integer(default=D["chunk"], bounds=(1, MAX_CONTEXT), label="Chunk (tokens)",
                          doc="Chunk size C: prompt tokens carried per step.")
    decode_ms = param.Number(default=D["decode_ms"], bounds=(0, MAX_MS), label="Decode step d (ms)",
                             doc="Cost of the running decode batch per step, ms.",
                             metadata=cli(unset=True, default_shown=f"{D['decode_ms']:g}; or "
                                          "use --decode-from"))
    c0_ms = param.Number(default=D["c0_ms"], bounds=(0, MAX_MS), label="c0 (ms per step)",
                         doc="Fixed prefill cost per step, ms.")
    c1_ms = param.Number(default=D["c1_ms"], bounds=(0, MAX_MS), step=0.01,
                         label="c1 (ms per token)", doc="Prefill cost per prompt token, ms.")
    deadline_ms = param.Number(default=D["deadline_ms"], bounds=(MIN_LIMIT_MS, MAX_MS),
                               label="TTFT deadline (ms)", doc="Deadline D for the first token.")
    itl_ms = param.Number(default=D["itl_ms"], bounds=(MIN_LIMIT_MS, MAX_MS), label="ITL limit (ms)",
                          doc="Inter-token latency limit for the users decoding meanwhile.")

    command_line_extras: ClassVar[dict[str, param.Parameter]] = {
        "decode_from": param.Boolean(
            default=False, label="Decode step from experiment 1",
            doc="take d from experiment 1's model for the decode configuration flags below "
            "instead of --decode-ms"),
        **{name: DecodeExperiment.param[name] for name in DECODE_CONFIGURATION},
    }
    """On the command line d may come from experiment 1's model (``--decode-from``) for a
    decode configuration: experiment 1's own inputs."""

    def compute(self) -> dict:
        return self.calculate(self.inputs())

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """TTFT, ITL and the feasible chunks; ``d`` from experiment 1's model for the decode
        configuration of ``values`` with ``decode_from``."""
        decode_from = decode_config(values) if values.get("decode_from") else None
        return calc_prefill(**{name: values[name] for name in cls.input_names()},
                            decode_from=decode_from)

    @classmethod
    def derivation(cls, result: dict, values: dict):
        return prefill_steps(result)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """``d`` as given, or ``--decode-from`` and the decode configuration it came from."""
        own = ("prompt", "chunk", "c0_ms", "c1_ms", "deadline_ms", "itl_ms")
        if values.get("decode_from"):
            return True, True, ("decode_from", *own, *LINE)
        return False, False, ("decode_ms", *own)

    def cards(self) -> list[Card]:
        r = self.result
        feasible = r["feasible_chunks"]
        return [
            Card("Time to first token", fmt_ms(r["ttft_s"]),
                 f"{fmt_count(r['chunks'], 'chunk')}; deadline {'met' if r['meets_deadline'] else 'missed'}"),
            Card("ITL during prefill", fmt_ms(r["itl_during_prefill_s"]),
                 f"limit {'met' if r['meets_itl'] else 'missed'}"),
            Card("Smallest chunk for the deadline",
                 f"{r['smallest_chunk_meeting_deadline']:,} tokens"
                 if r["smallest_chunk_meeting_deadline"] else "none",
                 "TTFT falls as chunks grow"),
            Card("Feasible chunks",
                 f"{feasible['min']:,}–{feasible['max']:,}" if feasible else "none",
                 r["feasible_text"]),
        ]

    def steps(self):
        return prefill_steps(self.result)

    def explanation(self) -> str:
        r = self.result
        half = calc_prefill(**{**self.inputs(), "chunk": max(1, self.chunk // 2)})
        return (
            f"No: a smaller chunk delays the first token. With {self.chunk:,}-token chunks the "
            f"prompt needs {fmt_count(r['chunks'], 'step')} and its first token comes at "
            f"{fmt_ms(r['ttft_s'])}; with {half['inputs']['chunk']:,}-token chunks it needs "
            f"{fmt_count(half['chunks'], 'step')} and comes at {fmt_ms(half['ttft_s'])}, because every "
            f"step repeats the decode batch ({fmt_ms(r['inputs']['decode_s'])}) and the fixed "
            f"cost c0 while the per-token work c1·P stays the same. What smaller chunks buy is "
            f"the decoders' wait per token: {fmt_ms(r['itl_during_prefill_s'])} falls to "
            f"{fmt_ms(half['itl_during_prefill_s'])}. The deadline wants big chunks, the ITL "
            f"limit small ones: {r['feasible_text']}."
        )

    def chart_data(self):
        """TTFT and ITL during the prefill against the chunk size (1..P, log-spaced)."""
        r = self.result
        grid = np.unique(np.concatenate([
            np.round(np.geomspace(1, self.prompt, 200)).astype(np.int64), [self.chunk]]))
        grid = grid[(grid >= 1) & (grid <= max(self.prompt, self.chunk))]
        i = r["inputs"]
        out = prefill_metrics(self.prompt, grid, i["decode_s"], i["c0_s"], i["c1_s"],
                              i["deadline_s"], i["itl_limit_s"])
        return dataset("chunk_size", grid, "chunk size", "tokens", out, UNITS,
                       ("ttft_s", "itl_during_prefill_s", "chunks", "meets_deadline",
                        "meets_itl", "meets_both"))
