"""Experiment 10's model: speculative decoding and multi-token prediction on the decode floors.

A cycle drafts ``k`` tokens per sequence and verifies them in one step of the target model;
every function broadcasts over numbers, numpy arrays and xarray objects. Results in SI units:
bytes, FLOP, seconds, tokens/s. Formulas (docs/model.md §10)::

    E(k, α)    = (1 − α^(k+1)) / (1 − α)         expected tokens per cycle (α = 1: k + 1)
    t_verify   = t_lin(B·(k+1)) + max(KV_read(B·S) / BW, FLOP_att(B·P) / peak(bf16))
    P          = (k+1)·S + k·(k+1)/2              (query, key) pairs per sequence
    S_eff, P   with sliding-window or chunked layers: read(S)/L and Σ_{j≤k} read(S+j)/L
    t_draft    = k · t_step(drafter, B, S)        k decode steps of the drafter
    t_cycle    = t_draft + t_verify
    per_seq    = E / t_cycle                     aggregate = B · E / t_cycle
    speed-up   = per_seq / (1 / t_step(target, B, S))

``t_lin``, ``KV_read``, ``FLOP_att`` and ``t_step`` are experiment 1's
(:mod:`lab.models.decode_step`), called here, never restated. A model with sliding-window or
chunked layers reads per sequence :func:`~lab.models.layer_kinds.effective_context` cached
tokens in place of ``S`` and computes :func:`verify_layer_pairs` (each query's own keys per
layer kind, :func:`~lab.models.layer_kinds.read_layer_tokens_between`) in place of ``P``.
The drafter is a smaller dense model (its own weights and KV) or the target's
multi-token-prediction (MTP) head: one transformer layer of the target, the LM head it shares
with the target, and the projection ``M`` (d × 2d) that joins the hidden state to the next token's
embedding (DeepSeek-V3's MTP module), costed as a one-layer model whose head has ``V + 2d``
rows (:func:`mtp_head`).
Memory: the drafter's weights (:func:`~lab.models.memory.params_bytes`) and its paged KV cache
(:func:`~lab.models.memory.kv_bytes_per_sequence`) beside the target's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lab.arrays import ArrayLike, where
from lab.models.decode_step import attention_terms, decode_step, linear_params, linear_phase
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import (
    chunk_layers,
    effective_context,
    has_local_layers,
    read_layer_tokens_between,
    window_layers,
)
from lab.models.memory import kv_bytes_per_sequence, params_bytes

MTP = "mtp"
"""The ``draft`` value meaning the target's own multi-token-prediction head."""

UNITS = {
    "expected_tokens": ("expected tokens per verification step", "tokens"),
    "verify_weight_bytes": ("verification weight reads per GPU", "B"),
    "verify_hbm_time_s": ("verification weight read time", "s"),
    "verify_linear_flops": ("verification linear FLOPs per GPU", "FLOP"),
    "verify_linear_compute_time_s": ("verification linear compute time", "s"),
    "verify_linear_time_s": ("verification linear phase time", "s"),
    "verify_kv_read_bytes": ("verification KV cache reads per GPU", "B"),
    "verify_attention_flops": ("verification attention FLOPs per GPU", "FLOP"),
    "verify_attention_memory_time_s": ("verification KV read time", "s"),
    "verify_attention_compute_time_s": ("verification attention compute time", "s"),
    "verify_attention_time_s": ("verification attention phase time", "s"),
    "verify_time_s": ("verification step time", "s"),
    "verify_compute_bound": ("verification linear phase is compute-bound", "1"),
    "draft_step_time_s": ("one draft step time", "s"),
    "draft_time_s": ("draft time per cycle (k draft steps)", "s"),
    "cycle_time_s": ("speculative cycle time (draft + verify)", "s"),
    "plain_step_time_s": ("plain decode step time", "s"),
    "per_sequence_tokens_per_s": ("per-sequence rate with speculation", "tokens/s"),
    "aggregate_tokens_per_s": ("aggregate rate with speculation", "tokens/s"),
    "plain_per_sequence_tokens_per_s": ("per-sequence rate of plain decoding", "tokens/s"),
    "plain_aggregate_tokens_per_s": ("aggregate rate of plain decoding", "tokens/s"),
    "speedup": ("speed-up over plain decoding", "1"),
    "draft_params_bytes": ("draft weight memory per GPU", "B"),
    "draft_kv_bytes": ("draft KV cache memory per GPU", "B"),
}
"""``(long_name, units)`` of every output of :func:`speculative_metrics`."""


