"""Weight formats: bits and bytes per weight, block scales included, and which peak runs them.

One table, :data:`BITS_PER_WEIGHT`, is the only place these figures live::

    bf16    16 bits
    fp8      8 bits    (per-tensor or per-channel scales: negligible, not counted)
    mxfp4    4.25 bits = 4-bit E2M1 element + one 8-bit E8M0 scale per 32 elements (8/32)
    nvfp4    4.5 bits  = 4-bit E2M1 element + one 8-bit E4M3 scale per 16 elements (8/16)
             (NVFP4's one FP32 scale per tensor is negligible and not counted)
    int4     4.125 bits = 4-bit integer + one 16-bit scale per 128 elements (16/128), the
             common group size of GPTQ/AWQ checkpoints
    int4_g32 4.5 bits = 4-bit integer + one 16-bit scale per 32 elements (16/32): Kimi-K2.5's
             routed experts (compressed-tensors, symmetric, group size 32)

Sources: the OCP Microscaling Formats (MX) v1.0 specification (block of 32, E8M0 shared scale;
https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf);
NVIDIA's NVFP4 description (16-element blocks with an FP8 E4M3 scale;
https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/).
gpt-oss ships its routed experts in MXFP4 and keeps attention, routers, embeddings and the LM
head in BF16 (its ``config.json``'s ``quantization_config.modules_to_not_convert``).

FP4 formats run on the GPU's FP4 tensor-core peak (``peak_fp4``: Blackwell); a GPU without one
refuses them (:func:`lab.points.validity.explain`). INT4 is weight-only: its arithmetic runs at
the BF16 peak after dequantisation.
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, where

BITS_PER_WEIGHT = {"bf16": 16.0, "fp8": 8.0, "mxfp4": 4.25, "nvfp4": 4.5, "int4": 4.125,
                   "int4_g32": 4.5}
"""Bits per weight of each format, block scales included (bits)."""

FP4_FORMATS = ("mxfp4", "nvfp4")
"""Formats whose arithmetic needs an FP4 tensor-core peak."""

FORMAT_NAMES = {"bf16": "BF16", "fp8": "FP8", "mxfp4": "MXFP4", "nvfp4": "NVFP4", "int4": "INT4",
                "int4_g32": "INT4 (group 32)"}
"""Each format's name in prose."""

EXPERT_ONLY_FORMATS = {"mxfp4-experts": ("bf16", "mxfp4"), "int4-experts": ("bf16", "int4_g32")}
"""Precisions that store a mixture of experts' routed experts in one format and every other
linear weight in another, ``name: (rest, experts)``: ``"mxfp4-experts"`` is gpt-oss as it
ships (MXFP4 routed experts; attention, routers, embeddings and LM head BF16);
``"int4-experts"`` is Kimi-K2.5 as it ships (INT4 routed experts in groups of 32; attention,
shared experts, dense layers and LM head BF16: its ``quantization_config.ignore``). Arithmetic runs
at the rest's peak (BF16): the FP4 experts are dequantised in the kernel, as vLLM's Marlin
MXFP4 MoE kernel does on Hopper, so no FP4 peak is needed."""


def is_expert_only(precision: ArrayLike) -> bool:
    """True when ``precision`` is one name of :data:`EXPERT_ONLY_FORMATS` (a single string)."""
    return isinstance(precision, str) and precision in EXPERT_ONLY_FORMATS


def rest_format(precision: str) -> str:
    """Format of the linear weights that are not routed experts: ``"bf16"`` for
    ``"mxfp4-experts"``, ``precision`` itself otherwise."""
    return EXPERT_ONLY_FORMATS[precision][0] if is_expert_only(precision) else precision


def expert_format(precision: str) -> str:
    """Format of the routed experts' weights: ``"mxfp4"`` for ``"mxfp4-experts"``,
    ``precision`` itself otherwise."""
    return EXPERT_ONLY_FORMATS[precision][1] if is_expert_only(precision) else precision


def bits_per_weight(fmt: str) -> float:
    """Bits one weight of ``fmt`` takes, its block scale's share included (bits)."""
    return BITS_PER_WEIGHT[fmt]


def bytes_per_weight(fmt: str) -> float:
    """Bytes one weight of ``fmt`` takes, its block scale's share included (B):
    0.53125 for MXFP4, 0.5625 for NVFP4."""
    return BITS_PER_WEIGHT[fmt] / 8


def weight_bytes(precision: ArrayLike) -> ArrayLike:
    """Bytes per linear weight at a precision of the decode family, broadcasting: 2 for
    ``"bf16"``, 1 for ``"fp8"``, 0.53125 for ``"mxfp4"`` and 0.5625 for ``"nvfp4"`` (their block
    scales counted); any other name (an expert-only precision where no routed expert is
    concerned) reads as BF16's 2."""
    base = where(precision == "fp8", 1, 2)
    return fp4_bytes(precision, base) if any_fp4(precision) else base


def is_integer_format(precision: ArrayLike) -> bool:
    """True when ``precision`` is one weight-only integer format name (a single string)."""
    return isinstance(precision, str) and precision.startswith("int4")


def is_fp4(precision: ArrayLike) -> ArrayLike:
    """Where ``precision`` names an FP4 format (bool, broadcasting)."""
    if isinstance(precision, str):
        return precision in FP4_FORMATS
    return (precision == "mxfp4") | (precision == "nvfp4")


def any_fp4(precision: ArrayLike) -> bool:
    """True when any cell of ``precision`` names an FP4 format."""
    return bool(np.any(is_fp4(precision)))


def fp4_bytes(precision: ArrayLike, otherwise: ArrayLike) -> ArrayLike:
    """Bytes per weight where ``precision`` is MXFP4 or NVFP4, ``otherwise`` elsewhere (B)."""
    return where(precision == "mxfp4", bytes_per_weight("mxfp4"),
                 where(precision == "nvfp4", bytes_per_weight("nvfp4"), otherwise))
