"""Experiment 9's calculation: every measured point against its floor, as JSON-ready records.

:func:`measured_table` adds the floors of :mod:`lab.measured.floors` to a measurements table
(the ``measured`` dataset); :func:`calc_measured` is what ``inference-lab calc measured`` and
the page show: a summary per kind and per head shape, every point below its floor with the
sentence that says what could explain it, and the selected point in full.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from lab.catalog import GPUSpec, get_gpu, gpu_catalog
from lab.errors import LabInputError, shown
from lab.measured.floors import UNITS, floors
from lab.measured.measured_loader import KIND_NAMES, KINDS, SHIPPED_GPU, shipped_measurements
from lab.models.decode_step import peak_flops
from lab.units import fmt_count, fmt_int, fmt_number, nearest_on_log_scale

DEFAULT_POINT = {"kind": "decode", "shape": "32-8-128", "tp": 1, "batch": 16, "context": 8192,
                 "m": 0}
"""The point selected by default: Llama 3.1 8B's heads, batch 16 at 8k context, one GPU."""

CONVERGED_BAND = (1.05, 1.15)
"""Ratio band the large decode points settle in on the shipped data (docs/model.md §9)."""

POINT_AXES = {"decode": ("tp", "batch", "context"), "prefill": ("context",), "gemm": ("m",)}
"""Kind → the inputs (besides the shape) that pick a measured point of that kind."""


def gpu_label(gpu_id: str) -> str:
    """The catalog name of GPU ``gpu_id`` (``h100-sxm`` → NVIDIA H100 SXM); an id the catalog
    does not know (a data set's own ``measured_on``) as it is."""
    spec = gpu_catalog().get(gpu_id)
    return spec.name if spec is not None else gpu_id


def measured_table(data: xr.Dataset | None = None, gpu: str | GPUSpec = SHIPPED_GPU) -> xr.Dataset:
    """``data`` (default: the shipped measurements) with every floor variable of
    :data:`~lab.measured.floors.UNITS` added, units in attrs, the GPU's figures in ``attrs``."""
    gpu = get_gpu(gpu)
    data = shipped_measurements() if data is None else data
    if not gpu.has_fp8 and (np.asarray(data["dtype"].values).astype(str) == "fp8").any():
        raise LabInputError(f"{gpu.name} has no FP8 peak, so the floor of an fp8 GEMM cannot be "
                            "computed on it; choose a GPU with FP8.")
    out = floors(data, gpu)
    table = data.copy()
    for name, values in out.items():
        long_name, units = UNITS[name]
        table[name] = ("point", values, {"long_name": long_name, "units": units})
    table.attrs.update({"gpu": gpu.id, "gpu_name": gpu.name, "hbm_bw_Bps": gpu.hbm_bw,
                        "peak_bf16_flops": gpu.peak_bf16,
                        "docs": "docs/model.md, Experiment 9"})
    return table


def point_label(p: dict) -> str:
    """``decode attention 32-8-128 tp 1, batch 16 × context 8,192`` and the like."""
    if p["kind"] == "gemm":
        return f"GEMM m {p['m']:,} × k {p['k']:,} × n {p['n']:,} ({p['dtype']})"
    if p["kind"] == "prefill":
        return f"prefill attention {p['shape']}, {p['context']:,} tokens"
    return (f"decode attention {p['shape']} tp {p['tp']}, batch {p['batch']:,} × context "
            f"{p['context']:,}")


def point_record(table: xr.Dataset, index: int) -> dict:
    """One point as a JSON-ready dict (SI units; booleans and text as they are)."""
    out: dict = {"point": int(index)}
    for name, da in table.data_vars.items():
        value = da.values[index]
        if isinstance(value, np.bool_ | bool):
            out[name] = bool(value)
        elif isinstance(value, np.integer):
            out[name] = int(value)
        elif isinstance(value, np.floating):
            out[name] = float(value)
        else:
            out[name] = str(value)
    out["label"] = point_label(out)
    return out


def measured_elsewhere(measured_on: str, gpu: GPUSpec) -> bool:
    """True when the data ran on another catalog GPU than the one whose peaks make the floors."""
    return bool(measured_on) and measured_on != gpu.id


