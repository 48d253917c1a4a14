"""Grid explorer: any dataset the lab wrote, any two axes, small multiples, lines, queries and
comparisons (``?view=grid&dataset=NAME``).

The page lists the datasets by name (:mod:`sweeps.catalog_of_datasets`: the experiments'
grids, the ``large`` preset, the user's sweeps in the datasets folder) and opens the chosen one
lazily; nothing is computed in a request: a missing, stale or damaged dataset is one sentence
naming the command that writes it. Every input lives in the URL through
:class:`apps.ui.shell.url_sync.UrlInputs` (dataset first, then that dataset's own inputs,
:mod:`apps.ui.views.grid_choices`). A change reads only the slice on screen (an axis longer than the
screen can show is thinned, and the chart says so); a query reads the cells it covers chunk by
chunk (:mod:`sweeps.query`). On a server every read after the page's first build (a dataset
opened, a slice, a query) runs off the event loop, the latest change's answer last
(:mod:`apps.ui.views.grid_reads`). A redraw or query that takes more than 0.3 s shows the busy
note. In a notebook, ``GridExplorer(ds)`` explores any ``xarray.Dataset`` the same way.
"""

from __future__ import annotations

import io
import json
import math
import re
from html import escape
from urllib.parse import urlencode

import numpy as np
import panel as pn
import panel_material_ui as pmui
import param
import xarray as xr
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure
from panel.io.state import set_curdoc
from panel.viewable import Viewer

from apps.ui.panel_compat import DimensionSlider
from apps.ui.parts.downloads import WholeDatasetDownload, chart_csv
from apps.ui.parts.input_extras import catalog_options
from apps.ui.parts.input_widgets import InputMessage
from apps.ui.plots.charts import TOOLS, axis_label, display_label, plain_ticks, themed
from apps.ui.shell.busy import BusyNote
from apps.ui.shell.held_size import BUTTON_WIDTH
from apps.ui.shell.url_sync import UrlInputs, url_inputs, url_text
from apps.ui.views import grid_heatmap as charts
from apps.ui.views.grid_choices import NONE, GridChoices, choices_for, plain, plottable
from apps.ui.views.grid_reads import LatestReads
from lab.errors import LabInputError
from lab.experiments.registry import record
from lab.units import fmt_count, fmt_number, fmt_sig
from sweeps.query import QueryResult, meets, parse_where, run_query

WHERE_HELP = ("Constraints: `variable op number`, comma-separated, e.g. "
              "`step_time_s<=0.05,fits==1`; op is one of `<= >= < > == !=`; values in the "
              "dataset's stored units (seconds, bytes; 1/0 or true/false for a flag).")
"""The grammar of the Constraints box, shown under it before any query is refused."""

WHERE_REFUSALS = ("The link's where=", "The link gives 'where'=", "The link gives where=")
"""How the URL's sentences about where= begin (one sentence each, joined by spaces)."""

MAX_FACETS = 12
"""Most small multiples drawn (a longer facet dimension shows its first ones, and says so)."""

WRAP_SX = {"& .MuiSelect-select": {"whiteSpace": "normal !important",
                                   "overflowWrap": "anywhere", "height": "auto !important"}}
"""Material UI style of the explorer's select boxes: the chosen label wraps."""

MAX_BLOCK_BYTES = 256 * 1024**2
"""Largest block of whole chunks the page keeps in memory to cut selections from, bytes (the
``large`` preset's block, one model on one GPU, is 26 MB)."""

MAX_WHOLE_DOWNLOAD_BYTES = 512 * 1024**2
"""Largest dataset (in memory) the page offers whole as NetCDF; a larger one is exported with
``inference-lab export`` (the ``large`` preset is ~5 GB in memory)."""

INPUTS_STYLE = {"flex": "1 1 300px", "max-width": "400px", "min-width": "0"}
AREA_STYLE = {"flex": "1 1 560px", "min-width": "0"}
"""Inputs beside the charts on a wide screen, above them on a phone (the row wraps)."""

TABLE_CSS = """
.lab-grid-table { overflow-x: auto; max-width: 100%; }
.lab-grid-table table { border-collapse: collapse; font-size: 13px; }
.lab-grid-table th, .lab-grid-table td { padding: 2px 8px; border-bottom: 1px solid #ddd;
  text-align: right; white-space: nowrap; }
.lab-grid-table th { white-space: normal; vertical-align: bottom; }
"""


def page_sentence(exc: LabInputError, name: str | None = None) -> str:
    """A dataset error as the page shows it: the command that rewrites dataset ``name`` is the
    one that writes it where the page reads, with its real path shell-quoted so it can be pasted
    as it is (between backticks); elsewhere in the sentence the server's folder is not shown."""
    from sweeps.catalog_of_datasets import (
        dataset_location,
        datasets_dir,
        making_command,
        shell_quoted,
    )

    text = str(exc)
    folder = str(datasets_dir())
    path = str(dataset_location(datasets_dir(), name)) if name else None
    if path:
        text = text.replace(f"inference-lab sweep --out {shell_quoted(path)}",
                            making_command(name))
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside the commands
        if path:
            parts[i] = parts[i].replace(path, f"dataset '{name}'")
        parts[i] = parts[i].replace(folder + "/", "").replace(folder, "the datasets folder")
    return "`".join(parts)


def unreadable(exc: Exception, variable: str | None) -> LabInputError:
    """A read of the dataset that failed inside Zarr or xarray (a chunk that disagrees with
    its metadata, say) as one sentence, naming the variable read when it is known."""
    from sweeps.store import CorruptDatasetError

    what = f"its variable '{variable}'" if variable else "it"
    detail = " ".join(str(exc).split())[:160].rstrip(".")
    return CorruptDatasetError(f"The dataset is corrupt: a read of {what} failed "
                               f"({type(exc).__name__}: {detail}), so nothing of it is drawn; "
                               "write it again with inference-lab sweep.")


