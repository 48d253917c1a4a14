"""Experiment 11: from floor to served — real engines' TPOT and TTFT against the lab's floor
plus named terms, predicted out of sample (docs/model.md §11).

Its record in :mod:`lab.experiments.registry` names a dataset that is not a grid
(:func:`lab.served.served_calc.served_table`, ``open_dataset("served")``); the apps register a page
of its own (:mod:`apps.ui.views.served_page`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import param
import xarray as xr

from lab.errors import LabInputError, shown
from lab.experiments.base import Card, Prediction
from lab.served import gap
from lab.served.served_calc import row_record, select_row, served_table
from lab.served.served_explain import row_steps
from lab.served.served_limits import ROW_ID_TEXT
from lab.served.served_loader import MAX_CONCURRENCY, SHIPPED_SOURCE
from lab.table_experiment import TableExperiment, uploaded_table
from lab.units import fmt_count, fmt_number

ALL = "all"
"""The filter value that keeps every row."""
FILTERS = ("model", "gpu", "engine", "mode", "workload")
"""Row filters, each a selector of the values in the data (plus :data:`ALL`)."""
CHART_VARIABLES = ("tpot_measured_ms", "tpot_predicted_ms", "tpot_floor_ms",
                   "tpot_term_allreduce_ms", "tpot_term_prefill_ms", "tpot_term_step_ms",
                   "tpot_term_slots_ms", "tpot_term_fixed_ms", "tpot_term_moe_ms",
                   "tpot_term_collective_ms",
                   "ttft_measured_ms", "ttft_predicted_ms", "ttft_floor_ms",
                   "ttft_term_queue_ms", "ttft_term_fixed_ms", "ttft_term_chunk_ms",
                   "ttft_term_queue_chunk_ms",
                   "tpot_error", "ttft_error")
"""Variables of :meth:`FromFloorToServed.chart_data` (every modelled, filtered row)."""


def left_out_note(reasons: list[dict]) -> str:
    """The rows shown that are not modelled, for the "Rows modelled" card: how many, and the
    most common reason (``""`` when every row shown is modelled)."""
    if not reasons:
        return ""
    n = sum(r["rows"] for r in reasons)
    others = (f" (and {fmt_count(len(reasons) - 1, 'other reason')}; the "
              "row's own in Row id)" if len(reasons) > 1 else "")
    return f"; {n:,} not modelled, {'most often' if others else 'because'}: " + (
        f"{reasons[0]['reason']}{others}")


def pct(x: float) -> str:
    """A share as a whole percent (``n/a`` when not finite)."""
    return "n/a" if not np.isfinite(x) else f"{fmt_number(x * 100, 0)} %"


def error_card(metric: str, errors: dict) -> Card:
    """The card of a metric's out-of-sample |error| (median, p90, the floor's alone), or
    "none" when no modelled row is shown."""
    median = errors["terms"]["median"]
    if median is None or (isinstance(median, float) and not np.isfinite(median)):
        return Card(f"{metric} |error|, floor + terms", "none",
                    "no modelled row with a prediction is shown with these filters")
    return Card(f"{metric} |error|, floor + terms", pct(median),
                f"median; p90 {pct(errors['terms']['p90'])}; floor alone "
                f"{pct(errors['floor']['median'])}")


QUESTION_CONCURRENCY = 64
"""The concurrency the prediction asks about, clients."""


class FromFloorToServed(TableExperiment):
    """Measured served TPOT and TTFT beside the floor and the named terms of the gap."""

    number = 11
    slug = "served"
    title = "From floor to served"
    headline = "Real engines. Every term of the gap named."
    prediction = Prediction(
        question=f"At concurrency {QUESTION_CONCURRENCY}, how far above the lab's decode floor "
                 "is a real engine's time per output token (median over the modelled rows)?",
        choices=("Within 10 %", "About 1.5×", "About 3×", "About 10×"),
        answer=2,
    )
    limits = (
        "Each row is one engine version's run on one day: concurrency is not the decode batch "
        "at every step, TPOT and TTFT are averages, and engines may use features a row does not "
        "name (CUDA graphs, speculative decoding, an FP8 KV cache). The floors are experiment "
        "1's ideal decode step and one request's ideal prefill; the terms are formulas with at "
        "most four fitted coefficients per metric and engine × GPU × mode, fitted without the "
        "row's own workload. Rows with hybrid linear or sparse attention, a tp that does not "
        "divide the KV heads, or no stated concurrency are counted, not modelled."
    )
    sources = (
        f"Measured serving latency: {SHIPPED_SOURCE} (github.com/ai-dynamo/aiconfigurator).",
        "GPU and model figures: docs/sources.md.",
    )

    model = param.Selector(default=ALL, objects=[ALL], check_on_set=False, label="Model",
                           doc="Show only this model's rows.")
    gpu = param.Selector(default=ALL, objects=[ALL], check_on_set=False, label="GPU",
                         doc="Show only this GPU's rows.")
    engine = param.Selector(default=ALL, objects=[ALL], check_on_set=False, label="Engine",
                            doc="Show only this engine's rows.")
    mode = param.Selector(default=ALL, objects=[ALL, "agg", "disagg"], check_on_set=False,
                          label="Mode", doc="agg: one pool; disagg: prefill and decode pools.")
    workload = param.Selector(default=ALL, objects=[ALL], check_on_set=False,
                              label="Workload (isl/osl)", doc="Show only this isl/osl.")
    min_concurrency = param.Integer(default=1, bounds=(1, MAX_CONCURRENCY),
                                    label="Concurrency at least",
                                    doc="Show only rows with at least this many clients.")
    row = param.String(default="", label="Row id", regex=ROW_ID_TEXT,
                       doc="The row shown in full (empty: the first shown).")
    below_floor_only = param.Boolean(default=False, label="Only rows below the floor",
                                     doc="Show only rows measured below their TPOT floor.")
    measurements = uploaded_table("Your rows (lab.served.served_loader); None: the shipped public rows.")

    def build_table(self) -> xr.Dataset:
        """The rows with floors, terms and predictions."""
        return served_table(self.measurements)

    def table_built(self, table: xr.Dataset) -> None:
        """Offer the values of the new table in the filters."""
        for name in FILTERS:
            values = np.asarray(table[name].values).astype(str)
            self.param[name].objects = [ALL, *sorted(set(values.tolist()))]

    def mask(self) -> np.ndarray:
        """The rows the filters keep."""
        table = self.table()
        keep = np.ones(table.sizes["row"], dtype=bool)
        for name in FILTERS:
            wanted = getattr(self, name)
            if wanted != ALL:
                values = np.asarray(table[name].values).astype(str)
                if wanted not in set(values.tolist()):
                    raise LabInputError(f"There is no row with {name} {shown(wanted)}.")
                keep &= values == wanted
        keep &= np.asarray(table["concurrency"].values) >= self.min_concurrency
        if self.below_floor_only:
            keep &= np.asarray(table["below_floor"].values, dtype=bool)
        return keep

    def compute(self) -> dict:
        table = self.table()
        keep = self.mask()
        if not keep.any():
            raise LabInputError("No row matches these filters; choose another model, GPU, "
                                "engine, mode, workload or a lower concurrency.")
        if self.row:
            index = select_row(table, self.row)
        else:
            shown_rows = table.isel(row=np.flatnonzero(keep))
            index = int(np.flatnonzero(keep)[select_row(shown_rows, None)])
        modelled = keep & np.asarray(table["modelled"].values, dtype=bool)
        errors = {m: {"floor": gap.error_summary(np.asarray(table[f"{m}_floor_error"].values)[
                      modelled & np.isfinite(np.asarray(table[f"{m}_error"].values))]),
                      "terms": gap.error_summary(np.asarray(table[f"{m}_error"].values)[modelled])}
                  for m in ("tpot", "ttft")}
        ratio = np.asarray(table["tpot_ratio"].values)[modelled]
        left_out = keep & ~np.asarray(table["modelled"].values, dtype=bool)
        reasons = Counter(np.asarray(table["reason"].values).astype(str)[left_out].tolist())
        return {**self.record_head(table),
                "not_modelled_shown": [{"reason": reason, "rows": n}
                                       for reason, n in reasons.most_common() if reason],
                "selected": row_record(table, index),
                "rows_shown": int(keep.sum()), "modelled_shown": int(modelled.sum()),
                "rows": int(table.sizes["row"]),
                "modelled": int(np.asarray(table["modelled"].values).sum()),
                "median_tpot_ratio": float(np.median(ratio)) if ratio.size else float("nan"),
                "errors": errors}

    def cards(self) -> list[Card]:
        r = self.result
        p = r["selected"]
        e = r["errors"]
        if p["modelled"] and p["tpot_predicted_ms"] is not None:
            selected = Card("Selected row: TPOT", f"{fmt_number(p['tpot_measured_ms'], 2)} ms",
                            f"predicted {fmt_number(p['tpot_predicted_ms'], 2)} ms; floor "
                            f"{fmt_number(p['tpot_floor_ms'], 2)} ms")
        else:
            selected = Card("Selected row", f"{fmt_number(p['tpot_measured_ms'], 2)} ms TPOT",
                            p["reason"] or "no other workload to fit on")
        return [
            selected,
            Card("Measured / floor (TPOT)", f"{fmt_number(r['median_tpot_ratio'], 2)}×"
                 if r["modelled_shown"] else "none",
                 f"median over {fmt_count(r['modelled_shown'], 'modelled row')} shown"
                 if r["modelled_shown"] else "no modelled row is shown with these filters"),
            *(error_card(metric, e[metric.lower()]) for metric in ("TPOT", "TTFT")),
            Card("Rows modelled", f"{r['modelled']:,} of {r['rows']:,}",
                 f"{r['rows_shown']:,} shown with these filters" + left_out_note(
                     r["not_modelled_shown"])),
        ]

    def steps(self):
        return row_steps(self.result["selected"])

    def explanation(self) -> str:
        r = self.result
        if not r["modelled_shown"]:
            return ("No modelled row is shown with these filters, so there is no gap to read "
                    "here; widen the filters (every model, engine and GPU) to see it.")
        table = self.table()
        at = (self.mask() & np.asarray(table["modelled"].values, dtype=bool)
              & (np.asarray(table["concurrency"].values) == QUESTION_CONCURRENCY))
        at_question = (f"At concurrency {QUESTION_CONCURRENCY}, over the {int(at.sum()):,} "
                       "modelled rows shown there, measured TPOT is a median "
                       f"{fmt_number(float(np.median(table['tpot_ratio'].values[at])), 2)}× the "
                       f"ideal decode step (over all {r['modelled_shown']:,} shown, "
                       f"{fmt_number(r['median_tpot_ratio'], 2)}×)" if at.any() else
                       f"No modelled row at concurrency {QUESTION_CONCURRENCY} is shown with "
                       f"these filters; over the {r['modelled_shown']:,} modelled rows shown, "
                       f"measured TPOT is a median {fmt_number(r['median_tpot_ratio'], 2)}× the "
                       "ideal decode step")
        return (at_question + ": the prefill "
                "work an aggregated engine interleaves into its decode steps, the step's time "
                "beyond its roofline (in steps of one sequence per attention rank), the "
                "all-reduces and all-to-all, and fixed times per layer explain most of the gap; "
                "the rest is the residual, shown as such.")

    def chart_data(self) -> xr.Dataset:
        """Every modelled row the filters keep, with measured, predicted and each term."""
        table = self.table()
        keep = self.mask() & np.asarray(table["modelled"].values, dtype=bool)
        shown = np.flatnonzero(keep)
        ds = table[list(CHART_VARIABLES)].isel(row=shown).reset_coords(drop=True)
        ds["row"].attrs = {"long_name": "row of the data", "units": "1"}
        # the id a reader types in Row id (the row's position in the data is not one)
        ds = ds.assign_coords(id=("row", np.asarray(table["id"].values)[shown],
                                  {"long_name": "run id (the Row id input)", "units": ""}))
        return ds
