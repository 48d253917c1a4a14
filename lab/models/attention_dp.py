"""Attention data parallelism beside expert parallelism: one decode step of a served layout.

A mixture-of-experts worker of ``G = tp · dp`` GPUs runs its attention as ``dp`` ranks of
``tp`` GPUs each (attention data parallelism: each rank holds its own ``B/dp`` sequences and
their KV cache, the attention weights replicated on every rank) and spreads the routed experts
over all ``G`` GPUs: ``moe_ep`` expert-parallel groups, each expert split ``moe_tp = G/moe_ep``
ways. Units: seconds, sequences.

Under uniform routing (:mod:`lab.models.moe`) one GPU's weight reads, linear FLOPs and KV reads
depend only on ``tp`` and ``G``: the attention and shared weights ``/tp``, the routed experts
``/G``, the linear FLOPs and KV of ``B/dp`` sequences. That is exactly the decode family's
``ep × tp`` layout with ``ep = dp`` (:mod:`lab.models.expert_parallel`), so the step is
:func:`lab.models.decode_step.decode_step` with ``ep = dp`` — no second formula. How the experts
are split (``moe_ep`` against ``moe_tp``) changes only the communication: the all-to-all of
:func:`lab.models.expert_parallel.all_to_all_time` over ``moe_ep`` groups of ``G/moe_ep``
GPUs (0 at ``moe_ep = 1``), and the attention's tensor-parallel all-reduces of ``B/dp``
tokens (:func:`lab.models.parallel.allreduce_time`)::

    t_step  = decode_step(tp, ep = dp, batch B)            weights, FLOPs, KV per GPU
    t_a2a   = all_to_all_time(B, ep = moe_ep, tp = G/moe_ep)
    t_ar    = allreduce_time(tp, B/dp)

At ``dp = 1`` and ``moe_ep = 1`` this is experiment 1's step at ``tp`` (and experiment 3's
all-reduce), bit for bit.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike
from lab.models.decode_step import decode_step
from lab.models.expert_parallel import all_to_all_time
from lab.models.inputs import DecodeInputs
from lab.models.parallel import allreduce_time


def layout_gpus(tp: ArrayLike, dp: ArrayLike) -> ArrayLike:
    """GPUs of one worker, ``G = tp · dp`` (count)."""
    return tp * dp


def layout_inputs(inputs: DecodeInputs, dp: ArrayLike) -> DecodeInputs:
    """``inputs`` (``batch``: the whole worker's ``B``) as the decode family's ``ep × tp``
    layout that reads, computes and caches per GPU what ``dp`` attention ranks do: ``ep = dp``
    (a number or an array; all ones leaves ``inputs`` as they are)."""
    return inputs if np.all(np.asarray(dp) == 1) else inputs.with_(ep=dp)


def layout_step_time(inputs: DecodeInputs, dp: ArrayLike = 1) -> ArrayLike:
    """One ideal decode step of the worker (s): :func:`decode_step` with ``ep = dp``."""
    return decode_step(layout_inputs(inputs, dp))["step_time_s"]


def layout_all_to_all_time(model, gpu, batch: ArrayLike, tp: ArrayLike, dp: ArrayLike,
                           moe_ep: ArrayLike) -> ArrayLike:
    """The expert-parallel dispatch and combine of one step (s): ``moe_ep`` groups of
    ``G/moe_ep`` GPUs (:func:`lab.models.expert_parallel.all_to_all_time`); 0 at
    ``moe_ep = 1``."""
    return all_to_all_time(model, gpu, batch, moe_ep, layout_gpus(tp, dp) / moe_ep)


def layout_allreduce_time(model, gpu, batch: ArrayLike, tp: ArrayLike,
                          dp: ArrayLike) -> ArrayLike:
    """The attention ranks' tensor-parallel all-reduces of one step (s): each rank's ``B/dp``
    tokens over its ``tp`` GPUs (:func:`lab.models.parallel.allreduce_time`; 0 at tp 1)."""
    return allreduce_time(model, gpu, tp, batch / dp)
