"""Why a configuration is invalid: reason codes for grids, sentences for people.

A grid never raises in the middle: each cell gets a reason code (0 = valid) and its numbers
become NaN. A single point raises :class:`~lab.errors.LabInputError` with one sentence.
"""

from __future__ import annotations

import math

import numpy as np

from lab.catalog.moe_spec import moe_field
from lab.errors import LabInputError, shown, shown_number
from lab.limits import EP_DEGREES, MAX_LAYOUT_GPUS, TP_DEGREES
from lab.models.decode_step import WEIGHT_PRECISIONS
from lab.models.decode_validity import (  # noqa: F401  (re-exported: the grids read them here)
    REASON_TEXT,
    Reason,
    decode_reason,
)
from lab.models.weight_formats import FORMAT_NAMES, is_expert_only


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


def _bound(value) -> str:
    """A range's edge as a message writes it: ``1,000,000,000``, not ``1,000,000,000.0``."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,}"


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
        bounds = (f"between {_bound(low)} and {_bound(high)}" if high is not None
                  else f"at least {_bound(low)}")
        raise LabInputError(f"{name} must be {bounds}{suffix}, not {shown_number(value)}.")
