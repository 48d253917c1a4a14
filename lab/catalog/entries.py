"""The two records every calculation reads: a model's shape and a GPU's peaks.

Both are plain frozen dataclasses in SI units. The decode formulas read them by attribute
(``model.layers``, ``gpu.hbm_bw``), which is also how they read an ``xarray.Dataset`` of many
models or GPUs along a ``model`` or ``gpu`` dimension: one formula serves a point and a grid.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

SUPPORTED_ARCHITECTURES = (
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
)
"""Dense grouped-query-attention decoders the lab's model describes."""


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a dense decoder-only GQA transformer (Llama-style).

    Attributes
    ----------
    id, name : str
        Catalog id (``llama-3.1-8b``) and display name.
    hidden : int
        Hidden size ``d``.
    layers : int
        Decoder layers ``L``.
    heads : int
        Query heads ``H``.
    kv_heads : int
        Key/value heads ``K``.
    head_dim : int
        Head dimension ``h``.
    intermediate : int
        Gated MLP intermediate size ``F``.
    vocab : int
        Vocabulary size ``V``.
    tied : bool
        Whether the LM head shares the input embedding.
    total_params : int
        Every parameter (embeddings, norms, biases, LM head unless tied), computed from the shape.
    max_context : int
        Longest context the model supports, tokens (``max_position_embeddings``).
    architecture : str
        Hugging Face architecture name.
    """

    id: str
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    total_params: int
    max_context: int
    architecture: str = "LlamaForCausalLM"
    source: str = ""
    checked: str = ""
    notes: str = ""

    def as_dict(self) -> dict:
        """All fields as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class GPUSpec:
    """One accelerator's capacity, bandwidth and dense peaks, in SI units.

    Attributes
    ----------
    capacity_bytes : float
        Memory capacity, bytes (vendor label × 10^9).
    hbm_bw : float
        Memory bandwidth, bytes/s.
    peak_bf16 : float
        Dense BF16 peak, FLOP/s.
    peak_fp8 : float
        Dense FP8 peak, FLOP/s; NaN when the part has no FP8.
    interconnect_bw : float
        Interconnect bandwidth per device as the vendor quotes it (bidirectional), bytes/s.
    peak_fp4 : float
        Dense FP4 peak (MXFP4 and NVFP4 weights), FLOP/s; NaN when the part has no FP4.
    scale_up_gpus : float
        GPUs one NVLink domain joins (an HGX/DGX node 8, an NVL72 rack 72); NaN when not
        catalogued.
    network_bw : float
        Scale-out bandwidth per GPU, per direction, bytes/s (the NIC between NVLink domains);
        NaN when not catalogued.
    """

    id: str
    name: str
    vendor: str
    capacity_bytes: float
    hbm_bw: float
    peak_bf16: float
    peak_fp8: float = math.nan
    interconnect_bw: float = math.nan
    interconnect: str = ""
    peak_fp4: float = math.nan
    scale_up_gpus: float = math.nan
    network_bw: float = math.nan
    source: str = ""
    checked: str = ""
    notes: str = ""
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_fp8(self) -> bool:
        """True when the part has a native FP8 peak."""
        return not math.isnan(self.peak_fp8)

    @property
    def has_fp4(self) -> bool:
        """True when the part has a native FP4 peak (MXFP4, NVFP4)."""
        return not math.isnan(self.peak_fp4)

    def as_dict(self) -> dict:
        """All fields as a JSON-ready dict (NaN peaks become None)."""
        out = asdict(self)
        out.pop("extra", None)
        for key, value in out.items():
            if isinstance(value, float) and math.isnan(value):
                out[key] = None
        return out
