"""One experiment page: the seven elements (docs/model.md) around one ``lab`` experiment object."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from panel.viewable import Viewer

from apps.ui.calculation import CalculationView
from apps.ui.cards import CardsView
from apps.ui.chart_view import ChartView
from apps.ui.held_size import hold_sizes
from apps.ui.inputs import InputMessage, input_panel
from apps.ui.live_inputs import follow_switches, shown_inputs
from apps.ui.measured_overlay import MeasuredOverlay
from apps.ui.prediction import PredictionView
from apps.ui.theme import PROSE_CSS
from apps.ui.trace_upload import TraceUpload
from apps.ui.url_values import strict_selectors, url_problems
from lab.experiments.base import Experiment
from lab.experiments.registry import record


def url_inputs(experiment: Experiment) -> list[str]:
    """Inputs kept in the URL: all but free-text ones (a file path must not come from a link)."""
    return [n for n in experiment.input_names()
            if not isinstance(experiment.param[n], param.String)]


def limits_markdown(experiment: Experiment) -> str:
    """The limits paragraph and the primary sources as Markdown."""
    sources = "\n".join(f"- {s}" for s in experiment.sources)
    return f"### Limits\n\n{experiment.limits}\n\n**Sources**\n\n{sources}"


class ExperimentView(Viewer):
    """Headline, prediction, inputs, cards, chart, the calculation and the limits."""

    experiment = param.ClassSelector(class_=Experiment, doc="The experiment shown.")
    sync_url = param.Boolean(default=True, doc="Keep the inputs in the page URL's query.")

    def __init__(self, **params):
        super().__init__(**params)
        exp = self.experiment
        names = url_inputs(exp)
        strict_selectors(exp, names)
        self.message = InputMessage()
        problems = self._sync_url(names) if self.sync_url else []
        self.inputs = input_panel(exp, shown_inputs(exp, names), report=self.message.say)
        follow_switches(exp, self.inputs)
        self.message.say(" ".join(problems))
        self.cards = CardsView(experiment=exp)
        self.chart = ChartView(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)

    def _sync_url(self, names: list[str]) -> list[str]:
        """Keep ``names`` in the URL; return a sentence per URL value the page refused.

        Refused values are dropped from the query before syncing, so the URL then shows the
        value in force; later URL changes that the inputs refuse are reported too.
        """
        location = pn.state.location
        if location is None:
            return []
        exp = self.experiment
        accepted, problems = url_problems(exp, names, location.search)
        if problems:
            kept = [(k, v) for k, v in parse_qsl(location.search[1:], keep_blank_values=True)
                    if k not in names or k in accepted]
            location.search = "?" + urlencode(kept) if kept else ""
        location.sync(exp, names, on_error=self._url_refused)
        return problems

    def _url_refused(self, values: dict) -> None:
        _accepted, problems = url_problems(
            self.experiment, list(values), "?" + urlencode({k: v for k, v in values.items()}))
        self.message.say(" ".join(problems) or "The link's values were not applied.")

    def __panel__(self):
        exp = self.experiment
        header = pn.pane.Markdown(f"# {exp.number}. {exp.title}\n\n**{exp.headline}**",
                                  sizing_mode="stretch_width")
        limits = pn.pane.Markdown(limits_markdown(exp), stylesheets=[PROSE_CSS],
                                  sizing_mode="stretch_width")
        # The limits close the results column: in the template's main area a row is held to
        # the viewport height, so anything placed after it would overlap a long column.
        # Each component's parts go straight into the page's columns: every layout level
        # costs the browser a full re-layout of the page each time its size changes while
        # the page renders (Bokeh re-lays out from the top for every resized view).
        overlay = (MeasuredOverlay(experiment=exp, chart=self.chart).parts()  # experiment 9
                   if record(exp.slug).chart == "batch" else [])
        results = pn.Column(self.cards, *overlay, *self.chart.parts(), self.calculation, limits,
                            sizing_mode="stretch_width",
                            styles={"flex": "1 1 340px", "min-width": "min(340px, 100%)"})
        extra = [TraceUpload(experiment=exp)] if record(exp.slug).uploads_trace else []
        inputs = pn.Column(pn.pane.Markdown("### Inputs"), self.message,
                           *self.inputs.layout.objects, *extra,
                           width=300, css_classes=["lab-inputs-column"],
                           styles={"flex": "0 0 300px"})
        # Side by side where both fit; on a phone the results wrap below the inputs.
        body = pn.FlexBox(inputs, results, flex_wrap="wrap", align_items="flex-start",
                          sizing_mode="stretch_width", css_classes=["lab-experiment-body"])
        # Each widget's drawn size is held from the start, so React drawing the widgets one
        # after another does not re-lay out the page (and its charts) each time.
        return hold_sizes(pn.Column(header, *self.prediction.parts(), body,
                                    sizing_mode="stretch_width"))