def below_floor_sentence(p: dict, gpu: GPUSpec, measured_on: str = "") -> str:
    """Why a point below its floor is impossible under the stated peaks, and what could explain
    it; or, when the data ran on another GPU (``measured_on``) than ``gpu``, that it compares
    the two parts and says nothing wrong of the kernel."""
    speed = (f"{fmt_number(p['achieved_flops'] / 1e12, 0)} TFLOPS" if p["compute_bound"]
             else f"{fmt_number(p['achieved_bandwidth'] / 1e12, 2)} TB/s")
    stated = (f"the dense {p['dtype'].upper()} peak of "
              f"{fmt_number(float(peak_flops(gpu, p['dtype'])) / 1e12, 1)} TFLOPS"
              if p["compute_bound"] else f"the {fmt_number(gpu.hbm_bw / 1e12, 2)} TB/s bandwidth")
    if measured_elsewhere(measured_on, gpu):
        return (f"{point_label(p)}: measured {fmt_number(p['latency_s'] * 1e6, 1)} µs is "
                f"{fmt_number(p['ratio'], 2)}× the floor of {fmt_number(p['floor_s'] * 1e6, 1)} "
                f"µs on the {gpu.name}, i.e. {speed}, more than {stated} of the {gpu.name}; but "
                f"it ran on the {gpu_label(measured_on)}, not on this GPU, so this floor is not "
                f"its own: judge the kernel on the {gpu_label(measured_on)}'s floors.")
    other = ""
    if p["compute_bound"] and p["dtype"] == "bf16" and gpu.has_fp8:
        other = (f" (at the FP8 peak of {fmt_number(gpu.peak_fp8 / 1e12, 1)} TFLOPS it would sit "
                 f"at {fmt_number(p['latency_s'] / (p['flops'] / gpu.peak_fp8), 2)}× its floor)")
    return (f"{point_label(p)}: measured {fmt_number(p['latency_s'] * 1e6, 1)} µs is "
            f"{fmt_number(p['ratio'], 2)}× its floor of {fmt_number(p['floor_s'] * 1e6, 1)} µs, "
            f"i.e. {speed}, more than {stated} of the {gpu.name}; that is impossible under the "
            f"stated peaks, so the kernel ran in another precision than labelled{other}, on a "
            "different peak (clocks or a part other than the catalog's), or the time is a "
            "timing artefact (operands left in cache, overlapping launches, an unsynchronised "
            "timer).")


@dataclass(frozen=True)
class Selection:
    """Which measured point to show in full: kind, head shape (or ``k×n``), and its axes."""

    kind: str = DEFAULT_POINT["kind"]
    shape: str = DEFAULT_POINT["shape"]
    tp: int = DEFAULT_POINT["tp"]
    batch: int = DEFAULT_POINT["batch"]
    context: int = DEFAULT_POINT["context"]
    m: int = DEFAULT_POINT["m"]


def _values(values) -> str:
    shown_values = sorted(set(values), key=lambda v: (isinstance(v, str), v))
    text = ", ".join(f"{v:,}" if isinstance(v, int | np.integer) else str(v)
                     for v in shown_values[:12])
    return text + (", …" if len(shown_values) > 12 else "")


def select_point(table: xr.Dataset, sel: Selection) -> int:
    """Index of the point ``sel`` names; one sentence listing what was measured when none does."""
    kind = np.asarray(table["kind"].values).astype(str)
    if sel.kind not in KINDS:
        raise LabInputError(f"Kind {shown(sel.kind)} is not one of {', '.join(KINDS)}.")
    if sel.kind == "gemm":  # ``4096x6144`` typed for ``4096×6144``
        sel = replace(sel, shape=sel.shape.replace("x", "×").replace("X", "×"))
    mask = kind == sel.kind
    if not mask.any():
        raise LabInputError(f"There are no {KIND_NAMES[sel.kind]} measurements here.")
    what = KIND_NAMES[sel.kind]
    shapes = np.asarray(table["shape"].values).astype(str)
    if sel.shape not in set(shapes[mask]):
        raise LabInputError(f"There is no {what} measurement of shape {shown(sel.shape)}; "
                            f"measured: {_values(shapes[mask].tolist())}.")
    mask &= shapes == sel.shape
    for axis in POINT_AXES[sel.kind]:
        values = np.asarray(table[axis].values)
        wanted = getattr(sel, axis)
        if not (mask & (values == wanted)).any():
            raise LabInputError(f"There is no {what} measurement of {sel.shape} at {axis} "
                                f"{shown(wanted)} (given the rest of the selection); measured: "
                                f"{_values(values[mask].tolist())}.")
        mask &= values == wanted
    return int(np.flatnonzero(mask)[0])


