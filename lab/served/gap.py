"""The gap between a served row's floor and its measurement, itemised (docs/model.md §11).

Named terms, each a formula on the row (milliseconds)::

    agg:    TPOT = floor + comm + k_prefill · P_step + k_step_one · step_one
                   + t_moe · L_moe + k_comm · comm                             (+ residual)
    disagg: TPOT = floor + comm + k_step_one · step_one  [pools stated]
                 | comm + k_inferred · floor             [batch inferred]
                   + k_slots · ln⁺(c / (w · B)) · floor   [batch inferred]
                   + t_layer · L                                               (+ residual)
    TTFT = floor + k_queue · (c − 1)/2 · floor / workers + t_first
           + k_chunk · ⌈isl / chunk⌉ · (TPOT floor + comm)   [agg]
           + k_queue_chunk · (c − 1)/2 · ⌈isl / chunk⌉ · (TPOT floor + comm)  [agg]
                                                                               (+ residual)

- ``floor``: :mod:`lab.served.served_floors` (one ideal decode step; one request's ideal prefill);
- ``comm``: experiment 3's ring all-reduces of the attention's tensor-parallel ranks
  and, with expert parallelism, the all-to-all (:mod:`lab.models.attention_dp`), not fitted;
- ``P_step`` (aggregated): an engine that finishes ``B/osl`` requests per decode step admits as
  many new prompts, each prefilled in a pass of its own between decode steps: ``B/osl`` times
  one request's ideal prefill (weights read and FLOPs, :mod:`lab.served.served_floors`);
  ``k_prefill`` ≥ 0, fitted: what one interleaved prefill costs in ideal prefills;
- ``step_one``: the ideal decode step of one sequence per attention rank (the weights one token
  per rank touches and one sequence's KV cache, :mod:`lab.served.served_floors`);
  ``k_step_one`` ≥ 0 (aggregated rows, and disaggregated rows whose listed decode pools hold
  every client), fitted: the decode step's time beyond its floor in such one-sequence steps —
  the excess of latency-bound kernels (weights streamed at a few rows, launches and
  synchronisation), which scales with that step and not with the batch's further KV reads and
  FLOPs; never a step faster than the roofline;
- ``k_inferred`` ≥ 0 (disaggregated rows whose batch per decode worker is inferred, an upper
  bound): the step that ran in steps of the upper bound's floor (below 1 when the pools were
  larger than listed); the term ``(k_inferred − 1) · floor``;
- ``t_layer`` ≥ 0 (disaggregated): the fixed time every layer of every decode step costs
  (kernel launches and synchronisation that no byte or FLOP explains), times the model's ``L``
  layers;
- ``t_moe`` ≥ 0 (aggregated): what an MoE layer costs beyond it (router, expert dispatch and
  combine kernels), times the model's ``L_moe`` MoE layers (per-layer fixed cost by layer
  kind; on disaggregated rows, nearly all DeepSeek, ``L_moe`` and ``L`` are one column);
- ``k_slots`` ≥ 0 (disaggregated rows whose batch is inferred): when the ``c`` clients
  outnumber the sequences the listed decode pools hold (``w`` workers of ``B``, capped at what
  fits), they take turns: ``ln(c / (w · B))`` further steps of the capped batch per token, one
  per e-fold of clients beyond the slots (:mod:`lab.served.served_floors`' slots basis);
  ``k_slots`` is the steps the measured runs show per e-fold;
- ``k_comm`` ≥ 0 (aggregated): the collectives' time beyond their bandwidth-ideal ``comm``
  (small latency-bound messages, the all-reduce's kernel below link speed), so they cost
  ``(1 + k_comm) · comm``, never less than ideal;
- the queue: ``c`` clients sent together wait on average behind ``(c − 1)/2`` prefills of the
  ones ahead, shared by the prefill workers; ``k_queue`` ≥ 0, fitted;
- ``t_first`` ≥ 0, fitted: the fixed time before the first token;
- the chunks (aggregated): chunked prefill splits a prompt into ``⌈isl / chunk⌉`` chunks, each
  scheduled into one decode step of the running batch (``chunk`` =
  :data:`lab.served.served_floors.PREFILL_CHUNK` tokens), so the first token waits that many
  steps; ``k_chunk`` ≥ 0, fitted: those steps in ideal steps;
- the queued chunks (aggregated): the ``(c − 1)/2`` prompts ahead of a request are chunked
  too, each riding ``⌈isl / chunk⌉`` decode steps of the running batch before the request's
  own chunks start; ``k_queue_chunk`` ≥ 0, fitted: those steps in ideal steps.

A row measured below its TPOT floor whose batch is stated (aggregated, or disaggregated with
its listed pools holding every client) is impossible as labelled (:attr:`Design.fit_on`): it
is predicted and scored like every row, but no fit uses it, since no term of the labelled
configuration can bring a prediction below the floor and such a row only pulls every
coefficient towards 0.

At most :data:`MAX_COEFFICIENTS` coefficients per metric and group (engine × GPU × mode), fitted
by non-negative least squares on the relative error, each run once (copies of a run, rows with
identical measured TTFT and TPOT, count once). Every stored prediction is **out of sample**: a
row's coefficients are fitted on the rows of its group *with another (isl, osl) workload*
(leave one workload out). A row whose group has no other workload gets no prediction.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

TPOT_COEFFICIENTS = {"agg": ("k_prefill", "k_step_one", "t_moe_layer_ms", "k_comm"),
                     "disagg": ("k_step_one", "t_layer_ms", "k_slots", "k_inferred")}
"""TPOT's fitted coefficients per mode, in column order. Aggregated: interleaved prefill's cost
per ideal prefill; the step's excess over its floor per one-sequence step; fixed ms per MoE
layer per step; the collectives' excess over their ideal time. Disaggregated: the step's
excess over its floor per one-sequence step (pools stated); fixed ms per layer per step; the
share of the turn-taking wait of clients beyond the listed decode slots (batch inferred); the
inferred-batch rows' step per upper-bound floor."""
LEGACY_TPOT_COEFFICIENTS = {"agg": ("k_prefill", "t_layer_ms"), "disagg": ("k_step", "t_layer_ms")}
"""The two-coefficient design's names (:func:`tpot_design` without the keyword columns)."""
MAX_COEFFICIENTS = 4
"""At most this many fitted coefficients per metric per engine × GPU × mode (issue 41)."""
TTFT_COEFFICIENTS = ("k_queue", "t_first_ms", "k_chunk", "k_queue_chunk")
"""TTFT's fitted coefficients: cost of one queued prefill per ideal prefill; fixed ms; the
decode steps a prompt's chunks ride, per ideal step (agg); the decode steps the queued
prompts' chunks ride, per ideal step (agg)."""


