"""Experiment 12's page: the Pareto frontier of a deployment's configurations and the pick.

Laid out like the other experiment pages (prediction, inputs, cards, “Show the calculation”,
limits) around :class:`lab.plan.plan_experiment.PlanDeployment`. Its chart: output tokens/s
per GPU against tokens/s per user, one frontier per mode (agg, disagg), each frontier point
labelled (tp × ep × dp, precision, concurrency, workers), the per-user target as a line, the
pick as a star and the public measured rows of this model × GPU × engine × workload as
crosses. A reader can plan their own model from its ``config.json``
(:class:`~apps.ui.parts.model_upload.ModelConfigUpload`) and upload their own candidate
configurations (:class:`CandidatesUpload`) to see them ranked.
"""

from __future__ import annotations

from html import escape

import holoviews as hv
import numpy as np
import panel as pn
import param
import xarray as xr
from bokeh.models import Legend
from panel.viewable import Viewer

from apps.ui.parts.calculation import CalculationView
from apps.ui.parts.cards import CardsView
from apps.ui.parts.downloads import chart_csv_button
from apps.ui.parts.input_widgets import InputMessage, input_panel
from apps.ui.parts.model_upload import ModelConfigUpload
from apps.ui.parts.prediction import PredictionView
from apps.ui.parts.table_upload import MeasurementsFileInput, TableUpload
from apps.ui.plots.charts import CANVAS, themed_hook
from apps.ui.plots.series_chart import legend_columns
from apps.ui.shell.busy import BusyNote
from apps.ui.shell.theme import CARD_CSS, OKABE_ITO
from apps.ui.shell.url_sync import UrlInputs, upload_only
from apps.ui.views.page_shell import experiment_page
from apps.ui.views.plan_study_view import study_html
from lab.errors import LabInputError
from lab.plan.plan_calc import UNCALIBRATED_CANDIDATE, rank_candidates
from lab.plan.plan_candidates import parse_candidates
from lab.plan.plan_chart_table import plan_chart_table
from lab.plan.plan_decide import Targets
from lab.plan.plan_experiment import PlanDeployment
from lab.plan.plan_study import study_summary
from lab.served.served_loader import REQUIRED
from lab.units import fmt_count, fmt_number

INPUTS = ("model", "gpu", "budget", "engine", "isl", "osl", "ttft_ms", "tpot_ms",
          "tokens_per_s_user", "quantile")
"""The inputs offered as widgets and kept in the URL."""

INTRO = ("Which deployment should you run? Every layout, precision and concurrency of this model "
         "on this GPU budget, predicted by experiment 11's floor plus named terms, and the one "
         "with the most output tokens per GPU whose conservative latency (the band's upper edge) "
         "still meets your targets.")
"""The page's introduction, under the headline."""

CHART_NOTE = ("Each line is one mode's Pareto frontier: no other configuration gives more tokens "
              "per GPU at as many tokens per user (dashed: no measured row calibrates that mode, "
              "so it is the floor, a bound no engine reaches). Labels: layout (parallelisms of "
              "1 left out), precision, concurrency (disaggregated: prefill + decode workers), "
              "the layout, precision and workers only where they change from the label before; "
              "a label that would cover another is left out, so hover a point for its whole "
              "label. The dashed line is the per-user target; "
              "the star the pick; crosses the public measured runs of this model, GPU, engine "
              "and workload.")
MODE_COLOURS = {"agg": OKABE_ITO[0], "disagg": OKABE_ITO[1]}
NEUTRAL = "#888888"
"""The measured rows' crosses and the target line: a grey seen on the light and dark theme."""

FRONTIER_TOOLTIPS = [("Configuration", "@{label}"), ("Output tokens/s per user", "@{user}{0,0.0}"),
                     ("Output tokens/s per GPU", "@{gpu}{0,0}"),
                     ("TPOT predicted", "@{tpot}{0,0.00} ms"), ("TTFT predicted", "@{ttft}{0,0} ms"),
                     ("GPUs", "@{gpus}")]
