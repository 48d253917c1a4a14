"""What experiment 12 learns from measured serving rows: experiment 11's coefficients per
engine × GPU × mode and the out-of-sample errors that make its bands (docs/model.md §12).

Nothing here is a new model. The coefficients are fitted by :func:`lab.served.gap.fit` on the
designs of :func:`lab.served.served_calc.term_designs` — the very fit behind ``calc served`` — on
every modelled row of the group, each run once (or, to reproduce a row's out-of-sample prediction, on the rows
of its group with another (isl, osl) workload, as :func:`lab.served.gap.leave_one_workload_out`
does). The band of a prediction is a quantile of the group's *out-of-sample* relative errors
``log(measured / predicted)`` (experiment 11's stored predictions), taken over the rows of the
same model when there are enough, and of a concurrency within a factor of two when there are
enough (:data:`MIN_BAND_ROWS`); a configuration measured on other workloads has its band centred
on its own mean error there, spread as its bucket's errors spread about such means.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import xarray as xr

from lab.served import gap
from lab.served.served_calc import METRICS, run_keys, served_table, term_designs

DEFAULT_QUANTILE = 0.875
"""The band's conservative quantile: a plan's latency is read at the q-th quantile of its
group's out-of-sample errors (chosen by ``calc plan --validate``, docs/model.md §12)."""
MAX_QUANTILE = 0.99
"""The most conservative band quantile a plan may ask for (a higher one reads the extreme of
a few dozen errors)."""
MIN_BAND_ROWS = 5
"""Fewest rows a narrower error sample (same model, nearby concurrency) needs to be used."""
CONCURRENCY_OCTAVES = 1.0
"""Rows within this many factors of two of a configuration's concurrency form its error
sample (when at least :data:`MIN_BAND_ROWS`)."""


CONFIG_KEY = ("model", "precision", "engine", "gpu", "mode", "tp", "attention_dp", "moe_ep",
              "prefill_tp", "prefill_attention_dp", "prefill_workers", "decode_workers",
              "concurrency")
"""What makes two rows the same configuration on different workloads (their errors are
alike: the band of a configuration measured on another workload is centred on that error)."""


def _strings(table: xr.Dataset, name: str) -> np.ndarray:
    return np.asarray(table[name].values).astype(str)