def measured_values(table: xr.Dataset, sel: Selection, axis: str) -> list[int]:
    """The values of ``axis`` measured for ``sel``'s kind and shape and the axes before
    ``axis`` in :data:`POINT_AXES` (ascending): what a page offers for ``axis``. Where ``sel``
    names none (a shape of another kind, an earlier axis not measured), those of the kind; []
    for an axis the kind does not have."""
    axes = POINT_AXES.get(sel.kind, ())
    if axis not in axes:
        return []
    kinds = np.asarray(table["kind"].values).astype(str) == sel.kind
    mask = kinds & (np.asarray(table["shape"].values).astype(str) == str(sel.shape))
    for before in axes[:axes.index(axis)]:
        mask &= np.asarray(table[before].values) == getattr(sel, before)
    values = np.asarray(table[axis].values)[mask if mask.any() else kinds]
    return sorted({int(v) for v in values})


def nearest_measured(table: xr.Dataset, sel: Selection, axes: tuple[str, ...] | None = None
                     ) -> tuple[Selection, list[tuple[str, int, int, list[int]]]]:
    """``sel`` with each of ``axes`` (default: all of its kind's, in :data:`POINT_AXES` order)
    that is not measured given the axes before it moved to the nearest measured value (log
    scale), and the moves: ``(axis, from, to, the values measured there)``. Kind and shape
    stay as they are (a shape not measured moves nothing)."""
    moves: list[tuple[str, int, int, list[int]]] = []
    shapes = np.asarray(table["shape"].values).astype(str)[
        np.asarray(table["kind"].values).astype(str) == sel.kind]
    if str(sel.shape) not in set(shapes):
        return sel, moves
    for axis in POINT_AXES.get(sel.kind, ()):
        if axes is not None and axis not in axes:
            continue
        offered = measured_values(table, sel, axis)
        wanted = getattr(sel, axis)
        if offered and wanted not in offered:
            to = nearest_on_log_scale(wanted, offered)
            moves.append((axis, int(wanted), to, offered))
            sel = replace(sel, **{axis: to})
    return sel, moves


def completed_selection(table: xr.Dataset, given: dict) -> Selection:
    """The point the flags ``given`` (name → value, None where not given) name: the defaults
    fill the rest where that names a measured point, else the first measured point agreeing
    with every flag given (``--kind gemm`` alone: the first GEMM, as the page does on a new
    kind). Raises the selection's own sentence when no measured point agrees."""
    sel = Selection(**{k: DEFAULT_POINT[k] if v is None else v for k, v in given.items()})
    try:
        select_point(table, sel)
        return sel
    except LabInputError:
        if all(v is not None for v in given.values()):
            raise
        mask = np.ones(table.sizes["point"], dtype=bool)
        for name, value in given.items():
            if value is not None:
                column = np.asarray(table[name].values)
                mask &= (column.astype(str) == str(value)) if column.dtype.kind in "OUS" \
                    else (column == value)
        if not mask.any():
            raise
    p = point_record(table, int(np.flatnonzero(mask)[0]))
    return Selection(kind=p["kind"], shape=p["shape"], tp=p["tp"], batch=max(p["batch"], 1),
                     context=max(p["context"], 1), m=max(p["m"], 1))


def group_summary(table: xr.Dataset, mask: np.ndarray) -> dict:
    """Points, ratio range and the points at either end, below-floor count, fastest kernel."""
    ratio = np.asarray(table["ratio"].values)
    idx = np.flatnonzero(mask)
    lo, hi = idx[np.argmin(ratio[idx])], idx[np.argmax(ratio[idx])]
    latency = np.asarray(table["latency_s"].values)
    return {"points": int(idx.size), "min_ratio": float(ratio[lo]),
            "min_ratio_point": point_label(point_record(table, lo)),
            "max_ratio": float(ratio[hi]), "max_ratio_point": point_label(point_record(table, hi)),
            "median_ratio": float(np.median(ratio[idx])),
            "below_floor": int(np.count_nonzero(ratio[idx] < 1.0)),
            "fastest_kernel_s": float(latency[idx].min()),
            "max_achieved_bandwidth": float(np.max(np.asarray(
                table["achieved_bandwidth"].values)[idx]))}


