"""A decode step of a mixture-of-experts model: the experts a batch touches, the weights it
reads and the FLOPs it does.

Every function broadcasts over numbers, numpy arrays and xarray objects (``model`` is a
:class:`~lab.catalog.moe_spec.MoESpec` or a table of them). Results in SI units: bytes, FLOP.

Formulas (per GPU, tensor-parallel degree ``tp``, weight precision ``p``, batch ``B``)::

    n(B)     = E · (1 − (1 − k/E)^B)                 distinct experts per MoE layer
    N_read   = N_shared + M · n(B) · 3·d·F_e          weights a step reads
    W        = (N_rep + (N_read − N_rep) / tp) · bytes(p)
    mem      = (N_rep + (P_total − N_rep) / tp) · bytes(p)    every expert is resident
    N_act    = N_shared + M · k · 3·d·F_e             weights one token multiplies
    FLOP_lin = 2 · B · (N_rep + (N_act − N_rep) / tp)

``N_shared`` (attention, dense MLPs, shared experts, routers, LM head) and ``N_rep`` (MLA
down-projections, routers and shared-expert gates, whole on every GPU) are
:func:`~lab.models.moe_params.shared_linear_params` and
:func:`~lab.models.moe_params.replicated_linear_params`.

**Routing assumption.** Each token picks its ``k`` experts as a uniformly random set of ``k``
of the ``E``, independently of the other tokens, so an expert is missed by one token with
probability ``1 − k/E`` and by all ``B`` with ``(1 − k/E)^B``. Real routers are skewed (some
experts are hot), which makes fewer distinct experts per step: ``n(B)`` is the uniform-routing
expectation, an upper end of what a skewed router reads. Routed experts are split across the
``tp`` GPUs like the dense MLP (tensor parallelism), or with expert parallelism ``ep > 1``
``E/ep`` to each of ``ep`` groups of ``tp`` GPUs (:mod:`lab.models.expert_parallel`)::

    W_ep     = (N_rep + (N_read − R − N_rep)/tp) · bytes(rest) + R/(ep·tp) · bytes(experts)
    mem_ep   = the same with P_total and every routed expert's matrices for R, plus the
               experts' biases / (ep·tp) · bytes(rest)

``R`` the routed-expert weights (``M·n(B)·3·d·F_e`` read, ``M·E·(3·d·F_e + biases)`` held): a
group holds ``E/ep`` experts and, by symmetry under uniform routing, reads ``n(B)/ep`` of
them. ``bytes(rest)`` and ``bytes(experts)`` are both ``bytes(p)`` except for an expert-only
format (``"mxfp4-experts"``: BF16 rest, MXFP4 experts; :mod:`lab.models.weight_formats`).
At ``ep = 1`` with one format the expressions above are used, bit for bit.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike
from lab.catalog.moe_spec import moe_field
from lab.models.moe_params import (
    active_linear_params,
    expert_bias_params,
    expert_weights,
    replicated_linear_params,
    routed_linear_params,
    shared_linear_params,
)
from lab.models.weight_formats import bytes_per_weight as weight_format_bytes
from lab.models.weight_formats import (
    expert_format,
    is_expert_only,
    is_integer_format,
    rest_format,
    weight_bytes,
)

ROUTING_ASSUMPTION = (
    "Uniform routing assumed: each token picks its k of the E experts uniformly at random, "
    "independently of the other tokens, so a MoE layer reads E·(1 − (1 − k/E)^B) distinct "
    "experts for a batch of B. Real routers favour hot experts and read fewer."
)
"""The routing assumption behind :func:`experts_touched`, as the pages state it."""


def bytes_per_element(precision: ArrayLike) -> ArrayLike:
    """Bytes per weight of a mixture of experts' layout: an INT4 format's bits / 8, else
    :func:`~lab.models.weight_formats.weight_bytes` (2 for ``"bf16"``, 1 for ``"fp8"``,
    0.53125 for ``"mxfp4"``, 0.5625 for ``"nvfp4"``; B, block scales counted)."""
    if is_integer_format(precision):
        return weight_format_bytes(precision)
    return weight_bytes(precision)


def experts_touched(experts: ArrayLike, top_k: ArrayLike, batch: ArrayLike) -> ArrayLike:
    """Expected distinct routed experts one MoE layer reads for ``batch`` tokens (count).

    ``E · (1 − (1 − k/E)^B)`` under uniform, independent routing: ``k`` at ``B = 1``, rising
    with the batch towards ``E`` (every expert read).
    """
    # np.power, not **: Python's float pow and numpy's differ in the last bit (Kimi K2.5 at
    # batch 3 and 8), and a grid cell must equal the point call
    return experts * (1.0 - np.power(1.0 - top_k / experts, batch))


def step_weight_params(model, batch: ArrayLike) -> ArrayLike:
    """Linear weights one decode step of ``batch`` tokens reads, over all GPUs (count):
    ``N_shared + M · n(B) · 3·d·F_e``; a dense model (no experts) reads ``N_lin`` whatever
    the batch."""
    experts = np.maximum(moe_field(model, "experts"), 1)  # a dense model: 0 of 1 touched
    touched = experts_touched(experts, moe_field(model, "experts_per_token"), batch)
    return shared_linear_params(model) + routed_linear_params(model, touched)


def all_experts_params(model) -> ArrayLike:
    """Linear weights a decode step that touches every routed expert reads, over all GPUs
    (count): ``N_shared + M·E·3·d·F_e`` (the embeddings and norms left out, as in every weight
    read); a dense model's are its ``N_lin``."""
    return shared_linear_params(model) + routed_linear_params(model, moe_field(model, "experts"))


