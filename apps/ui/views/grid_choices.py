"""What the grid explorer shows of one dataset: its axes, mode, slice and query, as ``param``
inputs the page keeps in its URL.

Each dataset gets its own class (:func:`choices_for`): one selector per dimension (the value of
that dimension when it is on no axis), beside the shared inputs of :class:`GridChoices`. Every
selector lists only the dataset's own names and values, and the constraint text is judged by
the grammar of :mod:`sweeps.query`, so a link can set nothing else. Nothing here knows
about Panel.
"""

from __future__ import annotations

import numpy as np
import param
import xarray as xr

from apps.ui.shell.url_values import CheckedText
from lab.points.decode_points import DecodeConfig
from sweeps.query import GRAMMAR, QUERY_DEFAULTS, higher_is_better, queryable, where_problem

DEFAULTS = DecodeConfig()
"""The lab's default configuration (Llama 3.1 8B on H100 SXM, tp 1, BF16), shown first."""

NONE = "none"
"""The facet value meaning no small multiples."""

MODES = ["heatmap", "lines", "compare"]
"""The explorer's views: a heatmap (small multiples with a facet), one line per value of the
y dimension, the ratio or difference of two slices."""

PREFERRED_AXES = (("batch", "context"), ("chunk", "prompt"), ("prompt", "chunk"))
"""Axes shown first when a dataset has them."""

LATENCY = ("step_time_s", "ttft_s", "tpot_s", "itl_during_prefill_s")
"""Latency variables offered first for the frontier (lower is better)."""
THROUGHPUT = ("aggregate_tokens_per_s_per_gpu", "aggregate_tokens_per_s", "goodput_per_s",
              "goodput_rps")
"""Throughput variables offered first for the frontier and the objective (higher is better)."""

OPENING_VARIABLES = ("step_time_s", "speedup", "goodput_rps")
"""Variables coloured first when they vary over the opening slice (else the dataset's first
variable that does: a variable constant over the slice, like the goodput grid's 400
requests, shows one flat colour)."""


def opening_value(ds: xr.Dataset, dim: str, values: list):
    """The value dimension ``dim`` opens at: the lab's default configuration's when the grid
    holds it (Llama 3.1 8B, H100, tp 1, …), else the experiment page's default (speculative
    decoding's k = 4 and acceptance 0.8, not k = 0, which drafts nothing; goodput's batch cap
    64), else the first value."""
    from lab.experiments.registry import record

    preferred = getattr(DEFAULTS, dim, None)
    if preferred in values:
        return preferred
    slug = ds.attrs.get("experiment")
    found = record(str(slug)) if slug else None
    cls = found.experiment_class() if found is not None else None
    if cls is not None and dim in cls.param and cls.param[dim].default in values:
        return cls.param[dim].default
    return values[0]


def varies(da: xr.DataArray) -> bool:
    """Whether ``da`` takes two or more finite values (True when it cannot be read: the page
    then says why when it draws it)."""
    try:
        values = np.asarray(da.values, dtype=float)
    except (ValueError, TypeError, RuntimeError, MemoryError, OSError, KeyError):
        return True
    finite = values[np.isfinite(values)]
    return finite.size > 1 and bool(finite.min() != finite.max())


def plain(value: object) -> object:
    """A coordinate value as a plain Python value (``int``, ``float``, ``str``)."""
    return value.item() if hasattr(value, "item") else value


def plottable(ds: xr.Dataset) -> list[str]:
    """Variables over every dimension that can be coloured (numbers, not flags or text)."""
    return [name for name, da in ds.data_vars.items()
            if set(da.dims) == set(ds.dims) and np.issubdtype(da.dtype, np.number)
            and not np.issubdtype(da.dtype, np.bool_)]


def first_of(preferred, offered: list, fallback=None):
    """The first of ``preferred`` that is in ``offered``, else ``fallback`` or the first."""
    return next((p for p in preferred if p in offered),
                fallback if fallback is not None else (offered[0] if offered else None))


