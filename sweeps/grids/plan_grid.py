"""Experiment 12's grid: served predictions over
``model × gpu × engine × weight_precision × layout × serving × concurrency × workload``.

Each chunk builds one configuration row per cell (:func:`lab.plan.plan_space.config_row`) and
predicts them with :func:`lab.plan.plan_space.predict` and the calibration on the shipped public
rows — the function behind ``calc plan`` — so a cell equals
:func:`lab.plan.plan_calc.plan_point` for the same configuration. ``layout`` names one worker
(``tp4``, ``tp8ep8``, ``tp1dp8ep8``: tensor, attention-data and expert parallelism); ``serving``
is ``agg`` or ``disagg-<P>p<D>d`` (P prefill and D decode workers of that layout); ``workload``
is ``isl/osl``. A configuration the lab refuses is a cell with ``valid`` False and NaN figures.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

import numpy as np

from lab.errors import LabInputError, shown
from lab.limits import MAX_CONTEXT
from lab.plan.plan_calibration import DEFAULT_QUANTILE, shipped_calibration
from lab.plan.plan_space import (
    CONCURRENCIES,
    ENGINES,
    MAX_WORKER_GPUS,
    PRECISIONS,
    UNITS,
    Layout,
    config_row,
    predict,
)
from lab.served.served_limits import MAX_CONCURRENCY
from sweeps.common_rules import gpu_rule, model_rule
from sweeps.grid_schema import ExperimentSpec, Rule, Schema

DIMS = ("model", "gpu", "engine", "weight_precision", "layout", "serving", "concurrency", "workload")
"""Dimensions of the plan grid, in order."""
VARIABLES = {k: v for k, v in UNITS.items()}
"""``(long_name, units)`` of every variable of the plan grid."""
_LAYOUT = re.compile(r"tp(\d+)(?:dp(\d+))?(?:ep(\d+))?")
_SERVING = re.compile(r"disagg-(\d+)p(\d+)d")
_WORKLOAD = re.compile(r"(\d+)/(\d+)")
MAX_WORKERS = 64
"""Most prefill or decode workers a ``serving`` entry names."""


def parse_layout(text: str) -> Layout:
    """``tp4`` / ``tp8ep8`` / ``tp1dp8ep8`` → a :class:`~lab.plan.plan_space.Layout`."""
    match = _LAYOUT.fullmatch(text)
    if not match:
        raise LabInputError(f"The layout {shown(text)} is not tp<N>[dp<N>][ep<N>], e.g. tp4 or "
                            "tp1dp8ep8.")
    tp, dp, ep = (int(g) if g else 1 for g in match.groups())
    if min(tp, dp, ep) < 1 or tp * dp > MAX_WORKER_GPUS or ep > tp * dp:
        raise LabInputError(f"The layout {shown(text)} needs 1 ≤ tp·dp ≤ {MAX_WORKER_GPUS} and "
                            "an ep no larger than tp·dp.")
    return Layout(tp, dp, ep)


def parse_serving(text: str) -> tuple[str, tuple[int, int]]:
    """``agg`` or ``disagg-<P>p<D>d`` → ``(mode, (prefill workers, decode workers))``."""
    if text == "agg":
        return "agg", (1, 1)
    match = _SERVING.fullmatch(text)
    if not match or not all(1 <= int(g) <= MAX_WORKERS for g in match.groups()):
        raise LabInputError(f"The serving {shown(text)} is not agg or disagg-<P>p<D>d with 1 to "
                            f"{MAX_WORKERS} workers each, e.g. disagg-1p2d.")
    return "disagg", (int(match.group(1)), int(match.group(2)))


def parse_workload(text: str) -> tuple[int, int]:
    """``isl/osl`` → ``(isl, osl)``."""
    match = _WORKLOAD.fullmatch(text)
    if not match or not all(1 <= int(g) <= MAX_CONTEXT for g in match.groups()):
        raise LabInputError(f"The workload {shown(text)} is not isl/osl with 1 to "
                            f"{MAX_CONTEXT:,} tokens each, e.g. 1024/1024.")
    return int(match.group(1)), int(match.group(2))


def plan_block(coords: Mapping[str, np.ndarray], constants: Mapping) -> dict:
    """Every variable of :data:`VARIABLES` for one chunk (arrays of the chunk's shape)."""
    values = [list(np.asarray(coords[d]).tolist()) for d in DIMS]
    shape = tuple(len(v) for v in values)
    out = {name: np.full(shape, np.nan) for name in VARIABLES}
    calibration = shipped_calibration()
    inner = list(itertools.product(*values[2:]))
    for a, model in enumerate(values[0]):
        for b, gpu in enumerate(values[1]):
            rows = []
            for engine, precision, layout, serving, c, workload in inner:
                mode, workers = parse_serving(str(serving))
                isl, osl = parse_workload(str(workload))
                rows.append(config_row(str(engine), str(model), str(gpu), mode,
                                       parse_layout(str(layout)), str(precision), int(c),
                                       isl, osl, workers))
            plan = predict(rows, calibration, constants["quantile"])
            for name in VARIABLES:
                out[name][a, b] = np.asarray(plan[name].values, dtype=float).reshape(shape[2:])
    for name in ("fits", "valid", "calibrated"):
        out[name] = out[name] == 1
    out["gpus"] = np.nan_to_num(out["gpus"]).astype(np.int64)
    return out


def _finalize(spec: ExperimentSpec) -> ExperimentSpec:
    """One sentence for a layout, serving or workload entry that does not parse."""
    for text in spec.axes["layout"]:
        parse_layout(text)
    for text in spec.axes["serving"]:
        parse_serving(text)
    for text in spec.axes["workload"]:
        parse_workload(text)
    return spec


SCHEMA = Schema(
    experiment="plan",
    axes=(
        Rule("model", "str", "model", "1", choices=model_rule("all").choices,
             default=["llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"]),
        Rule("gpu", "str", "GPU", "1", choices=gpu_rule("all").choices,
             default=["h100-sxm", "h200", "b200"]),
        Rule("engine", "str", "serving engine (ideal: the floor)", "1",
             choices=lambda: ENGINES, default=list(ENGINES)),
        Rule("weight_precision", "str", "weight precision", "1", choices=lambda: PRECISIONS,
             default=list(PRECISIONS)),
        Rule("layout", "str", "worker layout tp·dp·ep", "1",
             default=["tp1", "tp2", "tp4", "tp8", "tp8ep8", "tp1dp8ep8"]),
        Rule("serving", "str", "agg, or disagg with P prefill and D decode workers", "1",
             default=["agg", "disagg-1p1d", "disagg-1p2d", "disagg-2p2d"]),
        Rule("concurrency", "int", "clients in flight", "requests", 1, MAX_CONCURRENCY,
             default=list(CONCURRENCIES)),
        Rule("workload", "str", "workload isl/osl", "tokens",
             default=["1024/1024", "8192/1024", "1024/8192"]),
    ),
    constants=(
        Rule("quantile", "float", "band quantile of the group's out-of-sample errors", "1",
             0.5, 0.99, default=DEFAULT_QUANTILE),
    ),
    variables=lambda: tuple(VARIABLES),
    description="Experiment 12: predicted TTFT, TPOT, tokens/s per user and per GPU, GPUs, "
    "memory fit, validity and the band of every served configuration (experiment 11's floor "
    "plus terms; uncalibrated engine × GPU × mode and the ideal engine: the floor).",
    finalize=_finalize,
)

PLAN_GRID = (SCHEMA, plan_block, dict(VARIABLES))
"""The grid block of experiment 12 (registered in :mod:`sweeps.grids`)."""
