"""One ``param.Parameterized`` class per experiment: inputs, outputs and their explanations."""

from __future__ import annotations

import importlib

from lab.experiments.base import Card, Experiment, Prediction

EXPERIMENT_CLASSES = (
    ("lab.experiments.batch_bottleneck", "BatchBottleneck"),
    ("lab.experiments.sequences_fit", "SequencesFit"),
    ("lab.experiments.tensor_parallel", "TensorParallel"),
    ("lab.experiments.precision_switch", "PrecisionSwitch"),
    ("lab.experiments.prefill_deadline", "PrefillDeadline"),
    ("lab.experiments.prefix_ownership", "PrefixOwnership"),
    ("lab.experiments.goodput_contract", "GoodputContract"),
    ("lab.experiments.context_growth", "ContextGrowth"),
)
"""Module and class of every experiment, in order 1–8."""


def all_experiments() -> list[type[Experiment]]:
    """The experiment classes in order."""
    return [getattr(importlib.import_module(module), name) for module, name in EXPERIMENT_CLASSES]


__all__ = ["Card", "Experiment", "Prediction", "all_experiments"]
