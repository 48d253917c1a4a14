"""Experiment 9: floors against measurements — how far real kernels sit above the lab's ideal.

Its record in :mod:`lab.experiments.registry` names, beside this class, a dataset that is not a
grid (:func:`lab.measured.calc.measured_table`, ``open_dataset("measured")``); the apps
register a page of its own (:mod:`apps.ui.views.measured_page`) (docs/model.md §9).
"""

from __future__ import annotations

import numpy as np
import param
import xarray as xr

from lab.catalog import get_gpu, gpu_catalog
from lab.errors import LabInputError
from lab.experiments.base import Card, Prediction
from lab.limits import MAX_BATCH, MAX_MEASURED_TP, MAX_TOKENS_CONTEXT
from lab.measured.calc import (
    DEFAULT_POINT,
    Selection,
    below_floor_sentence,
    gpu_label,
    group_summary,
    measured_elsewhere,
    measured_table,
    measured_values,
    point_record,
    select_point,
)
from lab.measured.explain import fmt_us, point_steps
from lab.measured.floors import UNITS
from lab.measured.measured_loader import KIND_NAMES, KINDS, SHIPPED_GPU, SHIPPED_SOURCE, VARIABLES
from lab.table_experiment import TableExperiment, uploaded_table
from lab.units import fmt_count, fmt_number

CHART_VARIABLES = ("ratio", "latency_s", "floor_s", "achieved_bandwidth")
"""Variables of :meth:`FloorsAgainstMeasurements.chart_data`."""
CONVERGED_FLOOR_S = 100e-6
"""Floor from which a kernel has enough work for its fixed cost to fade, s (the page's split)."""


