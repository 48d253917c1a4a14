"""What experiment 12 learns from measured serving rows: experiment 11's coefficients per
engine × GPU × mode and the out-of-sample errors that make its bands (docs/model.md §12).

Nothing here is a new model. The coefficients are fitted by :func:`lab.served.gap.fit` on the
designs of :func:`lab.served.served_calc._designs` — the very fit behind ``calc served`` — on
every modelled row of the group, each run once (or, to reproduce a row's out-of-sample prediction, on the rows
of its group with another (isl, osl) workload, as :func:`lab.served.gap.leave_one_workload_out`
does). The band of a prediction is a quantile of the group's *out-of-sample* relative errors
``log(measured / predicted)`` (experiment 11's stored predictions), taken over the rows of the
same model when there are enough, and of a concurrency within a factor of two when there are
enough (:data:`MIN_BAND_ROWS`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import xarray as xr

from lab.served import gap
from lab.served.served_calc import METRICS, _designs, run_keys, served_table

DEFAULT_QUANTILE = 0.9
"""The band's conservative quantile: a plan's latency is read at the q-th quantile of its
group's out-of-sample errors (chosen by ``calc plan --validate``, docs/model.md §12)."""
MIN_BAND_ROWS = 5
"""Fewest rows a narrower error sample (same model, nearby concurrency) needs to be used."""
CONCURRENCY_OCTAVES = 1.0
"""Rows within this many factors of two of a configuration's concurrency form its error
sample (when at least :data:`MIN_BAND_ROWS`)."""


def _strings(table: xr.Dataset, name: str) -> np.ndarray:
    return np.asarray(table[name].values).astype(str)


@dataclass
class Calibration:
    """Experiment 11's fit on a table of measured rows, by engine × GPU × mode."""

    table: xr.Dataset
    exclude_workload: str | None = None
    _theta: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        t = self.table
        self.groups = _strings(t, "group")
        self.workloads = _strings(t, "workload")
        self.models = _strings(t, "model")
        self.concurrency = np.maximum(np.asarray(t["concurrency"].values, dtype=float), 1.0)
        self.modelled = np.asarray(t["modelled"].values, dtype=bool)
        self.designs = _designs(t)
        self.runs = run_keys(t)
        self.residual = {}
        for metric in METRICS:
            measured = np.asarray(t[f"{metric}_measured_ms"].values, dtype=float)
            predicted = np.asarray(t[f"{metric}_predicted_ms"].values, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                self.residual[metric] = np.log(measured / predicted)
        ok = self.modelled & np.isfinite(self.residual["tpot"]) & np.isfinite(self.residual["ttft"])
        if self.exclude_workload is not None:
            ok &= self.workloads != self.exclude_workload
        self.band_rows = ok

    def excluding(self, workload: str) -> Calibration:
        """This calibration with ``workload`` left out of every fit and band (the designs,
        run keys and errors are shared, not recomputed)."""
        other = copy.copy(self)
        other.exclude_workload = workload
        other._theta = {}
        other.band_rows = self.band_rows & (self.workloads != workload)
        return other

    def train_mask(self, group: str) -> np.ndarray:
        """The rows a group's coefficients are fitted on, each run once, as experiment 11's
        :func:`~lab.served.gap.fit_all` and :func:`~lab.served.gap.leave_one_workload_out`
        choose them."""
        rows = self.modelled & (self.groups == group)
        if self.exclude_workload is not None:
            rows &= self.workloads != self.exclude_workload
        return gap.first_of_each_run(rows, self.runs)

    def theta(self, group: str, metric: str) -> np.ndarray | None:
        """The group's fitted coefficients of ``metric`` (None: no rows to fit on)."""
        key = (group, metric)
        if key not in self._theta:
            rows = self.train_mask(group)
            d = self.designs[metric]
            self._theta[key] = (gap.fit(d.base[rows], d.columns[rows], d.measured[rows])
                                if rows.any() else None)
        return self._theta[key]

    def has_group(self, group: str) -> bool:
        """Whether any measured row calibrates ``group``."""
        return bool(self.train_mask(group).any())

    def band(self, group: str, model: str, concurrency: np.ndarray, metric: str,
             quantile: float) -> np.ndarray:
        """Factor ``exp(q-quantile of log(measured/predicted))`` per configuration (NaN: no
        out-of-sample error in the group to read a band from)."""
        concurrency = np.asarray(concurrency, dtype=float)
        out = np.full(concurrency.shape, np.nan)
        sample = self.band_rows & (self.groups == group)
        if not sample.any():
            return out
        same_model = sample & (self.models == model)
        if same_model.sum() >= MIN_BAND_ROWS:
            sample = same_model
        residual = self.residual[metric]
        for c in np.unique(concurrency):
            near = sample & (np.abs(np.log2(self.concurrency / c)) <= CONCURRENCY_OCTAVES)
            rows = near if near.sum() >= MIN_BAND_ROWS else sample
            out[concurrency == c] = np.exp(np.quantile(residual[rows], quantile))
        return out

    def sure(self, group: str, model: str, concurrency: float, metric: str,
             ratio: float) -> tuple[float, int]:
        """Share of the group's out-of-sample errors under which a prediction ``ratio`` times
        below its target would still meet it, and how many errors that share is read from."""
        sample = self.band_rows & (self.groups == group)
        if not sample.any():
            return float("nan"), 0
        same_model = sample & (self.models == model)
        if same_model.sum() >= MIN_BAND_ROWS:
            sample = same_model
        near = sample & (np.abs(np.log2(self.concurrency / concurrency)) <= CONCURRENCY_OCTAVES)
        rows = near if near.sum() >= MIN_BAND_ROWS else sample
        residual = self.residual[metric][rows]
        return float(np.mean(np.exp(residual) <= ratio)), int(rows.sum())


@lru_cache(maxsize=1)
def _shipped() -> xr.Dataset:
    return served_table()


@lru_cache(maxsize=64)
def shipped_calibration(exclude_workload: str | None = None) -> Calibration:
    """The calibration on the shipped public rows (computed once per process)."""
    if exclude_workload is None:
        return Calibration(_shipped())
    return shipped_calibration().excluding(exclude_workload)


def calibration_for(table: xr.Dataset | None) -> Calibration:
    """The calibration on ``table`` (experiment 11's :func:`served_table` of a user's rows), or
    on the shipped rows when None."""
    return shipped_calibration() if table is None else Calibration(table)