class GridChoices(param.Parameterized):
    """The inputs shared by every dataset's view; :func:`choices_for` fills their lists."""

    variable = param.Selector(default=None, objects=[], label="Variable",
                              doc="Variable coloured (or drawn as lines).")
    mode = param.Selector(default="heatmap", objects=MODES, label="View",
                          doc="Heatmap, lines, or a comparison of two slices.")
    x = param.Selector(default=None, objects=[], label="x axis", doc="Dimension across.")
    y = param.Selector(default=None, objects=[], label="y axis (lines: one per value)",
                       doc="Dimension up; in the line mode, one line per value.")
    facet = param.Selector(default=NONE, objects=[NONE], label="Small multiples by",
                           doc="A third dimension laid out as panels sharing one colour scale.")
    compare = param.Selector(default=None, objects=[], label="Compare along",
                             doc="Dimension whose two values are compared.")
    compare_a = param.Selector(default=None, objects=[], label="A (numerator)",
                               doc="First value of the compared dimension.")
    compare_b = param.Selector(default=None, objects=[], label="B (denominator)",
                               doc="Second value of the compared dimension.")
    how = param.Selector(default="ratio", objects=["ratio", "difference"], label="As",
                         doc="A / B (colour centred on 1) or A − B (centred on 0).")
    where = CheckedText("", label="Constraints", allowed=GRAMMAR,
                        doc="Cells meeting every constraint are ringed and queried.")
    objective = param.Selector(default=None, objects=[], label="Best cells by",
                               doc="Variable ranking the best cells.")
    best = param.Selector(default="highest", objects=["highest", "lowest"], label="Best is",
                          doc="Whether the highest or the lowest value is best.")
    latency = param.Selector(default=None, objects=[], label="Frontier x (lower is better)",
                             doc="Frontier x: a latency, or whatever is better lower.")
    throughput = param.Selector(default=None, objects=[], label="Frontier y",
                                doc="Frontier y: a throughput, or what the next input says.")
    frontier_best = param.Selector(default="highest", objects=["highest", "lowest"],
                                   label="Frontier y best is",
                                   doc="Whether the frontier's highest or lowest y is best.")
    scope = param.Selector(default="view", objects=["view", "dataset"], label="Query over",
                           doc="The cells the best-cells table and frontier consider.")

    dims: tuple[str, ...] = ()
    """The dataset's dimensions (each also a selector of this class)."""

    def __init__(self, ds: xr.Dataset, **params):
        super().__init__(**params)
        self.values = {d: [plain(v) for v in ds[d].values] for d in self.dims}
        variables = plottable(ds)
        numeric = [n for n in queryable(ds) if ds[n].dtype.kind in "iuf"
                   and set(ds[n].dims) == set(ds.dims)]
        self.param.variable.objects = variables
        dims = list(self.dims)
        self.param.x.objects = self.param.y.objects = dims
        axes = next((a for a in PREFERRED_AXES if set(a) <= set(dims)), (dims[-1], dims[-2])
                    if len(dims) > 1 else (dims[0], dims[0]))
        self.x, self.y = axes
        self.param.facet.objects = [NONE, *dims]
        self.param.compare.objects = dims
        self.compare = first_of(("precision", "gpu", "tp", "kv_precision"),
                                [d for d in dims if d not in axes] or dims)
        self.compare_values()
        self.param.objective.objects = numeric
        self.param.latency.objects = self.param.throughput.objects = numeric
        self.open_query(ds, numeric)
        self.param.scope.objects = ["view", "dataset", *dims]
        names = queryable(ds)
        self.param.where.check = lambda text: where_problem(text, names)
        for d in dims:
            self.param[d].objects = self.values[d]
            setattr(self, d, opening_value(ds, d, self.values[d]))
        self.variable = self.opening_variable(ds, variables)

    def open_query(self, ds: xr.Dataset, numeric: list[str]) -> None:
        """The objective and the frontier the query opens with: its experiment's
        :data:`~sweeps.query.QUERY_DEFAULTS` when the dataset holds their variables, else a
        throughput and a latency by name."""
        chosen = QUERY_DEFAULTS.get(str(ds.attrs.get("experiment")))
        if chosen is not None and {chosen.objective, chosen.x, chosen.y} <= set(numeric):
            self.objective, self.latency, self.throughput = chosen.objective, chosen.x, chosen.y
            self.best = "highest" if chosen.highest else "lowest"
            self.frontier_best = "highest" if chosen.y_highest else "lowest"
            return
        self.objective = first_of(THROUGHPUT, numeric)
        self.best = "highest" if self.objective and higher_is_better(self.objective) \
            else "lowest"
        self.latency = first_of(LATENCY, numeric)
        self.throughput = first_of(THROUGHPUT, numeric)
        self.frontier_best = "highest" if self.throughput and higher_is_better(
            self.throughput) else "lowest"

    def opening_variable(self, ds: xr.Dataset, variables: list[str]) -> str | None:
        """The variable coloured first: one of :data:`OPENING_VARIABLES`, else the first,
        that varies over the opening slice (the first variable when none does)."""
        ordered = [*(v for v in OPENING_VARIABLES if v in variables),
                   *(v for v in variables if v not in OPENING_VARIABLES)]
        at = self.at()
        return next((v for v in ordered if varies(ds[v].sel(at))),
                    variables[0] if variables else None)

    def compare_values(self) -> None:
        """List the compared dimension's values as A and B (the first two, unless the ones in
        force are still offered)."""
        values = self.values.get(self.compare, [])
        changes = {}
        if self.compare_a not in values:
            changes["compare_a"] = values[-1] if values else None
        if self.compare_b not in values:
            changes["compare_b"] = values[0] if values else None
        # all at once: a widget given the new list set A alone, and a redraw then read B of the
        # old dimension (a KeyError)
        with param.parameterized.batch_call_watchers(self):
            self.param.compare_a.objects = self.param.compare_b.objects = values
            self.param.update(changes)

    @property
    def in_use(self) -> set[str]:
        """Dimensions on an axis (their selectors do not apply)."""
        used = {self.x, self.y}
        if self.mode == "heatmap" and self.facet != NONE:
            used.add(self.facet)
        if self.mode == "compare":
            used.add(self.compare)
        return used

    def roles(self) -> dict[str, str]:
        """What each dimension in use is, as the end of "on the …": ``{dim: "x axis"}``."""
        roles = {self.y: "y axis", self.x: "x axis"}
        if self.mode == "heatmap" and self.facet != NONE:
            roles[self.facet] = "small multiples"
        if self.mode == "compare":
            roles[self.compare] = "compared dimension"
        return roles

    def at(self, exclude: set[str] | None = None) -> dict[str, object]:
        """``{dim: value}`` of the selectors of dimensions not in use (nor in ``exclude``)."""
        skip = self.in_use | (exclude or set())
        return {d: getattr(self, d) for d in self.dims if d not in skip}

    def url_names(self) -> list[str]:
        """Every input kept in the URL."""
        return [n for n in (*GridChoices.param, *self.dims) if n != "name"]


RESERVED = set(GridChoices.param) | {"view", "dataset", "theme"}
"""Names a dimension cannot take as its selector (it keeps its first value)."""


def choices_for(ds: xr.Dataset) -> GridChoices:
    """A :class:`GridChoices` for ``ds``: one selector per dimension, lists filled."""
    dims = tuple(d for d in ds.dims if d not in RESERVED)
    selectors = {}
    for d in dims:
        long_name = str(ds[d].attrs.get("long_name", d)) if d in ds.coords else d
        selectors[d] = param.Selector(default=None, objects=[], label=long_name[:1].upper()
                                      + long_name[1:], doc=f"Value of {d} on screen.")
    cls = type("DatasetChoices", (GridChoices,), {**selectors, "dims": dims})
    return cls(ds)