class FloorsAgainstMeasurements(TableExperiment):
    """Measured kernel times beside the floors of experiments 1 and 8 for the same work."""

    number = 9
    slug = "measured"
    title = "Floors against measurements"
    headline = "More work. Closer to the floor."
    prediction = Prediction(
        question="At batch 16 and 8k context (Llama 3.1 8B's heads, one H100), how far above "
                 "the floor is the real decode attention kernel?",
        choices=("Below it", "Within about 15 %", "About twice", "About ten times"),
        answer=1,
    )
    limits = (
        "One public data point per shape: the publisher does not state the kernel library, "
        "clocks or driver. The floors count each byte once and each FLOP at the dense peak; they "
        "leave out launch and synchronisation costs, partial waves, cache effects and the "
        "softmax. Times are one layer's kernel, not a whole step. A point below its floor is "
        "flagged, not hidden: it means a label, a peak or the timing is off."
    )
    sources = (
        f"Measured kernel times: {SHIPPED_SOURCE} "
        "(github.com/inference-sim/inference-sim).",
        "GPU figures: docs/sources.md (H100 SXM 3.35 TB/s, 989.4 TFLOPS dense BF16).",
        "Dao et al., FlashAttention-2 (2023): the attention kernels' work and I/O.",
    )

    kind = param.Selector(default=DEFAULT_POINT["kind"], objects=list(KINDS), label="Kernel",
                          doc="decode attention, prefill attention or GEMM.")
    shape = param.Selector(default=DEFAULT_POINT["shape"], objects=[DEFAULT_POINT["shape"]],
                           check_on_set=False, label="Shape (Q-KV-D or k×n)",
                           doc="Head shape Q-KV-D, or k×n of a GEMM.")
    tp = param.Integer(default=DEFAULT_POINT["tp"], bounds=(1, MAX_MEASURED_TP), label="tp (GPUs)",
                       doc="GPUs the heads are split over (decode).")
    batch = param.Integer(default=DEFAULT_POINT["batch"], bounds=(1, MAX_BATCH),
                          label="Batch (sequences)", doc="Decode batch.")
    context = param.Integer(default=DEFAULT_POINT["context"], bounds=(1, MAX_TOKENS_CONTEXT),
                            label="Context (tokens)",
                            doc="Cached tokens per sequence (decode) or prompt tokens (prefill).")
    m = param.Integer(default=8, bounds=(1, MAX_TOKENS_CONTEXT), label="GEMM m (tokens)",
                      doc="GEMM rows m.")
    gpu = param.Selector(default=SHIPPED_GPU, objects=list(gpu_catalog()), label="GPU",
                         doc="GPU whose peaks make the floor (the data is from an H100 SXM).")
    measurements = uploaded_table("Your measurements (lab.measured.measured_loader); None: the shipped "
                                  "H100 data.")

    def __init__(self, **params):
        self._last_points: dict[tuple[int, str], Selection] = {}
        super().__init__(**params)
        self._remember_point()

    # -- the table, computed once per data set and GPU ------------------------------------
    def table_key(self) -> tuple:
        return (id(self.measurements), self.gpu)

    def build_table(self) -> xr.Dataset:
        """The measurements with their floors on the selected GPU."""
        return measured_table(self.measurements, get_gpu(self.gpu))

    def measured_on(self) -> str:
        """The catalog GPU the data ran on, when it says (the shipped data: the H100 SXM)."""
        return self.table().attrs.get("measured_on", "")

    def shapes(self, kind: str | None = None) -> list[str]:
        """The shapes measured for ``kind`` (default: the selected kind), in table order."""
        table = self.table()
        kinds = np.asarray(table["kind"].values).astype(str)
        shapes = np.asarray(table["shape"].values).astype(str)
        return list(dict.fromkeys(shapes[kinds == (kind or self.kind)].tolist()))

    def selection(self) -> Selection:
        """The inputs in force as the point they name."""
        return Selection(kind=self.kind, shape=str(self.shape), tp=self.tp, batch=self.batch,
                         context=self.context, m=self.m)

    def measured_options(self, axis: str) -> list[int]:
        """The values of ``axis`` (tp, batch, context or m) measured for the kind and shape in
        force and the axes before it (:func:`~lab.measured.calc.measured_values`); the value
        in force when none is (another kind's axis) or the data has no table on this GPU (the
        page says why)."""
        try:
            return (measured_values(self.table(), self.selection(), axis)
                    or [int(getattr(self, axis))])
        except LabInputError:  # no table on this GPU (FP8 GEMMs uploaded, a GPU without FP8)
            return [int(getattr(self, axis))]

    def tps(self) -> list[int]:
        """The tp degrees (GPUs) measured for the selected kind and shape, ascending."""
        return self.measured_options("tp")

    @param.depends("shape", "tp", "batch", "context", "m", watch=True)
    def _remember_point(self) -> None:
        """Keep the point in force as its kind's last one (of this data set), when measured:
        a kind chosen again returns to it (decode → GEMM → decode lost the decode point)."""
        try:
            table = self.table()
            select_point(table, self.selection())
        except LabInputError:
            return
        self._last_points[(id(self.measurements), self.kind)] = self.selection()

    @param.depends("kind", "measurements", watch=True)
    def _first_point_of_kind(self) -> None:
        """On a new kind or data set, select a measured point of that kind: the last one shown
        of that kind (this data set), else the default point, else 32-8-128's first, else the
        first of the kind, so the page never lands on nothing."""
        table = self.table()
        kinds = np.asarray(table["kind"].values).astype(str)
        if not (kinds == self.kind).any():
            if kinds.size:  # your data holds another kind: show that one
                self.kind = str(kinds[0])
            return
        last = self._last_points.get((id(self.measurements), self.kind))
        if last is not None and last.kind == self.kind:
            self.param.update(shape=last.shape, tp=last.tp, batch=last.batch,
                              context=last.context, m=last.m)
            return
        try:
            select_point(table, self.selection())
            return
        except LabInputError:
            pass
        shapes = np.asarray(table["shape"].values).astype(str)
        candidates = np.flatnonzero(kinds == self.kind)
        preferred = candidates[shapes[candidates] == DEFAULT_POINT["shape"]]
        p = point_record(table, int((preferred if preferred.size else candidates)[0]))
        self.param.update(shape=p["shape"], tp=p["tp"], batch=max(p["batch"], 1),
                          context=max(p["context"], 1), m=max(p["m"], 1))

    def compute(self) -> dict:
        table = self.table()
        self.param.shape.objects = self.shapes() or [self.shape]
        index = select_point(table, self.selection())
        kinds = np.asarray(table["kind"].values).astype(str)
        gpu = get_gpu(self.gpu)
        point = point_record(table, index)
        mask = kinds == self.kind
        below = np.flatnonzero(mask & np.asarray(table["below_floor"].values))
        worst = (point_record(table, below[np.argmin(table["ratio"].values[below])])
                 if below.size else None)
        return {**self.record_head(table),
                "selected": point,
                "kind_summary": group_summary(table, mask),
                "below_floor_count": int(below.size),
                "worst_below_floor": worst,
                "worst_sentence": (below_floor_sentence(worst, gpu, self.measured_on())
                                   if worst else None),
                "measured_elsewhere": measured_elsewhere(self.measured_on(), gpu),
                "hbm_bw": gpu.hbm_bw}

    # -- the seven elements ---------------------------------------------------------------
    def cards(self) -> list[Card]:
        r = self.result
        p, s = r["selected"], r["kind_summary"]
        bound = "compute-bound" if p["compute_bound"] else "memory-bound"
        return [
            Card("Measured / floor", f"{fmt_number(p['ratio'], 2)}×",
                 f"{fmt_us(p['latency_s'])} measured" + (" — below the floor!" if p["below_floor"]
                                                          else "")),
            Card("The lab's floor", fmt_us(p["floor_s"]), bound),
            Card("Achieved bandwidth", f"{fmt_number(p['achieved_bandwidth'] / 1e12, 2)} TB/s",
                 f"{fmt_number(p['achieved_bandwidth'] / r['hbm_bw'] * 100, 0)} % of "
                 f"{fmt_number(r['hbm_bw'] / 1e12, 2)} TB/s"),
            Card(f"Range over all {KIND_NAMES[self.kind]}",
                 f"{fmt_number(s['min_ratio'], 2)}–{fmt_number(s['max_ratio'], 1)}×",
                 f"{fmt_count(s['points'], 'point')}, median {fmt_number(s['median_ratio'], 2)}×"),
            Card("Below their floor", f"{r['below_floor_count']:,}",
                 ("on this GPU; the data ran on another"
                  if r["measured_elsewhere"] else "impossible under the stated peaks")
                 if r["below_floor_count"]
                 else "none: every point is at or above its floor"),
        ]

    def steps(self):
        return point_steps(self.result["selected"], get_gpu(self.gpu), self.measured_on())

    def explanation(self) -> str:
        p = self.result["selected"]
        s = self.result["kind_summary"]
        return (
            f"{p['label'].capitalize()} took {fmt_us(p['latency_s'])} against a floor of "
            f"{fmt_us(p['floor_s'])}: {fmt_number(p['ratio'], 2)}×, streaming the KV cache at "
            f"{fmt_number(p['achieved_bandwidth'] / 1e12, 2)} TB/s. With that much work the "
            "fixed cost of a kernel is small; over all decode points the ratio runs from "
            f"{fmt_number(s['min_ratio'], 2)}× to {fmt_number(s['max_ratio'], 1)}× (at "
            f"{s['max_ratio_point']}), the top end where a kernel reads little and its fixed "
            f"time dominates: none finished in under {fmt_us(s['fastest_kernel_s'])}."
            if p["kind"] == "decode" else
            f"{p['label'].capitalize()}: {fmt_number(p['ratio'], 2)}× its floor.")

    def chart_data(self) -> xr.Dataset:
        """Measured / floor of the selected kind: over batch × context for the selected decode
        shape and tp; over context (prefill) or m (GEMM) for every shape."""
        table = self.table()
        kinds = np.asarray(table["kind"].values).astype(str)
        mask = kinds == self.kind
        if self.kind == "decode":
            mask &= (np.asarray(table["shape"].values).astype(str) == self.shape) & (
                np.asarray(table["tp"].values) == self.tp)
            dims = ["batch", "context"]
        else:
            dims = ["shape", "context" if self.kind == "prefill" else "m"]
        sub = table.isel(point=np.flatnonzero(mask))
        frame = sub[[*dims, *CHART_VARIABLES]].to_dataframe().reset_index(drop=True)
        frame = frame.groupby(dims, sort=True).first()
        ds = xr.Dataset.from_dataframe(frame)
        for name in CHART_VARIABLES:
            long_name, units = UNITS.get(name, VARIABLES.get(name, (name, "")))
            ds[name].attrs = {"long_name": long_name, "units": units}
        for name in dims:
            long_name, units = VARIABLES[name]
            ds[name].attrs = {"long_name": long_name.split(" (")[0], **({"units": units}
                                                                        if units else {})}
        return ds

    def regions(self) -> str:
        """Where the fixed cost dominates the chart's points and where they converge."""
        ds = self.chart_data()
        ratio = ds["ratio"].values
        floor = ds["floor_s"].values
        if not np.isfinite(ratio).any():
            return ""
        top = np.unravel_index(np.nanargmax(ratio), ratio.shape)
        where = ", ".join(f"{dim} {ds[dim].values[i]:,}" if not isinstance(ds[dim].values[i], str)
                          else f"{ds[dim].values[i]}" for dim, i in zip(ds.dims, top, strict=True))
        fastest = np.nanmin(ds["latency_s"].values)
        big = np.isfinite(ratio) & (floor >= CONVERGED_FLOOR_S)
        text = (f"The fixed cost dominates where there is little work: up to "
                f"{fmt_number(ratio[top], 1)}× ({where}, floor {fmt_us(floor[top])}); no kernel "
                f"here ran faster than {fmt_us(fastest)}.")
        measured_on = self.table().attrs.get("measured_on", "")
        if measured_on and measured_on != self.gpu:
            text = (f"The data was measured on {gpu_label(measured_on)}; these floors use the "
                    f"peaks of the {gpu_label(self.gpu)}. ") + text
        if big.any():
            text += (f" Where the floor is {fmt_us(CONVERGED_FLOOR_S)} or more it converges: "
                     f"{fmt_number(ratio[big].min(), 2)}–{fmt_number(ratio[big].max(), 2)}× "
                     f"({int(big.sum())} points, median {fmt_number(np.median(ratio[big]), 2)}×).")
        return text
