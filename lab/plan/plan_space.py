"""Experiment 12's configuration space and the served prediction of every configuration.

A configuration is one row in the shape of experiment 11's table (:mod:`lab.served.served_loader`):
engine, model, GPU, mode (``agg``: one worker prefills and decodes; ``disagg``: ``prefill_workers``
prefill workers and ``decode_workers`` decode workers, each worker the same layout), tensor
parallelism ``tp``, attention data parallelism ``dp`` and expert parallelism ``ep`` of a worker,
weight precision, concurrency and workload (isl/osl). Its floors come from
:mod:`lab.served.served_floors` and its prediction from experiment 11's design and coefficients
(:mod:`lab.plan.plan_calibration`), so a configuration that is a measured row is predicted
exactly as ``calc served`` predicts it. ``ideal`` is the floor itself; an engine × GPU × mode with
no measured row is predicted from the floor too, and marked uncalibrated.

Throughput: ``tokens_per_s_gpu = c · osl / (TTFT + (osl − 1) · TPOT) / GPUs`` (each of ``c``
clients receives ``osl`` tokens per request), ``tokens_per_s_user = 1000 / TPOT (ms)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from lab.catalog import get_gpu, get_model
from lab.catalog.entries import ModelSpec
from lab.catalog.moe_spec import MoESpec
from lab.errors import LabInputError, shown
from lab.limits import MAX_CONTEXT
from lab.models.inputs import DecodeInputs
from lab.models.memory import sequence_capacity
from lab.plan.plan_calibration import config_keys
from lab.served.served_calc import group_key, term_designs
from lab.served.served_floors import (
    catalog_model_id,
    precision_of,
    reason_for,
    row_floors,
)
from lab.units import GB

ENGINES = ("trtllm", "vllm", "sglang", "ideal")
"""Engines a plan predicts; ``ideal`` is the lab's floor."""
IDEAL = "ideal"
ENGINE_NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang",
                IDEAL: "Ideal (the lab's floor)"}
"""How an engine's id is written for a reader: each project's own spelling, and the lab's
floor as such (pages, derivations)."""
FLOOR_NAMES = ("tpot_floor_ms", "ttft_floor_ms", "tpot_term_allreduce_ms",
               "prefill_step_basis_ms", "layers", "batch_floor", "batch_stated", "step_one_ms",
               "queue_prefill_ms")
"""Floor variables every plan carries (NaN where the configuration is refused)."""
MODES = ("agg", "disagg")
PRECISIONS = ("bf16", "fp8", "nvfp4")
"""Weight precisions a plan tries (a model that ships one format tries that one)."""
CONCURRENCIES = tuple(2 ** k for k in range(11))
"""Clients in flight tried: 1 … 1,024, powers of two."""
DISAGG_WORKERS = ((1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 4), (1, 6), (1, 8))
"""(prefill workers, decode workers) of the disaggregated layouts tried."""
WORKLOADS = ((1024, 1024), (8192, 1024), (1024, 8192))
"""The three public (isl, osl) workloads (the default grid's)."""
MAX_BUDGET = 1024
"""Most GPUs a plan takes."""
MAX_WORKER_GPUS = 64
"""Most GPUs one worker (tp × dp) spans."""

UNITS = {
    "ttft_ms": ("predicted time to first token", "ms"),
    "tpot_ms": ("predicted time per output token", "ms"),
    "ttft_upper_ms": ("TTFT at the band's upper edge (conservative)", "ms"),
    "tpot_upper_ms": ("TPOT at the band's upper edge (conservative)", "ms"),
    "ttft_lower_ms": ("TTFT at the band's lower edge", "ms"),
    "tpot_lower_ms": ("TPOT at the band's lower edge", "ms"),
    "tokens_per_s_user": ("output tokens/s per user, 1000 / TPOT", "tokens/s"),
    "tokens_per_s_gpu": ("output tokens/s per GPU, c·osl / (TTFT + (osl − 1)·TPOT) / GPUs",
                         "tokens/s"),
    "tokens_per_s_gpu_conservative": ("output tokens/s per GPU at the band's upper edge",
                                      "tokens/s"),
    "gpus": ("GPUs the deployment uses", "GPUs"),
    "fits": ("weights and every decode worker's sequences fit in memory", "1"),
    "valid": ("the lab can model this configuration", "1"),
    "calibrated": ("predicted with coefficients fitted on measured rows (else the floor)", "1"),
    "tpot_floor_ms": ("TPOT floor: one ideal decode step", "ms"),
    "ttft_floor_ms": ("TTFT floor: one request's ideal prefill", "ms"),
}
"""``(long_name, units)`` of every numeric output of :func:`predict`."""


