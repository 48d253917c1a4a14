"""Experiment 1's decode model: one decode step as two sequential phase floors.

Every function broadcasts: pass Python numbers, numpy arrays or xarray objects (a
:class:`~lab.catalog.ModelSpec` or a ``model_table`` Dataset for ``model``; likewise for
``gpu``). Results are in SI units: bytes, FLOP, seconds, tokens/s.

Formulas (per GPU, tensor parallel degree ``tp``, linear precision ``p``)::

    N_lin    = L·(d·H·h + 2·d·K·h + H·h·d + 3·d·F) + d·V
    W        = N_lin · bytes(p) / tp            t_hbm = W / BW
    FLOP_lin = 2 · N_lin · B / tp               t_lin_comp = FLOP_lin / peak(p)
    t_lin    = max(t_hbm, t_lin_comp)
    kv_tok   = 2 · L · K · h · b_kv                (b_kv: 2 B for a BF16 KV cache, 1 B for FP8;
                                                 lab.models.kv_shapes)
    KV_read  = B · S · kv_tok / tp              FLOP_att = 4 · B · S · L · H · h / tp
    t_att    = max(KV_read / BW, FLOP_att / peak(bf16))   (attention arithmetic stays BF16)
    t_step   = t_lin + t_att                    aggregate = B / t_step

A mixture-of-experts or MLA model (a :class:`~lab.catalog.moe_spec.MoESpec`) takes its weight
reads, linear FLOPs, KV reads and attention FLOPs from :mod:`lab.models.moe` and
:mod:`lab.models.kv_shapes` (the experts the batch touches; MLA's replicated latent); a dense
model keeps the expressions above, bit for bit. A model with sliding-window or chunked layers
reads, per sequence, :func:`lab.models.layer_kinds.effective_context` tokens in place of ``S``
(its layer-tokens read over ``L``: each layer kind reads what its mask lets it see).

With expert parallelism (``inputs.ep > 1``, a mixture of experts) ``B`` is the whole
``ep × tp`` layout's batch: one GPU's linear FLOPs and KV reads are those of ``B/ep``
sequences, its weight reads :func:`lab.models.moe.step_weight_bytes` with ``ep``
(:mod:`lab.models.expert_parallel`). At ``ep = 1`` every expression above is unchanged.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, apply_mask, where
from lab.catalog.moe_spec import by_kind
from lab.catalog.params_count import linear_params_per_layer
from lab.limits import TP_DEGREES  # noqa: F401  (re-exported: the degrees are a stated limit)
from lab.models import kv_shapes, moe
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import effective_context
from lab.models.weight_formats import (
    EXPERT_ONLY_FORMATS,
    FP4_FORMATS,
    any_fp4,
    is_fp4,
    weight_bytes,
)

PRECISIONS = ("bf16", "fp8")
"""Linear-layer precisions of the decode family's pages and grids."""
WEIGHT_PRECISIONS = (*PRECISIONS, *FP4_FORMATS, *EXPERT_ONLY_FORMATS)
"""Every linear-layer precision a decode-family point accepts: also MXFP4 and NVFP4 weights
(block scales counted: :mod:`lab.models.weight_formats`), which need an FP4 peak, and
``"mxfp4-experts"`` (a mixture of experts' routed experts MXFP4, the rest BF16, as gpt-oss
ships; BF16 arithmetic), which reads as BF16 wherever no routed expert is concerned."""


def bf16_peak_flops(gpu) -> ArrayLike:
    """The GPU's dense BF16 peak, FLOP/s: the linear layers' at BF16, and attention's
    arithmetic whatever the weights' or the cache's precision (it stays BF16)."""
    return gpu.peak_bf16


def peak_flops(gpu, precision: ArrayLike) -> ArrayLike:
    """Dense peak for the linear layers at ``precision``, FLOP/s (NaN: no FP8, or no FP4, on
    this GPU). MXFP4 and NVFP4 run at the GPU's FP4 peak."""
    base = where(precision == "fp8", gpu.peak_fp8, bf16_peak_flops(gpu))
    if not any_fp4(precision):
        return base
    return where(is_fp4(precision), getattr(gpu, "peak_fp4", np.nan), base)


def linear_params(model) -> ArrayLike:
    """Parameters read per decode step by the linear layers, ``N_lin`` (count).

    q, k, v, o and the gated MLP in every layer, plus the LM head; the input embedding lookup
    and the norms are excluded.
    """
    per_layer = linear_params_per_layer(model.hidden, model.heads, model.kv_heads,
                                        model.head_dim, model.intermediate)
    return model.layers * per_layer + model.hidden * model.vocab


def linear_flops_per_token(model) -> ArrayLike:
    """FLOP of the linear layers per token: ``2·N_lin`` (a multiply and an add per weight)."""
    return 2.0 * linear_params(model)


