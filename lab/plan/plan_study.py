"""What the regret study says about one plan: how often the default planner's pick held in
measurement for the plan's engine × mode, and at the plan's distance from the workloads its
group measured (docs/model.md §12, "Validation").

The study is :func:`lab.plan.plan_decide.validate` on the shipped public rows at the default
band quantile, computed once per process when first asked for (about 1.3 s on the shipped rows,
beside the calibration the plan itself needs), so the page shows the figures of the code at hand.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np

from lab.plan.plan_calibration import DEFAULT_QUANTILE, Calibration, shipped_calibration
from lab.plan.plan_decide import distance_bucket, planner_name, validate, workload_octaves

FLOOR_ONLY = "floor only"
"""The regret study's name of the planner that reads the floor as the prediction."""


_STUDY_LOCK = threading.Lock()
"""Held while the study is computed: a second caller waits for the first's result."""


def study_summary() -> dict:
    """The regret study of the default planner and the floor-only planner on the shipped rows:
    for each, ``overall``, ``per_engine_mode`` and ``per_distance`` summaries (cases, median
    regret, share of picks missing the target in measurement, cases with no pick). Computed
    once per process; callers on other threads wait for that one computation."""
    with _STUDY_LOCK:
        return _study_summary()


@lru_cache(maxsize=1)
def _study_summary() -> dict:
    result = validate(shipped_calibration().table, quantiles=(DEFAULT_QUANTILE,))
    default = planner_name(DEFAULT_QUANTILE)
    return {"quantile": DEFAULT_QUANTILE, "default": result[default],
            FLOOR_ONLY: result[FLOOR_ONLY]}


def nearest_measured_workload(calibration: Calibration, group: str, model: str, isl: int,
                              osl: int) -> dict:
    """The workload nearest ``isl/osl`` among the modelled rows of ``group`` (``engine × GPU ×
    mode``) for ``model`` (else for any model of the group): ``workload`` (None: the group
    measured none), ``octaves`` from ``isl/osl`` (0 when that workload itself was measured),
    ``bucket`` (:func:`~lab.plan.plan_decide.distance_bucket`) and ``same_model``."""
    here = f"{isl}/{osl}"
    in_group = calibration.modelled & (calibration.groups == group)
    same = in_group & (calibration.models == model)
    rows = same if same.any() else in_group
    measured = sorted(set(calibration.workloads[rows].tolist()))
    if not measured:
        return {"workload": None, "octaves": None, "bucket": distance_bucket(np.inf),
                "same_model": False}
    workload = min(measured, key=lambda w: workload_octaves(here, w))  # here itself: 0
    octaves = workload_octaves(here, workload)
    return {"workload": workload, "octaves": octaves, "bucket": distance_bucket(octaves),
            "same_model": bool(same.any())}
