"""Which served rows the lab can model, and each modelled row's floors and gap-term bases.

Nothing here is a new formula: every time comes from :mod:`lab.models` (docs/model.md §11):

- TPOT floor: one ideal decode step (:func:`lab.models.decode_step.decode_step`, experiment 1)
  of the decode batch at the mid-request context ``S = isl + osl/2`` on the decode pool's tp;
- TTFT floor: one request's prefill alone: the linear phase over ``isl`` tokens
  (:func:`~lab.models.decode_step.linear_phase` with ``batch = isl``) plus the compute of its
  ``isl(isl+1)/2`` causal attention pairs (:func:`~lab.models.decode_step.attention_phase`,
  :func:`lab.models.context_growth.dense_pairs`, experiment 8);
- the all-reduce term: :func:`lab.models.parallel.allreduce_time` (experiment 3's extension);
- the interleaved-prefill basis: an aggregated engine finishes ``B/osl`` requests per decode
  step in steady state and admits as many new prompts, each prefilled in a forward pass of its
  own: ``B/osl`` times one request's ideal prefill (the TTFT floor, whose linear phase reads
  every weight the pass touches), 0 when disaggregated;
- whether the row states its decode batch: a disaggregated row whose listed decode pools
  (``decode_batch × decode_workers``) do not hold every client leaves the batch per decode
  worker to be inferred (:func:`decode_batch`), an upper bound; its floor has a coefficient of
  its own (``k_inferred``, :mod:`lab.served.gap`);
- the chunk basis (aggregated): ``⌈isl / PREFILL_CHUNK⌉`` decode steps of the running batch
  (TPOT floor + communication), the steps a chunked prompt rides before its first token;
- the slots basis (disaggregated, batch inferred): when the clients outnumber the sequences
  the listed decode pools hold (``c > workers · B``, ``B`` capped at what fits), they take
  turns: ``ln(c / (workers · B)) · TPOT floor``, a further step of the capped batch per token
  for each e-fold of clients beyond the slots, 0 when every client has a slot.

A row the lab cannot model exactly keeps NaN floors and a ``reason``; nothing is guessed.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import numpy as np
import xarray as xr

from lab.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from lab.catalog.entries import ModelSpec
from lab.catalog.moe_spec import MoESpec
from lab.models.attention_dp import (
    layout_all_to_all_time,
    layout_allreduce_time,
    layout_step_time,
)
from lab.models.decode_step import attention_phase, linear_phase
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import layer_pairs
from lab.models.memory import memory_fit, sequence_capacity
from lab.models.weight_formats import EXPERT_ONLY_FORMATS, FORMAT_NAMES, FP4_FORMATS

GPU_OF_SYSTEM = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200",
                 "b300_sxm": "b300", "gb200": "gb200", "gb300": "gb300"}
"""The CSV's ``system`` → the lab's GPU id (a user's file may also name a catalog id)."""
MODEL_OF_PATH = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "nvidia/Llama-3.1-8B-Instruct-NVFP4": "llama-3.1-8b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-v3",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
}
"""The CSV's checkpoint → the lab's model id (DeepSeek-R1 and V3.1 have V3's shape)."""
MODEL_OF_PATH.update({"openai/gpt-oss-120b": "gpt-oss-120b", "moonshotai/Kimi-K2.5": "kimi-k2.5"})
SHIPPED_FORMATS = {"gpt-oss-120b": "mxfp4-experts", "kimi-k2.5": "int4-experts"}
"""Models whose checkpoint ships one format for the routed experts and BF16 for the rest:
every gpt-oss row runs openai/gpt-oss-120b as it ships (the rows' ``fp4``/``nvfp4`` label is
the experts' 4-bit format, which is MXFP4), and a Kimi-K2.5 row listed ``int4`` runs
moonshotai/Kimi-K2.5 as it ships (its NVFP4 rows are modelled NVFP4 throughout, as the
DeepSeek NVFP4 checkpoints are)."""
REFUSED_MODELS = {
    "Qwen/Qwen3.5-397B-A17B": "hybrid Gated DeltaNet linear attention, which the lab does not "
                              "model",
    "zhipuai/GLM-5": "DeepSeek sparse attention (an indexer picks the keys), which the lab does "
                     "not model",
}
"""Checkpoints the lab refuses, with the reason."""
FP8_FORMATS = ("fp8", "fp8_block")
"""Listed formats the lab models as FP8 weights (one byte each, the FP8 peak)."""