def linear_phase(model, gpu, *, tp: ArrayLike, precision: ArrayLike, batch: ArrayLike,
                 ep: ArrayLike = 1) -> dict:
    """Weight reads, FLOPs and the phase floor of the linear layers for one decode step of
    ``batch`` sequences at tensor-parallel degree ``tp`` and weight precision ``precision``
    (``ep > 1``: a mixture of experts over ``ep`` groups, ``batch`` the whole layout's).

    Returns ``linear_weight_bytes`` (B), ``linear_flops`` (FLOP), ``hbm_time_s``,
    ``linear_compute_time_s``, ``linear_time_s`` (s) and ``linear_compute_bound`` (bool).
    """
    def dense_terms() -> tuple:
        n_lin = linear_params(model)
        return (1.0 * n_lin * weight_bytes(precision) / tp,
                linear_flops_per_token(model) * batch / tp)

    def moe_terms() -> tuple:
        if moe.no_expert_parallelism(ep):
            return (1.0 * moe.step_weight_bytes(model, tp, precision, batch),
                    moe.linear_flops(model, tp, batch))
        return (1.0 * moe.step_weight_bytes(model, tp, precision, batch, ep),
                moe.linear_flops(model, tp, batch / ep))

    weight_read, flops = by_kind(model, dense_terms, moe_terms)
    hbm_time = weight_read / gpu.hbm_bw
    compute_time = flops / peak_flops(gpu, precision)
    return {
        "linear_weight_bytes": weight_read,
        "linear_flops": flops,
        "hbm_time_s": hbm_time,
        "linear_compute_time_s": compute_time,
        "linear_time_s": np.maximum(hbm_time, compute_time),
        "linear_compute_bound": compute_time > hbm_time,
    }


def attention_terms(model, gpu, tp: ArrayLike, kv_precision: ArrayLike = "bf16"):
    """The attention phase's formula, as a function of the cached tokens.

    Returns ``terms(kv_tokens) -> (kv_read_bytes, attention_flops, memory_time_s,
    compute_time_s)`` (B, FLOP, s, s) for ``kv_tokens`` cached tokens in all; the phase floor is
    the larger time. The goodput simulation (experiment 7) calls the returned function for a
    step's cached tokens, and :func:`attention_phase` calls it on whole grids: one copy of the
    formula (:func:`lab.models.kv_shapes.kv_tokens_bytes` and
    :func:`~lab.models.kv_shapes.attention_flops`).
    The KV cache is read at ``kv_precision``; the attention arithmetic stays BF16.
    """
    hbm_bw, peak = gpu.hbm_bw, bf16_peak_flops(gpu)

    def terms(kv_tokens: ArrayLike) -> tuple:  # GQA or MLA (the latent replicated, not split)
        kv_bytes = kv_shapes.kv_tokens_bytes(model, tp, kv_tokens, kv_precision)
        flops = kv_shapes.attention_flops(model, tp, kv_tokens)
        return kv_bytes, flops, kv_bytes / hbm_bw, flops / peak

    return terms


def attention_phase(model, gpu, *, tp: ArrayLike, kv_tokens: ArrayLike,
                    kv_precision: ArrayLike = "bf16") -> dict:
    """KV reads, attention FLOPs and the phase floor for ``kv_tokens`` cached tokens in all.

    ``kv_tokens`` is the sum of the context lengths of the decoding sequences (``B·S`` when all
    share one context), read at ``kv_precision``; attention arithmetic stays BF16. Returns
    ``kv_read_bytes`` (B), ``attention_flops`` (FLOP), ``attention_memory_time_s``,
    ``attention_compute_time_s`` and ``attention_time_s`` (s), from :func:`attention_terms`.
    """
    kv_bytes, flops, memory_time, compute_time = attention_terms(model, gpu, tp, kv_precision)(kv_tokens)
    return {
        "kv_read_bytes": kv_bytes,
        "attention_flops": flops,
        "attention_memory_time_s": memory_time,
        "attention_compute_time_s": compute_time,
        "attention_time_s": np.maximum(memory_time, compute_time),
    }


def ridge_batch(gpu, precision: ArrayLike) -> ArrayLike:
    """Batch at which the linear phase turns compute-bound: ``peak(p)·bytes(p)/(2·BW)``."""
    return peak_flops(gpu, precision) * weight_bytes(precision) / (2.0 * gpu.hbm_bw)


def decode_step(
    inputs: DecodeInputs,
    extra_time_s: ArrayLike = 0.0,
    mask: ArrayLike | None = None,
) -> dict:
    """Every term of one ideal decode step for ``inputs.batch`` sequences at ``inputs.context``
    tokens (the memory fields of ``inputs`` are not used).

    ``extra_time_s`` is added to the step (the all-reduce extension of experiment 3; 0 in the
    ideal model). ``mask`` (1 or NaN per cell, :func:`lab.arrays.nan_mask`) is applied to the
    phase terms, so everything derived from them is masked too. Returns the linear and
    attention terms plus ``step_time_s``, ``aggregate_tokens_per_s``,
    ``per_sequence_tokens_per_s`` and ``ridge_batch``.
    """
    model, gpu, tp, batch = inputs.model, inputs.gpu, inputs.tp, inputs.batch
    out = linear_phase(model, gpu, tp=tp, precision=inputs.precision, batch=batch, ep=inputs.ep)
    group_batch = batch if moe.no_expert_parallelism(inputs.ep) else batch / inputs.ep
    out.update(attention_phase(model, gpu, tp=tp,
                               kv_tokens=group_batch * effective_context(model, inputs.context),
                               kv_precision=inputs.kv_precision))
    out = apply_mask(out, mask)
    step = out["linear_time_s"] + out["attention_time_s"]
    if np.ndim(extra_time_s) or extra_time_s:  # adding a scalar 0 would only cost a pass
        step = step + extra_time_s
    out["step_time_s"] = step
    out["per_sequence_tokens_per_s"] = 1.0 / step
    out["aggregate_tokens_per_s"] = batch * out["per_sequence_tokens_per_s"]  # B / t_step
    out["ridge_batch"] = ridge_batch(gpu, inputs.precision) * (1.0 if mask is None else mask)
    return out