def expected_tokens(k: ArrayLike, alpha: ArrayLike) -> ArrayLike:
    """Expected tokens one verification step emits per sequence (tokens).

    ``(1 − α^(k+1)) / (1 − α)`` for a per-token acceptance rate ``α`` and ``k`` drafted tokens
    (Leviathan et al. 2023, eq. 1; Chen et al. 2023): the accepted prefix of the draft plus the
    target's own token; ``k + 1`` at ``α = 1`` and 1 at ``α = 0`` or ``k = 0``.
    """
    below = alpha < 1
    a = where(below, alpha, 0.0)  # no 0/0 at α = 1
    return where(below, (1.0 - np.power(a, k + 1)) / (1.0 - a), k + 1.0)  # as a grid computes


def verify_pairs(k: ArrayLike, context: ArrayLike) -> ArrayLike:
    """(query, key) pairs one sequence's verification step computes: ``(k+1)·S + k(k+1)/2``
    (count): each of the ``k + 1`` queries attends to the ``S`` cached tokens and, causally, to
    the drafted tokens before it."""
    return (k + 1) * context + k * (k + 1) / 2


def verify_layer_pairs(model, k: ArrayLike, context: ArrayLike) -> ArrayLike:
    """Pairs per sequence of a verification step, averaged over the layers (count):
    :func:`verify_pairs` for a model of full layers; with sliding-window or chunked layers,
    ``Σ_{j=0}^{k} read(S + j) / L`` (:func:`~lab.models.layer_kinds.read_layer_tokens_between`:
    a window layer's query reads at most ``w − 1`` keys besides its own, a chunked layer's those
    of its chunk)."""
    dense = verify_pairs(k, context)
    if not has_local_layers(model):
        return dense
    local = read_layer_tokens_between(model, context, context + k + 1) / model.layers
    return where(window_layers(model) + chunk_layers(model) > 0, local, dense)


def verify_step(inputs: DecodeInputs, k: ArrayLike) -> dict:
    """One step of the target model verifying ``k`` drafted tokens for each of ``inputs.batch``
    sequences (``k + 1`` tokens per sequence).

    The weights are read once and the linear FLOPs are those of ``B·(k+1)`` tokens
    (:func:`~lab.models.decode_step.linear_phase`); the KV cache of ``B·S`` tokens is read once
    and the attention FLOPs are those of :func:`verify_layer_pairs` per sequence
    (:func:`~lab.models.decode_step.attention_terms`). Returns ``verify_hbm_time_s``,
    ``verify_linear_compute_time_s``, ``verify_linear_time_s``,
    ``verify_attention_memory_time_s``, ``verify_attention_compute_time_s``,
    ``verify_attention_time_s``, ``verify_time_s`` (s), ``verify_compute_bound`` (bool),
    ``verify_linear_flops``, ``verify_attention_flops`` (FLOP per GPU),
    ``verify_weight_bytes`` and ``verify_kv_read_bytes`` (B per GPU).
    """
    model, gpu, tp, batch = inputs.model, inputs.gpu, inputs.tp, inputs.batch
    linear = linear_phase(model, gpu, tp=tp, precision=inputs.precision, batch=batch * (k + 1))
    terms = attention_terms(model, gpu, tp, inputs.kv_precision)
    kv_bytes, _, memory_time, _ = terms(batch * effective_context(model, inputs.context))
    _, flops, _, compute_time = terms(batch * verify_layer_pairs(model, k, inputs.context))
    attention = np.maximum(memory_time, compute_time)
    return {
        "verify_weight_bytes": linear["linear_weight_bytes"],
        "verify_hbm_time_s": linear["hbm_time_s"],
        "verify_linear_flops": linear["linear_flops"],
        "verify_linear_compute_time_s": linear["linear_compute_time_s"],
        "verify_linear_time_s": linear["linear_time_s"],
        "verify_kv_read_bytes": kv_bytes,
        "verify_attention_flops": flops,
        "verify_attention_memory_time_s": memory_time,
        "verify_attention_compute_time_s": compute_time,
        "verify_attention_time_s": attention,
        "verify_time_s": linear["linear_time_s"] + attention,
        "verify_compute_bound": linear["linear_compute_bound"],
    }