FLOOR_UNITS = {
    "gpu": ("the lab's GPU (empty: not modelled)", ""),
    "precision": ("weight precision the floors use", ""),
    "modelled": ("the lab models this row exactly", ""),
    "reason": ("why the row is not modelled (empty when it is)", ""),
    "context_mid": ("mid-request context isl + osl/2", "tokens"),
    "fits_bf16_kv": ("the decode batch at isl + osl tokens fits in memory with a 2-byte KV cache", ""),
    "tpot_floor_ms": ("TPOT floor: one ideal decode step", "ms"),
    "step_one_ms": ("one ideal decode step of one sequence per attention rank (the basis of "
                    "the step's excess over its floor)", "ms"),
    "ttft_floor_ms": ("TTFT floor: one request's ideal prefill (its attention on one "
                      "attention-DP rank)", "ms"),
    "queue_prefill_ms": ("one queued prompt's ideal prefill, its attention spread over the "
                         "attention-DP ranks (the queue's basis)", "ms"),
    "kv_precision_floor": ("KV-cache precision the TPOT floor reads (fp8 when the batch does "
                           "not fit at 2 bytes)", ""),
    "layers": ("the model's layers (the per-layer fixed time's basis)", "layers"),
    "moe_layers": ("the model's MoE layers (the per-MoE-layer fixed time's basis; 0 dense)",
                   "layers"),
    "chunk_basis_ms": ("⌈isl / chunk⌉ decode steps of the running batch (TPOT floor + "
                       "communication) a chunked prompt rides (agg; 0 disagg)", "ms"),
    "slots_basis_ms": ("ln(c / (workers · B)) · TPOT floor: a further step per e-fold of "
                       "clients beyond the listed decode pools' slots, who take turns "
                       "(disagg, batch inferred; else 0)", "ms"),
    "batch_floor": ("decode batch the floors use: one decode worker's sequences in steady "
                    "state", "sequences"),
    "tpot_term_allreduce_ms": ("tensor-parallel all-reduces and expert-parallel all-to-all "
                               "per decode step", "ms"),
    "prefill_step_basis_ms": ("ideal time of the prefills interleaved per decode step: "
                              "B/osl prompts, each one request's ideal prefill (agg; 0 disagg)",
                              "ms"),
    "batch_stated": ("the row states its decode batch (agg: the concurrency; disagg: the "
                     "listed decode pools hold every client, concurrency ≤ decode batch × "
                     "decode workers); else the batch per decode worker is inferred", ""),
}
"""``(long_name, units)`` of every variable :func:`add_floors` adds."""


PREFILL_CHUNK = 2048
"""Prompt tokens one chunk of chunked prefill carries (vLLM's default ``max_num_batched_tokens``
for online serving; TTFT's chunk term, docs/model.md §11): out of sample 2,048 predicted TTFT
best of 512–8,192 over the shipped rows (docs/model.md §11)."""


def catalog_model_id(path: str) -> str:
    """The catalog id of a row's checkpoint ``path`` (a ``model_path`` cell; ``""``: not in
    the catalog). A user's file may name a catalog id; a value that looks like a path is never
    opened (an uploaded table's cells are untrusted, and get_model would read a config file
    from the server's disk)."""
    if path in MODEL_OF_PATH:
        return MODEL_OF_PATH[path]
    return path if isinstance(path, str) and path in model_catalog() else ""


CHECKPOINT_SUFFIXES = frozenset({"instruct", "chat", "base", "hf", "it", "fp8", "fp4",
                                  "nvfp4", "mxfp4", "awq", "gptq", "int4", "int8", "bf16"})
"""Words of a checkpoint's name that mark a tuning or a quantisation of a base model, not its
shape (dropped when :func:`catalog_model_like` compares names)."""


def _shape_words(name: str) -> str:
    """``name`` without its owner, its tuning and quantisation words, dates (four digits) and
    a leading ``meta``: ``meta-llama/Meta-Llama-3.1-70B-Instruct`` → ``llama-3.1-70b``."""
    words = re.split(r"[-_\s]+", name.rsplit("/", 1)[-1].lower())
    kept = [w for w in words if w and w not in CHECKPOINT_SUFFIXES and not re.fullmatch(
        r"\d{4}", w)]
    return "-".join(kept[1:] if kept[:1] == ["meta"] else kept)


