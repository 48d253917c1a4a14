"""The gap between a served row's floor and its measurement, itemised (docs/model.md §11).

Named terms, each a formula on the row (milliseconds)::

    agg:    TPOT = floor + communication + k_prefill · P_step + t_layer · L   (+ residual)
    disagg: TPOT = k_step · floor + communication + t_layer · L               (+ residual)
    TTFT = floor + k_queue · (c − 1)/2 · floor / workers + t_first           (+ residual)

- ``floor``: :mod:`lab.served.served_floors` (one ideal decode step; one request's ideal prefill);
- ``communication``: experiment 3's ring all-reduces of the attention's tensor-parallel ranks
  and, with expert parallelism, the all-to-all (:mod:`lab.models.attention_dp`), not fitted;
- ``P_step`` (aggregated): an engine that finishes ``B/osl`` requests per decode step admits as
  many new prompts, each prefilled in a pass of its own between decode steps: ``B/osl`` times
  one request's ideal prefill (weights read and FLOPs, :mod:`lab.served.served_floors`);
  ``k_prefill`` ≥ 0, fitted: what one interleaved prefill costs in ideal prefills
  (1/k_prefill is the fraction of its roofline it reaches);
- ``k_step`` ≥ 0 (disaggregated, where no prefill interleaves), fitted: the decode step's time
  in ideal steps (1/k_step is the fraction of the roofline it reaches); shown as the term
  ``(k_step − 1) · floor``;
- ``t_layer`` ≥ 0, fitted: the fixed time every layer of every decode step costs (kernel
  launches and synchronisation that no byte or FLOP explains), times the model's ``L``
  layers, so one coefficient serves a 32-layer and a 94-layer model of one engine × GPU;
- the queue: ``c`` clients sent together wait on average behind ``(c − 1)/2`` prefills of the
  ones ahead, shared by the prefill workers; ``k_queue`` ≥ 0, fitted: how many ideal prefills
  one queued prefill costs (≥ 1 when a prefill runs below peak, below 1 when prefills batch);
- ``t_first`` ≥ 0, fitted: the fixed time before the first token (tokenising, scheduling, the
  first decode step; for disaggregated rows the KV transfer).

Two coefficients per metric and group (engine × GPU × mode), fitted by non-negative least
squares on the relative error. Every stored prediction is **out of sample**: a row's
coefficients are fitted on the rows of its group *with another (isl, osl) workload* (leave one
workload out). A row whose group has no other workload gets no prediction.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

TPOT_COEFFICIENTS = {"agg": ("k_prefill", "t_layer_ms"), "disagg": ("k_step", "t_layer_ms")}
"""TPOT's fitted coefficients per mode: interleaved prefill's cost per ideal prefill (agg) or
the decode step's time per ideal step (disagg); fixed ms per layer per step."""
TTFT_COEFFICIENTS = ("k_queue", "t_first_ms")
"""TTFT's fitted coefficients: cost of one queued prefill per ideal prefill; fixed ms."""


def nnls2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares ``θ ≥ 0`` of ``x @ θ ≈ y`` for two columns (exact: every active set)."""
    best, best_err = np.zeros(2), float(np.sum(y ** 2))
    candidates = []
    with contextlib.suppress(np.linalg.LinAlgError):
        candidates.append(np.linalg.lstsq(x, y, rcond=None)[0])
    for j in range(2):
        col = x[:, j]
        denom = float(col @ col)
        if denom > 0:
            theta = np.zeros(2)
            theta[j] = float(col @ y) / denom
            candidates.append(theta)
    for theta in candidates:
        if np.all(theta >= 0) and np.all(np.isfinite(theta)):
            err = float(np.sum((x @ theta - y) ** 2))
            if err < best_err:
                best, best_err = theta, err
    return best


def fit(base: np.ndarray, columns: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Coefficients ``θ ≥ 0`` of ``measured ≈ base + columns @ θ`` minimising the squared
    relative error (rows weighted by 1/measured)."""
    weight = 1.0 / measured
    return nnls2(columns * weight[:, None], (measured - base) * weight)


@dataclass(frozen=True)
class Design:
    """One metric's model: the fixed part and the two columns its coefficients multiply."""

    base: np.ndarray
    columns: np.ndarray
    measured: np.ndarray


def tpot_design(floor, communication, prefill_basis, layers, agg, measured) -> Design:
    """Aggregated rows: TPOT = floor + communication + k_prefill · P_step + t_layer · L;
    disaggregated rows: TPOT = k_step · floor + communication + t_layer · L (the first
    column is ``P_step`` or the floor, as ``agg`` says; a group holds one mode)."""
    agg = np.asarray(agg, dtype=bool)
    return Design(np.where(agg, floor + communication, communication),
                  np.column_stack([np.where(agg, prefill_basis, floor), layers]), measured)


def queue_basis(ttft_floor, concurrency, prefill_workers):
    """``(c − 1)/2 · floor / workers``: the ideal prefills a request waits behind (ms)."""
    return (concurrency - 1) / 2.0 * ttft_floor / prefill_workers


def ttft_design(floor, concurrency, prefill_workers, measured) -> Design:
    """TTFT = floor + k_queue · queue + t_first."""
    return Design(floor, np.column_stack([queue_basis(floor, concurrency, prefill_workers),
                                          np.ones_like(floor)]), measured)


def leave_one_workload_out(design: Design, groups: np.ndarray, workloads: np.ndarray,
                           usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-sample coefficients per row: fitted on the usable rows of the row's group with
    another workload. Returns ``(theta (n × 2), fitted_on (n,))``; NaN and 0 where none."""
    n = design.base.shape[0]
    theta = np.full((n, 2), np.nan)
    fitted_on = np.zeros(n, dtype=np.int64)
    for group in np.unique(groups[usable]):
        in_group = usable & (groups == group)
        for workload in np.unique(workloads[in_group]):
            rows = in_group & (workloads == workload)
            train = in_group & (workloads != workload)
            if not train.any():
                continue
            theta[rows] = fit(design.base[train], design.columns[train], design.measured[train])
            fitted_on[rows] = int(train.sum())
    return theta, fitted_on


def fit_all(design: Design, groups: np.ndarray, usable: np.ndarray) -> dict:
    """In-sample coefficients per group (for display: what the terms mean physically)."""
    out = {}
    for group in np.unique(groups[usable]):
        rows = usable & (groups == group)
        out[str(group)] = fit(design.base[rows], design.columns[rows], design.measured[rows])
    return out


def abs_error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """``|predicted − measured| / measured`` (a fraction)."""
    return np.abs(predicted - measured) / measured


def error_summary(error: np.ndarray) -> dict:
    """Rows, median and p90 of a vector of |errors| (NaN ignored)."""
    ok = error[np.isfinite(error)]
    if not ok.size:
        return {"rows": 0, "median": float("nan"), "p90": float("nan")}
    return {"rows": int(ok.size), "median": float(np.median(ok)),
            "p90": float(np.percentile(ok, 90))}