@dataclass(frozen=True)
class Layout:
    """One worker's layout: tensor, attention-data and expert parallelism."""

    tp: int
    dp: int = 1
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def label(self) -> str:
        return f"tp{self.tp}×ep{self.ep}×dp{self.dp}"


def _pow2_upto(n: int) -> list[int]:
    return [2 ** k for k in range(int(math.log2(max(n, 1))) + 1)]


def worker_layouts(model, budget: int) -> list[Layout]:
    """Every worker layout of at most ``budget`` GPUs (and :data:`MAX_WORKER_GPUS`): a dense
    model tp only; a mixture of experts also attention data parallelism, and expert
    parallelism over the whole worker or none."""
    out = []
    for n in _pow2_upto(min(budget, MAX_WORKER_GPUS)):
        if not isinstance(model, MoESpec):
            out.append(Layout(n))
            continue
        for dp in _pow2_upto(n):
            for ep in dict.fromkeys((1, n)):
                out.append(Layout(n // dp, dp, ep))
    return out


@dataclass(frozen=True)
class PlanSpace:
    """What a plan spans: one model, GPU, budget, engine and workload."""

    model: str | ModelSpec = "llama-3.1-70b"
    gpu: str = "h200"
    budget: int = 8
    engine: str = "vllm"
    isl: int = 1024
    osl: int = 1024
    modes: tuple[str, ...] = MODES
    precisions: tuple[str, ...] = PRECISIONS
    concurrencies: tuple[int, ...] = CONCURRENCIES


def _model_path(model_id: str) -> str:
    return model_id


def model_key(model: str | ModelSpec) -> str:
    """The id a plan's rows carry for ``model``: a catalog id or ``config.json`` path as given,
    a model read from an uploaded file (:func:`lab.catalog.lookup.model_from_config_bytes`) by
    its id."""
    return model.id if isinstance(model, ModelSpec) else model


def decode_share(concurrency: int, decode_workers: int) -> int:
    """Sequences each decode worker holds when ``concurrency`` clients spread over
    ``decode_workers`` workers: ``⌈c / D⌉`` (sequences; the pool a disaggregated
    configuration lists, so ``c ≤ decode_batch · D`` and the batch is stated)."""
    return -(-int(concurrency) // max(int(decode_workers), 1))


def config_row(engine: str, model: str, gpu: str, mode: str, layout: Layout, precision: str,
               concurrency: int, isl: int, osl: int, workers: tuple[int, int] = (1, 1)) -> dict:
    """One configuration as a row of experiment 11's table (no measurements; times in ms).
    A disaggregated one lists its decode pools: ``decode_batch`` = :func:`decode_share`."""
    p, d = workers if mode == "disagg" else (1, 1)
    tag = f"p{p}d{d}" if mode == "disagg" else "agg"
    return {
        "id": f"{engine}_{model}_{gpu}_{precision}_{tag}_{layout.label}_c{concurrency}_"
              f"{isl}x{osl}",
        "engine": engine, "engine_version": "", "model_path": _model_path(model),
        "system": gpu, "mode": mode, "precision_listed": precision, "gemm_quant": "",
        "moe_quant": "", "isl": int(isl), "osl": int(osl), "concurrency": int(concurrency),
        "tp": layout.tp, "pp": 1, "attention_dp": layout.dp, "moe_ep": layout.ep,
        # agg: the one worker holds every client; disagg: the decode pools listed, each
        # worker holding its share ⌈c / D⌉ (so experiment 11 reads the batch as stated, k_step_one)
        "decode_batch": int(concurrency) if mode == "agg" else decode_share(concurrency, d),
        "decode_workers": d, "prefill_tp": layout.tp, "prefill_pp": 1,
        "prefill_attention_dp": layout.dp, "prefill_moe_ep": layout.ep, "prefill_workers": p,
        "ttft_measured_ms": math.nan, "tpot_measured_ms": math.nan,
    }


def enumerate_rows(space: PlanSpace) -> list[dict]:
    """Every configuration of ``space`` as rows (refused ones included; :func:`predict` says
    why each is refused)."""
    check_space(space)
    model = get_model(space.model)
    rows = []
    for layout in worker_layouts(model, space.budget):
        for mode in space.modes:
            worker_sets = [(1, 1)] if mode == "agg" else [
                w for w in DISAGG_WORKERS if (w[0] + w[1]) * layout.gpus <= space.budget]
            for workers in worker_sets:
                for precision in dict.fromkeys(space.precisions):
                    for c in space.concurrencies:
                        rows.append(config_row(space.engine, model_key(space.model),
                                               space.gpu, mode,
                                               layout, precision, c, space.isl, space.osl,
                                               workers))
    return rows


def check_space(space: PlanSpace) -> None:
    """One sentence for a space the lab cannot plan."""
    if space.engine not in ENGINES:
        raise LabInputError(f"Engine {shown(space.engine)} is not one of "
                            f"{', '.join(ENGINES)}.")
    if not isinstance(space.budget, int) or not 1 <= space.budget <= MAX_BUDGET:
        raise LabInputError(f"The GPU budget must be a whole number from 1 to {MAX_BUDGET:,}, "
                            f"not {shown(space.budget)}.")
    for name in ("isl", "osl"):
        value = getattr(space, name)
        if not isinstance(value, int) or not 1 <= value <= MAX_CONTEXT:
            raise LabInputError(f"{name} must be a whole number of tokens from 1 to "
                                f"{MAX_CONTEXT:,}, not {shown(value)}.")
    model = get_model(space.model)
    get_gpu(space.gpu)
    if space.isl + space.osl > model.max_context:  # it was planned (200k tokens on Llama 3.1)
        raise LabInputError(f"A request of isl + osl = {space.isl + space.osl:,} tokens exceeds "
                            f"{model.name}'s maximum context of {model.max_context:,} tokens.")


def gpus_used(mode, tp, dp, prefill_tp, prefill_dp, prefill_workers, decode_workers):
    """GPUs of a deployment: one worker (agg), or every prefill and decode worker (disagg)."""
    agg = np.asarray(mode) == "agg"
    return np.where(agg, tp * dp, prefill_workers * prefill_tp * prefill_dp
                    + decode_workers * tp * dp)


def throughput_per_gpu(concurrency, osl, ttft_ms, tpot_ms, gpus):
    """``c · osl / (TTFT + (osl − 1)·TPOT) / GPUs`` in output tokens/s per GPU."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return concurrency * osl / ((ttft_ms + (osl - 1) * tpot_ms) / 1e3) / gpus


def _refusal(row: dict, model, gpu, model_id: str, precision: str) -> str:
    """Why the lab refuses a configuration (one sentence), or ``""``."""
    if precision == "fp8" and not gpu.has_fp8:
        return f"{gpu.name} has no FP8 peak, so FP8 weights are not planned on it."
    reason = reason_for(row, model_id, gpu.id, precision, model)
    if reason:  # a sentence; a flag's name (tp 3, ep 2) keeps its case
        keep = reason.split(" ", 1)[0] in ("tp", "ep", "dp", "kv")
        return (reason if keep else reason[0].upper() + reason[1:]) + "."
    return ""


def _column(rows: list[dict], name: str, dtype=None) -> np.ndarray:
    return np.array([r[name] for r in rows], dtype=dtype)


def predict(rows: list[dict], calibration, quantile: float, model=None) -> xr.Dataset:
    """Every configuration of ``rows`` (all of one model and GPU) predicted: floors, experiment
    11's terms with ``calibration``'s coefficients, the band at ``quantile`` and throughput.

    ``model`` overrides the rows' model id (a ``config.json``'s spec). Returns a Dataset over
    ``config`` with :data:`UNITS`, the coordinates of each configuration, ``reason`` (empty
    when valid) and ``label``."""
    n = len(rows)
    model_id = (catalog_model_id(rows[0]["model_path"]) or rows[0]["model_path"]) if n else ""
    model = get_model(model_id) if model is None else model
    gpu = get_gpu(rows[0]["system"]) if n else None
    floors: dict[str, np.ndarray] = {}
    fits_bf16 = np.zeros(n, dtype=bool)
    room = np.zeros(n)
    precision = np.array([precision_of(r["precision_listed"], r["gemm_quant"], r["moe_quant"],
                                       r["model_path"]) for r in rows], dtype=object)
    reason = np.full(n, "", dtype=object)
    refusals: dict[tuple, str] = {}
    for i, r in enumerate(rows):
        key = (precision[i], r["tp"], r["attention_dp"], r["moe_ep"], r["prefill_tp"],
               r["prefill_attention_dp"], r["prefill_moe_ep"], r["concurrency"] >= 1)
        if key not in refusals:
            refusals[key] = _refusal(r, model, gpu, model_id, precision[i])
        reason[i] = refusals[key]
    ok = reason == ""
    for p in dict.fromkeys(precision[ok].tolist()):
        index = np.flatnonzero(ok & (precision == p))
        sub = [rows[i] for i in index]
        values = row_floors(model, gpu, p, sub)
        for name, array in values.items():
            array = np.asarray(array)
            if name not in floors:
                floors[name] = (np.full(n, np.nan) if array.dtype.kind in "fiu"
                                else np.zeros(n, dtype=array.dtype))
            floors[name][index] = array
        fits_bf16[index] = values["fits_bf16_kv"]
        tp, dp = _column(sub, "tp", np.int64), _column(sub, "attention_dp", np.int64)
        ep = dp if np.any(dp > 1) else 1
        context = _column(sub, "isl", np.int64) + _column(sub, "osl", np.int64)
        room[index] = sequence_capacity(DecodeInputs(
            model=model, gpu=gpu, tp=tp, precision=p, batch=1, context=context, ep=ep,
            kv_precision="fp8"))["max_sequences"]
    weights_fit = room >= 1
    for i in np.flatnonzero(ok & ~weights_fit):
        r = rows[i]
        reason[i] = (f"The weights of {model.name} at {precision[i]} do not fit on "
                     f"{r['tp'] * r['attention_dp']} × {gpu.name} "
                     f"({fmt_gb(gpu.capacity_bytes * r['tp'] * r['attention_dp'])} GB) with "
                     "room for one sequence.")
    valid = reason == ""
    col = {name: _column(rows, name) for name in (
        "engine", "mode", "tp", "attention_dp", "moe_ep", "prefill_tp", "prefill_attention_dp",
        "prefill_workers", "decode_workers", "concurrency", "isl", "osl", "prefill_moe_ep")}
    mode = col["mode"].astype(str)
    share = np.ceil(col["concurrency"] / col["decode_workers"])
    fits = valid & (share <= room)
    for name in FLOOR_NAMES:  # no valid row: the variables still exist, NaN
        floors.setdefault(name, np.full(n, np.nan))
    numbers = {k: ("row", np.array([r[k] for r in rows], dtype=float)) for k in (
        rows[0] if n else {}) if isinstance(rows[0][k], int | float) and k not in floors}
    table = xr.Dataset({**numbers, "mode": ("row", mode),
                        **{k: ("row", v) for k, v in floors.items()}})
    designs = term_designs(table) if valid.any() else {
        m: None for m in ("tpot", "ttft")}
    groups = np.array([group_key(e, gpu.id if gpu else "", m)
                       for e, m in zip(col["engine"], mode, strict=True)])
    predicted = {m: np.full(n, np.nan) for m in ("tpot", "ttft")}
    upper = {m: np.full(n, np.nan) for m in ("tpot", "ttft")}
    lower = {m: np.full(n, np.nan) for m in ("tpot", "ttft")}
    terms = {m: np.full((n, designs[m].columns.shape[1] if designs[m] else 0), np.nan)
             for m in ("tpot", "ttft")}
    calibrated = np.zeros(n, dtype=bool)
    keys = config_keys({**col, "model": np.full(n, model_id), "precision": precision,
                        "gpu": np.full(n, gpu.id if gpu else "")})
    for group in dict.fromkeys(groups[valid].tolist()):
        index = np.flatnonzero(valid & (groups == group))
        engine = col["engine"][index[0]]
        fitted = engine != IDEAL and calibration is not None and calibration.has_group(group)
        calibrated[index] = fitted
        for metric in ("tpot", "ttft"):
            floor = floors[f"{metric}_floor_ms"][index]
            if not fitted:
                predicted[metric][index] = floor
                upper[metric][index] = lower[metric][index] = floor
                continue
            d = designs[metric]
            theta = calibration.theta(group, metric)
            parts = d.columns[index] * theta
            terms[metric][index] = parts
            value = d.base[index].copy()
            for j in range(parts.shape[1]):  # experiment 11's order of summation
                value = value + np.nan_to_num(parts[:, j])
            predicted[metric][index] = value
            hi = calibration.band(group, model_id, col["concurrency"][index], metric, quantile,
                                  keys[index])
            lo = calibration.band(group, model_id, col["concurrency"][index], metric,
                                  1 - quantile, keys[index])
            upper[metric][index] = value * np.where(np.isfinite(hi), hi, 1.0)
            lower[metric][index] = value * np.where(np.isfinite(lo), lo, 1.0)
    gpus = gpus_used(mode, col["tp"], col["attention_dp"], col["prefill_tp"],
                     col["prefill_attention_dp"], col["prefill_workers"], col["decode_workers"])
    tput = throughput_per_gpu(col["concurrency"], col["osl"], predicted["ttft"],
                              predicted["tpot"], gpus)
    tput_cons = throughput_per_gpu(col["concurrency"], col["osl"], upper["ttft"],
                                   upper["tpot"], gpus)
    labels = [config_label(r, precision[i]) for i, r in enumerate(rows)]
    out = xr.Dataset(coords={"config": np.arange(n)})
    out["ttft_ms"], out["tpot_ms"] = ("config", predicted["ttft"]), ("config", predicted["tpot"])
    out["ttft_upper_ms"], out["tpot_upper_ms"] = ("config", upper["ttft"]), ("config", upper["tpot"])
    out["ttft_lower_ms"], out["tpot_lower_ms"] = ("config", lower["ttft"]), ("config", lower["tpot"])
    with np.errstate(divide="ignore", invalid="ignore"):
        out["tokens_per_s_user"] = ("config", 1e3 / predicted["tpot"])
    out["tokens_per_s_gpu"] = ("config", tput)
    out["tokens_per_s_gpu_conservative"] = ("config", tput_cons)
    out["gpus"] = ("config", gpus.astype(np.int64))
    out["fits"], out["valid"] = ("config", fits), ("config", valid)
    out["calibrated"] = ("config", calibrated)
    for name in ("tpot_floor_ms", "ttft_floor_ms", "tpot_term_allreduce_ms", "batch_floor"):
        out[name] = ("config", floors[name])
    for metric in ("tpot", "ttft"):
        for j in range(terms[metric].shape[1]):
            out[f"{metric}_fitted_term_{j + 1}_ms"] = ("config", terms[metric][:, j])
    out["kv_precision"] = ("config", np.where(fits_bf16, "bf16", "fp8").astype(str))
    out["reason"] = ("config", reason.astype(str))
    out["label"] = ("config", np.array(labels, dtype=str))
    out["precision"] = ("config", precision.astype(str))
    for name in ("engine", "mode"):
        out[name] = ("config", col[name].astype(str))
    for name in ("tp", "attention_dp", "moe_ep", "prefill_workers", "decode_workers",
                 "concurrency", "isl", "osl"):
        out[name] = ("config", col[name].astype(np.int64))
    out["id"] = ("config", np.array([r["id"] for r in rows], dtype=str))
    out["config_key"] = ("config", keys.astype(str))
    for name, (long_name, units) in UNITS.items():
        out[name].attrs.update({"long_name": long_name, "units": units})
    out.attrs.update({"quantile": quantile, "docs": "docs/model.md, Experiment 12"})
    return out


def fmt_gb(value: float) -> str:
    return f"{value / GB:,.0f}"


def config_label(r: dict, precision: str) -> str:
    """``tp4×ep1×dp1, fp8, c 64`` (agg) or ``… , 1P+2D`` (disagg)."""
    layout = Layout(r["tp"], r["attention_dp"], r["moe_ep"]).label
    workers = (f", {r['prefill_workers']}P+{r['decode_workers']}D" if r["mode"] == "disagg"
               else "")
    return f"{layout}, {precision}, c {r['concurrency']:,}{workers}"
