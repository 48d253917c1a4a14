"""One record per experiment: what ``lab`` knows of it.

A record names, by dotted path (``"module:attribute"``, resolved on use so that reading the
registry imports nothing heavy), only ``lab`` objects:

- ``slug``: the experiment's one name: ``inference-lab calc <slug>``, ``?view=<slug>``, the
  dataset ``<slug>.zarr`` and ``open_dataset("<slug>")``;
- ``point``: the point function (inputs → the JSON-ready record in SI units);
- ``derivation``: the substituted derivation (record → steps);
- ``param_class``: the experiment's ``param.Parameterized`` class (its inputs and outputs);
- ``dataset``: the loader of a dataset that is not a grid (called with no argument, returning
  an ``xarray.Dataset``: ``open_dataset("<slug>")``), or None.

The layers above register their own part of an experiment by its slug, with ordinary imports
(``docs/architecture.md``, "One record per experiment"): its grid block in
:mod:`sweeps.grids`, its page in :mod:`apps.ui.views.pages` and how the generic page shows it in
:mod:`apps.ui.plots.page_descriptions`, a hand-written ``calc`` subcommand in :mod:`cli.calc_cmd`. An
experiment registered nowhere above has no grid, the generic page and the flags generated from
its param class.

Adding an experiment touches its model, its record (here), its param class and its tests.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


def resolve(path: str) -> Any:
    """The object at ``"package.module:attribute"``."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class ExperimentRecord:
    """The wiring of one experiment (see the module docstring for each field)."""

    number: int
    slug: str
    point: str
    derivation: str
    param_class: str
    old_names: tuple[str, ...] = ()
    """Former slugs still accepted (``?view=batch`` of experiment 1)."""
    dataset: str | None = None
    """``"module:loader"`` of a dataset that is not a grid; None: the grid's, if any."""

    def experiment_class(self) -> type:
        """The experiment's ``param`` class."""
        return resolve(self.param_class)

    def point_function(self):
        """The point function."""
        return resolve(self.point)

    def derivation_function(self):
        """The derivation function."""
        return resolve(self.derivation)


EXPERIMENTS: list[ExperimentRecord] = [
    ExperimentRecord(1, "decode", "lab.points.decode_points:calc_decode",
                     "lab.derivations.decode_steps:decode_steps",
                     "lab.experiments.batch_bottleneck:BatchBottleneck", old_names=("batch",)),
    ExperimentRecord(2, "memory", "lab.points.decode_points:calc_memory",
                     "lab.derivations.decode_steps:memory_steps",
                     "lab.experiments.sequences_fit:SequencesFit"),
    ExperimentRecord(3, "tp", "lab.points.decode_points:calc_tp",
                     "lab.derivations.decode_steps:tp_steps",
                     "lab.experiments.tensor_parallel:TensorParallel"),
    ExperimentRecord(4, "precision", "lab.points.decode_points:calc_precision",
                     "lab.derivations.decode_steps:precision_steps",
                     "lab.experiments.precision_switch:PrecisionSwitch"),
    ExperimentRecord(5, "prefill", "lab.points.serving_points:calc_prefill",
                     "lab.derivations.serving_steps:prefill_steps",
                     "lab.experiments.prefill_deadline:PrefillDeadline"),
    ExperimentRecord(6, "prefix", "lab.points.serving_points:calc_prefix",
                     "lab.derivations.serving_steps:prefix_steps",
                     "lab.experiments.prefix_ownership:PrefixOwnership"),
    ExperimentRecord(7, "goodput", "lab.points.serving_points:calc_goodput",
                     "lab.derivations.serving_steps:goodput_steps",
                     "lab.experiments.goodput_contract:GoodputContract"),
    ExperimentRecord(8, "context", "lab.points.serving_points:calc_context",
                     "lab.derivations.serving_steps:context_steps",
                     "lab.experiments.context_growth_experiment:ContextGrowth"),
    ExperimentRecord(9, "measured", "lab.measured.calc:calc_measured",
                     "lab.measured.explain:point_steps",
                     "lab.measured.experiment:FloorsAgainstMeasurements",
                     dataset="lab.measured.calc:measured_table"),
    ExperimentRecord(10, "speculative", "lab.points.speculative_points:calc_speculative",
                     "lab.derivations.speculative_steps:speculative_steps",
                     "lab.experiments.speculative_decoding:SpeculativeDecoding"),
    ExperimentRecord(11, "served", "lab.served.served_calc:calc_served",
                     "lab.served.served_explain:row_steps",
                     "lab.served.served_experiment:FromFloorToServed",
                     dataset="lab.served.served_calc:served_table"),
    ExperimentRecord(12, "plan", "lab.plan.plan_calc:calc_plan",
                     "lab.plan.plan_calc:plan_steps",
                     "lab.plan.plan_experiment:PlanDeployment"),
]
"""Every experiment, in order (its position is its number)."""


def experiments() -> tuple[ExperimentRecord, ...]:
    """Every experiment's record, in order."""
    return tuple(EXPERIMENTS)


def record(name: str) -> ExperimentRecord | None:
    """The record whose slug (or former slug) is ``name``, or None."""
    return next((r for r in EXPERIMENTS if name == r.slug or name in r.old_names), None)


def count() -> int:
    """How many experiments the lab has."""
    return len(EXPERIMENTS)


def count_words() -> str:
    """:func:`count` as an English word ("eight"), for prose."""
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
             "ten", "eleven", "twelve")
    return words[count()] if count() < len(words) else str(count())