"""A frontier point's hover: names and units, not the chart's field names (``gpu: 1.025e+3``).
Fields in braces: HoloViews reads ``@gpus`` as ``@gpu`` followed by "s"."""
MEASURED_TOOLTIPS = [("Measured run", "@{id}"), ("Mode", "@{mode}"),
                     ("Output tokens/s per user", "@{user}{0,0.0}"),
                     ("Output tokens/s per GPU", "@{gpu}{0,0}")]
"""A measured run's hover."""


CANDIDATES_CSS = (".lab-plan-candidates { max-width: 100%; overflow-x: auto; } "
                  ".lab-plan-candidates td { overflow-wrap: anywhere; }")
"""The ranked candidates fit their column: a long id without spaces wraps anywhere (and a
table still too wide scrolls in its own box, not the page)."""
LABEL_ROOM = 0.14
"""Room right of the rightmost point, a fraction of the x range: its label's start is drawn
inside the plot, not cut at its edge."""
LABEL_GAP_PX = 7
"""Screen pixels between a frontier point's marker and its label's start."""


def beside_marker(plot, _element) -> None:
    """HoloViews hook: a label starts :data:`LABEL_GAP_PX` right of its point (HoloViews'
    ``xoffset`` is in data units, which a log or wide axis stretches), not under the marker."""
    plot.handles["glyph"].x_offset = LABEL_GAP_PX


def _layout_parts(p: dict) -> dict[str, str]:
    """A frontier point's layout without its parallelisms of 1 (``tp8``, ``tp1×ep8×dp8``),
    precision and (disaggregated) workers."""
    layout = f"tp{p['tp']}" + "".join(f"×{name}{p[key]}" for name, key in
                                      (("ep", "moe_ep"), ("dp", "attention_dp"))
                                      if p[key] != 1)
    workers = (f"{p['prefill_workers']}P+{p['decode_workers']}D"
               if p["mode"] == "disagg" else "")
    return {"layout": layout, "precision": p["precision"], "workers": workers}


def _label(now: dict[str, str], before: dict[str, str], concurrency: int) -> str:
    """A point's label: its layout and precision where they differ from ``before``'s, its
    concurrency, its workers where they differ."""
    parts = [now[k] for k in ("layout", "precision") if now[k] != before.get(k)]
    parts.append(f"c {concurrency:,}")
    if now["workers"] and now["workers"] != before.get("workers"):
        parts.append(now["workers"])
    return ", ".join(parts)


def chart_labels(points: list[dict]) -> list[str]:
    """A frontier's labels on the chart, short so that neighbours do not pile up: the layout
    without its parallelisms of 1 (``tp8``, ``tp1×ep8×dp8``), then the precision and the
    workers only where they differ from the left neighbour's, and the concurrency always
    (``tp4, fp8, c 128`` then ``c 64``). The hover keeps each point's whole label."""
    out, before = [], {}
    for p in points:
        now = _layout_parts(p)
        out.append(_label(now, before, p["concurrency"]))
        before = now
    return out


LABEL_FRAME_PX = (290.0, 280.0)
"""The frontier's plot area on a phone (390 px wide), CSS px: labels are placed so that none
overlaps another there, and so on any wider screen."""
LABEL_CHAR_PX = 5.9
"""Width of one character of an 8 pt label, CSS px (a little over the measured average)."""
LABEL_LINE_PX = 12.0
"""Height of an 8 pt label, CSS px."""


MARKER_PX = 4.0
"""Half the size of a frontier point's marker, CSS px: a label does not cover a marker."""


def _overlaps(box: tuple[float, float, float, float],
              others: list[tuple[float, float, float, float]]) -> bool:
    return any(box[0] < b[1] and b[0] < box[1] and box[2] < b[3] and b[2] < box[3]
               for b in others)


