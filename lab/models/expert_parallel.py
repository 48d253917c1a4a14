"""Expert parallelism: routed experts spread over ``ep`` GPUs, and the all-to-all it costs.

An ``ep × tp`` layout places each MoE layer's ``E`` routed experts ``E/ep`` to a GPU group and
splits each expert (and the attention) ``tp`` ways inside it. Every decode step each MoE layer
sends each token's hidden state to the GPUs holding its ``k`` experts (dispatch) and brings the
``k`` outputs back (combine). Units: bytes, seconds.

**Uniform routing** (as :mod:`lab.models.moe`): each token picks its ``k`` experts uniformly at
random, so a chosen expert lives on another expert group with probability ``(ep − 1)/ep``.
Per MoE layer and step, over the whole layout::

    dispatch bytes = B · k · (ep − 1)/ep · d · b_act
    combine bytes  = the same (each expert output returns to its token's GPU)
    per GPU        = (dispatch + combine) / (ep · tp)   (the tokens spread over the ep groups,
                                                         each group's share over its tp GPUs)
    t_a2a          = M · per GPU / (BW_link / 2)        (BW_link: the catalog's bidirectional
                                                         NVLink figure per GPU; one direction
                                                         carries what a GPU sends)
                     · (1 + s · ((BW_link / 2) / BW_net − 1))

where ``s`` is the share of a GPU's remote expert groups on another NVLink domain: a layout of
``G = ep · tp`` GPUs over domains of ``N`` GPUs (the catalog's ``scale_up_gpus``) keeps
``ep · N / G`` groups on each domain, so ``s = (ep − ep · N/G) / (ep − 1)`` when ``G > N``, else
0; their bytes cross the network at ``BW_net`` per GPU and direction (the catalog's
``network_gbps``) instead of NVLink. A GPU the catalog gives no domain or network for keeps
every byte on its interconnect (``s`` = 0).

with ``b_act`` = 2 bytes (BF16 activations; FP8 dispatch halves it). The term is an extension
of the ideal step, labelled like experiment 3's all-reduce extension: a bandwidth floor with no
latency, no overlap with compute and no skew. Real routers are skewed (hot experts), which makes
the busiest GPU send and receive more than this mean.
"""

from __future__ import annotations

import math

import numpy as np

from lab.arrays import ArrayLike
from lab.catalog.moe_spec import moe_field

ACTIVATION_BYTES = 2
"""Bytes per dispatched activation element (BF16)."""

UNIFORM_ROUTING = (
    "Uniform routing assumed: each token's k experts are a uniformly random k of the E, so a "
    "chosen expert is on another expert-parallel group with probability (ep − 1)/ep; real "
    "routers are skewed and the busiest GPU moves more."
)
"""The routing assumption behind :func:`all_to_all_bytes`, as the pages state it."""


def remote_fraction(ep: ArrayLike) -> ArrayLike:
    """Share of a token's experts on another expert group, ``(ep − 1)/ep`` (fraction)."""
    return (ep - 1) / ep


def all_to_all_bytes(model, batch: ArrayLike, ep: ArrayLike,
                     activation_bytes: ArrayLike = ACTIVATION_BYTES) -> ArrayLike:
    """Dispatch plus combine bytes of one decode step over the whole ``ep`` layout (B):
    ``2 · M · B · k · (ep − 1)/ep · d · b_act``; 0 at ``ep = 1`` or for a dense model."""
    per_layer = (batch * moe_field(model, "experts_per_token") * remote_fraction(ep)
                 * model.hidden * activation_bytes)
    return 2.0 * moe_field(model, "moe_layers") * per_layer


def all_to_all_bytes_per_gpu(model, batch: ArrayLike, ep: ArrayLike, tp: ArrayLike = 1,
                             activation_bytes: ArrayLike = ACTIVATION_BYTES) -> ArrayLike:
    """What one GPU sends in a step's dispatch and combine, :func:`all_to_all_bytes`
    ``/ (ep · tp)`` (B): each expert group's tokens, split over its ``tp`` GPUs."""
    return all_to_all_bytes(model, batch, ep, activation_bytes) / (ep * tp)


def off_domain_share(gpu, ep: ArrayLike, tp: ArrayLike = 1) -> ArrayLike:
    """Share of a GPU's ``ep − 1`` remote expert groups on another NVLink domain (fraction):
    ``(ep − ep · N/G) / (ep − 1)`` for a layout of ``G = ep · tp`` GPUs over domains of ``N`` =
    ``gpu.scale_up_gpus`` when ``G > N``; 0 when the layout fits one domain, at ``ep = 1``, or
    when the catalog gives the GPU no domain size or network bandwidth."""
    n = gpu.scale_up_gpus
    if math.isnan(n) or math.isnan(gpu.network_bw):
        return np.zeros(np.broadcast(np.asarray(ep), np.asarray(tp)).shape)
    ep = np.asarray(ep, dtype=float)
    gpus = ep * np.asarray(tp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (ep - ep * n / gpus) / (ep - 1.0)
    return np.where((gpus > n) & (ep > 1), np.clip(share, 0.0, 1.0), 0.0)


def all_to_all_time(model, gpu, batch: ArrayLike, ep: ArrayLike, tp: ArrayLike = 1,
                    activation_bytes: ArrayLike = ACTIVATION_BYTES) -> ArrayLike:
    """The all-to-all extension of a decode step (s): one GPU's dispatch and combine bytes over
    one direction of its interconnect (half the catalog's bidirectional ``interconnect_bw``),
    the share bound for expert groups on another NVLink domain (:func:`off_domain_share`) over
    the network (``gpu.network_bw`` per direction) instead."""
    link = gpu.interconnect_bw / 2.0
    nvlink = all_to_all_bytes_per_gpu(model, batch, ep, tp, activation_bytes) / link
    share = off_domain_share(gpu, ep, tp)
    if not np.any(share):
        return nvlink
    return nvlink * (1.0 + share * (link / gpu.network_bw - 1.0))


def experts_per_gpu(model, ep: ArrayLike) -> ArrayLike:
    """Routed experts each expert-parallel group holds per MoE layer, ``E / ep`` (count)."""
    return moe_field(model, "experts") / ep


def expert_weight_share(ep: ArrayLike, tp: ArrayLike) -> ArrayLike:
    """Share of the routed experts' weights one GPU of an ``ep × tp`` layout holds,
    ``1 / (ep · tp)`` (fraction): its group's ``E/ep`` experts, each split ``tp`` ways."""
    return 1.0 / (ep * tp)
