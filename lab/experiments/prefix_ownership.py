"""Experiment 6: many requests share a system prompt — what prefix caching saves."""

from __future__ import annotations

import numpy as np
import param

from lab.catalog.lookup import dense_model_catalog
from lab.derivations.serving_steps import prefix_steps
from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.command_line import cli
from lab.experiments.decode_inputs import configuration_parameter
from lab.experiments.serving_common import dataset
from lab.limits import MAX_CONTEXT, MAX_PREFIX_BLOCK, MAX_PREFIX_REQUESTS
from lab.models.prefix import UNITS, prefix_metrics
from lab.points.decode_points import DecodeConfig, prepare
from lab.points.serving_points import PREFIX_DEFAULTS, calc_prefix
from lab.units import fmt_count, fmt_gb, fmt_int, fmt_number

D = PREFIX_DEFAULTS
MODEL = "model configuration"
"""The ``--help`` group of the model and tp flags."""


class PrefixOwnership(Experiment):
    """Prefix ownership: full shared blocks stored once, a private tail per request."""

    number = 6
    slug = "prefix"
    title = "Prefix ownership"
    headline = "Share the prefix. Own the tail."
    prediction = Prediction(
        question="100 requests share a 1,000-token system prompt. How much KV memory does "
        "prefix caching save?",
        choices=("About 10 %", "About 50 %", "About 80 %", "Over 95 %"),
        answer=2,
    )
    limits = (
        "Only full blocks of the shared prefix are shared; the partial last block and each "
        "request's own tokens are private. KV is BF16 and paged; eviction, copy-on-write, "
        "hashing cost and any engine's block manager details are left out. Synthetic: it does "
        "not reproduce a particular engine release."
    )
    sources = (
        "vLLM design docs: automatic prefix caching (hash of full blocks).",
        "Kwon et al., Efficient memory management for LLM serving with PagedAttention (SOSP 2023).",
    )

    model = configuration_parameter("model", group=MODEL, objects=list(dense_model_catalog()))
    tp = configuration_parameter("tp", group=MODEL, doc="GPUs the KV heads are sharded over.")
    prefix = param.Integer(default=D["prefix"], bounds=(0, MAX_CONTEXT),
                           label="Shared prefix (tokens)", doc="Tokens every request shares, P.")
    own = param.Integer(default=D["own"], bounds=(0, MAX_CONTEXT), label="Own tokens",
                        doc="Tokens each request adds after the prefix, U.")
    requests = param.Integer(default=D["requests"], bounds=(1, MAX_PREFIX_REQUESTS), label="Requests N",
                             doc="Requests sharing the prefix.")
    block = param.Integer(default=D["block"], bounds=(1, MAX_PREFIX_BLOCK), label="Block (tokens)",
                          doc="KV block (page) size b, tokens; --block is the old name",
                          metadata=cli(name="page", aliases=("block",)))

    def compute(self) -> dict:
        return self.calculate(self.inputs())

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """KV blocks and bytes with and without prefix caching."""
        return calc_prefix(**{name: values[name] for name in cls.input_names()})

    @classmethod
    def derivation(cls, result: dict, values: dict):
        return prefix_steps(result)

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The model (no GPU: bytes and blocks only) and every input."""
        return True, False, ("tp", "prefix", "own", "requests", "block")

    def _model(self):
        return prepare(DecodeConfig(model=self.model, tp=self.tp, context=1))[0]

    def cards(self) -> list[Card]:
        r = self.result
        return [
            Card("Memory saved", f"{fmt_number(r['saved_fraction'] * 100, 1)} %",
                 f"{fmt_gb(r['bytes_saved'])} per GPU"),
            Card("Blocks", f"{r['blocks_with_cache']:,} vs {r['blocks_without_cache']:,}",
                 "with vs without prefix caching"),
            Card("Shared blocks", f"{r['shared_blocks']:,}",
                 f"tail of {fmt_count(r['tail_tokens'], 'token')} stays private"),
            Card("Owned per request", f"{fmt_number(r['owned_blocks_per_request'])} blocks",
                 f"{fmt_int(r['block_bytes'])} B per block"),
        ]

    def steps(self):
        return prefix_steps(self.result)

    def explanation(self) -> str:
        r = self.result
        one_more = calc_prefix(**{**self.inputs(), "prefix": self.prefix + 1})
        return (
            f"About {fmt_number(r['saved_fraction'] * 100, 0)} %: {r['blocks_with_cache']:,} "
            f"blocks instead of {r['blocks_without_cache']:,}. Only the {r['shared_blocks']:,} "
            f"full blocks of the prefix are stored once; the last "
            f"{self.prefix % self.block:,} prefix tokens share a block with each request's own "
            f"{self.own:,} tokens, so every request still owns "
            f"{r['private_blocks_per_request']:,} private blocks. The saving depends on where "
            f"the block boundary falls: one more prefix token gives "
            f"{fmt_number(one_more['saved_fraction'] * 100, 1)} % saved."
        )

    def chart_data(self):
        """Memory with/without against N, and saved fraction against P (the sawtooth)."""
        model = self._model()
        n_axis = np.unique(np.append(np.unique(np.round(np.geomspace(1, 1000, 40))), self.requests)
                           ).astype(np.int64)
        by_n = prefix_metrics(model, self.tp, self.prefix, self.own, n_axis, self.block)
        p_top = max(4 * self.block, 2 * self.prefix, 64)
        p_axis = np.arange(0, p_top + 1, dtype=np.int64)
        p_axis = p_axis[p_axis + self.own >= 1]
        by_p = prefix_metrics(model, self.tp, p_axis, self.own, self.requests, self.block)
        ds_n = dataset("requests", n_axis, "requests sharing the prefix", "requests", by_n,
                       UNITS, ("bytes_with_cache", "bytes_without_cache", "blocks_with_cache",
                               "blocks_without_cache"))
        ds_p = dataset("prefix", p_axis, "shared prefix length", "tokens", by_p, UNITS,
                       ("saved_fraction", "private_blocks_per_request", "shared_blocks"))
        ds_p = ds_p.rename({name: f"{name}_by_prefix" for name in ds_p.data_vars})
        return ds_n.merge(ds_p)
