"""Experiment 9's page: measured kernel times against the lab's floors.

Laid out like the other experiment pages (docs/model.md) from the same building blocks — the
prediction, the cards, “Show the calculation”, the limits — around
:class:`lab.measured.experiment.FloorsAgainstMeasurements`. Its chart is a heatmap of measured
/ floor over batch × context (decode) or one line per shape (prefill, GEMM); points below
their floor are flagged with the sentence that says why they cannot be, and a reader can
upload their own measurements (:mod:`apps.ui.parts.measured_upload`).
"""

from __future__ import annotations

from html import escape

import holoviews as hv
import numpy as np
import panel as pn
import param
from bokeh.models import FixedTicker
from panel.viewable import Viewer

from apps.ui.panel_compat import param_widgets
from apps.ui.parts.calculation import CalculationView
from apps.ui.parts.cards import CardsView
from apps.ui.parts.input_extras import options_slider
from apps.ui.parts.input_widgets import InputMessage, input_panel
from apps.ui.parts.measured_upload import MeasurementsUpload
from apps.ui.parts.prediction import PredictionView
from apps.ui.plots.charts import CANVAS, heatmap, power_of_two_ticks, thinned_ticks
from apps.ui.shell.busy import BusyNote
from apps.ui.shell.theme import CARD_CSS
from apps.ui.shell.url_sync import UrlInputs, upload_only
from apps.ui.views.page_shell import experiment_page
from lab.errors import LabInputError
from lab.measured.calc import POINT_AXES, nearest_measured
from lab.measured.experiment import FloorsAgainstMeasurements
from lab.units import fmt_count

INPUTS = ("kind", "shape", "tp", "batch", "context", "m", "gpu")
"""The inputs offered as widgets and kept in the URL, ``kind`` first: the shapes on offer
depend on it (the data set comes from the upload and is never in the URL)."""

MEASURED_AXES = ("tp", "batch", "context", "m")
"""The inputs that pick a measured point besides its kind and shape, each a slider over the
values measured (:meth:`~lab.measured.experiment.FloorsAgainstMeasurements.measured_options`),
in :data:`~lab.measured.calc.POINT_AXES` order."""

CHART_NOTE = ("Measured kernel times (not the lab's ideal) divided by the lab's floor for the "
              "same work; 1× is the floor. Hover for the measured time, the floor and the "
              "achieved bandwidth.")
"""Caption under the chart."""

INTRO = ("Real kernels sit near the lab's floor once there is enough work — and far above it "
         "when there is not. Experiments 1–8 show ideal phase costs; this one puts real H100 "
         "kernel times beside the lab's floor for the same work, with the formulas of "
         "experiments 1 and 8.")
"""The page's introduction, under the headline."""

HOVER_UNITS = {"latency_s": "µs", "floor_s": "µs", "achieved_bandwidth": "TB/s"}
"""The heatmap's hover shows times and bandwidth in the units of the cards beside it."""

SELECTED_COLOR = "#D55E00"
"""Outline of the selected point on the heatmap (Okabe–Ito vermillion)."""

BELOW_LABEL = "below the floor"
"""Legend entry of the points faster than their floor (a cross each)."""

STALE = "\n(not the inputs in force: not measured)"
"""Added to the chart's title while the inputs in force are not available: the chart shows
the last point that was (or the default one). On a line of its own, as the title's shape and
tp: one line of the whole ran past a phone's chart and was cut (issue 37 item 10)."""

FLAG_CSS = """
.lab-below-floor { border-left: 4px solid #D55E00; padding: 8px 12px; margin: 6px 0;
  background: rgba(213,94,0,0.08); }
"""


def label(exp: FloorsAgainstMeasurements, name: str) -> str:
    """An input's label without its unit, as a sentence names it: "tp", "batch", "shape"."""
    text = exp.param[name].label.split(" (")[0]
    return text if text[:2].isupper() or text == "tp" else text.lower()


def measured_slider(exp: FloorsAgainstMeasurements, axis: str):
    """A slider over the values of ``axis`` measured for the kind, shape and the axes before
    it, offered anew when any of them (or the data set) changes."""
    before = POINT_AXES["decode"][:POINT_AXES["decode"].index(axis)] if axis != "m" else ()
    return options_slider(exp, axis, lambda: exp.measured_options(axis),
                          label=exp.param[axis].label, css_class=f"lab-input-{axis}",
                          follows=["kind", "shape", "measurements", *before],
                          description=f"{exp.param[axis].doc} Offers only the values measured.")


def power_of_two_axis(values: np.ndarray):
    """HoloViews hook: ticks at the powers of two spanning ``values`` on the plot's log x axis,
    labelled as many as its width holds (Bokeh's own log ticks ran together on a phone,
    "10000150002000030000")."""
    ticks = [t for t, _ in power_of_two_ticks(np.asarray(values, dtype=float))]

    def hook(plot, _element) -> None:
        fig = plot.state
        fig.xaxis[0].ticker = FixedTicker(ticks=ticks)
        fig.xaxis[0].formatter = thinned_ticks(fig)

    return hook


