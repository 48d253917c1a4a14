"""Queries over a written grid: constraints from a small grammar, best cells, Pareto frontier.

Constraints are written ``VAR OP NUMBER`` separated by commas, e.g.
``step_time_s<=0.05,fits==1`` (values in the dataset's stored units: seconds, bytes; ``1``/``0``
or ``true``/``false`` for a flag). ``OP`` is one of ``<= >= < > == !=``. Anything else is one
sentence; nothing is evaluated as code.

The best cells and the throughput-versus-latency frontier are computed over a whole selection
(up to the whole dataset) chunk by chunk: each Zarr chunk is read once, reduced to its few
candidates (its top cells, its own Pareto set), and only those are kept, so memory stays at a
few chunks whatever the dataset's size. Nothing here knows about Panel.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

import dask
import dask.array as dsa
import numpy as np
import pandas as pd
import xarray as xr

from lab.errors import LabInputError

OPERATORS: dict[str, Callable] = {"<=": operator.le, ">=": operator.ge, "==": operator.eq,
                                  "!=": operator.ne, "<": operator.lt, ">": operator.gt}
"""The comparison operators a constraint may use."""

CLAUSE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*(<=|>=|==|!=|<|>)\s*"
                    r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?|true|false)\s*")
"""One constraint: a variable name, an operator and a number (or true/false)."""

MAX_CONSTRAINTS = 8
"""Most constraints in one query."""

MAX_WHERE_CHARS = 200
"""Longest constraint text, characters."""

GRAMMAR = "constraints like step_time_s<=0.05,fits==1 (a variable, <= >= < > == or !=, a number)"
"""What the constraint box accepts, as the end of a sentence."""


@dataclass(frozen=True)
class Constraint:
    """``variable op value``: a cell meets it when the comparison holds."""

    variable: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.variable}{self.op}{self.value:g}"


def queryable(ds: xr.Dataset) -> list[str]:
    """Variables a constraint may name: numbers and flags."""
    return [n for n, v in ds.data_vars.items() if v.dtype.kind in "biuf"]


def parse_where(text: str, variables: list[str]) -> list[Constraint]:
    """The constraints in ``text`` (empty text: none).

    Raises
    ------
    LabInputError
        One sentence naming the first piece that is not ``VAR OP NUMBER`` over ``variables``.
    """
    if not isinstance(text, str):
        raise LabInputError(f"Constraints must be text: {GRAMMAR}.")
    if len(text) > MAX_WHERE_CHARS:
        raise LabInputError(f"The constraints are {len(text):,} characters long; at most "
                            f"{MAX_WHERE_CHARS} are read.")
    pieces = [p for p in text.split(",") if p.strip()] if text.strip() else []
    if len(pieces) > MAX_CONSTRAINTS:
        raise LabInputError(f"At most {MAX_CONSTRAINTS} constraints are read; "
                            f"{len(pieces)} were given.")
    found = []
    for piece in pieces:
        match = CLAUSE.fullmatch(piece)
        if match is None:
            raise LabInputError(f"'{piece.strip()[:40]}' is not a constraint; write {GRAMMAR}.")
        name, op, raw = match.groups()
        if name not in variables:
            shown = ", ".join(variables[:12]) + (", …" if len(variables) > 12 else "")
            raise LabInputError(f"'{name}' is not a variable of this dataset; constraints may "
                                f"name {shown}.")
        value = {"true": 1.0, "false": 0.0}.get(raw)
        found.append(Constraint(name, op, float(raw) if value is None else value))
    return found


def where_problem(text: object, variables: list[str]) -> str | None:
    """One sentence when ``text`` is not a constraint list over ``variables``, else None."""
    try:
        parse_where(text, variables)  # type: ignore[arg-type]
    except LabInputError as exc:
        return str(exc)
    return None


def meets(ds: xr.Dataset, constraints: list[Constraint]) -> xr.DataArray:
    """Cells of ``ds`` that are valid (when ``valid`` is there), fit in memory (when ``fits``
    is there: a configuration over its memory budget cannot be deployed, and ranking it best
    sent readers to a page saying it is over budget) and meet every constraint (lazy when
    ``ds`` is)."""
    mask = ds["valid"].astype(bool) if "valid" in ds else None
    if "fits" in ds:
        fits = ds["fits"].astype(bool)
        mask = fits if mask is None else mask & fits
    for c in constraints:
        term = OPERATORS[c.op](ds[c.variable], c.value)
        mask = term if mask is None else mask & term
    if mask is None:
        name = next(iter(ds.data_vars))
        return xr.ones_like(ds[name], dtype=bool)
    return mask


def higher_is_better(name: str) -> bool:
    """Whether a larger value of ``name`` is better (a rate, a count, headroom) rather than a
    smaller one (a time, bytes moved)."""
    return (name.endswith("_per_s") or "per_s_" in name or "tokens_per" in name
            or name.endswith("_per_gpu") or name in ("max_sequences", "goodput", "goodput_rps",
                                                      "speedup")
            or "remaining" in name or "attainment" in name) and not name.endswith("_time_s")


@dataclass(frozen=True)
class QueryDefaults:
    """What a dataset's query ranks and charts first: the best cells' objective and whether
    its highest value is best, and the frontier's ``x`` (lower is better) and ``y``."""

    objective: str
    highest: bool
    x: str
    y: str
    y_highest: bool