SLIDER_FORMAT = "%.6g"
"""A grid slider's labels of its values (integers too: a slider of integers only would say
``%d``, and the same digits here)."""

QUERY_ONLY = ("objective", "best", "latency", "throughput", "frontier_best", "scope")
"""Inputs of the query alone (a change of them redraws nothing)."""

QUERY_DELAY_MS = 100
"""How long after a change the query starts on a server, ms: long enough for the redraw's
messages to leave first (Panel writes them frame by frame as the server's event loop is free,
and a query holds the loop until it is done)."""


def later(callback) -> None:
    """Run ``callback`` :data:`QUERY_DELAY_MS` from now in the page's session (document
    locked), or at once without a server (a notebook, a test)."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        callback()
        return

    def run() -> None:
        with set_curdoc(doc):
            callback()

    doc.add_timeout_callback(run, QUERY_DELAY_MS)


def grid_constants(ds: xr.Dataset) -> dict:
    """The inputs the dataset's grid held constant (its spec's ``constants``: the decode
    grid's budget and page size, the goodput grid's model and GPU, …); empty when the dataset
    names none or its spec is unreadable."""
    try:
        spec = json.loads(str(ds.attrs.get("grid_spec", "{}")))
    except ValueError:
        return {}
    constants = spec.get("constants") if isinstance(spec, dict) else None
    return dict(constants) if isinstance(constants, dict) else {}


TABLE_DIGITS = 4
"""Significant digits of a column's largest figure in the best-cells table."""