def ratio_lines(ds, x: str) -> hv.Overlay:
    """Measured / floor against ``x`` (log axis, ticked at powers of two), one line per shape,
    with the floor at 1×."""
    label = "prompt tokens n" if x == "context" else "GEMM rows m (tokens)"
    style = {"logx": True, "responsive": True, "height": 420, "xlabel": label,
             "ylabel": "Measured / floor (×)", "backend_opts": CANVAS,
             "hooks": [power_of_two_axis(ds[x].values)]}
    layers = []
    for shape in ds["shape"].values:
        row = ds.sel(shape=shape)
        ok = np.isfinite(row["ratio"].values)
        xs, ys = row[x].values[ok].astype(float), row["ratio"].values[ok]
        layers.append(hv.Curve((xs, ys), x, "ratio", label=str(shape)).opts(**style))
        layers.append(hv.Scatter((xs, ys), x, "ratio", label=str(shape)).opts(
            size=5, tools=["hover"], **style))
    below = ds["ratio"].where(ds["ratio"] < 1.0)  # faster than the floor allows
    bx = np.broadcast_to(ds[x].values, below.shape)[np.isfinite(below.values)].astype(float)
    layers.append(hv.Scatter((bx, below.values[np.isfinite(below.values)]), x, "ratio",
                             label=BELOW_LABEL).opts(
        marker="x", size=10, line_width=2, color=SELECTED_COLOR, tools=["hover"], **style))
    layers.append(hv.HLine(1.0).opts(color="black", line_dash="dashed", line_width=1))
    # The legend below the plot, in columns: beside it, it covered the largest m.
    return hv.Overlay(layers).opts(legend_position="bottom", legend_cols=2, responsive=True,
                                   height=520, padding=0.05,
                                   title="Measured / floor (dashed: the floor, 1×)")