QUERY_DEFAULTS: dict[str, QueryDefaults] = {
    "decode": QueryDefaults("aggregate_tokens_per_s_per_gpu", True,
                            "step_time_s", "aggregate_tokens_per_s_per_gpu", True),
    "prefill": QueryDefaults("ttft_s", False, "itl_during_prefill_s", "ttft_s", False),
    "prefix": QueryDefaults("saved_fraction", True, "bytes_with_cache", "saved_fraction", True),
    "goodput": QueryDefaults("goodput_rps", True, "ttft_p90_s", "goodput_rps", True),
    "context": QueryDefaults("time_s", False, "time_s", "doubling_ratio", False),
    "speculative": QueryDefaults("speedup", True, "cycle_time_s", "aggregate_tokens_per_s",
                                 True),
    "plan": QueryDefaults("tokens_per_s_gpu", True, "tpot_ms", "tokens_per_s_gpu", True),
}
"""Each experiment's :class:`QueryDefaults`, by the ``experiment`` attribute of its dataset:
a trade-off the experiment is about (decode step time against tokens/s per GPU, prefill's
ITL against its TTFT, goodput's p90 TTFT against goodput, the plan's TPOT against tokens/s
per GPU), never a variable against itself."""


@dataclass
class QueryResult:
    """The best cells and the frontier of one query, with how many cells it looked at.

    ``best`` and ``frontier`` have a column per dimension (the cell's coordinates) and per
    variable read; ``met`` counts the cells meeting the constraints, ``cells`` all cells.
    """

    best: pd.DataFrame
    frontier: pd.DataFrame
    met: int
    cells: int


