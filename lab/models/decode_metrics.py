"""The decode family (experiments 1–4) as one vectorised calculation.

:func:`decode_metrics` is the single implementation behind the CLI's ``calc decode|memory|
tp|precision``, the param classes the apps use, and the sweep grids: it broadcasts over any mix
of numbers, numpy arrays and xarray objects and returns every variable under the name the CLI's
JSON uses. Invalid cells are NaN with ``valid`` False and a :class:`~lab.points.validity.Reason` code.
"""

from __future__ import annotations

from lab.arrays import ArrayLike, nan_mask
from lab.models.decode_step import decode_step
from lab.models.memory import (
    DEFAULT_BUDGET_FRACTION,
    DEFAULT_PAGE_TOKENS,
    DEFAULT_RESERVE_BYTES,
    memory_fit,
    sequence_capacity,
)
from lab.models.parallel import DEFAULT_ALLREDUCE_LATENCY_S, allreduce_time
from lab.points.validity import decode_reason

UNITS = {
    "linear_weight_bytes": ("linear weight reads per GPU", "B"),
    "linear_flops": ("linear FLOPs per GPU", "FLOP"),
    "hbm_time_s": ("HBM time of the weight reads", "s"),
    "linear_compute_time_s": ("linear compute time", "s"),
    "linear_time_s": ("linear phase time", "s"),
    "linear_compute_bound": ("linear phase is compute-bound", "1"),
    "kv_read_bytes": ("KV cache reads per GPU", "B"),
    "attention_flops": ("attention FLOPs per GPU", "FLOP"),
    "attention_memory_time_s": ("attention KV read time", "s"),
    "attention_compute_time_s": ("attention compute time", "s"),
    "attention_time_s": ("attention phase time", "s"),
    "allreduce_time_s": ("all-reduce time (extension)", "s"),
    "step_time_s": ("ideal decode step time", "s"),
    "aggregate_tokens_per_s": ("aggregate decode ceiling", "tokens/s"),
    "per_sequence_tokens_per_s": ("per-sequence decode rate", "tokens/s"),
    "aggregate_tokens_per_s_per_gpu": ("aggregate decode ceiling per GPU", "tokens/s"),
    "ridge_batch": ("ridge batch (linear phase turns compute-bound)", "sequences"),
    "memory_params_bytes": ("parameter memory per GPU", "B"),
    "memory_kv_bytes": ("KV cache memory per GPU", "B"),
    "memory_budget_bytes": ("memory budget per GPU", "B"),
    "memory_reserve_bytes": ("reserved memory per GPU", "B"),
    "memory_remaining_bytes": ("memory remaining inside the budget", "B"),
    "fits": ("fits inside the memory budget", "1"),
    "kv_bytes_per_sequence": ("paged KV bytes per sequence per GPU", "B"),
    "free_for_kv_bytes": ("memory free for KV per GPU", "B"),
    "page_waste_bytes_per_sequence": ("page-rounding waste per sequence", "B"),
    "max_sequences": ("sequences that fit", "sequences"),
    "weights_fit": ("weights fit inside the budget", "1"),
    "valid": ("configuration is valid", "1"),
    "reason": ("reason code (0 = valid; see the reason_text attribute)", "1"),
}
"""``(long_name, units)`` of every output of :func:`decode_metrics`."""


def decode_metrics(
    model,
    gpu,
    tp: ArrayLike,
    precision: ArrayLike,
    batch: ArrayLike,
    context: ArrayLike,
    budget_fraction: ArrayLike = DEFAULT_BUDGET_FRACTION,
    reserve_bytes: ArrayLike = DEFAULT_RESERVE_BYTES,
    page: ArrayLike = DEFAULT_PAGE_TOKENS,
    allreduce: bool = False,
    allreduce_latency_s: ArrayLike = DEFAULT_ALLREDUCE_LATENCY_S,
) -> dict:
    """Every decode-family output for the given inputs (all broadcast against each other).

    Parameters
    ----------
    model, gpu
        A :class:`~lab.catalog.ModelSpec` / :class:`~lab.catalog.GPUSpec`, or tables of them
        (``model_table``/``gpu_table``) along their own dimensions.
    tp : int
        Tensor-parallel degree.
    precision : {"bf16", "fp8"}
        Precision of the linear layers' weights and arithmetic.
    batch : int
        Sequences decoding together.
    context : int
        Tokens already in each sequence's KV cache.
    budget_fraction : float
        Share of GPU capacity the engine may use (default 0.90).
    reserve_bytes : float
        Bytes held back from the budget (default 4e9).
    page : int
        KV page size, tokens (default 16).
    allreduce : bool
        Add experiment 3's all-reduce extension to the step (default off).
    allreduce_latency_s : float
        Fixed cost per collective when ``allreduce`` is on, seconds.

    Returns
    -------
    dict
        Keys as in :data:`UNITS` plus ``valid`` (bool) and ``reason`` (int code).
    """
    reason = decode_reason(model, gpu, tp, precision, context)
    valid = reason == 0
    # Invalid cells are NaN: one low-dimensional mask (1 or NaN) multiplies the base terms, and
    # every quantity derived from them (step, rates, remaining memory) inherits it.
    mask = nan_mask(valid)
    extra = (allreduce_time(model, gpu, tp, batch, allreduce_latency_s) * mask if allreduce
             else 0.0)
    out = decode_step(model, gpu, tp, precision, batch, context, extra_time_s=extra, mask=mask)
    out["allreduce_time_s"] = extra if allreduce else 0.0 * mask
    out["aggregate_tokens_per_s_per_gpu"] = out["aggregate_tokens_per_s"] / tp
    out.update(memory_fit(model, gpu, tp, precision, batch, context,
                          budget_fraction, reserve_bytes, page, mask=mask))
    out.update(sequence_capacity(model, gpu, tp, precision, context,
                                 budget_fraction, reserve_bytes, page, mask=mask))
    out["valid"] = valid
    out["reason"] = reason
    return out
