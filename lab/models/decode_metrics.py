"""The decode family (experiments 1–4) as one vectorised calculation.

:func:`decode_metrics` is the single implementation behind the CLI's ``calc decode|memory|
tp|precision``, the param classes the apps use, and the sweep grids: it broadcasts over any mix
of numbers, numpy arrays and xarray objects and returns every variable under the name the CLI's
JSON uses. Invalid cells are NaN with ``valid`` False and a :class:`~lab.models.decode_validity.Reason` code.
"""

from __future__ import annotations

from lab.arrays import ArrayLike, nan_mask
from lab.models.decode_step import decode_step
from lab.models.decode_validity import decode_reason
from lab.models.expert_parallel import all_to_all_bytes_per_gpu, all_to_all_time
from lab.models.inputs import DecodeInputs
from lab.models.memory import memory_fit, sequence_capacity
from lab.models.moe import no_expert_parallelism
from lab.models.parallel import DEFAULT_ALLREDUCE_LATENCY_S, allreduce_time

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
"""``(long_name, units)`` of every output of :func:`decode_metrics` (the grids' variables)."""
EXPERT_PARALLEL_UNITS = {
    "all_to_all_bytes_per_gpu": ("all-to-all dispatch + combine bytes per GPU", "B"),
    "all_to_all_time_s": ("all-to-all time (extension)", "s"),
}
"""``(long_name, units)`` of the outputs :func:`decode_metrics` adds with expert parallelism
(``ep > 1``; the grids do not sweep ep, so they are not grid variables)."""


def decode_metrics(
    inputs: DecodeInputs,
    allreduce: bool = False,
    allreduce_latency_s: ArrayLike = DEFAULT_ALLREDUCE_LATENCY_S,
) -> dict:
    """Every decode-family output for ``inputs`` (all its fields broadcast against each other).

    Parameters
    ----------
    inputs : DecodeInputs
        Model, GPU, tp, precision, batch, context and the memory inputs (units in
        :class:`~lab.models.inputs.DecodeInputs`).
    allreduce : bool
        Add experiment 3's all-reduce extension to the step (default off).
    allreduce_latency_s : float
        Fixed cost per collective when ``allreduce`` is on, seconds.

    Returns
    -------
    dict
        Keys as in :data:`UNITS` plus ``valid`` (bool) and ``reason`` (int code); the
        ``all_to_all_*`` keys only with expert parallelism (``inputs.ep`` not the number 1).

    With ``inputs.ep > 1`` the all-to-all extension (:func:`~lab.models.expert_parallel.
    all_to_all_time`: dispatch and combine, uniform routing) is always added to the step, the
    all-reduces are those of one group's ``B/ep`` tokens, and the rate per GPU divides by
    ``ep·tp``.
    """
    model, gpu, tp, ep = inputs.model, inputs.gpu, inputs.tp, inputs.ep
    reason = decode_reason(model, gpu, tp, inputs.precision, inputs.context)
    valid = reason == 0
    # Invalid cells are NaN: one low-dimensional mask (1 or NaN) multiplies the base terms, and
    # every quantity derived from them (step, rates, remaining memory) inherits it.
    mask = nan_mask(valid)
    expert_parallel = not no_expert_parallelism(ep)
    group_batch = inputs.batch / ep if expert_parallel else inputs.batch
    extra = (allreduce_time(model, gpu, tp, group_batch, allreduce_latency_s) * mask
             if allreduce else 0.0)
    a2a = all_to_all_time(model, gpu, inputs.batch, ep, tp) * mask if expert_parallel else 0.0
    out = decode_step(inputs, extra_time_s=extra + a2a if expert_parallel else extra,
                      mask=mask)
    out["allreduce_time_s"] = extra if allreduce else 0.0 * mask
    if expert_parallel:
        out["all_to_all_bytes_per_gpu"] = all_to_all_bytes_per_gpu(model, inputs.batch, ep,
                                                                   tp) * mask
        out["all_to_all_time_s"] = a2a
    out["aggregate_tokens_per_s_per_gpu"] = out["aggregate_tokens_per_s"] / (
        tp * ep if expert_parallel else tp)
    out.update(memory_fit(inputs, mask=mask))
    out.update(sequence_capacity(inputs, mask=mask))
    out["valid"] = valid
    out["reason"] = reason
    return out
