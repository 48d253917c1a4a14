"""Every limit the lab puts on input from outside, named once.

The flags, the experiment parameters, the grid specs and the loaders of bring-your-own files
(a Hugging Face ``config.json``, a GPU TOML, a trace CSV, a grid spec TOML) all check against
these constants, and every message that rejects a value quotes the limit. The limits are wide —
far beyond any real model, GPU or trace — and exist so that no value can overflow a 64-bit
integer or float, divide by zero, or ask for more memory than a machine has.
"""

from __future__ import annotations

# -- decode configuration (flags, experiment parameters, grid axes) ----------------------------
MAX_BATCH = 1024
"""Largest batch the experiments accept, sequences."""
MAX_CONTEXT = 1_048_576
"""Largest context the experiments accept, tokens (a model's own maximum also applies)."""
TP_DEGREES = (1, 2, 4, 8)
"""Tensor-parallel degrees the lab models, GPUs: the one list the flags, the experiment
parameters, the grid rules and the validity rules read."""
MAX_TP = max(TP_DEGREES)
"""Largest tensor-parallel degree accepted, GPUs: the range check stops at the largest modelled
degree, so no value passes it and then fails validity for its size (a degree inside the range
that is not modelled, or that the model's heads do not divide, gets the validity sentence)."""
EP_DEGREES = (1, 2, 4, 8)
"""Expert-parallel degrees the lab models, groups of ``tp`` GPUs."""
MAX_LAYOUT_GPUS = 8
"""Most GPUs of an ``ep × tp`` layout: one 8-GPU node, whose interconnect (the catalog's
``interconnect_gbps``) carries the all-to-all; beyond it the traffic crosses a network."""
BUDGET_RANGE = (0.01, 1.0)
"""Accepted memory budget, share of capacity."""
MAX_RESERVE_GB = 100_000
"""Largest memory reserve per GPU accepted, GB."""
MAX_PAGE = 4096
"""Largest KV page accepted, tokens."""
MAX_ALLREDUCE_LATENCY_US = 1e6
"""Largest all-reduce latency per collective accepted, µs."""
MAX_DRAFT_TOKENS = 16
"""Most tokens one speculative cycle drafts per sequence (experiment 10's ``k``)."""

# -- experiment 9 (measured kernel times) -------------------------------------------------------
MAX_MEASURED_TP = 64
"""Largest ``tp`` of a measured decode-attention kernel, GPUs: a measurement of one GPU's share
of the heads, not a modelled configuration, so it is not limited to :data:`TP_DEGREES` (the
heads must still divide)."""

# -- serving experiments ------------------------------------------------------------------------
MAX_TOKENS_CONTEXT = 1_000_000_000
"""Largest prompt experiment 8 accepts, tokens (pair counts stay exact far beyond)."""
MAX_MS = 1e9
"""Largest time input, ms."""
MIN_LIMIT_MS = 1e-9
"""Smallest deadline or latency limit accepted (experiment 5's deadline and ITL limit,
experiment 7's TTFT and TPOT limits), ms: above 0, as the CLI, the grid rules and the pages
check alike."""
MIN_PAIR_COST_MS = 1e-200
"""Smallest attention cost per pair ``c`` experiment 8 accepts, ms (the crossover ``2a/c``
divides by it: with ``a`` up to :data:`MAX_MS` it stays a finite float)."""
MAX_PREFIX_REQUESTS = 10_000_000
"""Most requests sharing a prefix in experiment 6."""
MAX_PREFIX_BLOCK = 4096
"""Largest KV block of experiment 6, tokens."""

