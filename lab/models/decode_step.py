"""Experiment 1's decode model: one decode step as two sequential phase floors.

Every function broadcasts: pass Python numbers, numpy arrays or xarray objects (a
:class:`~lab.catalog.ModelSpec` or a ``model_table`` Dataset for ``model``; likewise for
``gpu``). Results are in SI units: bytes, FLOP, seconds, tokens/s.

Formulas (per GPU, tensor parallel degree ``tp``, linear precision ``p``)::

    N_lin    = L·(d·H·h + 2·d·K·h + H·h·d + 3·d·F) + d·V
    W        = N_lin · bytes(p) / tp            t_hbm = W / BW
    FLOP_lin = 2 · N_lin · B / tp               t_lin_comp = FLOP_lin / peak(p)
    t_lin    = max(t_hbm, t_lin_comp)
    kv_tok   = 2 · L · K · h · b_kv                (b_kv: 2 B for a BF16 KV cache, 1 B for FP8)
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

from collections.abc import Callable

import numpy as np

from lab.arrays import ArrayLike, apply_mask, where
from lab.catalog.moe_spec import by_kind, moe_rows
from lab.catalog.params_count import linear_params_per_layer
from lab.limits import TP_DEGREES  # noqa: F401  (re-exported: the degrees are a stated limit)
from lab.models import kv_shapes, moe
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import effective_context
from lab.models.weight_formats import (
    EXPERT_ONLY_FORMATS,
    FP4_FORMATS,
    any_fp4,
    fp4_bytes,
    is_fp4,
)

PRECISIONS = ("bf16", "fp8")
"""Linear-layer precisions of the decode family's pages and grids."""
WEIGHT_PRECISIONS = (*PRECISIONS, *FP4_FORMATS, *EXPERT_ONLY_FORMATS)
"""Every linear-layer precision a decode-family point accepts: also MXFP4 and NVFP4 weights
(block scales counted: :mod:`lab.models.weight_formats`), which need an FP4 peak, and
``"mxfp4-experts"`` (a mixture of experts' routed experts MXFP4, the rest BF16, as gpt-oss
ships; BF16 arithmetic), which reads as BF16 wherever no routed expert is concerned."""
KV_BYTES_PER_ELEMENT = 2
"""The default (BF16) KV cache: 2 bytes per element."""
KV_PRECISIONS = ("bf16", "fp8")
"""KV-cache precisions: BF16 (2 bytes per element, the default) and FP8 (1 byte)."""


def kv_bytes_per_element(kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """Bytes per cached K or V element: 2 for ``"bf16"``, 1 for ``"fp8"`` (B).

    A plain Python int for a string, so a scalar configuration keeps plain arithmetic."""
    if isinstance(kv_precision, str):
        return 1 if kv_precision == "fp8" else KV_BYTES_PER_ELEMENT
    return where(kv_precision == "fp8", 1, KV_BYTES_PER_ELEMENT)


def bytes_per_weight(precision: ArrayLike) -> ArrayLike:
    """Bytes per linear weight: 2 for ``"bf16"``, 1 for ``"fp8"``, 0.53125 for ``"mxfp4"`` and
    0.5625 for ``"nvfp4"`` (their block scales counted)."""
    base = where(precision == "fp8", 1, 2)
    return fp4_bytes(precision, base) if any_fp4(precision) else base


def peak_flops(gpu, precision: ArrayLike) -> ArrayLike:
    """Dense peak for the linear layers at ``precision``, FLOP/s (NaN: no FP8, or no FP4, on
    this GPU). MXFP4 and NVFP4 run at the GPU's FP4 peak."""
    base = where(precision == "fp8", gpu.peak_fp8, gpu.peak_bf16)
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


def kv_bytes_per_token(model, kv_precision: ArrayLike = "bf16") -> ArrayLike:
    """KV cache bytes per token over all layers, K and V: ``2·L·K·h·b_kv`` (bytes), ``b_kv``
    2 for a BF16 cache (the default), 1 for FP8."""
    return 2 * model.layers * model.kv_heads * model.head_dim * kv_bytes_per_element(kv_precision)


def attention_flops_per_token(model) -> ArrayLike:
    """Attention FLOP per (query, cached key) pair over all layers and heads: ``4·L·H·h``."""
    return 4 * model.layers * model.heads * model.head_dim


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
        return (1.0 * n_lin * bytes_per_weight(precision) / tp,
                linear_flops_per_token(model) * batch / tp)

    def moe_terms() -> tuple:
        if moe.no_expert_parallelism(ep):
            return (1.0 * moe.step_weight_bytes(model, tp, precision, batch),
                    moe.linear_flops(model, tp, batch))
        return (1.0 * moe.step_weight_bytes(model, tp, precision, batch, ep),
                moe.linear_flops(model, tp, batch / ep))

    weight_bytes, flops = by_kind(model, dense_terms, moe_terms)
    hbm_time = weight_bytes / gpu.hbm_bw
    compute_time = flops / peak_flops(gpu, precision)
    return {
        "linear_weight_bytes": weight_bytes,
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
    the larger time. The per-model constants are computed once, so the goodput simulation
    (experiment 7) calls the returned function for every step at the cost of plain float
    arithmetic, and :func:`attention_phase` calls it on whole grids: one copy of the formula.
    The KV cache is read at ``kv_precision``; the attention arithmetic stays BF16.
    """
    hbm_bw, peak = gpu.hbm_bw, gpu.peak_bf16

    def moe_terms() -> Callable:  # GQA or MLA (the latent replicated, not split by tp)
        kv_per_token_gpu = kv_shapes.kv_bytes_per_token_per_gpu(model, tp, kv_precision)
        flops_per_pair = kv_shapes.attention_flops_per_pair(model)

        def terms(kv_tokens: ArrayLike) -> tuple:
            kv_bytes = 1.0 * kv_tokens * kv_per_token_gpu
            flops = 1.0 * kv_tokens * flops_per_pair / tp
            return kv_bytes, flops, kv_bytes / hbm_bw, flops / peak

        return terms

    def dense_terms() -> Callable:
        kv_per_token = kv_bytes_per_token(model, kv_precision)
        flops_per_token = attention_flops_per_token(model)

        def terms(kv_tokens: ArrayLike) -> tuple:
            kv_bytes = 1.0 * kv_tokens * kv_per_token / tp
            flops = 1.0 * kv_tokens * flops_per_token / tp
            return kv_bytes, flops, kv_bytes / hbm_bw, flops / peak

        return terms

    rows = moe_rows(model)
    if rows is True:
        return moe_terms()
    if rows is False or not np.any(rows):
        return dense_terms()
    # a table of dense and MoE models: each model's own terms
    moe_of, dense_of = moe_terms(), dense_terms()
    return lambda kv_tokens: by_kind(model, lambda: dense_of(kv_tokens),
                                     lambda: moe_of(kv_tokens))


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
    return peak_flops(gpu, precision) * bytes_per_weight(precision) / (2.0 * gpu.hbm_bw)


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
