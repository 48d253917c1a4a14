"""Goodput and throughput against the batch cap: one simulation per cap, as arrays."""

from __future__ import annotations

import numpy as np

from lab.models.goodput.metrics import goodput_metrics
from lab.models.goodput.simulate import simulate
from lab.models.goodput.trace import Trace
from lab.models.inputs import DecodeInputs

DEFAULT_CAPS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Batch caps of the experiment's chart, requests."""


def cap_sweep(trace: Trace, caps, inputs: DecodeInputs, c0_s: float, c1_s: float,
              ttft_limit_s: float, tpot_limit_s: float, *, memory_check: bool = False) -> dict:
    """Every :func:`~lab.models.goodput.metrics.goodput_metrics` output for each cap in ``caps``.

    ``inputs`` and ``memory_check`` go to :func:`~lab.models.goodput.simulate.simulate`.
    Returns ``{"batch_cap": caps, key: array}``.
    """
    caps = np.asarray(caps, dtype=np.int64)
    rows = [goodput_metrics(simulate(trace, inputs, int(cap), c0_s, c1_s,
                                     memory_check=memory_check), ttft_limit_s, tpot_limit_s)
            for cap in caps]
    out = {"batch_cap": caps}
    for key in rows[0]:
        out[key] = np.asarray([row[key] for row in rows])
    return out
