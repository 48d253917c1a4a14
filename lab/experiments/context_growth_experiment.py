"""Experiment 8: double the prompt — prefill time grows by more than twice."""

from __future__ import annotations

import numpy as np
import param

from lab.catalog import get_model
from lab.derivations.serving_steps import context_steps
from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.command_line import cli
from lab.experiments.decode_inputs import configuration_parameter, decode_config
from lab.experiments.serving_common import dataset
from lab.limits import MAX_MS, MAX_TOKENS_CONTEXT, MIN_PAIR_COST_MS
from lab.models.context_growth import UNITS, context_metrics
from lab.models.layer_kinds import has_local_layers
from lab.points.serving_points import CONTEXT_DEFAULTS, calc_context
from lab.units import fmt_count, fmt_int, fmt_ms, fmt_number

D = CONTEXT_DEFAULTS
MODEL = "model configuration"
"""The ``--help`` group of the model, GPU and precision flags."""


def past_crossover(crossover_tokens: float) -> str:
    """Where attention takes over, as the end of a sentence (a crossover n* below 1 token: from
    the first token, since with a = 0, or c large against a, the attention part is the larger
    at every prompt length)."""
    if crossover_tokens < 1:
        return "it outweighs the linear part from the first token"
    return f"past the crossover at {fmt_int(crossover_tokens)} tokens it dominates"


