"""The inputs of one decode configuration, as one object the decode models take.

:class:`DecodeInputs` replaces the argument list ``model, gpu, tp, precision, batch, context,
budget_fraction, reserve_bytes, page`` that experiment 1's step, experiment 2's memory model,
the decode family's metrics and experiment 7's simulation shared. Every field broadcasts: a
Python number, a numpy array or an xarray object (a sweep passes whole grids through it, each
field already shaped along its own axis).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lab.arrays import ArrayLike

DEFAULT_BUDGET_FRACTION = 0.90
"""Share of the GPU's capacity the engine may use (illustrative, not a vLLM default)."""
DEFAULT_RESERVE_BYTES = 4e9
"""Bytes held back for activations and runtime (illustrative)."""
DEFAULT_PAGE_TOKENS = 16
"""KV cache page (block) size, tokens."""


@dataclass(frozen=True)
class DecodeInputs:
    """One decode configuration (or a grid of them), in SI units.

    The defaults of ``tp``, ``precision``, ``batch`` (1) and ``context`` (0) are the formulas'
    neutral values, for a caller that sets them itself (the goodput simulation sets the batch
    and the cached tokens step by step); an experiment's defaults (batch 8, context 8,192) are
    :class:`lab.points.decode_points.DecodeConfig`'s, which every experiment's inputs, flags
    and grids read.

    Attributes
    ----------
    model, gpu
        A :class:`~lab.catalog.ModelSpec` / :class:`~lab.catalog.GPUSpec`, or tables of them
        (``model_table``/``gpu_table``) along their own dimensions.
    tp
        Tensor-parallel degree, GPUs.
    precision
        Precision of the linear layers' weights and arithmetic, ``"bf16"`` or ``"fp8"``.
    batch
        Sequences decoding together (``B``), sequences.
    context
        Tokens already in each sequence's KV cache (``S``), tokens.
    budget_fraction
        Share of the GPU's capacity the engine may use, fraction (default 0.90).
    reserve_bytes
        Bytes held back from the budget per GPU, B (default 4e9).
    page
        KV page size, tokens (default 16).
    kv_precision
        Precision of the KV cache, ``"bf16"`` (2 bytes per element, the default) or ``"fp8"``
        (1 byte): FP8 halves KV bytes per token, per page and per step's KV reads.
    ep
        Expert-parallel degree, groups of ``tp`` GPUs (default 1: none). With ``ep > 1`` (a
        mixture of experts) ``batch`` is the whole ``ep × tp`` layout's: each group runs the
        attention of ``batch/ep`` sequences and holds ``E/ep`` routed experts
        (:mod:`lab.models.expert_parallel`); every per-GPU figure is one GPU's.
    """

    model: Any
    gpu: Any
    tp: ArrayLike = 1
    precision: ArrayLike = "bf16"
    batch: ArrayLike = 1
    context: ArrayLike = 0
    budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION
    reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES
    page: ArrayLike = DEFAULT_PAGE_TOKENS
    kv_precision: ArrayLike = "bf16"
    ep: ArrayLike = 1

    def with_(self, **changes) -> DecodeInputs:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)