@cache
def _catalog_shapes() -> dict[str, str]:
    """Shape words (:func:`_shape_words`) of every catalog model's id and name → its id (the
    first model in catalog order, as a search would find it)."""
    shapes: dict[str, str] = {}
    for model_id, spec in model_catalog().items():
        for words in (_shape_words(model_id), _shape_words(spec.name)):
            shapes.setdefault(words, model_id)
    return shapes


@lru_cache(maxsize=4096)
def catalog_model_like(path: str) -> str:
    """The catalog id whose id or name reads as ``path`` once tuning and quantisation words
    are dropped (``meta-llama/Llama-3.1-70B-Instruct`` → ``llama-3.1-70b``), else ``""``: a
    suggestion for a refusal's sentence, never a silent reading (an instruct or quantised
    checkpoint may differ from the catalog's in ways the name does not say). One lookup per
    path: a file of 100,000 rows of an unknown checkpoint asks once per row."""
    if not isinstance(path, str) or not path.strip():
        return ""
    return _catalog_shapes().get(_shape_words(path), "")


def unknown_model_sentence(path: str, nor: str = "") -> str:
    """The words after "The" for a ``model_path`` not in the catalog (``nor``: what else it
    is not, e.g. `` nor the config.json's (acme/Tiny)``), and the catalog id it may mean:
    ``model X is not in the lab's catalog; if it is the catalog's Llama 3.1 70B, write
    llama-3.1-70b``."""
    like = catalog_model_like(path)
    hint = (f"; if it is the catalog's {model_catalog()[like].name}, write {like}"
            if like else "")
    return f"model {path} is not in the lab's catalog{nor}{hint}"


_model_id = catalog_model_id
"""The former private name of :func:`catalog_model_id` (kept for existing callers)."""


def catalog_gpu_id(system: str) -> str:
    """The catalog id of a row's ``system`` cell (``""``: not in the catalog), never a file
    read."""
    if system in GPU_OF_SYSTEM:
        return GPU_OF_SYSTEM[system]
    return system if isinstance(system, str) and system in gpu_catalog() else ""


_gpu_id = catalog_gpu_id
"""The former private name of :func:`catalog_gpu_id` (kept for existing callers)."""


def precision_of(listed: str, gemm: str, moe_quant: str, model_path: str) -> str:
    """The weight precision the lab models for a row: ``bf16``, ``fp8``, ``nvfp4``,
    ``mxfp4``, a model's shipped mixed format (:data:`SHIPPED_FORMATS`), or the unmodelled
    format as listed. An empty precision is the checkpoint's own: FP8 when the checkpoint's
    name says so, else BF16."""
    formats = {f for f in (listed, gemm, moe_quant) if f}
    shipped = SHIPPED_FORMATS.get(MODEL_OF_PATH.get(model_path, ""), "")
    if shipped == "mxfp4-experts" or (shipped and formats and all(
            f.startswith("int4") for f in formats)):
        return shipped
    if not formats:
        return "fp8" if "fp8" in model_path.lower() else "bf16"
    if formats <= {"bf16", "fp16"}:
        return "bf16"
    if formats <= {"fp8", *FP8_FORMATS}:
        return "fp8"
    if formats <= {"fp4", "nvfp4"}:
        return "nvfp4"  # the rows' FP4 is NVIDIA's NVFP4 (lab.models.weight_formats)
    if formats <= {"fp4", "mxfp4"}:
        return "mxfp4"
    return next(f for f in (listed, gemm, moe_quant) if f and f not in ("fp8", *FP8_FORMATS))


