"""Experiment 11's calculation: every served row's floor, named terms and out-of-sample
prediction (the ``served`` dataset), and the JSON record ``calc served --json`` prints.

:func:`served_table` adds to the rows of :mod:`lab.served.served_loader` the floors of
:mod:`lab.served.served_floors` and the terms of :mod:`lab.served.gap`; :func:`calc_served` summarises
it: rows modelled and why the others are not, median and p90 |error| per engine × GPU × mode
and overall for the floor alone and floor + terms against :data:`TARGETS`, the coefficients,
the rows below their floor with what could explain them, and the selected row in full.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import xarray as xr

from lab.errors import LabInputError, shown
from lab.served import gap
from lab.served.served_floors import add_floors
from lab.served.served_loader import shipped_rows
from lab.units import fmt_number

TARGETS = {"tpot": {"median": 0.10, "p90": 0.30}, "ttft": {"median": 0.30, "p90": 0.80}}
"""The issue's targets for |predicted − measured| / measured over all modelled rows."""
METRICS = ("tpot", "ttft")
"""The two measured latencies."""
TERMS = {"tpot": ("allreduce", "prefill", "step", "fixed"), "ttft": ("queue", "fixed")}
"""The named terms of each metric, in the order they stack on the floor."""
TERM_NAMES = {
    ("tpot", "allreduce"): "all-reduces and expert all-to-all",
    ("tpot", "prefill"): "prefill interleaved into the step",
    ("tpot", "step"): "step beyond the floor, (k_step − 1)·floor",
    ("tpot", "fixed"): "fixed time per layer × layers",
    ("tpot", "residual"): "residual (unexplained)",
    ("ttft", "queue"): "queue behind (c − 1)/2 prefills",
    ("ttft", "fixed"): "fixed time to first token",
    ("ttft", "residual"): "residual (unexplained)",
}
"""How each term is named on the page and in the text output."""
DEFAULT_ROW = "llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4"
"""Substring of the id selected by default when present (else the first modelled row)."""


def _group_keys(table: xr.Dataset) -> np.ndarray:
    """engine × GPU × mode of every row (the coefficients' group, and the error tables')."""
    parts = [np.asarray(table[k].values).astype(str) for k in ("engine", "gpu", "mode")]
    return np.array([" × ".join(p) for p in zip(*parts, strict=True)])


def _workloads(table: xr.Dataset) -> np.ndarray:
    return np.array([f"{i}/{o}" for i, o in zip(table["isl"].values, table["osl"].values,
                                                  strict=True)])


def _designs(table: xr.Dataset) -> dict[str, gap.Design]:
    v = {k: np.nan_to_num(np.asarray(table[k].values, dtype=float)) for k in (
        "tpot_floor_ms", "tpot_term_allreduce_ms", "prefill_step_basis_ms", "ttft_floor_ms",
        "concurrency", "prefill_workers", "tpot_measured_ms", "ttft_measured_ms", "layers")}
    agg = np.asarray(table["mode"].values).astype(str) == "agg"
    return {"tpot": gap.tpot_design(v["tpot_floor_ms"], v["tpot_term_allreduce_ms"],
                                    v["prefill_step_basis_ms"], v["layers"], agg,
                                    v["tpot_measured_ms"]),
            "ttft": gap.ttft_design(v["ttft_floor_ms"], v["concurrency"],
                                    v["prefill_workers"], v["ttft_measured_ms"])}


def _var(values, long_name: str, units: str = "") -> tuple:
    return ("row", values, {"long_name": long_name, **({"units": units} if units else {})})