class MeasuredPage(Viewer):
    """Headline, prediction, inputs and upload, cards, flag, chart, calculation, limits."""

    experiment = param.ClassSelector(class_=FloorsAgainstMeasurements, doc="The experiment shown.")

    def __init__(self, **params):
        if params.get("experiment") is None:  # made only when none is given
            params["experiment"] = FloorsAgainstMeasurements()
        super().__init__(**params)
        exp = self.experiment
        self._last_plot, self._last_title = None, ""
        self.message = InputMessage()
        self._moved_note = ""  # the last sentence :meth:`_settle_point` showed
        # ``shape`` stays lenient on set: a new kind moves it to that kind's shapes before the
        # list on offer follows; a link's shape is checked against its kind's list below.
        self.url = UrlInputs(exp, list(INPUTS), self.message.say, first=["kind"],
                             after_first=self._offer_kind_shapes, lenient=["shape"],
                             unlinkable=upload_only(exp, INPUTS), settle=self._settle_link)
        self.inputs = input_panel(exp, [n for n in INPUTS if n not in MEASURED_AXES],
                                  report=self._report)
        # tp, batch, context and m offer only the values measured for the kind, the shape and
        # the axes before them: a number box and its −/+ (steps of 1) or a powers-of-two
        # slider (2, 4, 8…) landed on points nobody measured.
        self.sliders = {axis: measured_slider(exp, axis) for axis in MEASURED_AXES}
        self.tp_slider = self.sliders["tp"]
        layout = self.inputs.layout
        at = layout.objects.index(param_widgets(self.inputs)["shape"]) + 1
        for offset, axis in enumerate(MEASURED_AXES):
            layout.insert(at + offset, self.sliders[axis])
        exp.param.watch(self._settle_point, ["shape", *MEASURED_AXES])
        exp.param.watch(self._show_kind_inputs, "kind")
        self._show_kind_inputs()
        self.upload = MeasurementsUpload(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.cards = CardsView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)
        self.flag = pn.pane.HTML(pn.bind(self._flag_html, exp.param.result),
                                 stylesheets=[FLAG_CSS], sizing_mode="stretch_width",
                                 css_classes=["lab-measured-flag"])
        self.regions = pn.pane.HTML(pn.bind(self._regions_html, exp.param.result),
                                    sizing_mode="stretch_width",
                                    css_classes=["lab-measured-regions"])
        self.chart = pn.pane.HoloViews(pn.bind(self._plot, exp.param.result),
                                       sizing_mode="stretch_width", min_height=440)
        self.busy = BusyNote()  # the chart follows the result within the calculation's span
        self.busy.follow(exp, "computing")

    def _settle_point(self, *events) -> None:
        """A page input moved the point off the measurements (a shape or tp whose measured
        batches or contexts differ): the axes after it move to their nearest measured values,
        and the message says so. A link's values are settled by :meth:`_settle_link`."""
        url = getattr(self, "url", None)
        if url is None or url.applying:
            return
        exp = self.experiment
        changed = {e.name for e in events}
        order = ["shape", *POINT_AXES.get(exp.kind, ())]
        first = min((order.index(n) for n in changed if n in order), default=len(order))
        later = tuple(a for a in order[first + 1:] if a not in changed)
        try:
            moves = self._move_to_measured(later)
        except LabInputError:  # no table on this GPU: the cards say why
            return
        if moves:
            value = getattr(exp, order[first])
            at = f"{label(exp, order[first])} {value if isinstance(value, str) else f'{value:,}'}"
            self._moved_note = " ".join(
                f"At {at}, {label(exp, axis)} {old:,} was not measured, so it moved to {new:,}."
                for axis, old, new, _ in moves)
            self.message.say(self._moved_note)
        elif self._moved_note and self.message.visible:
            self._moved_note = ""
            self.message.say(None)

    def _report(self, sentence: str | None) -> None:
        """An input widget's sentence (a refused value), or None once its value is applied:
        then the note :meth:`_settle_point` just showed for that very change stays."""
        if sentence is None and self._moved_note:
            return
        self.message.say(sentence)

    def _settle_link(self) -> list[str]:
        """A link's point that names no measurement moves to the nearest one measured, axis by
        axis (:func:`~lab.measured.calc.nearest_measured`); one sentence per move."""
        return [f"The link's {axis}={old} was not measured (given the rest of the selection; "
                f"measured: {', '.join(f'{v:,}' for v in offered)}), so the page shows "
                f"{axis}={new}." for axis, old, new, offered in self._move_to_measured()]

    def _move_to_measured(self, axes: tuple[str, ...] | None = None) -> list[tuple]:
        """Move each of ``axes`` (default: all) that names no measurement, given the axes
        before it, to its nearest measured value; the moves
        (:func:`~lab.measured.calc.nearest_measured`)."""
        exp = self.experiment
        moved, moves = nearest_measured(exp.table(), exp.selection(), axes)
        if moves:
            exp.param.update({axis: getattr(moved, axis) for axis, *_ in moves})
        return moves

    def _offer_kind_shapes(self) -> None:
        """Offer the shapes of the kind now in force (a link's kind is applied first)."""
        exp = self.experiment
        exp.param.shape.objects = exp.shapes() or [exp.shape]

    def _show_kind_inputs(self, *_events) -> None:
        """Show only the inputs that pick a point of the kind in force (no GEMM m for decode;
        no batch, context or tp for GEMM)."""
        used = POINT_AXES.get(self.experiment.kind, ())
        for axis, slider in self.sliders.items():
            slider.visible = axis in used

    def _flag_html(self, _result) -> str:
        r = self.experiment.result
        if not r or not r["below_floor_count"]:
            return ""
        n = r["below_floor_count"]
        return (f'<div class="lab-below-floor" role="note"><b>{fmt_count(n, "point")} of this '
                f'kind {"is" if n == 1 else "are"} below {"its" if n == 1 else "their"} floor.'
                f'</b> The lowest: '
                f'{escape(r["worst_sentence"])}</div>')

    def _regions_html(self, _result) -> str:
        if self.experiment.result is None:
            return ""
        return f"<p>{escape(self.experiment.regions())}</p>"

    def _plot(self, _result):
        """The heatmap or the lines for the current kind; while the inputs are invalid, the
        last good one (else the default point's), its title saying it is not theirs."""
        exp = self.experiment
        if exp.result is None and self._last_plot is not None:
            return self._last_plot.opts(title=self._last_title + STALE, clone=True)
        source = exp if exp.result is not None else FloorsAgainstMeasurements()
        ds = source.chart_data()
        if source.kind == "decode":
            title = f"Measured / floor, decode attention\n{source.shape} at tp {source.tp}"
            for name, unit in HOVER_UNITS.items():  # the cards' units, not ms and B/s
                ds[name].attrs["display_units"] = unit
            grid = heatmap(ds, "ratio", x="batch", y="context")
            here = hv.Points([(f"{source.batch:,}", f"{source.context:,}")], kdims=grid.kdims,
                             label="selected point").opts(
                marker="square", size=16, fill_alpha=0, line_color=SELECTED_COLOR, line_width=3)
            # The legend under the plot: inside it covered a corner cell (top-left on a phone).
            plot = (grid * here).opts(title=title, legend_position="bottom")
        else:
            plot = ratio_lines(ds, "context" if source.kind == "prefill" else "m")
            title = plot.opts.get().kwargs.get("title", "")
        if exp.result is None:
            return plot.opts(title=title + STALE)
        self._last_plot, self._last_title = plot, title
        return plot

    def __panel__(self):
        chart = pn.Column(self.busy, self.chart,
                          pn.pane.Markdown(f"*{CHART_NOTE}*", sizing_mode="stretch_width"),
                          sizing_mode="stretch_width")
        return experiment_page(
            self.experiment, intro=INTRO, prediction=[self.prediction],
            inputs=[self.message, self.inputs, self.upload],
            results=[self.cards, self.flag, self.regions, chart, self.calculation],
            stylesheets=[CARD_CSS])
