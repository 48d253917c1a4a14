"""Experiment 11's page: real engines' TPOT and TTFT against the floor plus named terms.

Laid out like the other experiment pages from the same building blocks — the prediction, the
cards, “Show the calculation”, the limits — around
:class:`lab.served.served_experiment.FromFloorToServed`. Its charts: measured against predicted TPOT
per row (log–log; the hover names the nearest run, a click selects its row), and the selected
row's TPOT and TTFT, each on an axis of its own: the terms stacked on the floor beside the
measurement. A reader can upload their own rows (:class:`ServedUpload`).
"""

from __future__ import annotations

from html import escape

import holoviews as hv
import numpy as np
import panel as pn
import panel_material_ui as pmui
import param
import xarray as xr
from bokeh.models import HoverTool
from panel.viewable import Viewer

from apps.ui.parts.calculation import CalculationView
from apps.ui.parts.cards import CardsView
from apps.ui.parts.downloads import chart_csv_button
from apps.ui.parts.input_extras import catalog_names
from apps.ui.parts.input_widgets import InputMessage, input_panel
from apps.ui.parts.prediction import PredictionView
from apps.ui.parts.table_upload import TableUpload
from apps.ui.plots.charts import CANVAS
from apps.ui.shell.busy import BusyNote
from apps.ui.shell.theme import CARD_CSS, HIGHLIGHT, OKABE_ITO, PROSE_CSS
from apps.ui.shell.url_sync import UrlInputs, upload_only
from apps.ui.views.page_shell import experiment_page
from lab.catalog.loader import gpu_catalog
from lab.catalog.lookup import model_catalog
from lab.plan.plan_space import ENGINE_NAMES
from lab.served.refit_note import unfitted_sentence
from lab.served.served_calc import TERM_NAMES, TERMS
from lab.served.served_experiment import FromFloorToServed
from lab.served.served_loader import REQUIRED, parse_served
from lab.served.vllm_bench import PRECISIONS, RunSetup, looks_like_json

INPUTS = ("model", "gpu", "engine", "mode", "workload", "min_concurrency", "row",
          "below_floor_only")
"""The inputs offered as widgets and kept in the URL (the data set comes from the upload)."""

INTRO = ("How far above the lab's floor is a real engine, and which named terms explain the gap? "
         "Public TTFT and TPOT measurements of TensorRT-LLM, vLLM and SGLang beside the floor of "
         "experiment 1 and the terms of docs/model.md §11, each prediction made without the "
         "row's workload.")
"""The page's introduction, under the headline."""

DEFINITIONS = """
**What the measured numbers are.** *TTFT* (time to first token): from sending a request to
receiving its first output token — queueing and the prefill of its prompt. *TPOT* (time per
output token): the rest of the request's time divided by its other output tokens,
`(end-to-end − TTFT) / (osl − 1)`; averaged over a run it is close to the mean *inter-token
latency* (the gap between two streamed tokens), which also counts stalls when a prefill runs.
*End-to-end latency* = TTFT + (osl − 1) · TPOT. *Concurrency* is how many clients keep one
request each in flight; the *batch* is how many sequences one decode step actually advances —
at most the concurrency, less while requests are queued, prefilling or finishing, and split
over the decode workers when disaggregated.
"""

CHART_NOTE = ("Each point is one measured run the lab models: measured TPOT against the "
              "lab's out-of-sample prediction (floor + terms; the dashed line is perfect). "
              "Hover for a run's id, engine and GPU; click a point to show its terms below "
              "(its id goes in the Row id box).")


def short_gpu_names() -> dict[str, str]:
    """GPU id → its catalog name without the parenthesis (``NVIDIA B200``)."""
    return {key: spec.name.split(" (")[0] for key, spec in gpu_catalog().items()}


def short_model_names() -> dict[str, str]:
    """Model id → its catalog name."""
    return {key: spec.name for key, spec in model_catalog().items()}