def column_decimals(values: np.ndarray) -> int:
    """Decimals of one table column: :data:`TABLE_DIGITS` significant digits for its largest
    finite figure (none past 1,000; at most 6)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size else 0.0
    if top == 0.0:
        return 0
    return int(min(max(TABLE_DIGITS - 1 - math.floor(math.log10(top)), 0), 6))


def table_number(value: float, decimals: int) -> str:
    """A table figure with its column's ``decimals``; one those would write as 0 with its own
    significant digits (0.4 beside 12,000 read "0")."""
    text = fmt_number(value, decimals)
    if value != 0 and math.isfinite(value) and not text.strip("0.,−"):
        return fmt_sig(value)
    return text


def table_text(value) -> str:
    """A table cell's coordinate: a whole number with thousands separators (1,024)."""
    value = plain(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def facet_title(ds: xr.Dataset, variable: str, facet: str, value) -> str:
    """One small multiple's title: the variable with its unit, and the facet's value with
    its own ("Ideal decode step time (ms) at tp 2 GPUs"; the panels said only "tp 2")."""
    _, unit, factor = display_label(ds[facet]) if facet in ds.coords else ("", "", 1.0)
    shown = plain(value)
    if factor != 1.0 and isinstance(shown, (int, float)):  # 0.05 s is "50 ms"
        shown = float(f"{shown * factor:.6g}")
        shown = int(shown) if shown.is_integer() else shown
    if shown == 1 and len(unit) > 2 and unit.endswith("s"):
        unit = unit[:-1]  # tp 1 GPU, batch 1 sequence (not "ms")
    return f"{axis_label(ds[variable])} at {facet} {shown}{' ' + unit if unit else ''}"


def experiment_link(ds: xr.Dataset, row: dict, fixed: dict | None = None) -> str | None:
    """``?view=<experiment>&…`` opening the experiment page at a table row's configuration, or
    None when the dataset is no experiment's.

    Every input of the experiment the cell depends on travels: the grid's constants
    (:func:`grid_constants`), the dimensions the page holds ``fixed`` (the selectors' values:
    the model, GPU, tp… of the slice on screen) and the row's own coordinates, later ones
    winning; only the experiment's URL inputs, written as its page writes them."""
    slug = ds.attrs.get("experiment")
    found = record(str(slug)) if slug else None
    if found is None:
        return None
    cls = found.experiment_class()
    names = url_inputs(cls)
    given = {**grid_constants(ds), **(fixed or {}),
             **{d: row[d] for d in ds.dims if d in row}}
    translate = getattr(cls, "grid_link_inputs", None)  # a cell's coordinates as page inputs
    if translate is not None:
        given = translate(given, row)
    values = {n: url_text(cls.param[n], plain(given[n])) for n in names if n in given}
    return "?" + urlencode({"view": found.slug, **values})


class GridExplorer(Viewer):
    """The grid explorer of one dataset (``GridExplorer(ds)``) or of the lab's datasets by
    name (``GridExplorer()``, served)."""

    dataset = param.Selector(default=None, objects=[], label="Dataset",
                             doc="The dataset explored, by name (the lab's list, no paths).")

    def __init__(self, data: xr.Dataset | None = None, **params):
        if isinstance(params.get("dataset"), xr.Dataset):
            data = params.pop("dataset")
        super().__init__(**params)
        self.message = InputMessage()
        self._said = ""  # the message's sentence as said (unescaped)
        self._where_refused: tuple[str, list[str]] | None = None  # where in force, sentences
        self.busy = BusyNote()
        self._reads = LatestReads(self.busy)
        self.choices: GridChoices | None = None
        self._ds: xr.Dataset | None = None
        self._url: UrlInputs | None = None
        self._query_key = None
        self._slice: tuple | None = None
        self._block: tuple | None = None
        self._drawn: tuple | None = None
        self._layout: tuple | None = None
        self._heatmaps: list[charts.Heatmap] = []
        self._frontier_key: tuple | None = None
        self._frontier_parts: tuple | None = None
        self.result: QueryResult | None = None
        self._controls = pn.Column(sizing_mode="stretch_width", margin=0)
        self._area = pn.Column(sizing_mode="stretch_width", min_height=480,
                               css_classes=["lab-grid-chart"])
        self._note = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self._query = pn.Column(sizing_mode="stretch_width")
        self._downloads = pn.Column(sizing_mode="stretch_width", margin=0)
        self._served = data is None
        if self._served:
            from sweeps.catalog_of_datasets import dataset_names

            self.param.dataset.objects = dataset_names()
            if self.dataset is None:
                self.dataset = "decode"
            self._dataset_url = UrlInputs(self, ["dataset"], self._report, others=None)
            self._open(self.dataset)
            self.param.watch(self._switch, "dataset")
        else:
            self._use(data)

    def _report(self, sentence: str | None) -> None:
        """A URL's refusal (the page's two URL readers see each other's writes: a later
        'nothing refused' does not hide an earlier sentence)."""
        if sentence:
            self._say(sentence)
            about_where = [p for p in re.split(r" (?=The link(?:'s| gives) )", sentence)
                           if p.startswith(WHERE_REFUSALS)]
            if about_where and self.choices is not None:
                self._where_refused = (self.choices.where, about_where)

    def _say(self, sentence: str | None) -> None:
        """Show ``sentence`` by the inputs (None hides the message)."""
        self._said = sentence or ""
        self._where_refused = None
        self.message.say(sentence)

    def _clear_where_refusal(self) -> None:
        """A query ran with constraints other than those in force when where= was refused:
        the refusal's sentences leave the message (any other sentence stays)."""
        if self._where_refused is None or self._where_refused[0] == self.choices.where:
            return
        text = self._said
        for sentence in self._where_refused[1]:
            text = text.replace(sentence, "")
        self._say(" ".join(text.split()) or None)

    # -- datasets -----------------------------------------------------------------------
    def _open(self, name: str) -> None:
        """Open dataset ``name`` from the lab's list (a sentence when it cannot be); on a
        served page's loop, the store is opened on a worker thread."""
        from sweeps.catalog_of_datasets import open_named

        def refused(exc: LabInputError) -> None:
            self._forget()
            self._say(page_sentence(exc, name))

        self._reads.run("open", lambda: open_named(name), self._use, refused)

    def _forget(self) -> None:
        self._reads.drop("draw", "query")  # of the dataset forgotten
        if self._url is not None:
            self._url.close()
            self._url = None
        self._ds, self.choices = None, None
        self._controls.objects, self._area.objects, self._query.objects = [], [], []
        self._downloads.objects = []
        self._note.object = ""
        self._layout, self._heatmaps, self._block, self._slice = None, [], None, None
        self._drawn = None
        self._frontier_key, self._frontier_parts = None, None

    def _use(self, data: xr.Dataset) -> None:
        """Explore ``data``: its own inputs (from the URL when served), charts and query."""
        self._forget()
        if not plottable(data) or len(data.dims) < 2:
            self._say("This dataset has no numeric variable over two or more "
                             "dimensions to draw.")
            return
        self._ds = data
        self.choices = choices_for(data)
        # Without a page location (a notebook) UrlInputs syncs nothing.
        self._url = UrlInputs(self.choices, self.choices.url_names(), self._report,
                              first=["compare"], after_first=self.choices.compare_values,
                              lenient=["compare_a", "compare_b"], others=["dataset"])
        self._fix_axes()
        c = self.choices
        c.param.watch(self._compare_changed, "compare")
        c.param.watch(self._axes_changed, ["x", "y"])
        c.param.watch(self._mode_changed, "mode")
        c.param.watch(self._facet_changed, "facet")
        c.param.watch(self._where_changed, "where")
        c.param.watch(self._redraw, [n for n in c.url_names() if n not in QUERY_ONLY])
        c.param.watch(self._requery, c.url_names())
        self._controls.objects = self._build_widgets()
        self._downloads.objects = self._download_buttons()
        self._redraw()
        self._run_query()

    def _switch(self, event) -> None:
        """Another dataset chosen: its inputs replace the old ones (in the URL too)."""
        self._say(None)
        self._open(event.new)

    # -- inputs -------------------------------------------------------------------------
    def _fix_axes(self) -> None:
        """x and y must differ, as must the facet and compared dimensions from them."""
        c = self.choices
        problems = []
        if c.x == c.y:
            other = next(d for d in c.dims if d != c.x)
            problems.append(f"x and y must be different dimensions, so y shows {other}.")
            c.y = other
        if c.facet in (c.x, c.y):
            problems.append("The small multiples must be a third dimension, so none are shown.")
            c.facet = NONE
        moved = self._compare_off_axes()
        if moved:
            problems.append(f"The compared dimension must be off the axes, so {moved} is "
                            "compared.")
            c.compare_values()  # A and B of the new dimension (a blank page: KeyError)
        if problems:
            self._say(" ".join(problems))

    def _axes_changed(self, *events) -> None:
        c = self.choices
        event = events[-1]
        if c.x == c.y:  # the axes swap rather than collapse
            other = "y" if event.name == "x" else "x"
            setattr(c, other, event.old)
        if c.facet in (c.x, c.y):
            c.facet = NONE
        self._compare_off_axes(event.old)

    def _compare_off_axes(self, freed: str | None = None) -> str | None:
        """In compare mode the compared dimension leaves an axis it was moved to: it takes the
        dimension the axis ``freed`` (a swap), else the first one free (the chart stayed the
        old one, with a KeyError in the log). Returns the dimension it moved to, if any."""
        c = self.choices
        if c.mode != "compare" or c.compare not in (c.x, c.y):
            return None
        free = [d for d in c.dims if d not in (c.x, c.y)]
        if not free:
            return None
        c.compare = freed if freed in free else free[0]
        return c.compare

    def _mode_changed(self, *_events) -> None:
        self._compare_off_axes()

    def _compare_changed(self, *_events) -> None:
        """A new compared dimension lists its own A and B; one on an axis (a link applied after
        the page was built, as the browser's first address is) moves off it first."""
        c = self.choices
        if c.mode == "compare" and c.compare in (c.x, c.y):
            self._compare_off_axes()  # sets compare again: this runs for the new one
            return
        c.compare_values()

    def _facet_changed(self, *_events) -> None:
        """Small multiples on an axis (a link applied after the page was built) are none:
        drawn, they raised a TypeError in the server's log."""
        c = self.choices
        if c.facet in (c.x, c.y):
            self._say("The small multiples must be a third dimension, so none are shown.")
            c.facet = NONE

    def _where_changed(self, *events) -> None:
        """Constraints typed on the page: the grammar's sentence, and the old text kept."""
        event = events[-1]
        problem = self.choices.param.where.check(event.new)
        if problem:
            sentence = problem + " The constraints in force are kept."
            self._say(sentence)
            self._where_refused = (event.old, [sentence])
            self.choices.param.update(where=event.old)

    def _build_widgets(self) -> list:
        """The dataset's inputs: axes and mode, then a selector (or slider) per dimension."""
        c = self.choices
        dim_labels = {d: f"{display_label(self._ds[d])[0] or d} [{d}]" for d in c.dims}

        def select(name, options=None, **kw):
            # A long label wraps rather than being cut with an ellipsis (issue 29, item 11).
            w = pmui.Select.from_param(c.param[name], sizing_mode="stretch_width",
                                       css_classes=[f"lab-grid-{name}"], sx=WRAP_SX, **kw)
            if options is not None:
                w.options = options
            return w

        dims = {dim_labels[d]: d for d in c.dims}
        variables = {f"{axis_label(self._ds[n])} [{n}]": n for n in c.param.variable.objects}
        numeric = {f"{axis_label(self._ds[n])} [{n}]": n for n in c.param.objective.objects}
        widgets = [select("mode", {"Heatmap": "heatmap", "Lines (one per y value)": "lines",
                                   "Compare two slices": "compare"}),
                   select("variable", variables), select("x", dims), select("y", dims),
                   select("facet", {"None": NONE, **dims})]
        self._compare_widgets = [select("compare", dims), select("compare_a"),
                                 select("compare_b"),
                                 select("how", {"Ratio A / B": "ratio",
                                                "Difference A − B": "difference"})]
        widgets += self._compare_widgets
        self._dim_widgets, self._dim_labels = {}, {}
        for d in c.dims:
            values = c.values[d]
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) \
                    and len(values) > 1:
                # "%.6g": goodput's 1000 ms read "1e+03" under the slider's own "%.3g"
                w = DimensionSlider.from_param(c.param[d], options=values,
                                                   sizing_mode="stretch_width",
                                                   formatter=SLIDER_FORMAT,
                                                   css_classes=[f"lab-grid-{d}"])
            else:
                w = select(d, catalog_options(d, values))
            self._dim_widgets[d] = w
            self._dim_labels[d] = w.label
            widgets.append(w)
        where = pmui.TextInput.from_param(c.param.where, sizing_mode="stretch_width",
                                          placeholder="step_time_s<=0.05,fits==1",
                                          css_classes=["lab-grid-where"])
        scope = {"The slice on screen": "view", "The whole dataset": "dataset",
                 **{f"The whole dataset at this {d}": d for d in c.dims}}
        help_line = pn.pane.Markdown(WHERE_HELP, sizing_mode="stretch_width",
                                     margin=(0, 10), css_classes=["lab-grid-where-help"],
                                     styles={"font-size": "12px"})
        widgets += [pn.pane.Markdown("**Query**", margin=(10, 10, 0, 10)), where, help_line,
                    select("objective", numeric), select("best"), select("scope", scope),
                    select("latency", numeric), select("throughput", numeric),
                    select("frontier_best")]
        self._shown_inputs()
        c.param.watch(lambda *_: self._shown_inputs(), ["x", "y", "facet", "mode", "compare"])
        return widgets

    def _shown_inputs(self) -> None:
        """Grey out the selectors of dimensions on an axis (their label says which), and show
        the compare inputs in that mode. Greyed rather than hidden: hiding a selector
        re-lays out the whole page in the browser, which cost 150–250 ms of every axis change
        on the ``large`` preset (benchmarks/bench_grid.py)."""
        c = self.choices
        roles = c.roles()
        for d, w in getattr(self, "_dim_widgets", {}).items():
            base = self._dim_labels[d]
            w.param.update(disabled=d in roles,
                           label=f"{base} — on the {roles[d]}" if d in roles else base)
        for w in getattr(self, "_compare_widgets", []):
            w.visible = c.mode == "compare"

    # -- data ---------------------------------------------------------------------------
    def selection(self, free: set[str] | None = None) -> xr.Dataset:
        """The dataset at the selectors' values, the dimensions in use (and ``free``) kept,
        read into memory once per selection (the chart, its CSV and a query of the view share
        the read)."""
        read = self._selection_read(free)
        return self._remember(read()) if read is not None else self._slice[1]

    def _selection_read(self, free: set[str] | None = None):
        """None when :meth:`selection` has been read, else a function reading it that changes
        nothing of the page (it may run on a worker thread); its result goes to
        :meth:`_remember`."""
        c = self.choices
        at = c.at(free)
        key = (id(self._ds), tuple(sorted(at.items())), tuple(sorted(c.in_use | (free or set()))))
        if self._slice is not None and self._slice[0] == key:
            return None
        data, block, in_use = self._ds, self._block, set(c.in_use)
        extra_dims = [d for d in data.dims if d not in c.dims and d not in in_use]

        def read() -> tuple:
            try:
                ds, new_block = self._from_block(data, at, block)
                extra = {d: 0 for d in extra_dims if d in ds.dims}
                ds = (ds.isel(extra) if extra else ds).load()
            except LabInputError:
                raise
            except (ValueError, TypeError, RuntimeError, MemoryError, OSError) as exc:
                raise unreadable(exc, self._failing_variable(data, at)) from None
            return key, ds, new_block

        return read

    def _remember(self, read: tuple) -> xr.Dataset:
        """Keep a read of :meth:`_selection_read` (the slice and its block); the slice."""
        key, ds, block = read
        if key[0] == id(self._ds):  # still this page's dataset
            self._slice, self._block = (key, ds), block
        return ds

    @staticmethod
    def _failing_variable(data: xr.Dataset, at: dict) -> str | None:
        """The first variable whose read at ``at`` fails (after a read of them all failed)."""
        for name in data.data_vars:
            try:
                data[name].sel(at).load()
            except Exception:  # looking for the culprit only
                return str(name)
        return None

    @staticmethod
    def _from_block(data: xr.Dataset, at: dict, block: tuple | None) -> tuple:
        """``(data.sel(at), block)``: the selection cut from the block of whole chunks around
        it, ``block`` when it is that block (read before and kept), else the block read now
        (``block`` when none is kept): a store's chunk holds every value of some dimensions
        (the ``large`` preset's: tp, precision, batch and context), so a change of those, or
        of the axes, reads nothing. A block larger than :data:`MAX_BLOCK_BYTES` is not kept."""
        try:
            chunks = data.chunks
        except ValueError:  # variables chunked differently
            chunks = {}
        whole = {d for d, sizes in chunks.items() if len(sizes) == 1}
        if not chunks or not whole & set(at):
            return data.sel(at), block
        outer = {d: v for d, v in at.items() if d not in whole}
        key = (id(data), tuple(sorted(outer.items())))
        if block is None or block[0] != key:
            outer_block = data.sel(outer)
            if outer_block.nbytes > MAX_BLOCK_BYTES:
                return data.sel(at), block
            block = (key, outer_block.load())
        return block[1].sel({d: v for d, v in at.items() if d in whole}), block

    def current(self) -> xr.Dataset:
        """What is on screen: the cells drawn (thinned as drawn), every variable; a
        :class:`LabInputError` saying why when nothing is (in a notebook, a dataset the
        explorer cannot draw)."""
        c = self.choices
        if c is None:
            raise LabInputError(self._said or "Nothing is on screen: no dataset is "
                                "open.")
        if c.mode == "compare":
            a, b = self._compare_slices()
            result = charts.compared(a, b, c.variable, c.how)
            return xr.Dataset({result.name: result, f"{c.variable}_a": a[c.variable],
                               f"{c.variable}_b": b[c.variable]})
        ds = self.selection()
        if c.mode == "lines":
            return charts.thinned(charts.thinned(ds, [c.x]), [c.y], charts.MAX_LINES)
        ds = charts.thinned(ds, [c.x, c.y])
        if c.facet != NONE:
            ds = ds.isel({c.facet: slice(0, MAX_FACETS)})
        return ds

    def _compare_slices(self) -> tuple[xr.Dataset, xr.Dataset]:
        c = self.choices
        ds = charts.thinned(self.selection(), [c.x, c.y])
        return (ds.sel({c.compare: c.compare_a}, drop=True),
                ds.sel({c.compare: c.compare_b}, drop=True))

    def constraints(self):
        c = self.choices
        try:
            return parse_where(c.where, list(self._ds.data_vars))
        except LabInputError:
            return []

    # -- drawing ------------------------------------------------------------------------
    def _redraw(self, *_events) -> None:
        """Draw the current choices (unless they are drawn already: an axis swap changes x
        and y in one go), once their slice is read (off the loop on a server); the busy note
        shows until the redraw has gone out."""
        if self.choices is None:
            return
        c = self.choices
        if c.facet in (c.x, c.y) or (c.mode == "compare" and c.compare in (c.x, c.y)):
            # a link applied after the page was built may clash; its fix redraws (watchers
            # of one batch of changes are called in no order this can rely on)
            self._facet_changed()
            self._compare_off_axes()
            return
        if self._draw_key() == self._drawn:
            return

        def draw(read: tuple | None) -> None:
            if read is not None:
                self._remember(read)
            self._draw()

        self._reads.run("draw", self._selection_read(), draw, self._no_drawing)

    def _draw_key(self) -> tuple:
        """What a drawing shows: the dataset and every input but the query's."""
        c = self.choices
        return (id(self._ds), tuple(self.constraints()),
                tuple(getattr(c, n) for n in c.url_names() if n not in QUERY_ONLY))

    def _draw(self) -> None:
        """Draw the choices: into the figures on screen when the layout stays (the same
        number of heatmaps), else into new ones."""
        self._drawn = self._draw_key()
        try:
            layout, views = self._views()
        except LabInputError as exc:  # the dataset was deleted or damaged under the server
            self._no_drawing(exc)
            return
        self._show(layout, views)

    def _no_drawing(self, exc: LabInputError) -> None:
        """The slice could not be read: the sentence, and an empty chart."""
        self._drawn = None
        self._say(page_sentence(exc, self.dataset))
        self._show(None, [themed(figure(title="No data: see the message on the left", height=460,
                                        sizing_mode="stretch_width"))])

    def _show(self, layout: tuple | None, views: list) -> None:
        """Put ``views`` on screen (in place when ``layout`` is the one there)."""
        if layout is not None and layout == self._layout:
            self._note.object = self._thinning_note()
            return  # the heatmaps on screen were updated in place
        self._layout = layout
        panes = self._area.objects
        if len(views) == 1 and len(panes) == 1 and isinstance(panes[0], pn.pane.Bokeh):
            panes[0].object = views[0]
        elif len(views) == 1:
            self._area.objects = [pn.pane.Bokeh(views[0], sizing_mode="stretch_width",
                                                min_height=480)]
        else:  # small multiples: one a row, each as wide as the column
            self._area.objects = [pn.Column(*[pn.pane.Bokeh(v, margin=4,
                                                            sizing_mode="stretch_width")
                                              for v in views], sizing_mode="stretch_width")]
        self._note.object = self._thinning_note()

    def _heatmaps_for(self, layout: tuple, count: int, **size) -> list[charts.Heatmap]:
        """The heatmaps on screen when they have ``layout``, else ``count`` new ones."""
        if layout != self._layout or len(self._heatmaps) != count:
            self._heatmaps = [charts.Heatmap(**size) for _ in range(count)]
        return self._heatmaps

    def _views(self) -> tuple[tuple | None, list]:
        """The layout drawn (None: lines, always new) and its figures."""
        c = self.choices
        ds = self.current()
        if c.mode == "lines":
            return None, [charts.lines_figure(ds, c.variable, c.x, c.y)]
        single = ("heatmap", 1)
        if c.mode == "compare":
            a, b = self._compare_slices()
            title = (f"{axis_label(self._ds[c.variable])}: {c.compare} {c.compare_a} "
                     f"{'/' if c.how == 'ratio' else '−'} {c.compare_b}")
            heatmap = self._heatmaps_for(single, 1)[0]
            return single, [charts.compare_figure(a, b, c.variable, c.how, c.x, c.y, title,
                                                  heatmap=heatmap)]
        ds = ds.load()
        where = self.constraints()
        if c.facet == NONE:
            marks = meets(ds, where) if where else None
            heatmap = self._heatmaps_for(single, 1)[0]
            return single, [heatmap.show(ds, c.variable, c.x, c.y, marks=marks)]
        values = charts.screen(ds[c.variable])[0]
        clim = charts.colour_range(values, charts.is_signed(ds[c.variable]))
        facets = ds[c.facet].values
        layout = ("facets", len(facets))
        heatmaps = self._heatmaps_for(layout, len(facets), height=charts.FACET_HEIGHT,
                                      marker_size=charts.FACET_MARKER_SIZE)
        views = []
        for value, heatmap in zip(facets, heatmaps, strict=True):
            panel = ds.sel({c.facet: value})
            marks = meets(panel, where) if where else None
            views.append(heatmap.show(panel, c.variable, c.x, c.y, clim=clim, marks=marks,
                                      title=facet_title(ds, c.variable, c.facet, value)))
        return layout, views

    def _thinning_note(self) -> str:
        c = self.choices
        notes = []
        axes = [(c.x, charts.MAX_AXIS_CELLS), (c.y, charts.MAX_LINES if c.mode == "lines"
                                                else charts.MAX_AXIS_CELLS)]
        for d, cap in axes:
            n = self._ds.sizes[d]
            if n > cap:
                notes.append(f"{d} shows {cap} of its {n:,} values, spread over its range "
                             "(the query reads every value)")
        if c.mode == "heatmap" and c.facet != NONE and self._ds.sizes[c.facet] > MAX_FACETS:
            notes.append(f"the first {MAX_FACETS} of {self._ds.sizes[c.facet]} {c.facet} "
                         "values are drawn (a query over the slice on screen reads them all)")
        return ("*" + escape("; ".join(notes)).capitalize() + ".*") if notes else ""

    # -- query --------------------------------------------------------------------------
    def query_cells(self) -> xr.Dataset:
        """The cells the query covers: the slice on screen (not thinned), the whole dataset,
        or the whole dataset at the chosen value of one dimension."""
        c = self.choices
        if c.scope == "view":
            return self.selection()
        if c.scope == "dataset":
            return self._ds
        return self._ds.sel({c.scope: getattr(c, c.scope)})

    def _requery(self, *_events) -> None:
        """Re-run the query if what it covers changed, once the redraw has gone out (a
        moment later, not on the next tick: the redraw's messages are written to the browser
        only when the server is free). The busy note is switched on now, so the browser has
        it before the query starts, and off when the query is done."""
        if self.choices is None or self._query_wanted() == self._query_key:
            return
        self.busy.begin()

        def run() -> None:
            try:
                self._run_query()
            finally:
                pn.state.execute(self.busy.end, schedule=True)

        later(run)

    def _query_wanted(self) -> tuple:
        """What the query covers with the choices in force."""
        c = self.choices
        return (id(self._ds), c.scope, c.where, c.objective, c.best, c.latency, c.throughput,
                c.frontier_best,
                tuple(sorted(c.at().items())) if c.scope == "view" else
                (getattr(c, c.scope) if c.scope in c.dims else None),
                tuple(sorted(c.in_use)) if c.scope == "view" else None)

    def _run_query(self) -> None:
        if self.choices is None:
            return
        c = self.choices
        key = self._query_wanted()
        if key == self._query_key or c.objective is None:
            return
        self._query_key = key
        ask = (c.objective, c.best == "highest", (c.latency, c.throughput), self.constraints(),
               10, c.frontier_best == "highest")
        view = self._selection_read() if c.scope == "view" else None
        cells = None if c.scope == "view" else self.query_cells()  # lazy: read by the query
        held = self._slice[1] if c.scope == "view" and view is None else None

        def read() -> tuple:
            read_view = view() if view is not None else None
            data = read_view[1] if read_view is not None else held if cells is None else cells
            return run_query(data, *ask), read_view

        def show(answer: tuple) -> None:
            self.result, read_view = answer
            if read_view is not None:
                self._remember(read_view)
            self._query.objects = self._query_views(self.result)
            self._clear_where_refusal()

        self._reads.run("query", read, show, lambda exc: self._say(page_sentence(exc)))

    def _query_views(self, result: QueryResult) -> list:
        """The summary, best cells and frontier of ``result``: the panes on screen with new
        contents (the frontier's data replaced in place) when they are there."""
        c = self.choices
        fit = ", fit in memory" if "fits" in self._ds else ""
        summary = (f"**{result.met:,}** of {fmt_count(result.cells, 'cell')} "
                   f"{'is' if result.met == 1 else 'are'} valid{fit} and "
                   f"{'meets' if result.met == 1 else 'meet'} the constraints"
                   + (f" ({escape(c.where)})" if c.where else "") + ".")
        panes = self._query.objects
        if len(panes) == 3:
            panes[0].object = summary
            panes[1].object = self._table_html(result)
            frontier = self._frontier(result)
            if panes[2].object is not frontier:
                panes[2].object = frontier
            return panes
        return [pn.pane.Markdown(summary, sizing_mode="stretch_width",
                                 css_classes=["lab-grid-summary"]),
                pn.pane.HTML(self._table_html(result), sizing_mode="stretch_width",
                             css_classes=["lab-grid-best"], stylesheets=[TABLE_CSS]),
                pn.pane.Bokeh(self._frontier(result), sizing_mode="stretch_width",
                              min_height=360, css_classes=["lab-grid-frontier"])]

    def _table_html(self, result: QueryResult) -> str:
        """The best cells as an escaped table; each row links to its experiment page.

        The link comes first and a dimension every row shares is said once above the table
        rather than repeated in a column, so the table fits beside the inputs at 1440 px (it
        was clipped at "Ope", and compare mode lost its last columns)."""
        c = self.choices
        frame = result.best
        dims = [d for d in self._ds.dims if d in frame]
        shared = [d for d in dims if len(frame) > 1 and frame[d].nunique() == 1]
        dims = [d for d in dims if d not in shared]
        shown = [n for n in dict.fromkeys([c.objective, c.latency, c.throughput]) if n]
        # a dimension by its short name (the table fits at 1440 px), its long one on hover
        head = "<th>Page</th>" + "".join(
            f'<th title="{escape(axis_label(self._ds[d]))}">{escape(d)}</th>' for d in dims)
        head += "".join(f"<th>{escape(axis_label(self._ds[n]))}</th>" for n in shown)
        factors = {n: display_label(self._ds[n])[2] for n in shown}
        decimals = {n: column_decimals(frame[n].to_numpy(dtype=float) * factors[n])
                    for n in shown if n in frame}
        rows = []
        for row in frame.to_dict("records"):
            cells = "".join(f"<td>{escape(table_text(row[d]))}</td>" for d in dims)
            for n in shown:  # one number of decimals per column: 7.75, 10.33, not 7.748, 10.33
                cells += f"<td>{table_number(float(row[n]) * factors[n], decimals[n])}</td>"
            link = experiment_link(self._ds, row, c.at())
            opener = (f'<td><a class="lab-grid-open" href="{escape(link)}" aria-label="Open '
                      f'this cell on its experiment page">Open</a></td>' if link else "<td></td>")
            rows.append(f"<tr>{opener}{cells}</tr>")
        if not rows:  # said with no constraints too, where memory was the reason
            parts = ["is valid", *(["fits in memory"] if "fits" in self._ds else []),
                     *(["meets the constraints"] if c.where else [])]
            why = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            return f'<p class="lab-grid-table">No cell {why}.</p>'
        # The objective by its long name and units, as on every axis (not the raw name).
        title = escape(f"Best cells by {axis_label(self._ds[c.objective])} "
                       f"({c.best} first)")
        # frame[d].iloc[0], not frame.iloc[0][d]: a row of mixed columns is all floats
        # ("block 128.0")
        common = ("<p class=\"lab-grid-shared\">Every row: " + escape(", ".join(
            f"{d} {plain(frame[d].iloc[0])}" for d in shared)) + "</p>") if shared else ""
        return (f'<div class="lab-grid-table"><p><b>{title}</b></p>{common}<table><thead>'
                f"<tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")

    def _frontier(self, result: QueryResult):
        """Throughput against latency of the frontier's cells, hover with their coordinates:
        the figure on screen with new data while its axes stay (same variables and scale)."""
        c = self.choices
        frame = result.frontier
        lx, ly = display_label(self._ds[c.latency]), display_label(self._ds[c.throughput])
        dims = [d for d in self._ds.dims if d in frame]
        data = {d: frame[d].astype(str).tolist() for d in dims}
        data["lat"] = frame[c.latency].to_numpy(dtype=float) * lx[2]
        data["thr"] = frame[c.throughput].to_numpy(dtype=float) * ly[2]
        positive = bool(len(frame) and (data["lat"] > 0).all()
                        and data["lat"].max() / data["lat"].min() > 30)
        title = (f"Frontier: {fmt_count(len(frame), 'cell')} no other beats on both" if
                 len(frame) != 1 else "Frontier: 1 cell, which no other beats on both")
        key = (positive, c.latency, c.throughput, tuple(dims))
        if self._frontier_parts is not None and key == self._frontier_key:
            fig, source = self._frontier_parts
            source.data = data
            fig.title.text = title
            return fig
        fig = figure(title=title,
                     height=340, sizing_mode="stretch_width", tools=TOOLS,
                     output_backend="canvas", x_axis_type="log" if positive else "linear",
                     x_axis_label=axis_label(self._ds[c.latency]),
                     y_axis_label=axis_label(self._ds[c.throughput]))
        fig.xaxis[0].formatter = plain_ticks()  # 50,000, not 50000 or 1.400e+14
        fig.yaxis[0].formatter = plain_ticks()
        source = ColumnDataSource(data)
        fig.step(x="lat", y="thr", source=source, mode="after", color="#0072B2")
        points = fig.scatter(x="lat", y="thr", source=source, size=7, color="#0072B2")
        fig.add_tools(HoverTool(renderers=[points], tooltips=[
            *[(d, f"@{{{d}}}") for d in dims],
            (axis_label(self._ds[c.latency]), "@lat{0,0.[0000]}"),
            (axis_label(self._ds[c.throughput]), "@thr{0,0.[00]}")]))
        self._frontier_key, self._frontier_parts = key, (fig, source)
        return themed(fig)

    # -- downloads and layout -----------------------------------------------------------
    def screen_csv(self) -> str:
        """What is on screen as CSV, after ``#`` lines naming the dataset, the view, the value
        of every dimension held fixed (and the grid's constants), the query, the objective
        and the units; a ``meets`` column is 1 where the cell is valid and meets the
        constraints (in compare mode: in both slices)."""
        c = self.choices
        ds = self.current()
        where = self.constraints()

        def unit(name: str) -> str:
            found = self._ds[name].attrs.get("units") if name in self._ds else None
            return f"{name} [{found}]" if found else name

        inputs: dict = {"dataset": self.dataset or "(a dataset given in a notebook)",
                        "view": c.mode, "variable": unit(c.variable), "x": c.x, "y": c.y}
        if c.mode == "heatmap" and c.facet != NONE:
            inputs["small multiples by"] = c.facet
        if c.mode == "compare":
            inputs.update({"compare": c.compare, "A": plain(c.compare_a),
                           "B": plain(c.compare_b), "as": c.how})
        inputs.update({d: plain(v) for d, v in c.at().items()})
        inputs.update({f"constant {k}": v for k, v in grid_constants(self._ds).items()})
        inputs.update({"where": c.where or "(no constraints)",
                       "query over": c.scope if c.scope in ("view", "dataset")
                       else f"the whole dataset at {c.scope} = {plain(getattr(c, c.scope))}",
                       "objective": f"{unit(c.objective)}, {c.best} first" if c.objective
                       else "(none)",
                       "frontier": f"{unit(c.latency)}, lowest best, against "
                                   f"{unit(c.throughput)}, {c.frontier_best} best",
                       "units": "as stored (s, bytes, FLOPs; the plan's ms), as the column "
                                "names say",
                       "meets": "1 where the cell is valid, fits in memory (where the dataset "
                                "says) and meets every constraint, else 0"})
        if c.mode == "compare":
            a, b = self._compare_slices()
            met = meets(a, where) & meets(b, where)
        else:
            met = meets(ds, where)
        out = ds.assign(meets=met.broadcast_like(ds[c.variable if c.mode != "compare"
                                                   else next(iter(ds.data_vars))]).astype(int))
        return chart_csv(out, inputs)

    def _download_buttons(self) -> list:
        name = self.dataset or "dataset"
        csv = pmui.FileDownload(callback=lambda: io.StringIO(self.screen_csv()),
                                filename=f"{name}-on-screen.csv", label="On screen (CSV)",
                                embed=False, width=BUTTON_WIDTH)
        if self._ds.nbytes > MAX_WHOLE_DOWNLOAD_BYTES:
            size = self._ds.nbytes / 1024**3
            note = pn.pane.Markdown(
                f"The whole dataset is {size:,.1f} GB in memory, too large to send from the "
                f"page; export any selection with `inference-lab export --dataset PATH --sel "
                f"…`.", sizing_mode="stretch_width", css_classes=["lab-grid-too-large"])
            return [csv, note]
        whole = WholeDatasetDownload(dataset=self._ds, filename=f"{name}.nc",
                                     label="Whole dataset (NetCDF)")
        return [csv, whole.button, whole.message]

    def __panel__(self):
        intro = ("# Grid explorer\n\nAny grid the lab computed, read as it was computed: "
                 "choose the axes, small multiples or lines, fix the other dimensions, ring "
                 "the cells that meet your constraints, rank the best cells and see the "
                 "throughput-versus-latency frontier. Grey cells are invalid configurations, "
                 "crossed cells do not fit the memory budget; hover a cell for every variable.")
        inputs = [self.message]
        if self._served:
            inputs.append(pmui.Select.from_param(self.param.dataset,
                                                 sizing_mode="stretch_width",
                                                 css_classes=["lab-grid-dataset"]))
        inputs += [self._controls, self._downloads]
        row = pn.FlexBox(pn.Column(*inputs, css_classes=["lab-grid-inputs"],
                                   styles=INPUTS_STYLE),
                         pn.Column(self._area, self._note, self._query,
                                   css_classes=["lab-grid-area"], styles=AREA_STYLE),
                         flex_wrap="wrap", sizing_mode="stretch_width")
        return pn.Column(self.busy, pn.pane.Markdown(intro, sizing_mode="stretch_width"), row,
                         sizing_mode="stretch_width")
