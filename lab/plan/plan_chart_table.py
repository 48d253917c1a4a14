"""The plan page's chart as a table: the frontier of each mode and the public measured runs
overlaid, one row per point, for the page's "Chart data (CSV)" (docs/model.md §12). No Panel
here."""

from __future__ import annotations

import numpy as np
import xarray as xr

FRONTIER_COLUMNS = {
    "tokens_per_s_user": ("output tokens/s per user, 1000 / TPOT", "1/s"),
    "tokens_per_s_gpu": ("output tokens/s per GPU", "1/s"),
    "tpot_ms": ("predicted (or measured) time per output token", "ms"),
    "ttft_ms": ("predicted (or measured) time to first token", "ms"),
    "tpot_upper_ms": ("TPOT at the band's upper edge", "ms"),
    "ttft_upper_ms": ("TTFT at the band's upper edge", "ms"),
    "concurrency": ("clients in flight", "1"),
    "gpus": ("GPUs the deployment uses", "1"),
}
"""Numeric columns of the table: long name and units (CF)."""
TEXT_COLUMNS = ("source", "mode", "label", "id")
"""Text columns: ``source`` is ``frontier``, ``pick`` (the star) or ``measured``."""


def plan_chart_table(result: dict) -> xr.Dataset:
    """The points of a plan's chart (:func:`lab.plan.plan_calc.calc_plan`'s ``result``) over
    ``point``: every frontier configuration of each mode, the pick, then each public measured
    run (its band and GPUs blank: a run has neither)."""
    rows = [{**p, "source": "frontier"} for mode in result["frontier"].values() for p in mode]
    if result.get("best") is not None:
        rows.append({**result["best"], "source": "pick"})
    rows += [{**m, "source": "measured", "label": f"tp{m.get('tp', '')} c {m['concurrency']}"}
             for m in result["measured"]]
    data = {}
    for name in TEXT_COLUMNS:
        data[name] = ("point", np.array([str(r.get(name, "")) for r in rows], dtype=str))
    for name, (long_name, units) in FRONTIER_COLUMNS.items():
        values = np.array([np.nan if r.get(name) is None else float(r[name]) for r in rows])
        data[name] = ("point", values, {"long_name": long_name, "units": units})
    return xr.Dataset(data, coords={"point": np.arange(len(rows))})
