"""One record per experiment: everything the command line, the sweeps and the apps need.

A record names, by dotted path (``"module:attribute"``, resolved on use so that reading the
registry imports nothing heavy and ``lab`` never imports the layers above it):

- ``slug``: the experiment's one name: ``inference-lab calc <slug>``, ``?view=<slug>``, the
  dataset ``<slug>.zarr`` and ``open_dataset("<slug>")``;
- ``point``: the point function (inputs → the JSON-ready record in SI units);
- ``derivation``: the substituted derivation (record → steps);
- ``param_class``: the ``param.Parameterized`` experiment the apps show;
- ``grid``: its dataset's grid block: ``(schema, block function, variable labels[, extra
  variable attributes])``, a ``sweeps`` object resolved by ``sweeps`` only; None when the
  experiment has no grid;
- ``chart``: which chart the apps draw (``"batch"``: the decode step over batch with the
  ridge; ``"series"``: the experiment's own series);
- ``uploads_trace``: whether the apps offer a trace upload;
- ``command``: the module registering its hand-written ``calc`` subcommand, or None for the
  flags generated from the param class (:mod:`cli.calc_generic`);
- ``page``: the builder of a page of its own (an ``apps`` object called with
  ``experiment=<an instance of the param class>``, resolved by ``apps`` only), or None for the
  generic experiment view;
- ``dataset``: the loader of a dataset that is not a grid (called with no argument, returning
  an ``xarray.Dataset``: ``open_dataset("<slug>")``), or None; an experiment with neither a
  grid nor a loader has no dataset.

Adding an experiment touches its model, its record (here), its param class and its tests.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

ChartKind = Literal["batch", "series"]


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
    grid: str | None = None
    chart: ChartKind = "series"
    command: str | None = None
    old_names: tuple[str, ...] = ()
    """Former slugs still accepted (``?view=batch`` of experiment 1)."""
    uploads_trace: bool = False
    """The apps offer a trace upload (the experiment has a ``trace`` input)."""
    page: str | None = None
    """``"module:builder"`` of a page of its own; None: the generic experiment view."""
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
    ExperimentRecord(1, "decode", "lab.points.decode_family:calc_decode",
                     "lab.derivations.decode_family:decode_steps",
                     "lab.experiments.batch_bottleneck:BatchBottleneck",
                     grid="sweeps.grids.decode:DECODE_GRID", chart="batch",
                     command="cli.calc_decode_family", old_names=("batch",)),
    ExperimentRecord(2, "memory", "lab.points.decode_family:calc_memory",
                     "lab.derivations.decode_family:memory_steps",
                     "lab.experiments.sequences_fit:SequencesFit", command="cli.calc_decode_family"),
    ExperimentRecord(3, "tp", "lab.points.decode_family:calc_tp",
                     "lab.derivations.decode_family:tp_steps",
                     "lab.experiments.tensor_parallel:TensorParallel",
                     command="cli.calc_decode_family"),
    ExperimentRecord(4, "precision", "lab.points.decode_family:calc_precision",
                     "lab.derivations.decode_family:precision_steps",
                     "lab.experiments.precision_switch:PrecisionSwitch",
                     command="cli.calc_decode_family"),
    ExperimentRecord(5, "prefill", "lab.points.serving:calc_prefill",
                     "lab.derivations.serving:prefill_steps",
                     "lab.experiments.prefill_deadline:PrefillDeadline",
                     grid="sweeps.grids.serving:PREFILL_GRID", command="cli.calc_serving"),
    ExperimentRecord(6, "prefix", "lab.points.serving:calc_prefix",
                     "lab.derivations.serving:prefix_steps",
                     "lab.experiments.prefix_ownership:PrefixOwnership",
                     grid="sweeps.grids.serving:PREFIX_GRID", command="cli.calc_serving"),
    ExperimentRecord(7, "goodput", "lab.points.serving:calc_goodput",
                     "lab.derivations.serving:goodput_steps",
                     "lab.experiments.goodput_contract:GoodputContract",
                     grid="sweeps.grids.serving:GOODPUT_GRID", command="cli.calc_serving",
                     uploads_trace=True),
    ExperimentRecord(8, "context", "lab.points.serving:calc_context",
                     "lab.derivations.serving:context_steps",
                     "lab.experiments.context_growth:ContextGrowth",
                     grid="sweeps.grids.serving:CONTEXT_GRID", command="cli.calc_serving"),
    ExperimentRecord(9, "measured", "lab.measured.calc:calc_measured",
                     "lab.measured.explain:point_steps",
                     "lab.measured.experiment:FloorsAgainstMeasurements",
                     command="cli.calc_measured", page="apps.ui.measured_page:MeasuredPage",
                     dataset="lab.measured.calc:measured_table"),
    ExperimentRecord(10, "speculative", "lab.points.speculative:calc_speculative",
                     "lab.derivations.speculative:speculative_steps",
                     "lab.experiments.speculative_decoding:SpeculativeDecoding",
                     grid="sweeps.grids.speculative:SPECULATIVE_GRID"),
    ExperimentRecord(11, "served", "lab.served.calc:calc_served",
                     "lab.served.explain:row_steps",
                     "lab.served.experiment:FromFloorToServed",
                     command="cli.calc_served", page="apps.ui.served_page:ServedPage",
                     dataset="lab.served.calc:served_table"),
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


def dataset_names() -> tuple[str, ...]:
    """The slugs of the experiments with a grid dataset, in order (not the loaders' datasets)."""
    return tuple(r.slug for r in EXPERIMENTS if r.grid)