def reason_for(row: dict, model_id: str, gpu_id: str, precision: str,
               model: ModelSpec | None = None) -> str:
    """Why the lab cannot model ``row`` exactly, or ``""`` when it can (``model``: the spec of
    ``model_id`` when the caller holds it, e.g. a model read from an uploaded file)."""
    path = row["model_path"]
    if path in REFUSED_MODELS:
        return REFUSED_MODELS[path]
    if not model_id:
        return unknown_model_sentence(path)
    if not gpu_id:
        return f"GPU {row['system']} is not in the lab's catalog"
    if precision in FP4_FORMATS and not get_gpu(gpu_id).has_fp4:
        return (f"{FORMAT_NAMES[precision]} weights on the {get_gpu(gpu_id).name}, a GPU without "
                "an FP4 peak")
    if precision == "fp8" and not get_gpu(gpu_id).has_fp8:  # its floor would be undefined
        return f"FP8 weights on the {get_gpu(gpu_id).name}, a GPU without an FP8 peak"
    if precision not in ("bf16", "fp8", *FP4_FORMATS, *EXPERT_ONLY_FORMATS):
        return f"weight format {precision} is not modelled"
    if row["concurrency"] < 1:
        return "the row does not state its concurrency"
    if row["pp"] > 1 or row["prefill_pp"] > 1:
        return "pipeline parallelism is not modelled"
    model = get_model(model_id) if model is None else model
    parallel = max(row["moe_ep"], row["prefill_moe_ep"], row["attention_dp"],
                   row["prefill_attention_dp"])
    if parallel > 1 and not isinstance(model, MoESpec):
        return ("expert parallelism or attention data parallelism of a dense model is not "
                "modelled")
    if max(row["moe_ep"], row["prefill_moe_ep"]) > 1 and not get_gpu(gpu_id).interconnect_bw:
        return f"expert parallelism needs {gpu_id}'s interconnect bandwidth, which is unknown"
    if not isinstance(model, MoESpec) or not model.kv_lora_rank:  # GQA: KV heads split by tp
        for tp in {row["tp"], row["prefill_tp"]}:
            if model.kv_heads % tp:
                return (f"tp {tp} does not divide the {model.kv_heads} KV heads (replicated KV "
                        "heads are not modelled)")
    return ""


def row_floors(model, gpu, precision: str, rows: list[dict]) -> dict:
    """Floors and term bases of ``rows`` (experiment 11's row dicts) of one model, GPU and
    weight precision: arrays, one value per row, times in ms (``*_ms``; ``context_mid`` in
    tokens, ``batch_floor`` in sequences, ``fits_bf16_kv`` and ``batch_stated`` booleans).

    A worker of ``tp · dp`` GPUs (attention data parallelism ``dp``, expert parallelism
    ``moe_ep``) is :mod:`lab.models.attention_dp`'s layout; the floor reads the KV cache at
    2 bytes when the batch fits at 2 bytes, else at 1 byte (the FP8 KV cache the engine must
    have used)."""
    col = lambda name: np.array([r[name] for r in rows], dtype=np.int64)  # noqa: E731
    tp, dp, moe_ep = col("tp"), col("attention_dp"), col("moe_ep")
    prefill_tp, prefill_dp = col("prefill_tp"), col("prefill_attention_dp")
    isl, osl = col("isl"), col("osl")
    agg = np.array([r["mode"] == "agg" for r in rows])
    context = isl + osl / 2.0
    ep = dp if np.any(dp > 1) else 1
    inputs = DecodeInputs(model=model, gpu=gpu, tp=tp, precision=precision, batch=1,
                          context=isl + osl, ep=ep)  # the last token's KV must fit too
    room = sequence_capacity(inputs.with_(kv_precision="fp8"))["max_sequences"]
    batch = decode_batch(col("decode_batch"), col("concurrency"), col("decode_workers"), room)
    inputs = inputs.with_(batch=batch)
    fits = np.asarray(memory_fit(inputs)["fits"], dtype=bool)
    mid = inputs.with_(context=context)
    step = np.where(fits, layout_step_time(mid, dp),
                    layout_step_time(mid.with_(kv_precision="fp8"), dp))
    step_one = one_sequence_step(inputs, dp, context)
    prefill = _prefill_compute(model, gpu, precision, prefill_tp, prefill_dp, isl, 1.0)
    # one request alone: its attention runs on the one attention-DP rank that holds it; the
    # prompts queued or interleaved spread over the ranks
    ttft_floor, queue_prefill = _prefill_times(model, gpu, precision, prefill_tp, prefill_dp, isl)
    # aggregated (one pool: prefill_tp = tp): B/osl prompts per decode step, each a prefill
    # pass of its own that reads the weights it touches, as one request's ideal prefill
    interleaved = np.where(agg, batch / osl * queue_prefill, 0.0)
    communication = (layout_allreduce_time(model, gpu, batch, tp, dp)
                     + layout_all_to_all_time(model, gpu, batch, tp, dp, moe_ep))
    chunks = np.where(agg, np.ceil(isl / PREFILL_CHUNK), 0.0)
    stated = batch_stated(col("concurrency"), col("decode_batch"), col("decode_workers"))
    slots = slots_excess(col("concurrency"), col("decode_workers"), batch, agg | stated)
    return {"tpot_floor_ms": step * 1e3, "ttft_floor_ms": ttft_floor * 1e3,
            "step_one_ms": step_one * 1e3, "queue_prefill_ms": queue_prefill * 1e3,
            "chunk_basis_ms": chunks * (step + communication) * 1e3,
            "moe_layers": np.full(len(rows), float(getattr(model, "moe_layers", 0) or 0)),
            "tpot_term_allreduce_ms": communication * 1e3,
            "prefill_step_basis_ms": interleaved * 1e3, "context_mid": context,
            "fits_bf16_kv": fits, "kv_precision_floor": np.where(fits, "bf16", "fp8"),
            "slots_basis_ms": slots * step * 1e3, "batch_stated": stated,
            "layers": np.full(len(rows), float(model.layers)), "batch_floor": batch,
            "_prefill_compute_ms": prefill * 1e3}


