"""Single-point calculations of the decode family, checked and ready for JSON.

Each ``calc_*`` function resolves the model and GPU (catalog id, a ``config.json`` path or a
GPU TOML path), checks every input with a one-sentence :class:`~lab.errors.LabInputError`, and
calls :func:`~lab.models.decode_metrics.decode_metrics` — the same function the sweeps broadcast over a
grid — so a cell and a point can never disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from lab.catalog import GPUSpec, ModelSpec, get_gpu, get_model
from lab.errors import LabInputError
from lab.limits import (
    BUDGET_RANGE,
    EP_DEGREES,
    MAX_ALLREDUCE_LATENCY_US,
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_PAGE,
    MAX_RESERVE_GB,
    MAX_TP,
    TP_DEGREES,
)
from lab.models import layer_kinds
from lab.models.decode_metrics import decode_metrics
from lab.models.decode_step import WEIGHT_PRECISIONS
from lab.models.expert_parallel import UNIFORM_ROUTING
from lab.models.inputs import DecodeInputs
from lab.models.kv_shapes import KV_PRECISIONS
from lab.models.memory import (
    DEFAULT_BUDGET_FRACTION,
    DEFAULT_PAGE_TOKENS,
    DEFAULT_RESERVE_BYTES,
    full_length_kv_bytes_per_sequence,
)
from lab.models.parallel import DEFAULT_ALLREDUCE_LATENCY_S
from lab.points.validity import (
    check_decode_point,
    check_range,
    expert_layout_problem,
    explain,
)
from lab.units import GB, US, US_PER_S


def memory_options(budget: float, reserve_gb: float, page: int) -> dict:
    """The memory fields of :class:`~lab.models.inputs.DecodeInputs` from the CLI's units
    (reserve in GB): the one conversion the CLI, the apps and the grids share."""
    return {"budget_fraction": budget, "reserve_bytes": reserve_gb * GB, "page": page}


def allreduce_options(allreduce: bool, allreduce_latency_us: float) -> dict:
    """:func:`~lab.models.decode_metrics.decode_metrics`'s all-reduce keywords from the CLI's
    units (latency in µs)."""
    return {"allreduce": allreduce, "allreduce_latency_s": allreduce_latency_us * US}


@dataclass(frozen=True)
class DecodeConfig:
    """Inputs of the decode family, in the CLI's units (GB for the reserve).

    Its defaults are the decode family's one copy (batch 8, context 8,192, …): experiments
    1–4's ``param`` inputs (:class:`lab.experiments.decode_inputs.DecodeExperiment`), and so
    their ``calc`` flags, the goodput and context experiments' model inputs and the grids'
    defaults read them from here. :class:`~lab.models.inputs.DecodeInputs`' own defaults
    (batch 1, an empty cache) are the formulas' neutral values, not an experiment's."""

    model: str | ModelSpec = "llama-3.1-8b"
    gpu: str | GPUSpec = "h100-sxm"
    tp: int = 1
    precision: str = "bf16"
    batch: int = 8
    context: int = 8192
    budget: float = DEFAULT_BUDGET_FRACTION
    reserve_gb: float = DEFAULT_RESERVE_BYTES / GB
    page: int = DEFAULT_PAGE_TOKENS
    allreduce: bool = False
    allreduce_latency_us: float = DEFAULT_ALLREDUCE_LATENCY_S * US_PER_S
    kv_precision: str = "bf16"
    ep: int = 1

    def resolved(self) -> tuple[ModelSpec, GPUSpec]:
        """The model and GPU records, loading files where paths were given."""
        return get_model(self.model), get_gpu(self.gpu)

    def check_ranges(self) -> None:
        """Raise :class:`LabInputError` for any input outside its bounds."""
        check_range("batch", self.batch, 1, MAX_BATCH, unit="sequences")
        check_range("context", self.context, 1, MAX_CONTEXT, unit="tokens")
        check_range("tp", self.tp, 1, MAX_TP)
        check_range("ep", self.ep, 1, max(EP_DEGREES))
        check_range("budget", self.budget, *BUDGET_RANGE, integer=False, unit="of capacity")
        check_range("reserve", self.reserve_gb, 0, MAX_RESERVE_GB, integer=False, unit="GB")
        check_range("page", self.page, 1, MAX_PAGE, unit="tokens")
        check_range("all-reduce latency", self.allreduce_latency_us, 0,
                    MAX_ALLREDUCE_LATENCY_US, integer=False, unit="µs")
        if self.precision not in WEIGHT_PRECISIONS:
            raise LabInputError(
                f"Precision '{self.precision}' is not one of {', '.join(WEIGHT_PRECISIONS)}."
            )
        if self.kv_precision not in KV_PRECISIONS:
            raise LabInputError(f"KV precision '{self.kv_precision}' is not one of "
                                f"{', '.join(KV_PRECISIONS)}.")

    def decode_inputs(self, model, gpu, **fields) -> DecodeInputs:
        """This configuration as :class:`~lab.models.inputs.DecodeInputs` (SI units) for the
        resolved ``model`` and ``gpu``; ``fields`` replace any of its fields (e.g. grid axes)."""
        values = {"tp": self.tp, "precision": self.precision, "batch": self.batch,
                  "context": self.context, "kv_precision": self.kv_precision, "ep": self.ep,
                  **memory_options(self.budget, self.reserve_gb, self.page)}
        values.update(fields)
        return DecodeInputs(model, gpu, **values)

    def allreduce_options(self) -> dict:
        """This configuration's all-reduce inputs as ``decode_metrics`` keywords."""
        return allreduce_options(self.allreduce, self.allreduce_latency_us)

    def with_(self, **changes) -> DecodeConfig:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