def _block_reduce(objective, fx, fy, mask, offset, shape, k, highest, y_sign=1.0):
    """One chunk reduced to its top ``k`` cells and its own Pareto set (global flat ids);
    the set is of ``y_sign · fy`` (``-1``: a frontier whose lower ``y`` is better)."""
    obj = _floats(objective)
    ok = np.asarray(mask, dtype=bool) & np.isfinite(obj)
    local = np.nonzero(ok.ravel())[0]
    values = obj.ravel()[local]
    fx_flat = _floats(fx).ravel()

    def latency(cells: np.ndarray) -> np.ndarray:
        """The frontier latency of ``cells`` (indices into ``local``), NaN last."""
        return np.nan_to_num(fx_flat[local[cells]].astype(float), nan=np.inf)

    if local.size > k:
        score = -values if highest else values
        edge = np.partition(score, k - 1)[k - 1]
        tol = TIE_RELATIVE * abs(edge)  # 49558.32550700354 and …353 are one figure
        better = np.nonzero(score < edge - tol)[0]
        tied = np.nonzero(np.abs(score - edge) <= tol)[0]
        room = k - better.size  # ties at the edge: the lowest latency first
        if tied.size > room:
            tied = tied[np.argpartition(latency(tied), room - 1)[:room]]
        part = np.concatenate([better, tied])
    else:
        part = np.arange(local.size)
    top, top_values, top_latency = local[part], values[part], latency(part)
    fy_flat = _floats(fy).ravel() * y_sign
    good = ok.ravel() & np.isfinite(fx_flat) & np.isfinite(fy_flat)
    ids = np.nonzero(good)[0]
    front = pareto(fx_flat[ids], fy_flat[ids])
    block_shape = np.shape(obj)

    def global_ids(flat: np.ndarray) -> np.ndarray:
        idx = np.unravel_index(flat, block_shape)
        return np.ravel_multi_index(tuple(i + o for i, o in zip(idx, offset, strict=True)),
                                    shape)

    return (global_ids(top), top_values, global_ids(ids[front]), fx_flat[ids[front]],
            fy_flat[ids[front]], int(ok.sum()), top_latency)


def _floats(block) -> np.ndarray:
    """``block`` as floating-point numbers, kept in its own float width (float32 compares
    and orders exactly as its float64 copy would; the copy costs a pass over the chunk)."""
    values = np.asarray(block)
    return values if values.dtype.kind == "f" else values.astype(float)