def config_keys(columns: dict) -> np.ndarray:
    """One key per row of :data:`CONFIG_KEY` values (``columns``: name → array)."""
    parts = [np.asarray(columns[k]).astype(str) for k in CONFIG_KEY]
    return np.array(["|".join(values) for values in zip(*parts, strict=True)])


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
        self.designs = term_designs(t)
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
        self.keys = config_keys({k: t[k].values for k in CONFIG_KEY})
        self._centres: dict = {}
        self._samples: dict = {}

    def _centre_data(self, metric: str) -> tuple[dict, np.ndarray]:
        """Mean error per configuration over the band rows, and each band row's error less
        the mean error of its configuration on the *other* workloads (NaN: none)."""
        if metric not in self._centres:
            r = self.residual[metric]
            rows = np.flatnonzero(self.band_rows)
            _, key = np.unique(self.keys[rows], return_inverse=True)
            _, pair = np.unique(np.char.add(np.char.add(self.keys[rows], "@"),
                                            self.workloads[rows]), return_inverse=True)
            # sums in row order, as a loop over the rows adds them (bincount adds in order)
            key_sum = np.bincount(key, weights=r[rows])
            key_n = np.bincount(key)
            pair_sum = np.bincount(pair, weights=r[rows])
            pair_n = np.bincount(pair)
            spread = np.full(r.shape, np.nan)
            other_n = key_n[key] - pair_n[pair]
            elsewhere = other_n > 0
            spread[rows[elsewhere]] = r[rows[elsewhere]] - (
                (key_sum[key] - pair_sum[pair])[elsewhere] / other_n[elsewhere])
            first = {}
            for k, code in zip(self.keys[rows].tolist(), key.tolist(), strict=True):
                first.setdefault(k, code)
            self._centres[metric] = ({k: key_sum[c] / key_n[c] for k, c in first.items()},
                                     spread)
        return self._centres[metric]

    def centre(self, keys: np.ndarray, metric: str) -> np.ndarray:
        """The mean out-of-sample error of each configuration measured on the band rows
        (NaN: not measured)."""
        means, _ = self._centre_data(metric)
        return np.array([means.get(k, np.nan) for k in np.asarray(keys).tolist()])

    def _sample(self, group: str, model: str, concurrency: float, metric: str,
                centre: float) -> np.ndarray:
        """The errors a configuration's band is read from: its own error on the other
        workloads plus its bucket's spread about such errors when it was measured there, else
        its bucket's errors (bucket: the group, the same model when ≥ MIN_BAND_ROWS, a
        concurrency within a factor of two when ≥ MIN_BAND_ROWS)."""
        cache_key = (group, model, float(concurrency), metric,
                     float(centre) if np.isfinite(centre) else None)
        if cache_key not in self._samples:
            self._samples[cache_key] = self._read_sample(group, model, concurrency, metric,
                                                         centre)
        return self._samples[cache_key]

    def _read_sample(self, group: str, model: str, concurrency: float, metric: str,
                     centre: float) -> np.ndarray:
        sample = self.band_rows & (self.groups == group)
        if not sample.any():
            return np.empty(0)
        same_model = sample & (self.models == model)
        if same_model.sum() >= MIN_BAND_ROWS:
            sample = same_model
        near = sample & (np.abs(np.log2(self.concurrency / concurrency)) <= CONCURRENCY_OCTAVES)
        rows = near if near.sum() >= MIN_BAND_ROWS else sample
        if np.isfinite(centre):
            _, spread = self._centre_data(metric)
            d = spread[rows]
            d = d[np.isfinite(d)]
            if d.size >= MIN_BAND_ROWS:
                return centre + d
        return self.residual[metric][rows]

    def excluding(self, workload: str) -> Calibration:
        """This calibration with ``workload`` left out of every fit and band (the designs,
        run keys and errors are shared, not recomputed)."""
        other = copy.copy(self)
        other.exclude_workload = workload
        other._theta = {}
        other._centres = {}
        other._samples = {}
        other.band_rows = self.band_rows & (self.workloads != workload)
        return other

    def excluding_strictly(self, workload: str) -> Calibration:
        """:meth:`excluding` ``workload``, with every band row's error re-read from a fit that
        left out ``workload`` *and* the row's own workload (leave two workloads out): no error a
        band is read from has seen ``workload`` even through the coefficients. Rows of a group
        with no third workload to fit on leave the bands."""
        other = self.excluding(workload)
        other.residual = {m: np.full(r.shape, np.nan) for m, r in self.residual.items()}
        for group in dict.fromkeys(self.groups[other.band_rows].tolist()):
            in_group = other.band_rows & (self.groups == group)
            for w in dict.fromkeys(self.workloads[in_group].tolist()):
                rows = in_group & (self.workloads == w)
                train = gap.first_of_each_run(self.designs["tpot"].fittable(
                    self.modelled & (self.groups == group) & (self.workloads != workload)
                    & (self.workloads != w)), self.runs)
                if not train.any():
                    continue
                for metric in METRICS:
                    d = self.designs[metric]
                    theta = gap.fit(d.base[train], d.columns[train], d.measured[train])
                    value = d.base[rows].copy()
                    parts = d.columns[rows] * theta
                    for j in range(parts.shape[1]):
                        value = value + np.nan_to_num(parts[:, j])
                    with np.errstate(divide="ignore", invalid="ignore"):
                        other.residual[metric][rows] = np.log(d.measured[rows] / value)
        ok = np.isfinite(other.residual["tpot"]) & np.isfinite(other.residual["ttft"])
        other.band_rows = other.band_rows & ok
        return other

    def train_mask(self, group: str) -> np.ndarray:
        """The rows a group's coefficients are fitted on, each run once, as experiment 11's
        :func:`~lab.served.gap.fit_all` and :func:`~lab.served.gap.leave_one_workload_out`
        choose them: without the rows no fit may use (:attr:`lab.served.gap.Design.fit_on`,
        the same for both metrics)."""
        rows = self.modelled & (self.groups == group)
        if self.exclude_workload is not None:
            rows &= self.workloads != self.exclude_workload
        return gap.first_of_each_run(self.designs["tpot"].fittable(rows), self.runs)

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
             quantile: float, keys: np.ndarray | None = None) -> np.ndarray:
        """Factor ``exp(q-quantile of log(measured/predicted))`` per configuration, from the
        errors of :meth:`_sample` (``keys``: the configurations' :func:`config_keys`, to centre
        each on its own error on other workloads; NaN: no error in the group to read)."""
        concurrency = np.asarray(concurrency, dtype=float)
        centres = (np.full(concurrency.shape, np.nan) if keys is None
                   else self.centre(keys, metric))
        out = np.full(concurrency.shape, np.nan)
        cache: dict = {}
        for i, (c, centre) in enumerate(zip(concurrency.tolist(), centres.tolist(),
                                            strict=True)):
            key = (c, centre if np.isfinite(centre) else None)
            if key not in cache:
                sample = self._sample(group, model, c, metric, centre)
                cache[key] = np.exp(np.quantile(sample, quantile)) if sample.size else np.nan
            out[i] = cache[key]
        return out

    def errors(self, group: str, model: str, concurrency: float, metric: str,
               key: str | None = None) -> np.ndarray:
        """The out-of-sample errors ``log(measured / predicted)`` a configuration's band and
        chances are read from (:meth:`_sample`, centred on the configuration's own error on
        other workloads when ``key`` was measured there)."""
        centre = np.nan if key is None else float(self.centre(np.array([key]), metric)[0])
        return self._sample(group, model, concurrency, metric, centre)

    def sure(self, group: str, model: str, concurrency: float, metric: str,
             ratio: float, key: str | None = None) -> tuple[float, int]:
        """Share of the errors of :meth:`_sample` under which a prediction ``ratio`` times
        below its target would still meet it, and how many errors that share is read from."""
        sample = self.errors(group, model, concurrency, metric, key)
        if not sample.size:
            return float("nan"), 0
        return float(np.mean(np.exp(sample) <= ratio)), int(sample.size)


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