HOVER = ('<div style="max-width: min(320px, calc(100vw - 40px)); white-space: normal; '
         'overflow-wrap: anywhere; font-size: 12px; line-height: 1.35">'
         "<div><b>@run</b></div><div>@setup</div><div>Row id @id</div>"
         "<div>TPOT @measured{0,0.00} ms measured, @predicted{0,0.00} ms predicted</div>"
         "<div>TTFT @ttft_measured{0,0} ms measured, @ttft_predicted{0,0} ms predicted</div>"
         "</div>")
"""The scatter's hover: the run named, its two latencies with units (the terms are in the
bars below, for the row clicked). A template (Bokeh escapes each value) that wraps within a
phone's width: as rows of a table, a long row id made it 577 px wide, off a 390 px screen
(issue 37 item 7)."""


def run_names(table, rows) -> tuple[list[str], list[str]]:
    """For each of ``rows`` (labels of ``table``'s ``row``) its run, ``Llama 3.1 70B · vLLM ·
    NVIDIA H200 SXM``, and its setup, ``tp 4 · isl/osl 1024/1024 · concurrency 64``."""
    sub = table.sel(row=rows)
    models, gpus = short_model_names(), short_gpu_names()
    values = zip(*(np.asarray(sub[k].values).astype(str) for k in (
        "model", "engine", "gpu", "tp", "isl", "osl", "concurrency")), strict=True)
    runs, setups = [], []
    for m, e, g, tp, i, o, c in values:
        runs.append(f"{models.get(m, m)} · {ENGINE_NAMES.get(e, e)} · {gpus.get(g, g)}")
        setups.append(f"tp {tp} · isl/osl {i}/{o} · concurrency {c}")
    return runs, setups


def scatter(ds, table=None, selected: str = "") -> hv.Overlay:
    """Measured against predicted TPOT, log–log; the hover names each run (``table``: the
    experiment's full table, for the names) and ``selected``, the id of the row shown, is drawn
    large."""
    ok = np.isfinite(ds["tpot_predicted_ms"].values)
    sub = ds.isel(row=np.flatnonzero(ok))
    rows = sub["row"].values
    has_names = table is not None and "id" in table
    ids = np.asarray(table["id"].sel(row=rows).values).astype(str) if has_names else (
        rows.astype(str))
    data = {"predicted": sub["tpot_predicted_ms"].values,
            "measured": sub["tpot_measured_ms"].values,
            "ttft_measured": sub["ttft_measured_ms"].values,
            "ttft_predicted": sub["ttft_predicted_ms"].values,
            "id": ids}
    data["run"], data["setup"] = run_names(table, rows) if has_names else (ids, ids)
    style = {"logx": True, "logy": True, "responsive": True, "height": 420,
             "xlabel": "Predicted TPOT (ms, out of sample)", "ylabel": "Measured TPOT (ms)",
             "backend_opts": CANVAS}
    # The nearest run only, above or below it: kept inside the window across (a tooltip beside
    # a point in the middle of a phone has no room on either side).
    hover = HoverTool(tooltips=HOVER, limit=1, attachment="vertical")
    points = hv.Scatter(data, "predicted", ["measured", "ttft_measured", "ttft_predicted", "id",
                                            "run", "setup"]).opts(
        size=5, alpha=0.6, tools=[hover, "tap"], nonselection_alpha=0.6, **style)
    values = np.concatenate([data["predicted"], data["measured"]]) if ok.any() else np.ones(1)
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    line = hv.Curve([(lo, lo), (hi, hi)]).opts(color="black", line_dash="dashed", line_width=1)
    mine = ids == selected
    here = hv.Scatter({"predicted": data["predicted"][mine], "measured": data["measured"][mine]},
                      "predicted", "measured").opts(size=13, color=HIGHLIGHT,
                                                     line_color="white", line_width=1.5)
    # Two lines: one ran past a phone's chart and was cut.
    return (points * line * here).opts(title="Measured against predicted TPOT,\none point per row")


