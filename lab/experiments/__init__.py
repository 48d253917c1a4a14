"""One ``param.Parameterized`` class per experiment: inputs, outputs and their explanations.

Which experiments exist, and in what order, is read from :mod:`lab.experiments.registry`.
"""

from __future__ import annotations

from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.registry import experiments


def all_experiments() -> list[type[Experiment]]:
    """The experiment classes in order."""
    return [record.experiment_class() for record in experiments()]


__all__ = ["Card", "Experiment", "Prediction", "all_experiments"]