def all_experts_weight_bytes(model, tp: ArrayLike, precision: ArrayLike,
                             ep: ArrayLike = 1) -> ArrayLike:
    """Weight bytes one GPU reads in a decode step that touches every routed expert (B): the
    ceiling :func:`step_weight_bytes` rises to as the batch grows, :func:`all_experts_params`
    as one GPU holds them (MLA down-projections and routers whole, the rest ``/tp``; routed
    experts ``/(ep·tp)``)."""
    return layout_weight_bytes(model, all_experts_params(model),
                               routed_linear_params(model, moe_field(model, "experts")),
                               tp, precision, ep)


def no_expert_parallelism(ep: ArrayLike) -> bool:
    """True when ``ep`` is the single number 1 (no expert parallelism)."""
    return np.ndim(ep) == 0 and ep == 1


def routed_resident_params(model) -> ArrayLike:
    """Parameters of every routed expert of every MoE layer, biases included (count):
    ``M·E·(3·d·F_e + expert biases)``; 0 for a model without experts."""
    return (moe_field(model, "moe_layers") * moe_field(model, "experts")
            * (expert_weights(model) + expert_bias_params(model)))


def layout_weight_bytes(model, params: ArrayLike, routed: ArrayLike, tp: ArrayLike,
                        precision: ArrayLike, ep: ArrayLike = 1) -> ArrayLike:
    """Bytes one GPU of an ``ep × tp`` layout holds (or reads) of ``params`` weights, ``routed``
    of them routed experts (B): ``(N_rep + (params − routed − N_rep)/tp)·bytes(rest)
    + routed/(ep·tp)·bytes(experts)``; at ``ep = 1`` with one format
    ``(N_rep + (params − N_rep)/tp)·bytes(p)``, bit for bit."""
    if no_expert_parallelism(ep) and not is_expert_only(precision):
        return _per_gpu(model, params, tp) * bytes_per_element(precision)
    rest = _per_gpu(model, params - routed, tp) * bytes_per_element(rest_format(precision))
    return rest + routed / (ep * tp) * bytes_per_element(expert_format(precision))


def _per_gpu(model, params: ArrayLike, tp: ArrayLike) -> ArrayLike:
    """``params`` as one GPU holds them: the replicated part whole, the rest split by ``tp``."""
    replicated = replicated_linear_params(model)
    return replicated + (params - replicated) / tp


def step_weight_bytes(model, tp: ArrayLike, precision: ArrayLike, batch: ArrayLike,
                      ep: ArrayLike = 1) -> ArrayLike:
    """Weight bytes one GPU reads in a decode step of ``batch`` tokens (B).

    Attention, dense and shared weights once, plus the routed experts the batch touches
    (:func:`experts_touched`); MLA down-projections and routers whole, the rest ``/tp``; with
    expert parallelism the touched experts ``/(ep·tp)`` (``batch``: the whole layout's).
    """
    if no_expert_parallelism(ep) and not is_expert_only(precision):
        return _per_gpu(model, step_weight_params(model, batch), tp) * bytes_per_element(precision)
    experts = np.maximum(moe_field(model, "experts"), 1)
    routed = routed_linear_params(
        model, experts_touched(experts, moe_field(model, "experts_per_token"), batch))
    return layout_weight_bytes(model, step_weight_params(model, batch), routed, tp, precision, ep)


def resident_weight_bytes(model, tp: ArrayLike, precision: ArrayLike,
                          ep: ArrayLike = 1) -> ArrayLike:
    """Parameter bytes one GPU holds: every expert, every parameter (B).

    ``(N_rep + (P_total − N_rep)/tp) · bytes(p)``: memory holds all ``E`` experts of every MoE
    layer whatever the batch; MLA's down-projections and the routers whole on every GPU. With
    expert parallelism or an expert-only format, :func:`layout_weight_bytes` with every routed
    expert's matrices (:func:`routed_expert_weights`) in the experts' format and their biases
    in the rest's: a GPU holds ``E/ep`` experts, each ``/tp``.
    """
    if no_expert_parallelism(ep) and not is_expert_only(precision):
        return _per_gpu(model, model.total_params, tp) * bytes_per_element(precision)
    biases = routed_resident_params(model) - routed_expert_weights(model)
    return (layout_weight_bytes(model, model.total_params - biases,
                                routed_expert_weights(model), tp, precision, ep)
            + biases / (ep * tp) * bytes_per_element(rest_format(precision)))


def routed_expert_weights(model) -> ArrayLike:
    """Matrix weights of every routed expert of every MoE layer, ``M·E·3·d·F_e`` (count):
    what an expert-only format stores in it (gpt-oss keeps the experts' biases BF16)."""
    return moe_field(model, "moe_layers") * moe_field(model, "experts") * expert_weights(model)


def linear_flops(model, tp: ArrayLike, batch: ArrayLike) -> ArrayLike:
    """Linear-layer FLOPs one GPU does in a decode step of ``batch`` tokens (FLOP):
    ``2 · B`` times the active linear weights per GPU (:func:`~lab.models.moe_params.
    active_linear_params`): each token multiplies ``k`` experts whatever the others do."""
    return 2.0 * batch * _per_gpu(model, active_linear_params(model), tp)