BAR_NAMES = {("tpot", "allreduce"): "all-reduce + all-to-all",
             ("tpot", "prefill"): "interleaved prefill",
             ("tpot", "step"): "step beyond the floor",
             ("tpot", "fixed"): "fixed time × layers",
             ("tpot", "moe"): "fixed time × MoE layers",
             ("tpot", "slots"): "clients beyond the slots",
             ("tpot", "collective"): "collectives beyond ideal",
             ("ttft", "queue"): "queue, (c − 1)/2 prefills",
             ("ttft", "fixed"): "fixed time to 1st token",
             ("ttft", "chunk"): "decode steps of chunks",
             ("ttft", "queue_chunk"): "queued prompts' chunk steps"}
"""The stacked bars' short names of the terms (the legend fits a phone; the calculation and
the dataset keep the full names, ``TERM_NAMES``)."""
BAR_NAME_LENGTH = 28
"""Longest name in the bars' legend, characters (a phone's width at the legend's size)."""


def bar_name(metric: str, term: str) -> str:
    """The term's short name in the bars' legend: :data:`BAR_NAMES`' else the full name's
    first clause, cut to :data:`BAR_NAME_LENGTH`."""
    name = BAR_NAMES.get((metric, term)) or TERM_NAMES.get((metric, term), term).split(",")[0]
    return name if len(name) <= BAR_NAME_LENGTH else name[:BAR_NAME_LENGTH - 1] + "…"

TERM_COLOURS = [*OKABE_ITO[1:7], "#882255", "#44AA99"]
"""Colours of the stacked terms in order, after the floor's blue and before the measurement's
grey: distinct and colour-blind safe (the default cycle gave two terms the same red)."""


NET = "prediction (net)"
"""The part name of the bar that sums a stack holding a negative term."""


def terms_bar(record: dict, metric: str) -> hv.Bars:
    """The selected row's ``metric`` ("tpot" or "ttft") on an axis of its own: the floor and
    each term stacked, the prediction's net sum when a term is negative, and the
    measurement."""
    upper = metric.upper()
    predicted = f"{upper} predicted"
    names = ["floor", *(bar_name(metric, t) for t in TERMS[metric]), "measured"]
    values = [record.get(f"{metric}_floor_ms"),
              *(record.get(f"{metric}_term_{t}_ms") for t in TERMS[metric]),
              record.get(f"{metric}_measured_ms")]
    rows = [(f"{upper} measured" if name == "measured" else predicted, name, value or 0.0)
            for name, value in zip(names, values, strict=True)]
    colours = {"floor": OKABE_ITO[0], **dict(zip(names[1:-1], TERM_COLOURS, strict=False)),
               "measured": "#999999"}
    title = f"Selected row: {upper}, floor + terms"
    if any((value or 0.0) < 0 for value in values):
        # A negative term is stacked left of 0, the others right of it: the stack's end is
        # then not the prediction (a row at 10.86 ms read as about 35). Its net sum is a bar.
        rows.insert(-1, (f"{upper} predicted, net", NET, record.get(f"{metric}_predicted_ms")
                         or 0.0))
        colours[NET] = "#555555"
        title += " (a negative term left of 0)"
    return hv.Bars(rows, ["bar", "term"], "ms").opts(
        stacked=True, responsive=True, height=150 + 26 * len({row[1] for row in rows}), invert_axes=True,
        tools=[HoverTool(tooltips=[("Part", "@term"), ("Time", "@ms{0,0.00} ms")])],
        legend_position="bottom", legend_opts={"ncols": 1, "nrows": "auto",
                                               "label_text_font_size": "10px", "margin": 0,
                                               "padding": 4},  # fits a phone
        title=title, cmap=colours,
        backend_opts=CANVAS, xlabel="", ylabel=f"{upper} (ms)")


NOT_STATED = "not in the file"
"""The choice of a run-setup input that states nothing."""
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
"""Tensor-parallel degrees offered beside the upload (others: the CLI or --metadata tp=…)."""


