"""The decode configuration shared by experiments 1–4, as parameters."""

from __future__ import annotations

import numpy as np
import param
import xarray as xr

from lab.catalog import gpu_catalog, model_catalog
from lab.experiments.base import Card, Experiment
from lab.experiments.command_line import GPU_FILE, MODEL_FILE, cli
from lab.experiments.registry import record
from lab.limits import (
    BUDGET_RANGE,
    EP_DEGREES,
    MAX_ALLREDUCE_LATENCY_US,
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_PAGE,
    MAX_RESERVE_GB,
    TP_DEGREES,
)
from lab.models import layer_kinds
from lab.models.decode_metrics import EXPERT_PARALLEL_UNITS, UNITS, decode_metrics
from lab.models.decode_step import PRECISIONS, WEIGHT_PRECISIONS
from lab.models.expert_parallel import UNIFORM_ROUTING
from lab.models.kv_shapes import KV_PRECISIONS
from lab.points.decode_points import DecodeConfig, prepare
from lab.units import MIB, fmt_ms, fmt_number

DEFAULTS = DecodeConfig()
CONFIGURATION = "decode configuration"
"""The ``--help`` group of the decode configuration's flags."""
DECODE_CONFIGURATION = ("model", "gpu", "tp", "precision", "batch", "context", "budget",
                        "reserve_gb", "page", "kv_precision")
"""The inputs of :class:`DecodeExperiment`: one decode configuration, every experiment 1–4's."""

LINE = (*DECODE_CONFIGURATION[2:], "ep")
"""The decode configuration's inputs after the model and GPU, as the ``Inputs:`` line of a
``calc`` text names them."""
ALLREDUCE_LINE = ("allreduce", "allreduce_latency_us")
"""The all-reduce extension's inputs on the ``Inputs:`` line, when it is on."""


def decode_config(values: dict, **changes) -> DecodeConfig:
    """A :class:`~lab.points.decode_points.DecodeConfig` of the fields ``values`` holds (the
    rest at their defaults), with ``changes`` applied."""
    fields = {name: values[name] for name in DecodeConfig.__dataclass_fields__ if name in values}
    return DecodeConfig(**{**fields, **changes})


def fmt_mib(value: float) -> str:
    """Bytes as ``9.49 MiB``."""
    return f"{fmt_number(value / MIB)} MiB"


CONFIGURATION_PARAMETERS: dict[str, tuple[type[param.Parameter], dict]] = {
    "model": (param.Selector, {
        "default": DEFAULTS.model, "objects": list(model_catalog()), "check_on_set": False,
        "label": "Model", "doc": "Catalog model (or a path to a Hugging Face config.json).",
        "path": MODEL_FILE}),
    "gpu": (param.Selector, {
        "default": DEFAULTS.gpu, "objects": list(gpu_catalog()), "check_on_set": False,
        "label": "GPU", "doc": "Catalog GPU (or a path to a GPU TOML file).", "path": GPU_FILE}),
    "tp": (param.Selector, {
        "default": DEFAULTS.tp, "objects": list(TP_DEGREES), "label": "Tensor parallel",
        "doc": "GPUs the model is sharded over; must divide the query and KV heads.",
        "checked_by_point": True}),
    "precision": (param.Selector, {
        "default": DEFAULTS.precision, "objects": list(PRECISIONS), "label": "Precision",
        "doc": "Linear-layer weights and arithmetic; attention arithmetic stays BF16.",
        "checked_by_point": True, "accepted": WEIGHT_PRECISIONS}),
    "batch": (param.Integer, {
        "default": DEFAULTS.batch, "bounds": (1, MAX_BATCH), "label": "Batch (sequences)",
        "doc": "Sequences decoding together in one step."}),
    "context": (param.Integer, {
        "default": DEFAULTS.context, "bounds": (1, MAX_CONTEXT), "label": "Context (tokens)",
        "doc": "Tokens already in each sequence's KV cache."}),
    "budget": (param.Number, {
        "default": DEFAULTS.budget, "bounds": BUDGET_RANGE, "step": 0.01,
        "label": "Memory budget (share of capacity)",
        "doc": "Share of the GPU's memory the engine may use."}),
    "reserve_gb": (param.Number, {
        "default": DEFAULTS.reserve_gb, "bounds": (0, MAX_RESERVE_GB), "step": 0.5,
        "label": "Reserve (GB)", "doc": "GB (10^9 B) held back for activations and the runtime."}),
    "page": (param.Integer, {
        "default": DEFAULTS.page, "bounds": (1, MAX_PAGE), "label": "KV page (tokens)",
        "doc": "Tokens per KV cache page; the last page of a sequence is padded."}),
    "kv_precision": (param.Selector, {
        "default": DEFAULTS.kv_precision, "objects": list(KV_PRECISIONS),
        "label": "KV cache precision",
        "doc": "KV cache elements: BF16 (2 B) or FP8 (1 B, half the KV and page bytes).",
        "checked_by_point": True}),
}
"""Each decode-configuration input, described once: its parameter type and options (default
from :class:`~lab.points.decode_points.DecodeConfig`, bounds from :mod:`lab.limits`, label and
``doc``) and its flag's (:class:`~lab.experiments.command_line.Flag` fields)."""
FLAG_FIELDS = ("path", "checked_by_point", "accepted")


