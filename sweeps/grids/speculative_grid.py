"""Experiment 10's grid: ``batch × context × k × alpha`` for one target, drafter and GPU.

Each chunk calls :func:`lab.models.speculative.speculative_metrics` — the function behind
``calc speculative --json`` — with the axes shaped to broadcast, so a cell equals the CLI's
number for the same inputs. Every cell is valid: inputs ``calc`` would reject (a drafter with
another vocabulary, a context beyond either model's maximum, an invalid tp) are rejected when
the spec is read, with the same sentence.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lab.catalog.lookup import dense_attention_catalog
from lab.limits import MAX_BATCH, MAX_CONTEXT, MAX_DRAFT_TOKENS
from lab.models.speculative import MTP, UNITS, speculative_metrics
from lab.points.speculative_points import SpeculativeConfig, prepare_speculative
from sweeps.build import axis_view
from sweeps.common_rules import gpu_rule, kv_precision_rule, model_rule, precision_rule, tp_rule
from sweeps.grid_schema import ExperimentSpec, Rule, Schema

DEFAULT = SpeculativeConfig()
DIMS = ("batch", "context", "k", "alpha")
"""Dimensions of the grid, in order."""


def _config(constants: Mapping, **axes) -> SpeculativeConfig:
    return SpeculativeConfig(model=constants["model"], draft=constants["draft"],
                             gpu=constants["gpu"], tp=constants["tp"],
                             precision=constants["precision"],
                             kv_precision=constants["kv_precision"], **axes)


def speculative_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """Every output of experiment 10 for one chunk of ``batch × context × k × alpha``."""
    ndim = len(DIMS)
    config = _config(constants)
    model, draft, gpu = prepare_speculative(config)
    batch = axis_view(np.asarray(coords["batch"], dtype=np.int64), 0, ndim)
    context = axis_view(np.asarray(coords["context"], dtype=np.int64), 1, ndim)
    k = axis_view(np.asarray(coords["k"], dtype=np.int64), 2, ndim)
    alpha = axis_view(np.asarray(coords["alpha"], dtype=float), 3, ndim)
    inputs = config.decode_config().decode_inputs(model, gpu, batch=batch, context=context)
    return speculative_metrics(inputs, draft, k, alpha)


def _finalize(spec: ExperimentSpec) -> ExperimentSpec:
    """Reject what ``calc speculative`` rejects, at the longest context and largest k."""
    prepare_speculative(_config(spec.constants, context=max(spec.axes["context"]),
                                k=max(spec.axes["k"])))
    return spec


SCHEMA = Schema(
    experiment="speculative",
    axes=(
        Rule("batch", "int", "batch", "sequences", 1, MAX_BATCH, default={"pow2": [1, MAX_BATCH]}),
        Rule("context", "int", "context", "tokens", 1, MAX_CONTEXT,
             default={"pow2": [128, 131072]}),
        Rule("k", "int", "draft tokens k", "tokens", 0, MAX_DRAFT_TOKENS,
             default=[0, 1, 2, 3, 4, 6, 8]),
        Rule("alpha", "float", "acceptance rate α", "1", 0.0, 1.0,
             default=[0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ),
    constants=(
        model_rule(DEFAULT.model),
        Rule("draft", "str", "draft model or MTP head", "1",
             choices=lambda: (MTP, *dense_attention_catalog()), default=DEFAULT.draft),
        gpu_rule(DEFAULT.gpu),
        tp_rule(DEFAULT.tp),
        precision_rule(DEFAULT.precision),
        kv_precision_rule(DEFAULT.kv_precision),
    ),
    variables=lambda: tuple(UNITS),
    description="Experiment 10: speculative decoding against plain decoding for every batch, "
    "context, draft length k and acceptance rate α.",
    finalize=_finalize,
)

SPECULATIVE_GRID = (SCHEMA, speculative_block, dict(UNITS))
"""The grid block of experiment 10 (registered in :mod:`sweeps.grids`)."""