class ServedUpload(TableUpload):
    """Upload a serving CSV or ``vllm bench serve`` results, or go back to the shipped public
    rows. A JSON upload is read with the GPU, tp, precision and model chosen beside it (what
    vLLM does not save); changing one reads the last JSON upload again."""

    experiment = param.ClassSelector(class_=FromFloorToServed,
                                     doc="The experiment whose data the upload replaces.")
    file_label = "Upload your serving runs (CSV or vllm bench serve JSON)"
    reset_label = "Use the shipped public rows"
    shipped_text = "the shipped public rows"
    status_class = "lab-served-status"

    def __init__(self, **params):
        super().__init__(**params)
        self._json: tuple[bytes, str] | None = None
        choose = lambda label, options: pmui.Select(  # noqa: E731  (options: shown → value)
            label=label, options={NOT_STATED: "", **options}, value="",
            sizing_mode="stretch_width")
        self._gpu = choose("GPU of your vLLM runs", catalog_names("gpu"))
        self._tp = choose("tp of your vLLM runs", {str(tp): tp for tp in TP_CHOICES})
        self._precision = choose("Precision (default: the checkpoint's)",
                                 {p: p for p in PRECISIONS})
        self._model = choose("Model (when model_id is a local path)", catalog_names("model"))
        for widget in self.setup_inputs():
            widget.param.watch(self._setup_changed, "value")

    def setup(self) -> RunSetup:
        """The GPU, tp, precision and model chosen beside the upload."""
        return RunSetup(gpu=self._gpu.value or "", tp=self._tp.value or None,
                        precision=self._precision.value or "", model=self._model.value or "")

    def setup_inputs(self) -> list:
        return [self._gpu, self._tp, self._precision, self._model]

    def parse(self, data: bytes, name: str):
        if looks_like_json(data[:4096].decode("utf-8-sig", errors="replace")):
            self._json = (data, name)
            return parse_served(data, name, self.setup())
        self._json = None
        return parse_served(data, name)

    def _setup_changed(self, _event) -> None:
        if self._json is not None:
            self._load(*self._json)

    def _use_shipped(self, event) -> None:
        self._json = None
        super()._use_shipped(event)

    def use(self, table) -> None:
        if table is None:
            self.experiment.param.update(measurements=None, row="")
        else:
            self.experiment.param.update(measurements=table, row="", model="all", gpu="all",
                                         engine="all", mode="all", workload="all")

    def help_markdown(self) -> str:
        return (f"**Your own runs**: a CSV with the columns `{','.join(REQUIRED)}`, optional "
                "`batch_size`, `precision`, `tp_size`, …, or the JSON of `vllm bench serve "
                "--save-result` (one run per file or per line, `--request-rate inf` with "
                "`--max-concurrency`), whose GPU and tp you choose below (docs/model.md §11)")


