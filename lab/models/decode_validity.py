"""Reason codes of a decode configuration, per grid cell: the checks the decode model's
metrics carry (``valid``, ``reason``) so a grid never raises in the middle.

Here, below :mod:`lab.points`, so that :mod:`lab.models.decode_metrics` needs nothing above
:mod:`lab.models`; :mod:`lab.points.validity` re-exports them beside the sentences for people.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from lab.arrays import ArrayLike, where
from lab.catalog.moe_spec import moe_field
from lab.models.weight_formats import any_fp4, is_fp4


class Reason(IntEnum):
    """Reason codes stored with every grid cell (``reason`` variable)."""

    VALID = 0
    TP_HEADS = 1
    TP_KV_HEADS = 2
    TP_DEGREE = 3
    FP8_UNSUPPORTED = 4
    CONTEXT_TOO_LONG = 5
    FP4_UNSUPPORTED = 6


REASON_TEXT = {
    Reason.VALID: "valid",
    Reason.TP_HEADS: "tp does not divide the model's query heads",
    Reason.TP_KV_HEADS: "tp does not divide the model's KV heads",
    Reason.TP_DEGREE: "tp is not one of 1, 2, 4, 8",
    Reason.FP8_UNSUPPORTED: "the GPU has no FP8 peak",
    Reason.CONTEXT_TOO_LONG: "context exceeds the model's maximum",
    Reason.FP4_UNSUPPORTED: "the GPU has no FP4 peak",
}
"""Short text of each reason code, stored as the grid's ``reason`` flag meanings."""


def _kv_heads_split(model, tp: ArrayLike):
    """Where tp fails to divide the KV heads; never for MLA, whose latent is replicated (tp
    need only divide the query heads)."""
    uneven = model.kv_heads % tp != 0
    mla = moe_field(model, "kv_lora_rank") > 0
    if isinstance(mla, bool | np.bool_):  # one record
        return uneven & False if mla else uneven
    return uneven if not np.any(mla) else uneven & np.logical_not(mla)


def decode_reason(model, gpu, tp: ArrayLike, precision: ArrayLike, context: ArrayLike):
    """Reason code per cell (0 where the decode configuration is valid); first failure wins."""
    tp_allowed = (tp == 1) | (tp == 2) | (tp == 4) | (tp == 8)
    checks = [
        (model.heads % tp != 0, Reason.TP_HEADS),
        (_kv_heads_split(model, tp), Reason.TP_KV_HEADS),
        (np.logical_not(tp_allowed), Reason.TP_DEGREE),
        ((precision == "fp8") & np.isnan(gpu.peak_fp8), Reason.FP8_UNSUPPORTED),
        (context > model.max_context, Reason.CONTEXT_TOO_LONG),
    ]
    if any_fp4(precision):  # MXFP4 and NVFP4 weights need an FP4 peak
        checks.insert(4, (is_fp4(precision) & np.isnan(getattr(gpu, "peak_fp4", np.nan)),
                          Reason.FP4_UNSUPPORTED))
    code = 0
    for failed, reason in reversed(checks):
        code = where(failed, int(reason), code)
    return code