def mtp_head(model):
    """The target's MTP head as a one-layer model (DeepSeek-V3's MTP module).

    One transformer layer of ``model`` (``layers = 1``: its attention, its KV per token and
    its FLOPs per pair) and an output head of ``V + 2d`` rows: ``d·(V + 2d) = d·V + 2d²``,
    the LM head shared with the target (read again every MTP step) and the projection ``M``
    (d × 2d). Its ``total_params``, what it adds to memory, leave out the embedding and the
    LM head, which are the target's own: ``N_lin(head) − d·V``. Its one layer is a full
    layer whatever the target's layer kinds (DeepSeek-V3's MTP layer attends over the whole
    context).
    """
    kinds = {"window_layers": 0, "chunk_layers": 0} if has_local_layers(model) else {}
    head = replace(model, layers=1, vocab=model.vocab + 2 * model.hidden, **kinds)
    return replace(head, total_params=linear_params(head) - model.hidden * model.vocab)


def drafter(model, draft):
    """What drafts: the ``draft`` model, or the target's MTP head when ``draft`` is None."""
    return mtp_head(model) if draft is None else draft


def speculative_metrics(inputs: DecodeInputs, draft, k: ArrayLike, alpha: ArrayLike) -> dict:
    """Every output of experiment 10 for ``inputs`` (the target's decode configuration).

    Parameters
    ----------
    inputs : DecodeInputs
        The target model, GPU, tp, precision, batch ``B`` (sequences), context ``S`` (tokens),
        KV precision and the memory fields (SI units, :class:`~lab.models.inputs.DecodeInputs`).
    draft : ModelSpec or None
        The draft model (same tp, precision and KV precision as the target), or None for the
        target's MTP head (:func:`mtp_head`).
    k : int or array
        Tokens drafted per cycle and sequence (0: plain decoding).
    alpha : float or array
        Probability that the target accepts a drafted token, 0 to 1.

    Returns
    -------
    dict
        The keys of :data:`UNITS`.
    """
    plain = decode_step(inputs)
    out = verify_step(inputs, k)
    head = drafter(inputs.model, draft)
    step = decode_step(inputs.with_(model=head))
    out["expected_tokens"] = expected_tokens(k, alpha)
    out["draft_step_time_s"] = step["step_time_s"]
    out["draft_time_s"] = k * step["step_time_s"]
    out["cycle_time_s"] = out["draft_time_s"] + out["verify_time_s"]
    out["plain_step_time_s"] = plain["step_time_s"]
    out["per_sequence_tokens_per_s"] = out["expected_tokens"] / out["cycle_time_s"]
    out["aggregate_tokens_per_s"] = inputs.batch * out["per_sequence_tokens_per_s"]
    out["plain_per_sequence_tokens_per_s"] = plain["per_sequence_tokens_per_s"]
    out["plain_aggregate_tokens_per_s"] = plain["aggregate_tokens_per_s"]
    out["speedup"] = out["per_sequence_tokens_per_s"] / plain["per_sequence_tokens_per_s"]
    drafting = k > 0  # k = 0 is plain decoding: no drafter is loaded
    out["draft_params_bytes"] = drafting * params_bytes(head, inputs.tp, inputs.precision)
    out["draft_kv_bytes"] = drafting * inputs.batch * kv_bytes_per_sequence(
        head, inputs.tp, inputs.context, inputs.page, inputs.kv_precision)
    return out
