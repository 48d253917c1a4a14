"""Goodput and throughput against the batch cap: one simulation per cap, as arrays."""

from __future__ import annotations

import numpy as np

from lab.models.goodput.metrics import goodput_metrics
from lab.models.goodput.simulate import simulate
from lab.models.goodput.trace import Trace

DEFAULT_CAPS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Batch caps of the experiment's chart, requests."""


def cap_sweep(trace: Trace, caps, model, gpu, tp: int, precision: str, c0_s: float,
              c1_s: float, ttft_limit_s: float, tpot_limit_s: float, **memory) -> dict:
    """Every :func:`~lab.models.goodput.metrics.goodput_metrics` output for each cap in ``caps``.

    ``memory`` passes ``memory_check``, ``budget_fraction``, ``reserve_bytes`` and ``page``
    to :func:`~lab.models.goodput.simulate.simulate`. Returns ``{"batch_cap": caps, key: array}``.
    """
    caps = np.asarray(caps, dtype=np.int64)
    rows = [goodput_metrics(simulate(trace, model, gpu, tp, precision, int(cap), c0_s, c1_s,
                                     **memory), ttft_limit_s, tpot_limit_s) for cap in caps]
    out = {"batch_cap": caps}
    for key in rows[0]:
        out[key] = np.asarray([row[key] for row in rows])
    return out