class ContextGrowth(Experiment):
    """Context growth: T(n) = a·n + c·n(n+1)/2, the doubling ratio and the crossover."""

    number = 8
    slug = "context"
    title = "Context growth"
    headline = "Twice the prompt. More than twice the time."
    prediction = Prediction(
        question="Double the prompt. Does prefill take twice as long?",
        choices=("Exactly twice", "Between twice and four times", "Four times"),
        answer=1,
    )
    limits = (
        "The exact pair count is for causal attention: dense, or a model's own mix of full, "
        "sliding-window and chunked layers (each layer's pairs, averaged over the layers). The "
        "time coefficients are synthetic (or idealised from dense peaks: a mixture of experts "
        "at its active weights, MLA at its absorbed-form FLOPs), cover all layers and heads, "
        "and assume serial linear and attention phases at full utilisation. A window on every "
        "layer alike is a labelled extension; kernel behaviour is not modelled."
    )
    sources = (
        "Vaswani et al., Attention is all you need (2017): causal self-attention.",
        "DeepInfer FLOPs estimator (checked October 2026): a source-reading assignment, "
        "not reproduced.",
    )

    tokens = param.Integer(default=D["tokens"], bounds=(1, MAX_TOKENS_CONTEXT),
                           label="Prompt (tokens)", doc="Prompt tokens n.")
    a_ms = param.Number(default=D["a_ms"], bounds=(0, MAX_MS), step=0.001,
                        label="a (ms per token)",
                        doc="Linear time per token over all layers, ms (synthetic).",
                        metadata=cli(unset=True, default_shown=f"{D['a_ms']:g}"))
    c_ms = param.Number(default=D["c_ms"], bounds=(MIN_PAIR_COST_MS, MAX_MS), step=1e-7,
                        label="c (ms per pair)",
                        doc="Attention time per (query, key) pair over all layers and heads, ms.",
                        metadata=cli(unset=True, default_shown=f"{D['c_ms']:g}, synthetic"))
    window = param.Integer(default=0, bounds=(0, MAX_TOKENS_CONTEXT),
                           label="Sliding window (tokens)",
                           doc="Width W of sliding-window attention (an extension); 0 for "
                               "dense causal.",
                           metadata=cli(unset=True, default_shown="dense; on the command line "
                                        "the width is at least 1"))
    from_model = param.Boolean(default=False, label="Derive a and c from a model",
                               doc="a = 2·N_lin/peak(p), c = 4·L·H·h/peak(bf16).")
    model = configuration_parameter(
        "model", group=MODEL, doc="Model for a and c, and its layer kinds for the pairs.")
    gpu = configuration_parameter("gpu", group=MODEL, doc="GPU for a and c.")
    precision = configuration_parameter("precision", group=MODEL,
                                        doc="Linear-layer precision for a.")

    def _kwargs(self, **changes) -> dict:
        """:func:`calc_context`'s arguments for the page's inputs (a window of 0 is dense;
        with ``from_model`` a and c are derived)."""
        values = {**self.inputs(), **changes}
        derived = values["from_model"]
        return self._arguments({**values, "a_ms": None if derived else values["a_ms"],
                                "c_ms": None if derived else values["c_ms"],
                                "window": values["window"] or None})

    @staticmethod
    def _arguments(values: dict) -> dict:
        """:func:`calc_context`'s arguments for ``values`` as they are (the command line's:
        a and c None unless given, a window of 0 refused)."""
        model_cfg = (decode_config({n: values[n] for n in ("model", "gpu", "precision")})
                     if values["from_model"] else None)
        return {"tokens": values["tokens"], "a_ms": values["a_ms"], "c_ms": values["c_ms"],
                "window": values["window"], "from_model": model_cfg}

    def compute(self) -> dict:
        return calc_context(**self._kwargs())

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """Pairs, prefill time, the doubling ratio and the crossover for ``values``."""
        return calc_context(**cls._arguments(values))

    @classmethod
    def derivation(cls, result: dict, values: dict):
        return context_steps(result)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The coefficients as given, or the model, GPU and precision they came from."""
        if values["from_model"]:
            return True, True, ("from_model", "precision", "tokens", "window")
        return False, False, ("tokens", "a_ms", "c_ms", "window")

    def layer_model(self):
        """The model whose layer kinds set the pairs (None: dense or the window extension)."""
        if not self.from_model:
            return None
        model = get_model(self.model)
        return model if has_local_layers(model) else None

    def cards(self) -> list[Card]:
        r = self.result
        mix = ([Card("Layer mix", r["layer_mix"],
                     f"{fmt_int(r['pairs'])} pairs per layer on average, "
                     f"{r['layer_pairs']:,} over all {r['layers']:,} layers")]
               if "layer_mix" in r else [])
        pairs = (f"{fmt_int(r['pairs'])} pairs per layer" if mix else fmt_count(r['pairs'], 'pair'))
        return [
            Card("Prefill time T(n)", fmt_ms(r["time_s"]), pairs),
            Card("Doubling ratio", f"{r['doubling_ratio']:.2f}×", "T(2n) / T(n), between 2 and 4"),
            Card("Attention share", f"{fmt_number(r['attention_share'] * 100, 1)} %",
                 f"attention {fmt_ms(r['attention_time_s'])}"),
            Card("Crossover n*", f"{fmt_int(r['crossover_tokens'])} tokens",
                 "where a·n = c·pairs (dense)" if r["crossover_tokens"] >= 1 else
                 "below 1: attention outweighs the linear part from the first token"),
            *mix,
        ]

    def steps(self):
        return context_steps(self.result)

    def explanation(self) -> str:
        r = self.result
        if "layer_mix" in r:
            return (
                f"Between twice and four times: doubling {self.tokens:,} tokens takes prefill "
                f"from {fmt_ms(r['time_s'])} to {fmt_ms(r['time_doubled_s'])}, "
                f"{r['doubling_ratio']:.2f}×. The linear part a·n doubles; the attention part "
                f"counts each layer's own pairs ({r['layer_mix']}): {r['layer_pairs']:,} "
                f"growing to {r['layer_pairs_doubled']:,} over all layers. Only the full layers "
                f"quadruple; a sliding-window or chunked layer adds at most a window or a chunk "
                f"of keys per token, so it grows linearly once the prompt passes it and the "
                f"ratio stays nearer 2."
            )
        return (
            f"Between twice and four times: doubling {self.tokens:,} tokens takes prefill from "
            f"{fmt_ms(r['time_s'])} to {fmt_ms(r['time_doubled_s'])}, "
            f"{r['doubling_ratio']:.2f}×. The linear part a·n doubles, but the attention part "
            f"counts pairs, {r['pairs']:,} growing to {r['pairs_doubled']:,} — nearly four "
            f"times. Attention is {fmt_number(r['attention_share'] * 100, 1)} % of the time "
            f"here; {past_crossover(r['crossover_tokens'])} and the ratio approaches 4."
        )

    def chart_data(self):
        """T(n) with its linear and attention parts against n (log-spaced up to 4n, and past
        the crossover when it is within 4 × :data:`MAX_TOKENS_CONTEXT`: a tiny ``c`` puts the
        crossover beyond any prompt, up to 1e198 tokens, which the text states instead)."""
        r = self.result
        crossover = min(float(r["crossover_tokens"]), 2.0 * MAX_TOKENS_CONTEXT)
        top = max(4 * self.tokens, 2 * int(max(crossover, 1)), 16)
        grid = np.unique(np.append(np.round(np.geomspace(1, top, 200)), self.tokens)
                         ).astype(np.int64)
        window = self.window or None
        out = context_metrics(grid, r["inputs"]["a_s"], r["inputs"]["c_s"], window,
                              self.layer_model())
        return dataset("tokens", grid, "prompt", "tokens", out, UNITS,
                       ("time_s", "linear_time_s", "attention_time_s", "attention_share",
                        "pairs", "doubling_ratio"))