def served_table(data: xr.Dataset | None = None) -> xr.Dataset:
    """``data`` (default: the shipped rows) with floors, terms, out-of-sample predictions and
    errors for every modelled row (NaN elsewhere), units in attrs (``open_dataset("served")``)."""
    table = add_floors(shipped_rows() if data is None else data)
    modelled = np.asarray(table["modelled"].values, dtype=bool)
    groups, workloads = _group_keys(table), _workloads(table)
    out = table.copy()
    for metric, design in _designs(table).items():
        theta, fitted_on = gap.leave_one_workload_out(design, groups, workloads, modelled)
        ok = modelled & np.isfinite(theta[:, 0])
        nan = lambda a, ok=ok: np.where(ok, a, np.nan)  # noqa: E731
        first, second = (nan(design.columns[:, j] * theta[:, j]) for j in range(2))
        predicted = nan(design.base + np.nan_to_num(first) + np.nan_to_num(second))
        measured = design.measured
        if metric == "tpot":
            agg = np.asarray(table["mode"].values).astype(str) == "agg"
            floor = np.asarray(table["tpot_floor_ms"].values)
            # agg: the first column is P_step; disagg: the floor, k_step · floor = floor + term
            out["tpot_term_prefill_ms"] = _var(np.where(agg, first, nan(0.0)),
                                               TERM_NAMES["tpot", "prefill"], "ms")
            out["tpot_term_step_ms"] = _var(np.where(agg, nan(0.0), first - floor),
                                            TERM_NAMES["tpot", "step"], "ms")
            out["tpot_term_fixed_ms"] = _var(second, TERM_NAMES["tpot", "fixed"], "ms")
            out["tpot_term_allreduce_ms"] = out["tpot_term_allreduce_ms"].where(
                xr.DataArray(modelled, dims="row"))
            coefficient = {"k_prefill": np.where(agg, theta[:, 0], np.nan),
                           "k_step": np.where(agg, np.nan, theta[:, 0]),
                           "t_layer_ms": theta[:, 1]}
        else:
            out["ttft_term_queue_ms"] = _var(first, TERM_NAMES["ttft", "queue"], "ms")
            out["ttft_term_fixed_ms"] = _var(second, TERM_NAMES["ttft", "fixed"], "ms")
            coefficient = dict(zip(gap.TTFT_COEFFICIENTS, theta.T, strict=True))
        out[f"{metric}_predicted_ms"] = _var(
            predicted, f"{metric.upper()} predicted out of sample (floor + terms)", "ms")
        out[f"{metric}_term_residual_ms"] = _var(
            measured - predicted, f"{metric.upper()} residual: measured − predicted", "ms")
        out[f"{metric}_error"] = _var(gap.abs_error(predicted, measured),
                                      f"|{metric.upper()} predicted − measured| / measured", "1")
        out[f"{metric}_floor_error"] = _var(
            gap.abs_error(np.asarray(table[f"{metric}_floor_ms"].values), measured),
            f"|{metric.upper()} floor − measured| / measured", "1")
        out[f"{metric}_ratio"] = _var(measured / np.asarray(table[f"{metric}_floor_ms"].values),
                                      f"measured {metric.upper()} / floor", "1")
        for name, values in coefficient.items():
            out[f"{metric}_{name}"] = _var(nan(values),
                                           f"{metric.upper()} coefficient {name} (out of sample)",
                                           "ms" if name.endswith("_ms") else "1")
        out[f"{metric}_fitted_on"] = _var(fitted_on, f"rows {metric.upper()}'s coefficients were "
                                          "fitted on (other workloads)", "1")
    out["below_floor"] = _var(modelled & (np.asarray(table["tpot_measured_ms"].values)
                                          < np.asarray(table["tpot_floor_ms"].values)),
                              "measured TPOT below its floor")
    out["group"] = _var(groups, "engine × GPU × mode (the coefficients' group)")
    out["workload"] = _var(workloads, "isl/osl (the left-out unit)")
    out.attrs.update({"docs": "docs/model.md, Experiment 11",
                      "fit": "leave one (isl, osl) workload out per engine × GPU × mode"})
    return out


def _text(table: xr.Dataset, name: str, index: int):
    value = table[name].values[index]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if not np.isfinite(value) else float(value)
    return str(value)


def row_record(table: xr.Dataset, index: int) -> dict:
    """One row as a JSON-ready dict (milliseconds as in the dataset; NaN as null)."""
    names = [n for n in table.variables if table[n].dims == ("row",)]
    out = {n: _text(table, n, index) for n in names}
    out["label"] = row_label(out)
    if out["below_floor"]:
        out["below_floor_sentence"] = below_floor_sentence(out)
    return out


def row_label(r: dict) -> str:
    """``vllm, Llama 3.1 70B on h200, fp8, tp 4, agg, 1024/1024 at concurrency 64``."""
    return (f"{r['engine']} {r['model']} on {r['gpu'] or r['system']}, "
            f"{r['precision'] or r['precision_listed']}, tp {r['tp']}, {r['mode']}, "
            f"{r['isl']:,}/{r['osl']:,} tokens at concurrency {r['concurrency']:,}")