def configuration_parameter(name: str, *, group: str = CONFIGURATION,
                            **changes) -> param.Parameter:
    """A fresh parameter for the decode-configuration input ``name`` (``param`` binds one to
    its class), its ``--help`` group ``group``; ``changes`` replace its options where an
    experiment words or bounds it otherwise (goodput's ``doc="For the memory check."``)."""
    kind, options = CONFIGURATION_PARAMETERS[name]
    options = {**options, **changes}
    flag = {key: options.pop(key) for key in FLAG_FIELDS if key in options}
    return kind(**options, metadata=cli(group=group, **flag))


def labelled(values, dim: str, long_name: str, units: str) -> xr.DataArray:
    """A 1-D coordinate array ``dim`` with ``long_name`` and ``units`` attrs."""
    return xr.DataArray(np.asarray(values), dims=dim, name=dim,
                        coords={dim: xr.Variable(dim, np.asarray(values),
                                                 {"long_name": long_name, "units": units})})


def with_units(outputs: dict, names, *axes: xr.DataArray) -> xr.Dataset:
    """Selected outputs of :func:`decode_metrics` as a Dataset with ``long_name``/``units``.

    ``axes`` are the labelled coordinate arrays the outputs were swept over; their attrs are
    restored on the Dataset's coordinates.
    """
    data = {}
    for name in names:
        long_name, units = {**UNITS, **EXPERT_PARALLEL_UNITS}.get(
            name, (name.replace("_", " "), "1"))
        data[name] = outputs[name].assign_attrs(long_name=long_name, units=units)
    return xr.Dataset(data).assign_coords({axis.name: axis[axis.name] for axis in axes})


class DecodeExperiment(Experiment):
    """Inputs every decode-family experiment shares: model, GPU, tp, precision, batch, memory."""

    model = configuration_parameter("model")
    gpu = configuration_parameter("gpu")
    tp = configuration_parameter("tp")
    precision = configuration_parameter("precision")
    batch = configuration_parameter("batch")
    context = configuration_parameter("context")
    budget = configuration_parameter("budget")
    reserve_gb = configuration_parameter("reserve_gb")
    page = configuration_parameter("page")
    kv_precision = configuration_parameter("kv_precision")

    def compute(self) -> dict:
        return self.calculate(self.inputs())

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """The experiment's point function (its record's) for the decode configuration of
        ``values``."""
        return record(cls.slug).point_function()(decode_config(values))

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The decode configuration, and the all-reduce extension when it is on."""
        return True, True, LINE + (ALLREDUCE_LINE if values.get("allreduce") else ())

    @classmethod
    def derivation(cls, result: dict, values: dict):
        """The record's derivation with the resolved model and GPU of ``values``."""
        model, gpu = decode_config(values).resolved()
        return record(cls.slug).derivation_function()(result, model, gpu)

    def config(self, **changes) -> DecodeConfig:
        """The current inputs as a :class:`~lab.points.decode_points.DecodeConfig`."""
        return decode_config(self.inputs(), **changes)

    def sweep(self, **axes) -> dict:
        """:func:`decode_metrics` over labelled axes (e.g. ``batch=labelled(...)``).

        A ``tp`` axis is checked by :func:`decode_metrics` value by value (``valid``,
        ``reason``), so the combination is checked at tp 1, not at the tp in force: experiment
        3 keeps a tp that does not divide the heads as an "unavailable" card, and its chart
        (and the budget flags over it) must still be drawn."""
        config = self.config(tp=1) if "tp" in axes else self.config()
        model, gpu = prepare(config)
        return decode_metrics(config.decode_inputs(model, gpu, **axes),
                              **config.allreduce_options())

    def model_spec(self):
        """The current model's record."""
        return self.config().resolved()[0]

    def gpu_spec(self):
        """The current GPU's record."""
        return self.config().resolved()[1]