def to_python(value):
    """A numpy scalar or 0-d array as the matching Python scalar (for JSON)."""
    if isinstance(value, np.ndarray):
        value = value[()]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        return float(value)
    return value


def _metrics(config: DecodeConfig, model: ModelSpec, gpu: GPUSpec, *, tp: int,
             precision: str) -> dict:
    raw = decode_metrics(config.decode_inputs(model, gpu, tp=tp, precision=precision),
                         **config.allreduce_options())
    record = {key: to_python(value) for key, value in raw.items()}
    if config.ep > 1:
        record["uniform_routing"] = UNIFORM_ROUTING
    if record["valid"]:
        record["linear_bottleneck"] = "compute" if record["linear_compute_bound"] else "hbm"
    else:
        record["linear_bottleneck"] = None
    return record


def _inputs(config: DecodeConfig, model: ModelSpec, gpu: GPUSpec) -> dict:
    inputs = asdict(config)
    if config.ep == 1:  # no expert parallelism: the record of before ep existed, key for key
        del inputs["ep"]
    inputs["model"], inputs["gpu"] = model.id, gpu.id
    inputs["reserve_bytes"] = config.reserve_gb * GB
    return inputs


def check_expert_layout(model, gpu, tp: int, ep: int, precision: str) -> None:
    """Raise :class:`LabInputError` with one sentence if the ``ep × tp`` layout or an
    expert-only precision does not apply to ``model`` on ``gpu``."""
    problem = expert_layout_problem(model, gpu, tp, ep, precision)
    if problem:
        raise LabInputError(problem)


def prepare(config: DecodeConfig) -> tuple[ModelSpec, GPUSpec]:
    """Check ranges, resolve the model and GPU, and check the combination is valid."""
    config.check_ranges()
    model, gpu = config.resolved()
    check_decode_point(model, gpu, config.tp, config.precision, config.context)
    check_expert_layout(model, gpu, config.tp, config.ep, config.precision)
    if config.allreduce and config.tp > 1 and np.isnan(gpu.interconnect_bw):
        raise LabInputError(f"{gpu.name} has no interconnect bandwidth, so the all-reduce "
                            "extension cannot be estimated.")
    return model, gpu


def calc_decode(config: DecodeConfig) -> dict:
    """Experiment 1: every term of the ideal decode step and the memory card, one record."""
    model, gpu = prepare(config)
    record = _metrics(config, model, gpu, tp=config.tp, precision=config.precision)
    return {"inputs": _inputs(config, model, gpu), **record}


def calc_memory(config: DecodeConfig) -> dict:
    """Experiment 2: the decode record plus KV per sequence, free memory and max sequences.

    A model with sliding-window or chunked layers also gets its ``layer_mix`` (words), the KV
    per sequence had every layer been held full length (``kv_bytes_per_sequence_full_length``,
    B: an allocator without layer kinds) and the sequences that would then fit
    (``max_sequences_full_length``); ``kv_bytes_per_sequence`` is each kind's own pages."""
    record = calc_decode(config)
    model, _ = config.resolved()
    if record["valid"] and layer_kinds.has_local_layers(model):
        full = float(full_length_kv_bytes_per_sequence(
            model, config.tp, config.context, config.page, config.kv_precision))
        free = record["free_for_kv_bytes"]
        record["layer_mix"] = layer_kinds.layer_mix(model)
        record["kv_bytes_per_sequence_full_length"] = full
        record["max_sequences_full_length"] = float(np.floor(free / full)) if free > 0 else 0.0
    return record


def calc_tp(config: DecodeConfig, degrees: tuple[int, ...] = TP_DEGREES) -> dict:
    """Experiment 3: one record per tp degree; invalid degrees carry their reason instead."""
    config.check_ranges()
    model, gpu = config.resolved()
    check_decode_point(model, gpu, 1, config.precision, config.context)
    check_expert_layout(model, gpu, 1, config.ep, config.precision)
    records = []
    base_step = None
    for tp in degrees:
        layout = expert_layout_problem(model, gpu, tp, config.ep, config.precision)
        if layout:
            records.append({"tp": tp, "valid": False, "reason": layout})
            continue
        record = _metrics(config, model, gpu, tp=tp, precision=config.precision)
        code = record["reason"]
        entry = {"tp": tp, "valid": record["valid"]}
        if code:
            entry["reason"] = explain(code, model, gpu, tp, config.precision, config.context)
        else:
            entry.update(record)
            if base_step is None and tp == 1:
                base_step = record["step_time_s"]
            entry["speedup_vs_tp1"] = base_step / record["step_time_s"] if base_step else None
        records.append(entry)
    return {"inputs": _inputs(config, model, gpu), "records": records}


def calc_precision(config: DecodeConfig) -> dict:
    """Experiment 4: BF16 and FP8 side by side and ``speedup = t_step(bf16) / t_step(fp8)``."""
    config.check_ranges()
    model, gpu = config.resolved()
    check_decode_point(model, gpu, config.tp, "bf16", config.context)
    check_decode_point(model, gpu, config.tp, "fp8", config.context)
    check_expert_layout(model, gpu, config.tp, config.ep, "bf16")
    bf16 = _metrics(config, model, gpu, tp=config.tp, precision="bf16")
    fp8 = _metrics(config, model, gpu, tp=config.tp, precision="fp8")
    return {
        "inputs": _inputs(config, model, gpu),
        "bf16": bf16,
        "fp8": fp8,
        "speedup": bf16["step_time_s"] / fp8["step_time_s"],
        "extra_sequences_fp8": fp8["max_sequences"] - bf16["max_sequences"],
    }