_floors = row_floors
"""The former private name of :func:`row_floors` (kept for existing callers)."""


def one_sequence_step(inputs: DecodeInputs, dp, context) -> np.ndarray:
    """One ideal decode step of the worker with one sequence per attention rank (``dp``
    sequences) at ``context`` tokens (s): the weights one token per rank touches and one
    sequence's KV cache per rank, read at 2 bytes when that batch fits, else 1. The basis of
    the decode step's excess over its floor (``k_step_one``, docs/model.md §11): what an engine
    loses beyond the roofline scales with this latency-bound step, not with the batch's
    extra KV reads and FLOPs."""
    one = inputs.with_(batch=np.maximum(np.asarray(dp, dtype=np.int64), 1))
    fits = np.asarray(memory_fit(one)["fits"], dtype=bool)
    mid = one.with_(context=context)
    return np.where(fits, layout_step_time(mid, dp),
                    layout_step_time(mid.with_(kv_precision="fp8"), dp))


def decode_batch(listed, concurrency, workers, room) -> np.ndarray:
    """Sequences one decode worker holds in steady state (sequences): the concurrency spread
    over the decode workers (every client decodes but the few in prefill), no more than fit
    at a 1-byte KV cache (``room``), and at least the batch the row lists
    (``decode_batch_size`` × its attention-DP ranks; agg: the concurrency)."""
    share = np.minimum(np.ceil(concurrency / workers), np.maximum(room, 1))
    return np.maximum(listed, share).astype(np.int64)


def slots_excess(concurrency, workers, batch, stated) -> np.ndarray:
    """Further decode steps a client waits per token (dimensionless) when the clients outnumber
    the listed decode pools' slots: ``ln(c / (workers · B))`` where ``c > workers · B`` (one
    step per e-fold of oversubscription), else 0; ``B`` the batch per decode worker
    (sequences, capped at what fits, :func:`decode_batch`); 0 where ``stated`` (agg, or the
    listed pools hold every client). Logarithmic, not ``c / (workers · B) − 1`` (a closed
    loop's full turn-taking): the pools that ran grew with the clients, and the linear wait
    let rows listing one slot for 15,000 clients pull ``k_slots`` to 0 (docs/model.md §11)."""
    held = np.asarray(workers, dtype=float) * np.maximum(np.asarray(batch, dtype=float), 1.0)
    excess = np.log(np.maximum(np.asarray(concurrency, dtype=float) / held, 1.0))
    return np.where(np.asarray(stated, dtype=bool), 0.0, excess)


def batch_stated(concurrency, listed, workers) -> np.ndarray:
    """Whether the listed decode pools hold every client, ``concurrency ≤ listed · workers``
    (``listed``: one decode worker's batch over its attention-DP ranks; agg: the concurrency
    itself, one worker): then the floor's batch is the row's own; else :func:`decode_batch`
    infers it from the concurrency (the row leaves its decode workers unstated)."""
    return np.asarray(concurrency) <= np.asarray(listed) * np.asarray(workers)


def _pairs(model, isl) -> np.ndarray:
    """Causal (query, key) pairs of one prompt per layer, each layer kind's mask counted
    (:func:`lab.models.layer_kinds.layer_pairs` over ``L``; ``isl(isl+1)/2`` when every
    layer is full)."""
    return layer_pairs(model, isl) / model.layers