def placed_labels(frontier: dict[str, list[dict]], xs: list[float], ys: list[float]
                  ) -> dict[str, tuple[list[str], list[str]]]:
    """Each mode's labels, ``(right of the point, left of it)`` per point, at most one of the
    two set: a label goes right of its point where it overlaps no label placed before and no
    frontier point, else left of it, else it is left out.

    Positions are read on a phone's plot area (:data:`LABEL_FRAME_PX`) spanning the chart's
    padded ranges (x linear, y logarithmic; ``xs`` and ``ys`` every plotted value), modes in
    order, each from its left end; what fits there fits on any wider screen. A label names the
    layout, precision and workers where they differ from the last label *shown* of its mode,
    so a run of concurrencies still reads from its first label. The hover keeps every point's
    whole label.
    """
    finite_x = [x for x in xs if np.isfinite(x)]
    finite_y = [np.log10(y) for y in ys if np.isfinite(y) and y > 0]
    if not finite_x or not finite_y:
        return {mode: (chart_labels(points), [""] * len(points))
                for mode, points in frontier.items()}
    x0, x1 = min(finite_x), max(finite_x)
    y0, y1 = min(finite_y), max(finite_y)
    xspan, yspan = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    x0, x1 = x0 - 0.03 * xspan, x1 + LABEL_ROOM * xspan
    y0, y1 = y0 - 0.05 * yspan, y1 + 0.05 * yspan
    width, height = LABEL_FRAME_PX

    def at(p: dict) -> tuple[float, float]:
        return ((p["tokens_per_s_user"] - x0) / (x1 - x0) * width,
                (np.log10(max(p["tokens_per_s_gpu"], 1e-300)) - y0) / (y1 - y0) * height)

    taken = [(x - MARKER_PX, x + MARKER_PX, y - MARKER_PX, y + MARKER_PX)
             for points in frontier.values() for x, y in map(at, points)]
    out: dict[str, tuple[list[str], list[str]]] = {}
    for mode, points in frontier.items():
        right, left, before = [], [], {}
        for p in points:
            now = _layout_parts(p)
            text = _label(now, before, p["concurrency"])
            x, y = at(p)
            wide, low, high = LABEL_CHAR_PX * len(text), y - LABEL_LINE_PX / 2, y + LABEL_LINE_PX / 2
            sides = {"right": (x + LABEL_GAP_PX, x + LABEL_GAP_PX + wide, low, high),
                     "left": (x - LABEL_GAP_PX - wide, x - LABEL_GAP_PX, low, high)}
            side = next((name for name, box in sides.items()
                         if box[0] >= 0 and box[1] <= width and not _overlaps(box, taken)), None)
            right.append(text if side == "right" else "")
            left.append(text if side == "left" else "")
            if side is not None:
                taken.append(sides[side])
                before = now
        out[mode] = (right, left)
    return out


def beside_marker_left(plot, _element) -> None:
    """HoloViews hook: a label ends :data:`LABEL_GAP_PX` left of its point."""
    plot.handles["glyph"].x_offset = -LABEL_GAP_PX


def legend_below(plot, _element) -> None:
    """HoloViews hook: the legend's entries in as many columns as a phone's chart holds
    (:func:`legend_columns`), below the plot where it covers no point."""
    for legend in plot.state.below:
        if isinstance(legend, Legend) and legend.items:
            legend.ncols = legend_columns(legend.items)
            legend.orientation = "horizontal"