# -- bring-your-own model (config.json) ---------------------------------------------------------
MODEL_FIELD_LIMITS = {
    "hidden_size": 1_048_576,
    "num_hidden_layers": 65_536,
    "num_attention_heads": 65_536,
    "num_key_value_heads": 65_536,
    "head_dim": 65_536,
    "intermediate_size": 16_777_216,
    "vocab_size": 16_777_216,
    "max_position_embeddings": MAX_TOKENS_CONTEXT,
}
"""Largest value of each shape field of a model (each at least 1)."""
MOE_FIELD_LIMITS = {
    "experts": 65_536,
    "experts_per_token": 65_536,
    "expert_intermediate": 16_777_216,
    "shared_experts": 65_536,
    "shared_intermediate": 16_777_216,
    "kv_lora_rank": 65_536,
    "q_lora_rank": 1_048_576,
    "qk_rope_head_dim": 65_536,
    "qk_nope_head_dim": 65_536,
    "v_head_dim": 65_536,
    "layer_step": 65_536,
    "attention_chunk": MAX_TOKENS_CONTEXT,
}
"""Largest value of each mixture-of-experts and MLA field of a model (each at least 1 where it
is given; the loader names the ``config.json`` key)."""
MAX_TOTAL_PARAMS = 10**15
"""Most parameters a model may have (its shape's count; a quadrillion keeps every byte and
FLOP count exact in 64-bit arithmetic)."""

# -- bring-your-own GPU (TOML) ------------------------------------------------------------------
GPU_FIELD_LIMITS = {
    "capacity_gb": (1e-3, 1e6, "GB"),
    "hbm_bandwidth_tbps": (1e-3, 1e4, "TB/s"),
    "bf16_tflops": (1e-3, 1e7, "TFLOPS"),
    "fp8_tflops": (1e-3, 1e7, "TFLOPS"),
    "fp4_tflops": (1e-3, 1e7, "TFLOPS"),
    "interconnect_gbps": (1e-3, 1e7, "GB/s"),
    "scale_up_gpus": (1, 1e5, "GPUs"),
    "network_gbps": (1e-3, 1e7, "GB/s"),
}
"""Accepted range ``(low, high, unit)`` of each figure of a GPU."""

# -- sweeps -------------------------------------------------------------------------------------
MAX_LOCAL_WORKERS = 64
"""Most worker processes ``sweep --workers`` starts on this machine (each is a Python process
of ~150 MB; more processes than cores only adds memory)."""

# -- request traces (CSV) -----------------------------------------------------------------------
MAX_REQUEST_TOKENS = MAX_CONTEXT
"""Largest prompt or output of one request in a trace, tokens (a model's maximum context also
applies to their sum)."""
MAX_ARRIVAL_S = 1e10
"""Latest arrival in a trace, seconds (over 300 years: Unix timestamps fit)."""
MAX_TRACE_REQUESTS = 10_000_000
"""Most requests in a trace."""
MAX_TRACE_BYTES = 1_000_000_000
"""Largest trace file, bytes."""

# -- grid specs (TOML) --------------------------------------------------------------------------
MAX_GRID_CELLS = 2**31
"""Most cells one experiment's grid may have (about ten times the ``large`` preset)."""
MAX_AXIS_VALUES = 2**21
"""Most values one axis of a grid may have (every context up to :data:`MAX_CONTEXT` fits)."""
MAX_GENERATOR_BOUND = 2**53
"""Largest start or stop of an axis generator (``pow2``, ``range``, ``logspace``): every
integer up to it is exact as a float."""
MAX_CHUNK_CELLS = 2**26
"""Largest ``chunk_cells`` of a grid spec (512 MB per float64 variable)."""

# -- any file the lab reads ---------------------------------------------------------------------
MAX_SPEC_BYTES = 10_000_000
"""Largest ``config.json``, GPU TOML or grid spec file, bytes."""
MAX_MEASUREMENT_BYTES = 10 * 2**20
"""Largest measurements CSV (experiment 9), read from a file or uploaded on its page, bytes
(10 MiB: every upload limit is said in MiB, as the traces' 20 MiB is)."""
MAX_TABLE_ROWS = 100_000
"""Most rows one measurements table may hold: experiment 9's kernel times, experiment 11's
serving runs (a CSV, or ``vllm bench serve`` results)."""