def _gauss(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Solve ``a x = b`` (a few unknowns) by Gaussian elimination with partial pivoting in
    Python floats, one fixed order of operations; None when singular."""
    k = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(m[r][col]))
        if not abs(m[pivot][col]) > 1e-12 * max(1.0, max(abs(v) for v in m[pivot][:k])):
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, k):
            f = m[r][col] / m[col][col]
            for c in range(col, k + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * k
    for r in range(k - 1, -1, -1):
        x[r] = (m[r][k] - sum(m[r][c] * x[c] for c in range(r + 1, k))) / m[r][r]
    return x


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``Σ a·b`` correctly rounded (:func:`math.fsum`): the same float on every CPU, whatever
    BLAS kernel or summation order the machine would pick."""
    return math.fsum((a * b).tolist())


def nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares ``θ ≥ 0`` of ``x @ θ ≈ y`` for a few columns (at most
    :data:`MAX_COEFFICIENTS`), exact: the normal equations of every active set, each sum
    correctly rounded (:func:`math.fsum`) and solved in Python floats, so the coefficients are
    bit for bit the same on every CPU (no BLAS or LAPACK call; issue 41)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    k = x.shape[1]
    if k > MAX_COEFFICIENTS:
        raise ValueError(f"at most {MAX_COEFFICIENTS} coefficients per fit, not {k}")
    cols = [np.ascontiguousarray(x[:, j]) for j in range(k)]
    scale = [math.sqrt(_dot(c, c)) for c in cols]
    unit = [c / s if s > 0 else c for c, s in zip(cols, scale, strict=True)]
    gram = [[_dot(unit[i], unit[j]) for j in range(k)] for i in range(k)]
    rhs = [_dot(unit[i], y) for i in range(k)]
    yy = _dot(y, y)
    best, best_err = [0.0] * k, yy
    for size in range(1, k + 1):
        for active in itertools.combinations([j for j in range(k) if scale[j] > 0], size):
            sol = _gauss([[gram[i][j] for j in active] for i in active], [rhs[i] for i in active])
            if sol is None or not all(v >= 0 and math.isfinite(v) for v in sol):
                continue
            theta = [0.0] * k
            for j, v in zip(active, sol, strict=True):
                theta[j] = v
            # |y − Xθ|² = y·y − 2 θ·(Xᵀy) + θᵀ(XᵀX)θ, every term from the rounded sums above
            err = math.fsum([yy, *(-2.0 * theta[i] * rhs[i] for i in range(k)),
                             *(theta[i] * gram[i][j] * theta[j]
                               for i in range(k) for j in range(k))])
            if err < best_err:
                best, best_err = theta, err
    return np.array([v / s if s > 0 else 0.0 for v, s in zip(best, scale, strict=True)])


def nnls2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two-column :func:`nnls` (kept for callers of the two-coefficient fit)."""
    return nnls(x, y)


def fit(base: np.ndarray, columns: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Coefficients ``θ ≥ 0`` of ``measured ≈ base + columns @ θ`` minimising the squared
    relative error (rows weighted by 1/measured)."""
    weight = 1.0 / measured
    return nnls(columns * weight[:, None], (measured - base) * weight)


@dataclass(frozen=True)
class Design:
    """One metric's model: the fixed part and the columns its coefficients multiply (ms),
    the measured values (ms) and ``fit_on``, the rows a fit may use (None: every row)."""

    base: np.ndarray
    columns: np.ndarray
    measured: np.ndarray
    fit_on: np.ndarray | None = None

    def fittable(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (a mask) without the rows no fit may use (:attr:`fit_on`)."""
        return rows if self.fit_on is None else rows & np.asarray(self.fit_on, dtype=bool)


def tpot_design(floor, communication, prefill_basis, layers, agg, measured, *,
                moe_layers=None, stated=None, fit_on=None, slots=None,
                step_one=None) -> Design:
    """TPOT's design (columns in :data:`TPOT_COEFFICIENTS` order).

    Without the keyword arguments, the two-coefficient design: aggregated rows TPOT = floor +
    communication + k_prefill · P_step + t_layer · L, disaggregated rows k_step · floor +
    communication + t_layer · L. With ``moe_layers`` (``L_moe`` per row), ``stated`` (the
    disaggregated row's listed pools hold every client) and ``step_one`` (ms, the ideal step
    of one sequence per attention rank; required there), the four-coefficient design of the
    module docstring: aggregated and stated disaggregated rows keep their floor in the fixed
    part and fit the step's excess on ``step_one`` (aggregated: the second column;
    disaggregated: the first), never a step faster than the roofline; an inferred row's floor
    is the fourth column. The second column is ``step_one`` on aggregated rows and ``layers``
    on disaggregated ones; the third ``L_moe`` on aggregated rows and ``slots`` on
    disaggregated ones (ms: ``ln⁺(c / (w · B)) · floor`` on rows whose batch is inferred, 0
    elsewhere; None: 0); the fourth the communication itself on aggregated rows.
    ``fit_on``: the rows a fit may use (:attr:`Design.fit_on`)."""
    agg = np.asarray(agg, dtype=bool)
    if moe_layers is None and stated is None:
        return Design(np.where(agg, floor + communication, communication),
                      np.column_stack([np.where(agg, prefill_basis, floor), layers]), measured,
                      fit_on)
    zeros = np.zeros_like(np.asarray(floor, dtype=float))
    moe_layers = zeros if moe_layers is None else np.asarray(moe_layers, dtype=float)
    slots = zeros if slots is None else np.asarray(slots, dtype=float)
    stated = np.ones_like(agg) if stated is None else np.asarray(stated, dtype=bool)
    if step_one is None:
        raise ValueError("the four-coefficient TPOT design needs step_one, the one-sequence step")
    step_one = np.asarray(step_one, dtype=float)
    keeps_floor = agg | stated
    return Design(np.where(keeps_floor, floor, 0.0) + communication,
                  np.column_stack([np.where(agg, prefill_basis, np.where(stated, step_one, 0.0)),
                                   np.where(agg, step_one, layers),
                                   np.where(agg, moe_layers, slots),
                                   np.where(agg, communication,
                                            np.where(stated, 0.0, floor))]), measured, fit_on)


def queue_basis(ttft_floor, concurrency, prefill_workers):
    """``(c − 1)/2 · floor / workers``: the ideal prefills a request waits behind (ms)."""
    return (concurrency - 1) / 2.0 * ttft_floor / prefill_workers


def queue_chunk_basis(chunk_basis, concurrency):
    """``(c − 1)/2 · chunk_basis``: the decode steps the chunks of the ``(c − 1)/2`` prompts
    ahead of a request ride (ms; ``chunk_basis``: one prompt's ``⌈isl/chunk⌉`` steps, 0 for a
    disaggregated row)."""
    return (np.asarray(concurrency, dtype=float) - 1) / 2.0 * np.asarray(chunk_basis, dtype=float)


def ttft_design(floor, concurrency, prefill_workers, measured, *, chunk_basis=None,
                queued_chunks: bool = False, fit_on=None, queue_floor=None) -> Design:
    """TTFT = floor + k_queue · queue + t_first (+ k_chunk · chunk_basis when given:
    ``⌈isl/chunk⌉`` decode steps of the running batch, aggregated rows, 0 disaggregated;
    + k_queue_chunk · :func:`queue_chunk_basis` when ``queued_chunks``). ``fit_on``: the rows
    a fit may use (:attr:`Design.fit_on`). ``queue_floor`` (ms): one queued prompt's ideal
    prefill, the queue's basis (None: ``floor``)."""
    queued = floor if queue_floor is None else np.asarray(queue_floor, dtype=float)
    columns = [queue_basis(queued, concurrency, prefill_workers), np.ones_like(floor)]
    if chunk_basis is not None:
        columns.append(np.asarray(chunk_basis, dtype=float))
        if queued_chunks:
            columns.append(queue_chunk_basis(chunk_basis, concurrency))
    return Design(floor, np.column_stack(columns), measured, fit_on)


def first_of_each_run(rows: np.ndarray, runs: np.ndarray | None) -> np.ndarray:
    """``rows`` (a mask) keeping one row of each run (``runs``: a key per row, equal for the
    copies of a run); all of ``rows`` when ``runs`` is None."""
    if runs is None:
        return rows
    index = np.flatnonzero(rows)
    _, first = np.unique(np.asarray(runs)[index], return_index=True)
    out = np.zeros_like(rows)
    out[index[np.sort(first)]] = True
    return out


def leave_one_workload_out(design: Design, groups: np.ndarray, workloads: np.ndarray,
                           usable: np.ndarray, *, runs: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-sample coefficients per row: fitted on the usable rows of the row's group with
    another workload (each run once when ``runs`` names them, :func:`first_of_each_run`).
    Returns ``(theta (n × columns), fitted_on (n,))``; NaN and 0 where none. ``workloads`` may
    be any key (the input length alone gives the stricter split)."""
    n, k = design.columns.shape
    theta = np.full((n, k), np.nan)
    fitted_on = np.zeros(n, dtype=np.int64)
    for group in np.unique(groups[usable]):
        in_group = usable & (groups == group)
        for workload in np.unique(workloads[in_group]):
            rows = in_group & (workloads == workload)
            train = first_of_each_run(design.fittable(in_group & (workloads != workload)), runs)
            if not train.any():
                continue
            theta[rows] = fit(design.base[train], design.columns[train], design.measured[train])
            fitted_on[rows] = int(train.sum())
    return theta, fitted_on


def fit_all(design: Design, groups: np.ndarray, usable: np.ndarray, *,
            runs: np.ndarray | None = None) -> dict:
    """In-sample coefficients per group (for display: what the terms mean physically)."""
    out = {}
    for group in np.unique(groups[usable]):
        rows = first_of_each_run(design.fittable(usable & (groups == group)), runs)
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