class ServedPage(Viewer):
    """Headline, prediction, inputs and upload, cards, charts, definitions, calculation."""

    experiment = param.ClassSelector(class_=FromFloorToServed, doc="The experiment shown.")

    def __init__(self, **params):
        if params.get("experiment") is None:  # made only when none is given
            params["experiment"] = FromFloorToServed()
        super().__init__(**params)
        exp = self.experiment
        self.message = InputMessage()
        self.url = UrlInputs(exp, list(INPUTS), self.message.say,
                             lenient=["model", "gpu", "engine", "mode", "workload"],
                             unlinkable=upload_only(exp, INPUTS))
        self.inputs = input_panel(exp, list(INPUTS), report=self.message.say)
        self.upload = ServedUpload(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.cards = CardsView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)
        self._last: dict[str, object] = {}
        self.scatter = pn.pane.HoloViews(pn.bind(self._scatter, exp.param.result),
                                         sizing_mode="stretch_width", min_height=440)
        self.bars = {metric: pn.pane.HoloViews(pn.bind(self._bar, metric, exp.param.result),
                                               sizing_mode="stretch_width", min_height=300,
                                               linked_axes=False)  # an axis each
                     for metric in ("tpot", "ttft")}
        self.flag = pn.pane.HTML(pn.bind(self._flag_html, exp.param.result),
                                 sizing_mode="stretch_width", css_classes=["lab-served-flag"])
        self.refit = pn.pane.HTML(pn.bind(self._refit_html, exp.param.result),
                                  sizing_mode="stretch_width", css_classes=["lab-served-refit"])
        self.busy = BusyNote()
        self.busy.follow(exp, "computing")

    def _scatter(self, _result):
        exp = self.experiment
        if exp.result is None and "scatter" in self._last:
            return self._last["scatter"]
        shown = exp if exp.result is not None else FromFloorToServed()
        selected = shown.result["selected"]["id"] if shown.result else ""
        plot = scatter(shown.chart_data(), shown.table(), selected)
        points = plot.values()[0]
        ids = points.dimension_values("id")
        self.tapped = hv.streams.Selection1D(source=points)  # a click on a point
        self.tapped.add_subscriber(lambda index: self._select(ids, index))
        self._last["scatter"] = plot
        return plot

    def _select(self, ids, index) -> None:
        """A clicked point: its row is the one shown (its id in the Row id box and the URL)."""
        if index:
            self.experiment.row = str(ids[index[0]])

    def _bar(self, metric: str, _result):
        exp = self.experiment
        if exp.result is None:
            return self._last.get(metric, hv.Bars([]))
        plot = terms_bar(exp.result["selected"], metric)
        self._last[metric] = plot
        return plot

    def _flag_html(self, _result) -> str:
        r = self.experiment.result
        if not r:
            return ""
        p = r["selected"]
        if not p["modelled"]:
            return f'<p role="note">Not modelled: {escape(p["reason"])}.</p>'
        if p.get("below_floor_sentence"):
            return f'<p role="note">{escape(p["below_floor_sentence"])}</p>'
        return ""

    def _refit_html(self, _result) -> str:
        """One sentence when some of the reader's modelled rows cannot be refitted."""
        exp = self.experiment
        if exp.result is None or exp.measurements is None:
            return ""
        table = exp.table()
        modelled = np.asarray(table["modelled"].values, dtype=bool)
        predicted = modelled & np.isfinite(np.asarray(table["tpot_predicted_ms"].values))
        never = modelled & ~np.asarray(table["fit_on"].values, dtype=bool)
        sentence = unfitted_sentence(int(modelled.sum()), int(predicted.sum()), int(never.sum()))
        return f'<p role="note">{escape(sentence)}</p>' if sentence else ""

    def _chart_data(self) -> tuple[xr.Dataset, dict]:
        """The rows the scatter draws (every modelled row the filters keep, measured,
        predicted and each term) and the inputs they came from, as every experiment page's
        "Chart data (CSV)" offers (this page had none)."""
        exp = self.experiment
        inputs = (exp.result or {}).get("inputs", {})
        return exp.chart_data(), inputs

    def __panel__(self):
        download = chart_csv_button(self._chart_data, "served-chart.csv", "Chart data (CSV)")
        charts = pn.Column(self.busy, self.refit, self.scatter,
                           pn.pane.Markdown(f"*{CHART_NOTE}*", sizing_mode="stretch_width"),
                           download,
                           self.flag, *self.bars.values(), sizing_mode="stretch_width")
        definitions = pn.pane.Markdown(DEFINITIONS, stylesheets=[PROSE_CSS],
                                       sizing_mode="stretch_width",
                                       css_classes=["lab-served-definitions"])
        return experiment_page(
            self.experiment, intro=INTRO, prediction=[self.prediction],
            inputs=[self.message, self.inputs, self.upload],
            results=[self.cards, charts, definitions, self.calculation],
            stylesheets=[CARD_CSS])
