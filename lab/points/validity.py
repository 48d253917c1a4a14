"""Why a configuration is invalid: reason codes for grids, sentences for people.

A grid never raises in the middle: each cell gets a reason code (0 = valid) and its numbers
become NaN. A single point raises :class:`~lab.errors.LabInputError` with one sentence.
"""

from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from lab.arrays import ArrayLike, where
from lab.catalog.moe_spec import moe_field
from lab.errors import LabInputError, shown, shown_number
from lab.limits import EP_DEGREES, MAX_LAYOUT_GPUS, TP_DEGREES
from lab.models.decode_step import WEIGHT_PRECISIONS
from lab.models.weight_formats import FORMAT_NAMES, any_fp4, is_expert_only, is_fp4


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


def explain(reason: int, model, gpu, tp, precision, context) -> str:
    """One sentence for a single point's reason code, with its numbers."""
    reason = Reason(int(reason))
    if reason is Reason.TP_HEADS:
        return (f"tp {tp} does not divide the {model.heads} query heads of {model.name}, "
                "so the heads cannot be sharded evenly.")
    if reason is Reason.TP_KV_HEADS:
        return (f"tp {tp} does not divide the {model.kv_heads} KV heads of {model.name}, "
                "so the KV cache cannot be sharded evenly.")
    if reason is Reason.TP_DEGREE:
        return f"tp {tp} is not one of {', '.join(map(str, TP_DEGREES))}."
    if reason is Reason.FP8_UNSUPPORTED:
        return f"{gpu.name} has no FP8 peak, so fp8 is not available on it; use bf16."
    if reason is Reason.FP4_UNSUPPORTED:
        return (f"{gpu.name} has no FP4 peak, so {FORMAT_NAMES.get(precision, precision)} "
                "weights are not available on it; use bf16 or fp8.")
    if reason is Reason.CONTEXT_TOO_LONG:
        return (f"Context {context:,} exceeds {model.name}'s maximum of "
                f"{model.max_context:,} tokens.")
    return "The configuration is valid."


def check_decode_point(model, gpu, tp: int, precision: str, context: int) -> None:
    """Raise :class:`LabInputError` with one sentence if the configuration is invalid."""
    if precision not in WEIGHT_PRECISIONS:
        raise LabInputError(f"Precision '{precision}' is not one of "
                            f"{', '.join(WEIGHT_PRECISIONS)}.")
    code = int(decode_reason(model, gpu, tp, precision, context))
    if code:
        raise LabInputError(explain(code, model, gpu, tp, precision, context))


def expert_layout_problem(model, gpu, tp: int, ep: int, precision: str = "bf16") -> str | None:
    """One sentence saying why an ``ep × tp`` layout (or an expert-only precision) does not
    apply to ``model`` on ``gpu``, or None when it does (always None at ``ep = 1`` with a
    uniform precision)."""
    experts = int(moe_field(model, "experts"))
    if is_expert_only(precision) and experts == 0:
        return (f"{model.name} has no routed experts, so '{precision}' (MXFP4 experts, BF16 "
                "rest) does not apply; use bf16, fp8, mxfp4 or nvfp4.")
    if ep == 1:
        return None
    if ep not in EP_DEGREES:
        return f"ep {ep} is not one of {', '.join(map(str, EP_DEGREES))}."
    if experts == 0:
        return (f"{model.name} has no routed experts, so expert parallelism does not apply; "
                "use ep 1.")
    if experts % ep:
        return (f"ep {ep} does not divide the {experts} routed experts of {model.name}, so "
                "they cannot be spread evenly over the expert-parallel groups.")
    if ep * tp > MAX_LAYOUT_GPUS:
        return (f"ep {ep} × tp {tp} is {ep * tp} GPUs, more than the {MAX_LAYOUT_GPUS} GPUs of "
                "one node whose interconnect the all-to-all is modelled over.")
    if np.isnan(gpu.interconnect_bw):
        return (f"{gpu.name} has no interconnect bandwidth, so the all-to-all of expert "
                "parallelism cannot be estimated; use ep 1.")
    return None


def check_range(name: str, value, low, high=None, *, integer: bool = True, unit: str = "") -> None:
    """Raise :class:`LabInputError` unless ``low ≤ value ≤ high`` (and an integer if asked).

    Any Python or numpy number is accepted as input, however large: integers are compared
    exactly (never converted to a float, which overflows past 10^308) and NaN or an infinity is
    reported as not finite.
    """
    suffix = f" {unit}" if unit else ""
    if isinstance(value, bool | np.bool_) or not isinstance(
            value, int | float | np.integer | np.floating):
        raise LabInputError(f"{name} must be a number, not {shown(value)}.")
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise LabInputError(f"{name} must be a finite number, not {value}.")
        if integer and not float(value).is_integer():
            raise LabInputError(f"{name} must be a whole number, not {value}.")
    if value < low or (high is not None and value > high):
        bounds = f"between {low:,} and {high:,}" if high is not None else f"at least {low:,}"
        raise LabInputError(f"{name} must be {bounds}{suffix}, not {shown_number(value)}.")