def frontier_chart(result: dict) -> hv.Overlay:
    """The frontiers, the target line, the pick and the measured rows."""
    layers = []
    measured = result.get("measured") or []
    plotted = [*(p for points in result["frontier"].values() for p in points), *measured]
    shown = placed_labels(result["frontier"], [p["tokens_per_s_user"] for p in plotted],
                          [p["tokens_per_s_gpu"] for p in plotted])
    for mode, points in result["frontier"].items():
        if not points:
            continue
        data = {"user": [p["tokens_per_s_user"] for p in points],
                "gpu": [p["tokens_per_s_gpu"] for p in points],
                "label": [p["label"] for p in points], "shown": shown[mode][0],
                "shown_left": shown[mode][1],
                "tpot": [p["tpot_ms"] for p in points], "ttft": [p["ttft_ms"] for p in points],
                "gpus": [p["gpus"] for p in points]}
        colour = MODE_COLOURS.get(mode, "#999999")
        floor = not any(p["calibrated"] for p in points)
        name = f"{mode} (the floor, uncalibrated)" if floor else mode
        layers.append(hv.Curve(data, "user", ["gpu"], label=name).opts(
            color=colour, line_dash="dashed" if floor else "solid"))
        layers.append(hv.Scatter(data, "user", ["gpu", "label", "tpot", "ttft", "gpus"],
                                 label=name).opts(color=colour, size=7, tools=["hover"],
                                                  hover_tooltips=FRONTIER_TOOLTIPS))
        layers.append(hv.Labels(data, ["user", "gpu"], "shown").opts(
            text_font_size="8pt", text_color=colour, yoffset=0, text_align="left",
            text_baseline="middle", hooks=[beside_marker]))
        layers.append(hv.Labels(data, ["user", "gpu"], "shown_left").opts(
            text_font_size="8pt", text_color=colour, yoffset=0, text_align="right",
            text_baseline="middle", hooks=[beside_marker_left]))
    if measured:
        data = {"user": [m["tokens_per_s_user"] for m in measured],
                "gpu": [m["tokens_per_s_gpu"] for m in measured],
                "id": [m["id"] for m in measured], "mode": [m["mode"] for m in measured]}
        layers.append(hv.Scatter(data, "user", ["gpu", "id", "mode"], label="measured").opts(
            marker="x", size=8, color=NEUTRAL, tools=["hover"], hover_tooltips=MEASURED_TOOLTIPS))
    best = result.get("best")
    if best:
        layers.append(hv.Scatter([(best["tokens_per_s_user"], best["tokens_per_s_gpu"])],
                                 "user", "gpu", label="pick").opts(
            marker="star", size=18, color=OKABE_ITO[5]))
    target = Targets(result["inputs"]["ttft_ms"], result["inputs"]["tpot_ms"],
                     result["inputs"]["tokens_per_s_user"]).tpot_limit()
    if np.isfinite(target):
        layers.append(hv.VLine(1e3 / target).opts(color=NEUTRAL, line_dash="dashed",
                                                  line_width=1))
    if not layers:
        layers.append(hv.Curve([]))
    return hv.Overlay(layers).opts(
        responsive=True, height=460, logy=True, xlabel="Output tokens/s per user",
        ylabel="Output tokens/s per GPU", legend_position="bottom",
        title="Tokens per GPU against tokens per user", backend_opts=CANVAS,
        active_tools=["pan"],  # the wheel scrolls the page, as elsewhere
        hooks=[legend_below, themed_hook], padding=((0.03, LABEL_ROOM), 0.05))


