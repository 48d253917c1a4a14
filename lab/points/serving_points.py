"""Single-point calculations of the serving experiments (5–8), checked and ready for JSON.

Inputs are in the CLI's units (ms, tokens); every output is SI (seconds, bytes, FLOP). Each
function range-checks its inputs (one-sentence :class:`~lab.errors.LabInputError`) and calls
the same vectorised function the sweeps broadcast: :func:`~lab.models.prefill.prefill_metrics`,
:func:`~lab.models.prefix.prefix_metrics`, :func:`~lab.models.context_growth.context_metrics`
and the goodput model of :mod:`lab.models.goodput`. Decode times come from
:func:`lab.points.decode_points.calc_decode`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lab.catalog.moe_spec import MoESpec, by_kind, routes_experts
from lab.errors import LabInputError
from lab.limits import (  # re-exported for the experiments and the grids
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_MS,
    MAX_PREFIX_BLOCK,
    MAX_PREFIX_REQUESTS,
    MAX_TOKENS_CONTEXT,
    MIN_LIMIT_MS,
    MIN_PAIR_COST_MS,
)
from lab.models.context_growth import context_metrics
from lab.models.decode_step import (
    bf16_peak_flops,
    linear_flops_per_token,
    linear_params,
    peak_flops,
)
from lab.models.goodput import goodput_metrics, load_trace, per_request, simulate
from lab.models.inputs import DecodeInputs
from lab.models.kv_shapes import attention_flops_per_pair
from lab.models.layer_kinds import has_local_layers, layer_mix, layer_pairs
from lab.models.memory import kv_free_bytes
from lab.models.moe_params import active_linear_params
from lab.models.prefill import chunk_sweep, prefill_metrics
from lab.models.prefix import prefix_metrics
from lab.points.decode_points import DecodeConfig, calc_decode, prepare, to_python
from lab.points.validity import check_range
from lab.shipped import default_trace
from lab.units import GB, MS

DEFAULT_TRACE = default_trace()
"""The shipped trace of experiment 7 (the repository's file, or the packaged copy in a wheel)."""

PREFILL_DEFAULTS = {"prompt": 16384, "chunk": 2048, "decode_ms": 10.0, "c0_ms": 2.0,
                    "c1_ms": 0.06, "deadline_ms": 1500.0, "itl_ms": 50.0}
"""Experiment 5's defaults (docs/model.md §5's worked case; deadline and ITL limit illustrative)."""
PREFIX_DEFAULTS = {"prefix": 1000, "own": 200, "requests": 100, "block": 16}
"""Experiment 6's defaults (docs/model.md §6's worked case)."""
GOODPUT_DEFAULTS = {"batch_cap": 64, "ttft_ms": 1000.0, "tpot_ms": 12.0, "c0_ms": 2.0,
                    "c1_ms": 0.02}
"""Experiment 7's defaults: the contract and prefill curve the shipped trace was authored for."""
CONTEXT_DEFAULTS = {"tokens": 32768, "a_ms": 0.015, "c_ms": 5e-7}
"""Experiment 8's synthetic coefficients: a per token, c per pair (all layers and heads)."""


def _python(record: dict) -> dict:
    return {key: to_python(value) for key, value in record.items()}


def _check_ms(name: str, value, *, positive: bool = False, smallest: float = 0.0) -> None:
    """``0 ≤ value ≤ MAX_MS`` ms; with ``positive`` also ``value > 0`` and ``value ≥ smallest``."""
    check_range(name, value, 0, MAX_MS, integer=False, unit="ms")
    if positive and value <= 0:
        raise LabInputError(f"{name} must be greater than 0 ms, not {value:,}.")
    if value < smallest:
        raise LabInputError(f"{name} must be at least {smallest:g} ms, not {value:g}.")


def decode_time(config: DecodeConfig) -> dict:
    """Experiment 1's step time for ``config``: ``{"model", "gpu", "step_time_s", ...}``."""
    record = calc_decode(config)
    return {"model": record["inputs"]["model"], "gpu": record["inputs"]["gpu"],
            "tp": config.tp, "precision": config.precision, "batch": config.batch,
            "context": config.context, "step_time_s": record["step_time_s"],
            "linear_time_s": record["linear_time_s"],
            "attention_time_s": record["attention_time_s"]}


def calc_prefill(prompt: int = PREFILL_DEFAULTS["prompt"], chunk: int = PREFILL_DEFAULTS["chunk"],
                 decode_ms: float | None = None, c0_ms: float = PREFILL_DEFAULTS["c0_ms"],
                 c1_ms: float = PREFILL_DEFAULTS["c1_ms"],
                 deadline_ms: float = PREFILL_DEFAULTS["deadline_ms"],
                 itl_ms: float = PREFILL_DEFAULTS["itl_ms"],
                 decode_from: DecodeConfig | None = None) -> dict:
    """Experiment 5: TTFT and decoders' ITL for one chunk size, plus the sweep over 1..P.

    ``decode_ms`` is the running batch's step cost; with ``decode_from`` it comes from
    experiment 1's model instead (giving both is an error). Default ``decode_ms``: 10 ms.
    """
    check_range("prompt", prompt, 1, MAX_CONTEXT, unit="tokens")
    check_range("chunk", chunk, 1, MAX_CONTEXT, unit="tokens")
    _check_ms("c0", c0_ms)
    _check_ms("c1", c1_ms)
    _check_ms("deadline", deadline_ms, positive=True, smallest=MIN_LIMIT_MS)
    _check_ms("ITL limit", itl_ms, positive=True, smallest=MIN_LIMIT_MS)
    decode = None
    if decode_from is not None:
        if decode_ms is not None:
            raise LabInputError("Give either --decode-ms or --decode-from, not both.")
        decode = decode_time(decode_from)
        decode_s = decode["step_time_s"]
    else:
        decode_ms = PREFILL_DEFAULTS["decode_ms"] if decode_ms is None else decode_ms
        _check_ms("decode", decode_ms)
        decode_s = decode_ms * MS
    args = (decode_s, c0_ms * MS, c1_ms * MS, deadline_ms * MS, itl_ms * MS)
    record = _python(prefill_metrics(prompt, chunk, *args))
    sweep = chunk_sweep(prompt, *args)
    sweep.pop("sweep")
    inputs = {"prompt": prompt, "chunk": chunk, "decode_s": decode_s, "c0_s": c0_ms * MS,
              "c1_s": c1_ms * MS, "deadline_s": deadline_ms * MS, "itl_limit_s": itl_ms * MS,
              "decode_source": "model" if decode else "input"}
    return {"inputs": inputs, **record, **sweep, "decode": decode}


def refuse_moe(model, what: str) -> None:
    """Raise :class:`LabInputError` for a mixture-of-experts, MLA or sliding-window/chunked
    model where the experiment still uses the dense formulas (its KV blocks would be wrong)."""
    if isinstance(model, MoESpec) and routes_experts(model):
        raise LabInputError(f"{what} models dense grouped-query-attention models only; "
                            f"{model.name} is a mixture-of-experts model (experiments 1–4, 7 "
                            "and 8 model it).")
    if has_local_layers(model):
        raise LabInputError(f"{what} counts every layer's KV blocks as a full layer's, and "
                            f"{model.name} has {layer_mix(model)}; experiments 1–4, 7, 8 and "
                            "10 model it.")


def calc_prefix(model: str = DecodeConfig.model, tp: int = DecodeConfig.tp,
                prefix: int = PREFIX_DEFAULTS["prefix"], own: int = PREFIX_DEFAULTS["own"],
                requests: int = PREFIX_DEFAULTS["requests"],
                block: int = PREFIX_DEFAULTS["block"]) -> dict:
    """Experiment 6: blocks and bytes with and without prefix caching."""
    check_range("prefix", prefix, 0, MAX_CONTEXT, unit="tokens")
    check_range("own", own, 0, MAX_CONTEXT, unit="tokens")
    check_range("requests", requests, 1, MAX_PREFIX_REQUESTS)
    check_range("block", block, 1, MAX_PREFIX_BLOCK, unit="tokens")
    if prefix + own < 1:
        raise LabInputError("prefix and own tokens cannot both be 0; a request needs a token.")
    spec, _ = prepare(DecodeConfig(model=model, tp=tp, context=prefix + own, page=block))
    refuse_moe(spec, "Experiment 6 (prefix ownership)")
    record = _python(prefix_metrics(spec, tp, prefix, own, requests, block))
    inputs = {"model": spec.id, "tp": tp, "prefix": prefix, "own": own, "requests": requests,
              "block": block}
    return {"inputs": inputs, **record}


def model_coefficients(config: DecodeConfig) -> dict:
    """Experiment 8's a and c from experiment 1's model: ``2·N_lin/peak(p)``,
    ``4·L·H·h/peak(bf16)``; for a mixture of experts ``N_lin`` is the active linear weights
    (``k`` experts per token) and an MLA model's pair costs its absorbed-form FLOPs
    (:func:`lab.models.kv_shapes.attention_flops_per_pair`), as in experiment 1's step."""
    model, gpu = prepare(config.with_(context=1, tp=1))
    n_lin = int(by_kind(model, lambda: linear_params(model), lambda: active_linear_params(model)))
    flops_token = by_kind(model, lambda: linear_flops_per_token(model), lambda: 2.0 * n_lin)
    flops_pair = attention_flops_per_pair(model)
    return {"model": model.id, "gpu": gpu.id, "precision": config.precision,
            "linear_params": n_lin,
            "a_s": float(flops_token / peak_flops(gpu, config.precision)),
            "c_s": float(flops_pair / bf16_peak_flops(gpu)), "spec": model}


def calc_context(tokens: int = CONTEXT_DEFAULTS["tokens"], a_ms: float | None = None,
                 c_ms: float | None = None, window: int | None = None,
                 from_model: DecodeConfig | None = None) -> dict:
    """Experiment 8: pairs, T(n), its parts, the doubling ratio and the crossover n*.

    ``a_ms`` (ms per token) and ``c_ms`` (ms per pair) default to synthetic values; with
    ``from_model`` they are derived from a model and GPU instead (giving both is an error).
    A model with sliding-window or chunked layers counts each layer's own pairs
    (:func:`lab.models.context_growth.attention_pairs`): ``pairs`` is then their mean over
    the layers (a float) and the record adds ``layer_pairs`` and ``layer_pairs_doubled``
    (exact integers, pairs × layers), ``layers`` and ``layer_mix``; such a model refuses
    ``window``.
    """
    check_range("tokens", tokens, 1, MAX_TOKENS_CONTEXT)
    if window is not None:
        check_range("window", window, 1, MAX_TOKENS_CONTEXT, unit="tokens")
    coefficients = None
    model = None
    if from_model is not None:
        if a_ms is not None or c_ms is not None:
            raise LabInputError("Give either --a-ms/--c-ms or --from-model, not both.")
        coefficients = model_coefficients(from_model)
        model = coefficients.pop("spec")
        a_s, c_s = coefficients["a_s"], coefficients["c_s"]
        if not has_local_layers(model):
            model = None
        elif window is not None:
            raise LabInputError(f"{model.name} has its own layer kinds ({layer_mix(model)}); "
                                "give no --window with it.")
    else:
        a_ms = CONTEXT_DEFAULTS["a_ms"] if a_ms is None else a_ms
        c_ms = CONTEXT_DEFAULTS["c_ms"] if c_ms is None else c_ms
        _check_ms("a", a_ms)
        _check_ms("c", c_ms, positive=True, smallest=MIN_PAIR_COST_MS)
        a_s, c_s = a_ms * MS, c_ms * MS
    record = _python(context_metrics(int(tokens), a_s, c_s,
                                     None if window is None else int(window), model))
    if model is None:
        record["pairs"] = int(record["pairs"])
        record["pairs_doubled"] = int(record["pairs_doubled"])
    else:
        record["layer_pairs"] = int(layer_pairs(model, int(tokens)))
        record["layer_pairs_doubled"] = int(layer_pairs(model, 2 * int(tokens)))
        record["layer_mix"] = layer_mix(model)
        record["layers"] = int(model.layers)
    inputs = {"tokens": int(tokens), "a_s": a_s, "c_s": c_s, "window": window,
              "coefficients": "model" if coefficients else "synthetic"}
    return {"inputs": inputs, **record, "coefficients": coefficients}


def simulation_inputs(decode: DecodeConfig, model, gpu) -> DecodeInputs:
    """:func:`~lab.models.goodput.simulate`'s decode and memory inputs from a decode
    configuration and its resolved model and GPU, converted as the CLI converts them."""
    return decode.decode_inputs(model, gpu)


def check_goodput_inputs(trace, model, gpu, decode: DecodeConfig, c0_ms: float, c1_ms: float,
                         memory_check: bool) -> None:
    """Raise :class:`LabInputError` for a goodput run that cannot be served as asked: no prefill
    cost at all, a request longer than the model's context, or (with the memory check) weights
    that leave no room for any KV cache."""
    if c0_ms == 0 and c1_ms == 0:
        raise LabInputError("c0 and c1 cannot both be 0 ms: prefill would take no time.")
    longest = int(np.argmax(trace.prompt_tokens + trace.output_tokens))
    final = int(trace.prompt_tokens[longest] + trace.output_tokens[longest])
    if final > model.max_context:
        raise LabInputError(f"Request {trace.request_id(longest)} reaches {final:,} tokens, beyond "
                            f"{model.name}'s maximum context of {model.max_context:,}.")
    inputs = simulation_inputs(decode, model, gpu)
    if memory_check and kv_free_bytes(model, gpu, tp=decode.tp, precision=decode.precision,
                                      budget_fraction=inputs.budget_fraction,
                                      reserve_bytes=inputs.reserve_bytes) <= 0:
        raise LabInputError(f"The weights of {model.name} alone do not fit the memory budget "
                            f"at tp {decode.tp}, so the memory check admits nothing.")


def calc_goodput(trace: str | Path = DEFAULT_TRACE, batch_cap: int = GOODPUT_DEFAULTS["batch_cap"],
                 ttft_ms: float = GOODPUT_DEFAULTS["ttft_ms"],
                 tpot_ms: float = GOODPUT_DEFAULTS["tpot_ms"],
                 c0_ms: float = GOODPUT_DEFAULTS["c0_ms"], c1_ms: float = GOODPUT_DEFAULTS["c1_ms"],
                 memory_check: bool = False,
                 decode: DecodeConfig | None = None, with_requests: bool = False) -> dict:
    """Experiment 7: serve a trace under the batching model and score it against the contract.

    ``decode`` supplies model, GPU, tp, precision and the memory inputs (its batch and context
    are not used: the batch is whatever is decoding). ``with_requests`` adds
    ``per_request`` records (``ttft_s``, ``tpot_s``, ``good``…). A model with sliding-window
    or chunked layers is simulated layer kind by layer kind and adds ``layer_mix``.
    """
    decode = decode or DecodeConfig()
    check_range("batch cap", batch_cap, 1, MAX_BATCH, unit="requests")
    _check_ms("TTFT limit", ttft_ms, positive=True, smallest=MIN_LIMIT_MS)
    _check_ms("TPOT limit", tpot_ms, positive=True, smallest=MIN_LIMIT_MS)
    _check_ms("c0", c0_ms)
    _check_ms("c1", c1_ms)
    model, gpu = prepare(decode.with_(context=1))
    loaded = load_trace(trace)
    check_goodput_inputs(loaded, model, gpu, decode, c0_ms, c1_ms, memory_check)
    sim = simulate(loaded, simulation_inputs(decode, model, gpu), batch_cap,
                   c0_ms * MS, c1_ms * MS, memory_check=memory_check)
    record = goodput_metrics(sim, ttft_ms * MS, tpot_ms * MS)
    inputs = {"trace": str(trace), "batch_cap": batch_cap, "ttft_limit_s": ttft_ms * MS,
              "tpot_limit_s": tpot_ms * MS, "c0_s": c0_ms * MS, "c1_s": c1_ms * MS,
              "memory_check": memory_check, "model": model.id, "gpu": gpu.id, "tp": decode.tp,
              "precision": decode.precision, "budget": decode.budget,
              "reserve_bytes": decode.reserve_gb * GB, "page": decode.page,
              "kv_precision": decode.kv_precision}
    result = {"inputs": inputs, **record, "kv_free_bytes": sim.kv_free_bytes,
              "first_arrival_s": float(loaded.arrival_s[0]), "trace_note": loaded.note}
    if has_local_layers(model):
        result["layer_mix"] = layer_mix(model)
    if with_requests:
        result["per_request"] = per_request(sim, ttft_ms * MS, tpot_ms * MS)
    return result
