"""Grids of the serving experiments (5–8), each over its own axes.

=========  ===================================  =============================================
name       dimensions                           lab function per chunk
=========  ===================================  =============================================
prefill    chunk × prompt                       :func:`lab.models.prefill.prefill_metrics`
prefix     prefix × requests × block            :func:`lab.models.prefix.prefix_metrics`
goodput    batch_cap × ttft_ms × tpot_ms        :func:`lab.models.goodput.simulate` once per cap,
                                                :func:`lab.models.goodput.goodput_metrics` per cell
context    tokens × window (0: dense)           :func:`lab.models.context_growth.context_metrics`
=========  ===================================  =============================================

Constants are named as the ``calc`` flags and converted exactly as :mod:`lab.points.serving_points`
converts them (ms × 10^-3), so a cell equals ``calc <experiment> --json`` for the same inputs.
Every cell of these grids is valid: inputs that ``calc`` would reject are rejected when the
spec is read, with the same sentence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from lab.errors import LabInputError
from lab.limits import MAX_BATCH, MAX_CONTEXT, MAX_PREFIX_BLOCK, MAX_PREFIX_REQUESTS, MIN_LIMIT_MS
from lab.models import context_growth, prefill, prefix
from lab.models.goodput import UNITS as GOODPUT_UNITS
from lab.models.goodput import goodput_metrics, load_trace, simulate
from lab.points.decode_points import DecodeConfig, prepare
from lab.points.serving_points import (
    CONTEXT_DEFAULTS,
    DEFAULT_TRACE,
    GOODPUT_DEFAULTS,
    MAX_MS,
    MAX_TOKENS_CONTEXT,
    MIN_PAIR_COST_MS,
    PREFILL_DEFAULTS,
    PREFIX_DEFAULTS,
    check_goodput_inputs,
    refuse_moe,
    simulation_inputs,
)
from lab.units import MS
from sweeps.build import axis_view
from sweeps.common_rules import (
    budget_rule,
    gpu_rule,
    kv_precision_rule,
    model_rule,
    page_rule,
    precision_rule,
    reserve_rule,
    tp_rule,
)
from sweeps.grid_schema import ExperimentSpec, Rule, Schema

DEFAULT = DecodeConfig()


def _ms_rule(name: str, long_name: str, default: float, low: float = 0.0) -> Rule:
    return Rule(name, "float", long_name, "ms", low, MAX_MS, default=default)


# -- experiment 5: prefill deadline ---------------------------------------------------------
def prefill_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """:func:`~lab.models.prefill.prefill_metrics` over one chunk of ``chunk × prompt``."""
    chunk = axis_view(np.asarray(coords["chunk"], dtype=np.int64), 0, 2)
    prompt = axis_view(np.asarray(coords["prompt"], dtype=np.int64), 1, 2)
    return prefill.prefill_metrics(
        prompt, chunk, constants["decode_ms"] * MS, constants["c0_ms"] * MS,
        constants["c1_ms"] * MS, constants["deadline_ms"] * MS, constants["itl_ms"] * MS)


PREFILL_SCHEMA = Schema(
    experiment="prefill",
    axes=(
        Rule("chunk", "int", "chunk size", "tokens", 1, MAX_CONTEXT,
             default={"pow2": [16, 32768]}),
        Rule("prompt", "int", "prompt", "tokens", 1, MAX_CONTEXT,
             default={"pow2": [256, 262144]}),
    ),
    constants=(
        _ms_rule("decode_ms", "running decode batch's step cost d", PREFILL_DEFAULTS["decode_ms"]),
        _ms_rule("c0_ms", "prefill cost per step c0", PREFILL_DEFAULTS["c0_ms"]),
        _ms_rule("c1_ms", "prefill cost per token c1", PREFILL_DEFAULTS["c1_ms"]),
        _ms_rule("deadline_ms", "TTFT deadline", PREFILL_DEFAULTS["deadline_ms"],
                 MIN_LIMIT_MS),
        _ms_rule("itl_ms", "ITL limit of the decoding users", PREFILL_DEFAULTS["itl_ms"],
                 MIN_LIMIT_MS),
    ),
    variables=lambda: tuple(prefill.UNITS),
    description="Experiment 5: TTFT of a chunked prompt and the decoders' inter-token latency "
    "for every chunk size and prompt length.",
)


# -- experiment 6: prefix ownership ---------------------------------------------------------
def prefix_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """:func:`~lab.models.prefix.prefix_metrics` over one chunk of ``prefix × requests × block``."""
    model, _ = prepare(DecodeConfig(model=constants["model"], tp=constants["tp"], context=1))
    return prefix.prefix_metrics(
        model, constants["tp"],
        axis_view(np.asarray(coords["prefix"], dtype=np.int64), 0, 3),
        constants["own"],
        axis_view(np.asarray(coords["requests"], dtype=np.int64), 1, 3),
        axis_view(np.asarray(coords["block"], dtype=np.int64), 2, 3),
    )


def _finalize_prefix(spec: ExperimentSpec) -> ExperimentSpec:
    """Reject what ``calc prefix`` rejects: too long a request, an invalid tp, no tokens, a
    mixture-of-experts or MLA model (its KV blocks would be costed as a dense model's)."""
    own = spec.constants["own"]
    if min(spec.axes["prefix"]) + own < 1:
        raise LabInputError("prefix and own tokens cannot both be 0; a request needs a token.")
    model, _ = prepare(DecodeConfig(model=spec.constants["model"], tp=spec.constants["tp"],
                                    context=max(spec.axes["prefix"]) + own,
                                    page=max(spec.axes["block"])))
    refuse_moe(model, "Experiment 6 (prefix ownership)")
    return spec


PREFIX_SCHEMA = Schema(
    experiment="prefix",
    axes=(
        Rule("prefix", "int", "shared prefix", "tokens", 0, MAX_CONTEXT,
             default={"range": [0, 4096]}),
        Rule("requests", "int", "requests sharing the prefix", "requests", 1, MAX_PREFIX_REQUESTS,
             default={"pow2": [1, 1024]}),
        Rule("block", "int", "KV block size", "tokens", 1, MAX_PREFIX_BLOCK,
             default=[8, 16, 32, 64, 128]),
    ),
    constants=(
        model_rule(DEFAULT.model),
        tp_rule(DEFAULT.tp),
        Rule("own", "int", "tokens each request adds", "tokens", 0, MAX_CONTEXT,
             default=PREFIX_DEFAULTS["own"]),
    ),
    variables=lambda: tuple(prefix.UNITS),
    description="Experiment 6: KV blocks and bytes with and without prefix caching for every "
    "prefix length, number of requests and block size.",
    finalize=_finalize_prefix,
)


# -- experiment 8: context growth ------------------------------------------------------------
def context_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """:func:`~lab.models.context_growth.context_metrics` per window (0: dense) over ``tokens``."""
    tokens = np.asarray(coords["tokens"], dtype=np.int64)
    a_s, c_s = constants["a_ms"] * MS, constants["c_ms"] * MS
    columns = [context_growth.context_metrics(tokens, a_s, c_s, None if w == 0 else int(w))
               for w in coords["window"]]
    shape = (len(tokens), len(columns))
    return {key: np.stack([np.broadcast_to(c[key], tokens.shape) for c in columns], axis=1)
            .reshape(shape) for key in columns[0]}


CONTEXT_SCHEMA = Schema(
    experiment="context",
    axes=(
        Rule("tokens", "int", "prompt tokens n", "tokens", 1, MAX_TOKENS_CONTEXT,
             default={"pow2": [16, 16_777_216]}),
        Rule("window", "int", "sliding window W (0: dense attention)", "tokens", 0,
             MAX_TOKENS_CONTEXT, default=[0, 4096, 32768, 131072]),
    ),
    constants=(
        _ms_rule("a_ms", "seconds per token of the linear layers a", CONTEXT_DEFAULTS["a_ms"]),
        _ms_rule("c_ms", "seconds per attention pair c", CONTEXT_DEFAULTS["c_ms"],
                 MIN_PAIR_COST_MS),
    ),
    variables=lambda: tuple(context_growth.UNITS),
    description="Experiment 8: prefill time T(n) = a·n + c·pairs(n), its parts and the "
    "doubling ratio, dense and with a sliding window (extension).",
)


# -- experiment 7: goodput -------------------------------------------------------------------
def _trace_path(name: str) -> Path:
    return DEFAULT_TRACE if name == "default" else Path(name)


@lru_cache(maxsize=8)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def trace_digest(name: str) -> str:
    """SHA-256 of the trace file ``name`` (``default``: the shipped trace)."""
    path = _trace_path(name)
    try:
        stat = path.stat()
    except OSError:
        raise LabInputError(f"The trace {path} does not exist.") from None
    return _file_sha256(str(path), stat.st_mtime_ns, stat.st_size)


def _goodput_config(constants: Mapping) -> DecodeConfig:
    return DecodeConfig(model=constants["model"], gpu=constants["gpu"], tp=constants["tp"],
                        precision=constants["precision"], context=1,
                        budget=constants["budget"], reserve_gb=constants["reserve_gb"],
                        page=constants["page"], kv_precision=constants["kv_precision"])


def goodput_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """One simulation per batch cap; :func:`~lab.models.goodput.goodput_metrics` per contract cell."""
    config = _goodput_config(constants)
    model, gpu = prepare(config)
    trace = load_trace(_trace_path(constants["trace"]))
    ttft, tpot = coords["ttft_ms"], coords["tpot_ms"]
    shape = (len(coords["batch_cap"]), len(ttft), len(tpot))
    out: dict[str, np.ndarray] = {}
    for i, cap in enumerate(coords["batch_cap"]):
        sim = simulate(trace, simulation_inputs(config, model, gpu), int(cap),
                       constants["c0_ms"] * MS, constants["c1_ms"] * MS,
                       memory_check=constants["memory_check"])
        for j, t1 in enumerate(ttft):
            for k, t2 in enumerate(tpot):
                for key, value in goodput_metrics(sim, t1 * MS, t2 * MS).items():
                    if key not in out:
                        out[key] = np.empty(shape, dtype=np.asarray(value).dtype)
                    out[key][i, j, k] = value
    return out


def _finalize_goodput(spec: ExperimentSpec) -> ExperimentSpec:
    """Reject what ``calc goodput`` rejects; record the trace's SHA-256 (staleness)."""
    constants = spec.constants
    config = _goodput_config(constants)
    model, gpu = prepare(config)
    # Load first: it refuses a directory or a device with one sentence before it is hashed.
    check_goodput_inputs(load_trace(_trace_path(constants["trace"])), model, gpu, config,
                         constants["c0_ms"], constants["c1_ms"], constants["memory_check"])
    digest = trace_digest(constants["trace"])
    return replace(spec, extra={**spec.extra, "trace_sha256": digest})


GOODPUT_SCHEMA = Schema(
    experiment="goodput",
    axes=(
        Rule("batch_cap", "int", "batch cap M", "requests", 1, MAX_BATCH,
             default={"pow2": [1, 256]}),
        Rule("ttft_ms", "float", "TTFT limit of the contract T1", "ms", MIN_LIMIT_MS, MAX_MS,
             default=[250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0]),
        Rule("tpot_ms", "float", "TPOT limit of the contract T2", "ms", MIN_LIMIT_MS, MAX_MS,
             default=[6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 30.0, 50.0]),
    ),
    constants=(
        Rule("trace", "str", "request trace (default: the shipped trace)", "1",
             default="default"),
        model_rule(DEFAULT.model),
        gpu_rule(DEFAULT.gpu),
        tp_rule(DEFAULT.tp),
        precision_rule(DEFAULT.precision),
        kv_precision_rule(DEFAULT.kv_precision),
        _ms_rule("c0_ms", "prefill cost per step c0", GOODPUT_DEFAULTS["c0_ms"]),
        _ms_rule("c1_ms", "prefill cost per token c1", GOODPUT_DEFAULTS["c1_ms"]),
        Rule("memory_check", "bool", "admission checks KV memory", "1", default=False),
        budget_rule(DEFAULT.budget),
        reserve_rule(DEFAULT.reserve_gb),
        page_rule(DEFAULT.page),
    ),
    variables=lambda: tuple(GOODPUT_UNITS),
    description="Experiment 7: goodput, throughput and attainment of the trace for every "
    "batch cap and contract (TTFT and TPOT limits).",
    finalize=_finalize_goodput,
    chunk_cells=48,
)


def _units(units: Mapping[str, tuple[str, str]]) -> dict:
    return dict(units)


KINDS = {
    "prefill": (PREFILL_SCHEMA, prefill_block, _units(prefill.UNITS)),
    "prefix": (PREFIX_SCHEMA, prefix_block, _units(prefix.UNITS)),
    "goodput": (GOODPUT_SCHEMA, goodput_block, _units(GOODPUT_UNITS)),
    "context": (CONTEXT_SCHEMA, context_block, _units(context_growth.UNITS)),
}
"""Schema, block function and variable labels of each serving grid."""
PREFILL_GRID, PREFIX_GRID, GOODPUT_GRID, CONTEXT_GRID = (KINDS[name] for name in KINDS)
"""The grid block of each serving experiment (registered in :mod:`sweeps.grids`)."""