def summaries(table: xr.Dataset) -> tuple[dict, list[dict]]:
    """A summary per kind, and one per (kind, shape, tp) in table order."""
    kind = np.asarray(table["kind"].values).astype(str)
    shape = np.asarray(table["shape"].values).astype(str)
    tp = np.asarray(table["tp"].values)
    per_kind = {k: group_summary(table, kind == k) for k in KINDS if (kind == k).any()}
    groups = []
    seen = set()
    for k, s, t in zip(kind, shape, tp, strict=True):
        if (k, s, t) in seen:
            continue
        seen.add((k, s, t))
        entry = {"kind": k, "shape": s, "tp": int(t)}
        entry.update(group_summary(table, (kind == k) & (shape == s) & (tp == t)))
        groups.append(entry)
    return per_kind, groups


def calc_measured(data: xr.Dataset | None = None, gpu: str | GPUSpec = SHIPPED_GPU,
                  selection: Selection | dict | None = None) -> dict:
    """Experiment 9 for ``data`` (default: the shipped H100 measurements) on ``gpu``.

    ``selection`` may be the flags a user gave (a dict, None where not given), completed from
    the data (:func:`completed_selection`).

    Returns ``inputs``, ``source``, ``gpu`` (its figures), ``summary`` (per kind),
    ``groups`` (per kind, shape and tp), ``below_floor`` (each point with its ``sentence``),
    ``selected`` (one point, from ``selection`` or, when it names nothing in ``data`` and was not
    given, the first point) and ``points`` (every point).

    Raises
    ------
    LabInputError
        A selection that names no measured point.
    """
    gpu = get_gpu(gpu)
    table = measured_table(data, gpu)
    if selection is None:
        try:
            index = select_point(table, Selection())
        except LabInputError:
            index = 0
    else:
        if isinstance(selection, dict):  # the flags given, completed from the data
            selection = completed_selection(table, selection)
        index = select_point(table, selection)
    points = [point_record(table, i) for i in range(table.sizes["point"])]
    measured_on = table.attrs.get("measured_on", "")
    below = [{**p, "sentence": below_floor_sentence(p, gpu, measured_on)}
             for p in points if p["below_floor"]]
    per_kind, groups = summaries(table)
    return {
        "inputs": {"gpu": gpu.id, "selection": vars(selection) if selection else None},
        "source": table.attrs.get("source", ""),
        "measured_on": table.attrs.get("measured_on", ""),
        "gpu": {"id": gpu.id, "name": gpu.name, "hbm_bw": gpu.hbm_bw,
                "peak_bf16": gpu.peak_bf16, "peak_fp8": gpu.peak_fp8},
        "summary": per_kind,
        "groups": groups,
        "below_floor": below,
        "selected": points[index],
        "points": points,
    }


def summary_lines(result: dict) -> list[str]:
    """The summary as plain lines: per kind the ratio range, then every below-floor sentence."""
    lines = [f"Measured kernel times against the lab's floors on the {result['gpu']['name']}.",
             f"Source: {result['source']}."]
    elsewhere = bool(result["measured_on"]) and result["measured_on"] != result["gpu"]["id"]
    if elsewhere:
        lines.append(f"Note: the data was measured on {gpu_label(result['measured_on'])}; "
                     "these floors use "
                     f"the {result['gpu']['name']}'s peaks, so the ratios compare across parts.")
    for kind, s in result["summary"].items():
        lines.append(
            f"{KIND_NAMES[kind]}: {fmt_count(s['points'], 'point')}, measured / floor from "
            f"{fmt_number(s['min_ratio'], 2)}× ({s['min_ratio_point']}) to "
            f"{fmt_number(s['max_ratio'], 2)}× ({s['max_ratio_point']}), median "
            f"{fmt_number(s['median_ratio'], 2)}×; fastest kernel "
            f"{fmt_number(s['fastest_kernel_s'] * 1e6, 1)} µs; {fmt_int(s['below_floor'])} below "
            "the floor.")
    below = result["below_floor"]
    if below:
        verb, its = ("is", "its") if len(below) == 1 else ("are", "their")
        why = (f" on the {result['gpu']['name']}, which is not the GPU the data ran on"
               if elsewhere
               else ", impossible under the stated peaks")
        lines.append(f"{fmt_count(len(below), 'point')} {verb} below {its} floor{why} "
                     "(--json gives a sentence for each):")
        for bound in (True, False):
            group = [p for p in below if p["compute_bound"] is bound]
            if group:
                worst = min(group, key=lambda p: p["ratio"])
                lines.append(f"- The lowest {'compute' if bound else 'memory'}-bound one: "
                             f"{worst['sentence']}")
        lines.append("  " + "; ".join(f"{p['label']} {fmt_number(p['ratio'], 2)}×" for p in below)
                     + ".")
    return lines