def _prefill_times(model, gpu, precision: str, tp, dp, isl) -> tuple[np.ndarray, np.ndarray]:
    """A prompt's ideal prefill (s), twice: the linear phase over ``isl`` tokens on a ``tp · dp``
    layout plus the compute of its attention pairs — on the one attention-DP rank (``tp`` GPUs)
    that holds the request (one request alone: its attention cannot spread over the other
    ranks), then spread over every rank (prompts queued or interleaved, one per rank)."""
    ep = dp if np.any(dp > 1) else 1
    linear = linear_phase(model, gpu, tp=tp, precision=precision, batch=isl, ep=ep)["linear_time_s"]
    attention = attention_phase(model, gpu, tp=tp,
                                kv_tokens=_pairs(model, isl))["attention_compute_time_s"]
    return linear + attention, linear + attention / dp



def _prefill_compute(model, gpu, precision: str, tp, dp, isl, prompts) -> np.ndarray:
    """Compute time of ``prompts`` prompts of ``isl`` tokens: linear FLOPs of ``prompts·isl``
    tokens plus their causal attention pairs, each at its dense peak, on a ``tp · dp``
    layout (s)."""
    ep = dp if np.any(dp > 1) else 1
    linear = linear_phase(model, gpu, tp=tp, precision=precision, batch=prompts * isl, ep=ep)
    attention = attention_phase(model, gpu, tp=tp, kv_tokens=prompts * _pairs(model, isl) / dp)
    return linear["linear_compute_time_s"] + attention["attention_compute_time_s"]


def add_floors(table: xr.Dataset) -> xr.Dataset:
    """``table`` (:mod:`lab.served.served_loader`) with every variable of :data:`FLOOR_UNITS`."""
    n = table.sizes["row"]
    columns = {k: table[k].values.tolist() for k in table.variables if table[k].dims == ("row",)}
    rows = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(),
                                                                         strict=True)]
    out = {"model_id": np.full(n, "", dtype=object), "gpu": np.full(n, "", dtype=object),
           "precision": np.full(n, "", dtype=object), "reason": np.full(n, "", dtype=object)}
    for name in ("tpot_floor_ms", "step_one_ms", "ttft_floor_ms", "queue_prefill_ms",
                 "tpot_term_allreduce_ms",
                 "prefill_step_basis_ms", "context_mid", "layers", "moe_layers",
                 "chunk_basis_ms", "slots_basis_ms", "batch_floor",
                 "_prefill_compute_ms"):
        out[name] = np.full(n, np.nan)
    out["kv_precision_floor"] = np.full(n, "", dtype=object)
    out["fits_bf16_kv"] = np.zeros(n, dtype=bool)
    out["batch_stated"] = np.zeros(n, dtype=bool)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        model_id, gpu_id = _model_id(r["model_path"]), _gpu_id(r["system"])
        precision = precision_of(r["precision_listed"], r["gemm_quant"], r["moe_quant"],
                                 r["model_path"])
        reason = reason_for(r, model_id, gpu_id, precision)
        out["model_id"][i], out["gpu"][i] = model_id, gpu_id
        out["precision"][i], out["reason"][i] = precision, reason
        if not reason:
            groups.setdefault((model_id, gpu_id, precision), []).append(i)
    for (model_id, gpu_id, precision), index in groups.items():
        values = _floors(get_model(model_id), get_gpu(gpu_id), precision,
                         [rows[i] for i in index])
        for name, array in values.items():
            out[name][index] = array
    out["modelled"] = out["reason"] == ""
    result = table.copy()
    for name, array in out.items():
        if name.startswith("_") or name == "model_id":
            continue
        long_name, units = FLOOR_UNITS[name]
        attrs = {"long_name": long_name, **({"units": units} if units else {})}
        values = array.astype(str) if array.dtype == object else array
        result[name] = ("row", values, attrs)
    result["prefill_alone_ms"] = ("row", out["_prefill_compute_ms"],
                                  {"long_name": "ideal compute time of one request's prefill",
                                   "units": "ms"})
    model = np.where(out["model_id"] == "", table["model_path"].values, out["model_id"])
    return result.set_coords(["gpu", "precision"]).assign_coords(
        model=("row", model.astype(str), {"long_name": "the lab's model id (else the checkpoint)"}))