def ep_parameter() -> param.Selector:
    """The expert-parallel degree input of experiments 1, 3 and 4 (a fresh parameter per
    class: ``param`` binds one to its class)."""
    return param.Selector(default=DEFAULTS.ep, objects=list(EP_DEGREES),
                          label="Expert parallel (MoE)",
                          doc="Groups of tp GPUs the routed experts are spread over (ep × tp "
                          "at most 8 GPUs; a mixture of experts only); the all-to-all is added "
                          "as an extension. " + UNIFORM_ROUTING,
                          metadata=cli(checked_by_point=True, group="expert parallelism"))


def allreduce_parameters() -> dict[str, param.Parameter]:
    """The all-reduce extension's inputs (experiment 3's, and experiment 1's on the command
    line), fresh parameters by name."""
    group = cli(group="all-reduce extension")
    return {
        "allreduce": param.Boolean(default=DEFAULTS.allreduce,
                                   label="All-reduce estimate (extension)",
                                   doc="Add two ring all-reduces per layer to each step.",
                                   metadata=group),
        "allreduce_latency_us": param.Number(
            default=DEFAULTS.allreduce_latency_us, bounds=(0, MAX_ALLREDUCE_LATENCY_US),
            label="Latency per collective (µs)",
            doc="Fixed cost of each all-reduce, microseconds.", metadata=group),
    }


def all_to_all_card(record: dict, ep: int, tp: int) -> Card:
    """The all-to-all extension of an ``ep × tp`` record as a card, labelled like the
    all-reduce extension."""
    return Card("All-to-all (extension)", fmt_ms(record["all_to_all_time_s"]),
                f"ep {ep} × tp {tp}: {fmt_mib(record['all_to_all_bytes_per_gpu'])} dispatch + "
                "combine per GPU per step, uniform routing")


def layer_mix_cards(model, context: int) -> list[Card]:
    """A model with sliding-window or chunked layers: its layer mix as a card, with the
    layer-tokens one decode step reads per sequence (none for a model of full layers)."""
    if not layer_kinds.has_local_layers(model):
        return []
    read = int(layer_kinds.read_layer_tokens(model, context))
    return [Card("Layer mix", layer_kinds.layer_mix(model),
                 f"a step reads {read:,} layer-tokens of KV per sequence at {context:,} tokens, "
                 f"not {model.layers * context:,}: each kind reads what its mask sees")]


def batch_axis(current: int) -> np.ndarray:
    """Powers of two from 1 to :data:`~lab.limits.MAX_BATCH` (1024) plus the current batch,
    sorted."""
    powers = 2 ** np.arange(0, int(np.log2(MAX_BATCH)) + 1)
    return np.unique(np.append(powers, current)).astype(np.int64)


def context_axis(current: int, maximum: int) -> np.ndarray:
    """Powers of two from 128 up to the model's maximum plus the current context, sorted."""
    top = int(np.log2(max(maximum, 128)))
    values = 2 ** np.arange(7, top + 1)
    values = values[values <= maximum]
    return np.unique(np.append(values, min(current, maximum))).astype(np.int64)
