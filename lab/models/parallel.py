"""Experiment 3's extension: what tensor parallelism costs in all-reduces (off by default).

The ideal model (docs/model.md §3) divides every per-GPU term by tp, so the speed-up is exactly tp. The
extension adds two ring all-reduces per layer of the ``B·d`` BF16 activations::

    t_ar = 2 · L · ( 2·(tp−1)/tp · B·d·2 B / link_BW + latency )      (0 when tp = 1)

``link_BW`` is the per-direction bandwidth: half the bidirectional figure vendors quote.
"""

from __future__ import annotations

from lab.arrays import ArrayLike, where

DEFAULT_ALLREDUCE_LATENCY_S = 5e-6
"""Fixed cost per collective, seconds (illustrative input, not a measurement)."""
ACTIVATION_BYTES = 2
"""All-reduced activations are BF16: 2 bytes per element."""


def link_bandwidth(gpu) -> ArrayLike:
    """Per-direction interconnect bandwidth, B/s (half the quoted bidirectional figure)."""
    return gpu.interconnect_bw / 2.0


def allreduce_time(model, gpu, tp: ArrayLike, batch: ArrayLike,
                   latency_s: ArrayLike = DEFAULT_ALLREDUCE_LATENCY_S) -> ArrayLike:
    """Time of the all-reduces in one decode step per GPU group, seconds."""
    payload = 1.0 * batch * model.hidden * ACTIVATION_BYTES
    per_collective = 2.0 * (tp - 1) / tp * payload / link_bandwidth(gpu) + latency_s
    return where(tp > 1, 2 * model.layers * per_collective, 0.0)