def best_html(result: dict | None) -> str:
    """The pick's card: configuration, band, how sure, the link to experiment 11's rows."""
    if not result:
        return ""
    best = result.get("best")
    if best is None:
        return f'<div class="lab-plan-best"><p role="note">{escape(result["none_sentence"])}</p></div>'
    calibrated = "" if best["calibrated"] else (
        '<p role="note"><strong>Uncalibrated</strong>: no measured row of this engine × GPU × '
        "mode, so the prediction is the floor, a lower bound.</p>")
    return (
        '<div class="lab-plan-best">'
        f"<p><strong>Best configuration</strong>: {escape(best['mode'])}, "
        f"{escape(best['label'])} on {fmt_count(best['gpus'], 'GPU')} — "
        f"{escape(fmt_number(best['tokens_per_s_gpu'], 0))} output tokens/s per GPU at "
        f"{escape(fmt_number(best['tokens_per_s_user'], 1))} tokens/s per user.</p>"
        f"<p>Band: TPOT {escape(fmt_number(best['tpot_lower_ms'], 2))}–"
        f"{escape(fmt_number(best['tpot_upper_ms'], 2))} ms (predicted "
        f"{escape(fmt_number(best['tpot_ms'], 2))}), TTFT "
        f"{escape(fmt_number(best['ttft_lower_ms'], 0))}–"
        f"{escape(fmt_number(best['ttft_upper_ms'], 0))} ms. "
        + (f"{escape(best['band_note'])} " if best.get("band_note") else "")
        + f"{escape(best['sure']['sentence'])}</p>{calibrated}"
        f'<p><a href="{escape(best["served_link"])}">{escape(best["served_link_text"])}'
        "</a> (floor and every named term per row).</p></div>")


def candidates_html(ranking: dict | None) -> str:
    """The reader's candidates ranked (or nothing)."""
    if not ranking:
        return ""
    rows = []
    for r in ranking["candidates"]:
        if r.get("reason"):
            rows.append(f"<tr><td>{r['rank']}</td><td>{escape(r['id'])}</td>"
                        f"<td colspan=3>refused: {escape(r['reason'])}</td></tr>")
            continue
        rows.append(f"<tr><td>{r['rank']}</td><td>{escape(r['id'])}</td>"
                    f"<td>{escape(fmt_number(r['tokens_per_s_gpu'], 1))}</td>"
                    f"<td>{escape(fmt_number(r['tpot_upper_ms'], 2))}</td>"
                    f"<td>{'meets' if r['meets'] else 'misses'}"
                    + ("" if r.get("calibrated", True) else
                       f" ({escape(UNCALIBRATED_CANDIDATE)})") +
                    "</td></tr>")
    return ('<div class="lab-plan-candidates"><p><strong>Your candidates</strong>, ranked: '
            f"{ranking['meeting']:,} of {len(ranking['candidates']):,} "
            f"{'meets' if ranking['meeting'] == 1 else 'meet'} the targets at the "
            "band's upper edge.</p><table><tr><th>#</th><th>id</th><th>tok/s/GPU</th>"
            "<th>TPOT upper (ms)</th><th></th></tr>" + "".join(rows) + "</table></div>")


class CandidatesFileInput(MeasurementsFileInput):
    """The candidates' file input: the measurements' cap, in the candidates' words (a refused
    file was told "measurements up to 10 MiB are accepted")."""

    def limit_sentence(self) -> str:
        return f"candidate files up to {self.size_text()} are accepted"


class CandidatesUpload(TableUpload):
    """Upload your own candidate configurations (experiment 11's CSV columns) to rank them."""

    experiment = param.ClassSelector(class_=PlanDeployment, doc="The plan the targets come from.")
    ranking = param.Dict(default=None, allow_None=True, doc="The ranked candidates, or None.")
    file_label = "Upload your candidate configurations (CSV)"
    file_input = CandidatesFileInput
    reset_label = "Clear the candidates"
    shipped_text = "no candidates"
    status_class = "lab-plan-status"

    def parse(self, data: bytes, name: str):
        table = parse_candidates(data, name)
        self._rank(table)
        return table

    def _rank(self, table) -> None:
        exp = self.experiment
        none = lambda v: None if not v else float(v)  # noqa: E731
        self.ranking = rank_candidates(table, Targets(none(exp.ttft_ms), none(exp.tpot_ms),
                                                      none(exp.tokens_per_s_user)), exp.quantile,
                                       model=exp.model_config)

    def use(self, table) -> None:
        self._table = table
        if table is None:
            self.ranking = None

    def help_markdown(self) -> str:
        return (f"**Your candidates**: a CSV with the columns `{','.join(REQUIRED)}` of "
                "experiment 11 (the measured times may be left out), optional `batch_size`, "
                "`precision`, `tp_size`, …; each row is ranked by the planner (docs/model.md §12); "
                "rows whose `model_path` is an uploaded config's `_name_or_path` are read as that "
                "model.")


