"""Which configurations on a page exceed the memory budget, for charts and cards.

Experiments 1–4 take a memory budget. Their chart data do not all carry a ``fits`` flag, so the
flag is computed here over the chart's decode axes (batch, context, tp) with the experiment's
own sweep, and drawn as hollow markers. Only the drawing gets the flag: the downloaded chart
data stay the experiment's ``chart_data``. Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from lab.errors import LabInputError
from lab.experiments.base import Card, Experiment
from lab.experiments.decode_inputs import DecodeExperiment
from lab.models.decode_step import PRECISIONS
from lab.units import fmt_gb

DECODE_AXES = ("batch", "context", "tp")
"""Chart dimensions the decode sweep accepts as axes."""


def has_budget(exp: Experiment) -> bool:
    """True when the page draws decode configurations against a memory budget (1–4)."""
    return isinstance(exp, DecodeExperiment) and "budget" in exp.param


def compared_precisions(exp: Experiment, ds: xr.Dataset) -> list[str]:
    """The precisions the chart's variables are named after (experiment 4 draws BF16 and FP8),
    else the page's precision."""
    named = [p for p in PRECISIONS
             if any(f"_{p}_" in str(v) or str(v).endswith(f"_{p}") for v in ds.data_vars)]
    return named or [exp.precision]


def fits_flag(exp: Experiment, ds: xr.Dataset) -> xr.DataArray | None:
    """Where the charted configurations fit the budget (every compared precision must fit).

    Over the chart's decode axes; None for a page without a budget. A page whose chart counts
    the sequences that fit (experiment 2) marks the points where none does.
    """
    if not has_budget(exp):
        return None
    if "fits" in ds:
        return ds["fits"]
    if "max_sequences" in ds:
        return (ds["max_sequences"] >= 1).rename("fits")
    axes = {d: ds[d] for d in DECODE_AXES if d in ds.dims}
    flags = [exp.sweep(precision=p, **axes)["fits"] for p in compared_precisions(exp, ds)]
    out = flags[0]
    for flag in flags[1:]:
        out = out & flag
    return out.astype(bool).rename("fits")


def with_fits(exp: Experiment, ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with the ``fits`` flag added for drawing (unchanged without a budget)."""
    flag = fits_flag(exp, ds)
    if flag is None or "fits" in ds:
        return ds
    return ds.assign(fits=flag.transpose(*[d for d in ds.dims if d in flag.dims]))


def over_budget(exp: Experiment) -> str | None:
    """A sentence when the current configuration does not fit its budget, else None."""
    if not has_budget(exp) or exp.error is not None:
        return None
    compared = [p for p in PRECISIONS if isinstance(exp.result.get(p), dict)]
    for precision in compared or [exp.precision]:
        try:
            out = exp.sweep(precision=precision)
        except LabInputError:  # no point to weigh (experiment 3's tp 8 for 28 heads)
            return None  # its card says why; raised here, the cards never updated
        if not bool(np.asarray(out["fits"])):
            need = float(out["memory_params_bytes"]) + float(out["memory_kv_bytes"])
            budget = float(out["memory_budget_bytes"])
            return (f"{precision.upper()} needs {fmt_gb(need)} per GPU (weights + KV), over the "
                    f"{fmt_gb(budget)} budget.")
    return None


def budget_card(exp: Experiment, cards: list[Card]) -> Card | None:
    """A "Does not fit" card for an over-budget configuration whose cards do not say so."""
    if any("budget" in f"{c.label} {c.value}".lower() for c in cards):
        return None
    sentence = over_budget(exp)
    return Card("Does not fit", "does not fit", sentence) if sentence else None