def below_floor_sentence(r: dict) -> str:
    """Why a measured TPOT below its floor cannot be the configuration as labelled."""
    why = ("the decode batch does not fit in memory at a 2-byte KV cache, so the engine ran a "
           "smaller batch than the concurrency or an FP8 KV cache" if not r["fits_bf16_kv"]
           else "the engine read fewer bytes than the floor counts (an FP8 KV cache, fewer "
           "experts than uniform routing touches, speculative decoding) or ran a smaller batch "
           "than the concurrency")
    return (f"{row_label(r)}: measured TPOT {fmt_number(r['tpot_measured_ms'], 2)} ms is "
            f"{fmt_number(r['tpot_ratio'], 2)}× its floor of "
            f"{fmt_number(r['tpot_floor_ms'], 2)} ms, impossible as labelled: {why}.")


def select_row(table: xr.Dataset, row_id: str | None) -> int:
    """Index of the row whose id is ``row_id`` (default: :data:`DEFAULT_ROW`, else the first
    modelled row); one sentence when no row has that id."""
    ids = np.asarray(table["id"].values).astype(str)
    if row_id is not None:
        hits = np.flatnonzero(ids == row_id)
        if not hits.size:
            raise LabInputError(f"There is no row with id {shown(row_id)}.")
        return int(hits[0])
    modelled = np.asarray(table["modelled"].values, dtype=bool)
    predicted = modelled & np.isfinite(np.asarray(table["tpot_predicted_ms"].values))
    preferred = np.flatnonzero(predicted & (np.char.find(ids, DEFAULT_ROW) >= 0))
    if preferred.size:
        return int(preferred[0])
    candidates = np.flatnonzero(predicted if predicted.any() else modelled)
    return int(candidates[0]) if candidates.size else 0


def error_table(table: xr.Dataset) -> tuple[dict, list[dict]]:
    """Median and p90 |error| overall and per engine × GPU × mode, floor alone and floor +
    terms, for TPOT and TTFT (fractions)."""
    groups = np.asarray(table["group"].values).astype(str)
    modelled = np.asarray(table["modelled"].values, dtype=bool)

    def summary(mask: np.ndarray) -> dict:
        out = {"rows": int(mask.sum())}
        for metric in METRICS:
            predicted = np.asarray(table[f"{metric}_error"].values)
            out[metric] = {"floor": gap.error_summary(
                np.asarray(table[f"{metric}_floor_error"].values)[mask & np.isfinite(predicted)]),
                "floor_plus_terms": gap.error_summary(predicted[mask])}
        return out

    overall = summary(modelled)
    disagg = np.asarray(table["mode"].values).astype(str) == "disagg"
    stated = np.asarray(table["batch_stated"].values, dtype=bool)
    overall["subsets"] = {name: summary(modelled & mask) for name, mask in (
        ("agg", ~disagg), ("disagg, batch stated", disagg & stated),
        ("disagg, batch inferred", disagg & ~stated))}
    for metric in METRICS:
        got = overall[metric]["floor_plus_terms"]
        overall[metric]["targets"] = TARGETS[metric]
        overall[metric]["met"] = {k: bool(got[k] <= TARGETS[metric][k]) for k in ("median", "p90")}
    per_group = [{"group": g, **summary(modelled & (groups == g))}
                 for g in dict.fromkeys(groups[modelled].tolist())]
    return overall, per_group


def coefficients(table: xr.Dataset) -> list[dict]:
    """The coefficients fitted on *all* of each group's rows (what the terms mean physically;
    the stored predictions use the leave-one-workload-out fits)."""
    modelled = np.asarray(table["modelled"].values, dtype=bool)
    groups = np.asarray(table["group"].values).astype(str)
    designs = _designs(table)
    fits = {m: gap.fit_all(designs[m], groups, modelled) for m in METRICS}
    modes = dict(zip(groups.tolist(), np.asarray(table["mode"].values).astype(str).tolist(),
                     strict=True))
    out = []
    for g in dict.fromkeys(groups[modelled].tolist()):
        first, t_layer = fits["tpot"][g]
        k_queue, t_first = fits["ttft"][g]
        name = gap.TPOT_COEFFICIENTS[modes[g]][0]   # k_prefill (agg) or k_step (disagg)
        out.append({"group": g, name: float(first), "t_layer_ms": float(t_layer),
                    "fraction_of_roofline": float(1 / first) if first > 0 else None,
                    "k_queue": float(k_queue), "t_first_ms": float(t_first)})
    return out