def pareto(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points with no other point of lower-or-equal ``x`` and higher ``y``
    (lowest latency, highest throughput), ordered by ``x``.

    Exact: a point is dropped when a point before it in (``x`` up, ``y`` down) order has a
    ``y`` at least as high. On many points the frontier of a strided sample first drops every
    point that one of its points beats (no higher ``x`` and a higher ``y``: the full rule drops
    all of these too), so the sort runs on the few that are left; the indices are the same.
    """
    if x.size > PARETO_SAMPLE_ABOVE:
        sample = np.arange(0, x.size, max(1, x.size // PARETO_SAMPLE_POINTS))
        stair = sample[_pareto_sorted(x[sample], y[sample])]
        best_before = np.concatenate([[-np.inf], y[stair]])
        beaten = best_before[np.searchsorted(x[stair], x, side="right")] > y
        left = np.nonzero(~beaten)[0]
        return left[_pareto_sorted(x[left], y[left])]
    return _pareto_sorted(x, y)


PARETO_SAMPLE_ABOVE = 8192
"""Points above which :func:`pareto` first drops what a sample's frontier dominates."""

PARETO_SAMPLE_POINTS = 4096
"""About how many points that sample holds."""


TIE_RELATIVE = 1e-12
"""Two figures closer than this, relative to their size, are the same figure: the same
tokens/s reached by two paths of floating-point arithmetic (49,558.32550700354 and …353) tie."""


def _tie_groups(values: np.ndarray, highest: bool) -> np.ndarray:
    """Rank groups of ``values`` (0 best): values within :data:`TIE_RELATIVE` of their
    neighbour in the ranking share a group, whatever their bits (a fixed rounding split two
    figures 4e-16 apart at a bin edge)."""
    if values.size == 0:
        return np.zeros(0, dtype=int)
    order = np.argsort(-values if highest else values, kind="stable")
    ranked = values[order]
    scale = np.maximum(np.abs(ranked[1:]), np.abs(ranked[:-1]))
    starts = np.abs(np.diff(ranked)) > TIE_RELATIVE * scale
    groups = np.empty(values.size, dtype=int)
    groups[order] = np.concatenate([[0], np.cumsum(starts)])
    return groups


def _pareto_sorted(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """:func:`pareto` by one sort of every point; a point stays only when its ``y`` beats the
    best before it by more than :data:`TIE_RELATIVE` (one 1e-11 higher at a longer latency
    was kept on the frontier)."""
    if x.size == 0:
        return np.zeros(0, dtype=int)
    order = np.lexsort((-y, x))
    best = np.maximum.accumulate(y[order])
    keep = np.ones(order.size, dtype=bool)
    keep[1:] = y[order][1:] > best[:-1] + TIE_RELATIVE * np.abs(best[:-1])
    return order[keep]


def _as_dask(da: xr.DataArray, dims: tuple[str, ...], chunks) -> dsa.Array:
    data = da.transpose(*dims).data
    if not isinstance(data, dsa.Array):
        data = dsa.from_array(np.asarray(data), chunks=-1)
    return data.rechunk(chunks) if chunks is not None and data.chunks != chunks else data


def run_query(ds: xr.Dataset, objective: str, highest: bool, frontier: tuple[str, str],
              constraints: list[Constraint], k: int = 10,
              frontier_highest: bool = True) -> QueryResult:
    """The ``k`` best cells of ``ds`` for ``objective`` and the Pareto frontier of
    ``frontier = (x, y)``: lower ``x`` is better, and higher ``y`` (a throughput) unless
    ``frontier_highest`` is False (then lower: prefill's TTFT against its ITL), among the
    valid cells meeting ``constraints``; chunk by chunk, on dask's threads."""
    dims = tuple(ds[objective].dims)
    names = {objective, *frontier}
    ref = ds[objective].transpose(*dims).data
    chunks = ref.chunks if isinstance(ref, dsa.Array) else None
    mask = _as_dask(meets(ds, constraints).broadcast_like(ds[objective]), dims, chunks)
    arrays = {n: _as_dask(ds[n].broadcast_like(ds[objective]), dims, chunks) for n in names}
    chunks = arrays[objective].chunks
    shape = tuple(ds.sizes[d] for d in dims)
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]) for c in chunks]
    tasks = []
    for index in np.ndindex(*[len(c) for c in chunks]):
        offset = tuple(int(starts[a][i]) for a, i in enumerate(index))
        tasks.append(dask.delayed(_block_reduce)(
            arrays[objective].blocks[index], arrays[frontier[0]].blocks[index],
            arrays[frontier[1]].blocks[index], mask.blocks[index], offset, shape, k, highest,
            1.0 if frontier_highest else -1.0))
    parts = dask.compute(*tasks, scheduler="threads")
    top = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, int)
    top_values = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
    top_latency = np.concatenate([p[6] for p in parts]) if parts else np.zeros(0)
    # best first; a tie (within TIE_RELATIVE, as in each chunk) goes to the lower frontier
    # latency, then to the first cell
    order = np.lexsort((top, top_latency, _tie_groups(top_values, highest)))[:k]
    fid = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, int)
    fx = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0)
    fy = np.concatenate([p[4] for p in parts]) if parts else np.zeros(0)
    front = pareto(fx, fy)
    return QueryResult(best=cells_frame(ds, dims, top[order]),
                       frontier=cells_frame(ds, dims, fid[front]),
                       met=sum(p[5] for p in parts), cells=int(np.prod(shape)))


def cells_frame(ds: xr.Dataset, dims: tuple[str, ...], flat: np.ndarray) -> pd.DataFrame:
    """One row per cell ``flat`` (flat ids over ``dims``): its coordinates and every numeric
    or flag variable of ``ds`` at it (a pointwise read of just those cells)."""
    if flat.size == 0:
        return pd.DataFrame(columns=[*dims, *queryable(ds)])
    index = np.unravel_index(flat, tuple(ds.sizes[d] for d in dims))
    points = {d: xr.DataArray(i, dims="cell") for d, i in zip(dims, index, strict=True)}
    picked = ds[queryable(ds)].isel(points).compute()
    frame = pd.DataFrame({d: [v.item() if hasattr(v, "item") else v
                              for v in ds[d].values[i]] for d, i in zip(dims, index, strict=True)})
    for name in queryable(ds):
        frame[name] = np.asarray(picked[name].values)
    return frame