class PlanPage(Viewer):
    """Headline, prediction, inputs and candidates, cards, frontier, pick, calculation."""

    experiment = param.ClassSelector(class_=PlanDeployment, doc="The experiment shown.")

    def __init__(self, **params):
        if params.get("experiment") is None:  # made only when none is given
            params["experiment"] = PlanDeployment()
        super().__init__(**params)
        exp = self.experiment
        self.message = InputMessage()
        # the candidates file is the page's own upload, not an input: a link naming it is told
        self.url = UrlInputs(exp, list(INPUTS), self.message.say,
                             unlinkable=[*upload_only(exp, INPUTS), "candidates"])
        self.inputs = input_panel(exp, list(INPUTS), report=self.message.say)
        self.model_upload = ModelConfigUpload(experiment=exp)
        self.upload = CandidatesUpload(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.cards = CardsView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)
        self._last = None
        self.chart = pn.pane.HoloViews(pn.bind(self._chart, exp.param.result),
                                       sizing_mode="stretch_width", min_height=480,
                                       css_classes=["lab-plan-chart"])
        self.best = pn.pane.HTML(pn.bind(self._best, exp.param.result),
                                 sizing_mode="stretch_width")
        self.candidates = pn.pane.HTML(pn.bind(candidates_html, self.upload.param.ranking),
                                       sizing_mode="stretch_width",
                                       stylesheets=[CANDIDATES_CSS])
        self.study = pn.pane.HTML(pn.bind(self._study, exp.param.result),
                                  sizing_mode="stretch_width")
        self.busy = BusyNote()
        self.busy.follow(exp, "computing")
        exp.param.watch(self._rerank, ["result"])

    def _chart(self, _result):
        exp = self.experiment
        if exp.result is None:  # the last plan drawn stays; with none, a labelled empty chart
            return self._last if self._last is not None else hv.Curve(
                [], kdims=[hv.Dimension("user", label="Output tokens/s per user")],
                vdims=[hv.Dimension("gpu", label="Output tokens/s per GPU")]).opts(
                title="No plan to draw: see the sentence by the inputs", backend_opts=CANVAS)
        self._last = frontier_chart(exp.result)
        return self._last

    def _best(self, _result) -> str:
        return best_html(self.experiment.result)

    def _study(self, _result) -> str:
        return study_html(self.experiment.result, study_summary())

    def _rerank(self, _event) -> None:
        table = getattr(self.upload, "_table", None)
        if table is not None and self.experiment.result is not None:
            try:
                self.upload._rank(table)
            except LabInputError as exc:  # the file stays in force (and in its input)
                self.upload._say(str(exc), refused=False)

    def _chart_data(self) -> tuple[xr.Dataset, dict]:
        """What the chart draws, as every experiment page's "Chart data (CSV)" offers (none
        when no plan could be made), and the inputs it came from."""
        result = self.experiment.result or {}
        empty = {"frontier": {}, "measured": [], "best": None}
        return (plan_chart_table(result if "frontier" in result else empty),
                result.get("inputs", {}))

    def __panel__(self):
        download = chart_csv_button(self._chart_data, "plan-chart.csv", "Chart data (CSV)")
        charts = pn.Column(self.busy, self.best, self.chart,
                           pn.pane.Markdown(f"*{CHART_NOTE}*", sizing_mode="stretch_width"),
                           download,
                           self.candidates, self.study, sizing_mode="stretch_width")
        return experiment_page(
            self.experiment, intro=INTRO, prediction=[self.prediction],
            inputs=[self.message, self.inputs, self.model_upload, self.upload],
            results=[self.cards, charts, self.calculation], stylesheets=[CARD_CSS])