def calc_served(data: xr.Dataset | None = None, row_id: str | None = None,
                rows: bool = True) -> dict:
    """Experiment 11 for ``data`` (default: the shipped public rows).

    Returns ``inputs``, ``source``, ``counts`` (rows, modelled, not modelled by reason),
    ``errors`` (overall, against the targets), ``groups`` (per engine × GPU × mode),
    ``coefficients``, ``below_floor`` (each with its sentence), ``selected`` and, when ``rows``,
    ``rows`` (every row).
    """
    table = served_table(data)
    index = select_row(table, row_id)
    reasons = Counter(r for r in np.asarray(table["reason"].values).astype(str).tolist() if r)
    overall, per_group = error_table(table)
    below = np.flatnonzero(np.asarray(table["below_floor"].values, dtype=bool))
    result = {
        "inputs": {"row": row_id},
        "source": table.attrs.get("source", ""),
        "counts": {"rows": int(table.sizes["row"]),
                   "modelled": int(np.asarray(table["modelled"].values).sum()),
                   "predicted": int(np.isfinite(np.asarray(table["tpot_predicted_ms"].values))
                                    .sum()),
                   "not_modelled": dict(reasons.most_common())},
        "errors": overall,
        "groups": per_group,
        "coefficients": coefficients(table),
        "below_floor": [row_record(table, int(i)) for i in below],
        "selected": row_record(table, index),
    }
    if rows:
        result["rows"] = [row_record(table, i) for i in range(table.sizes["row"])]
    return result


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{fmt_number(x * 100, 1)} %"


def summary_lines(result: dict) -> list[str]:
    """The summary as plain lines: coverage, errors against the targets, the worst groups."""
    c = result["counts"]
    lines = [f"Measured serving latency against the lab's floors. Source: {result['source']}.",
             f"{c['rows']:,} rows; {c['modelled']:,} modelled exactly "
             f"({fmt_number(c['modelled'] / c['rows'] * 100, 1)} %), {c['predicted']:,} with an "
             "out-of-sample prediction (another workload of the same engine × GPU × mode to fit "
             "on). Not modelled:"]
    lines += [f"- {n:,}: {reason}" for reason, n in c["not_modelled"].items()]
    for metric in METRICS:
        e = result["errors"][metric]
        t = e["targets"]
        verdict = ", ".join(f"{k} {'met' if e['met'][k] else 'missed'}" for k in ("median", "p90"))
        lines.append(
            f"{metric.upper()} |error| over {e['floor_plus_terms']['rows']:,} rows: floor alone "
            f"median {_pct(e['floor']['median'])}, p90 {_pct(e['floor']['p90'])}; floor + terms "
            f"median {_pct(e['floor_plus_terms']['median'])}, p90 "
            f"{_pct(e['floor_plus_terms']['p90'])} (targets {_pct(t['median'])} and "
            f"{_pct(t['p90'])}: {verdict}).")
    lines.append("By mode (rows; TPOT median/p90; TTFT median/p90, floor + terms):")
    for name, sub in result["errors"]["subsets"].items():
        if not sub["rows"]:
            continue
        tp, tt = sub["tpot"]["floor_plus_terms"], sub["ttft"]["floor_plus_terms"]
        lines.append(f"- {name}: {sub['rows']:,} rows; TPOT {_pct(tp['median'])}/"
                     f"{_pct(tp['p90'])}; TTFT {_pct(tt['median'])}/{_pct(tt['p90'])}")
    lines.append("Per engine × GPU × mode (rows; TPOT median/p90; TTFT median/p90, floor + "
                 "terms):")
    for g in result["groups"]:
        tp, tt = g["tpot"]["floor_plus_terms"], g["ttft"]["floor_plus_terms"]
        lines.append(f"- {g['group']}: {g['rows']}; TPOT {_pct(tp['median'])}/{_pct(tp['p90'])}; "
                     f"TTFT {_pct(tt['median'])}/{_pct(tt['p90'])}")
    if result["below_floor"]:
        lines.append(f"{len(result['below_floor']):,} row(s) measured below their TPOT floor "
                     "(--json gives a sentence for each); the lowest:")
        worst = min(result["below_floor"], key=lambda r: r["tpot_ratio"])
        lines.append(f"- {worst['below_floor_sentence']}")
    return lines
