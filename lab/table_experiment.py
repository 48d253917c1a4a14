"""An experiment over a table of measurements: the shipped one, or the reader's own upload.

Experiments 9 (:class:`lab.measured.experiment.FloorsAgainstMeasurements`) and 11
(:class:`lab.served.served_experiment.FromFloorToServed`) hold a table, not a grid: the shipped
measurements, or a file the reader uploaded (read by :mod:`lab.table_files`), in a
``measurements`` parameter made by :func:`uploaded_table` (None: the shipped table). Their
calculation runs over the table with its floors, which :meth:`TableExperiment.table` computes
once per data set (and whatever else :meth:`TableExperiment.table_key` names, e.g. the GPU).
"""

from __future__ import annotations

from collections.abc import Hashable

import param
import xarray as xr

from lab.experiments.base import Experiment


def uploaded_table(doc: str) -> param.ClassSelector:
    """The ``measurements`` parameter: a table read from the reader's file, None for the shipped
    one; never a widget (``precedence`` -1: the page's upload sets it)."""
    return param.ClassSelector(class_=xr.Dataset, default=None, allow_None=True, precedence=-1,
                               doc=doc)


class TableExperiment(Experiment):
    """Base of an experiment whose inputs pick rows of a table of measurements.

    A subclass declares ``measurements = uploaded_table(...)`` among its inputs and says how its
    table is made (:meth:`build_table`)."""

    measurements: xr.Dataset | None

    def __init__(self, **params):
        self._tables: dict = {}
        super().__init__(**params)

    def table_key(self) -> Hashable:
        """What the table depends on (default: the data set in force)."""
        return id(self.measurements)

    def build_table(self) -> xr.Dataset:
        """The measurements with what the experiment computes for each row (its floors)."""
        raise NotImplementedError

    def table_built(self, table: xr.Dataset) -> None:
        """Called once for each new table (e.g. to offer the values it holds as choices)."""

    def table(self) -> xr.Dataset:
        """:meth:`build_table`, computed once per :meth:`table_key` (the last one kept)."""
        key = self.table_key()
        if key not in self._tables:
            self._tables = {key: self.build_table()}
            self.table_built(self._tables[key])
        return self._tables[key]

    def record_head(self, table: xr.Dataset) -> dict:
        """The start of the result: the inputs but the table itself, and the table's source."""
        return {"inputs": {k: v for k, v in self.inputs().items() if k != "measurements"},
                "source": table.attrs.get("source", "")}
