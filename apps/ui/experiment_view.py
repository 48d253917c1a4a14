"""One experiment page: the seven elements (docs/model.md) around one ``lab`` experiment object."""

from __future__ import annotations

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
from apps.ui.page_descriptions import description
from apps.ui.prediction import PredictionView
from apps.ui.theme import PROSE_CSS
from apps.ui.trace_upload import TraceUpload
from apps.ui.url_sync import UrlInputs, url_inputs
from apps.ui.url_values import strict_selectors
from lab.experiments.base import Experiment


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
        self.url = UrlInputs(exp, names, self.message.say) if self.sync_url else None
        self.inputs = input_panel(exp, shown_inputs(exp, names), report=self.message.say)
        follow_switches(exp, self.inputs)
        self.cards = CardsView(experiment=exp)
        self.chart = ChartView(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)

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
                   if description(exp.slug).chart == "batch" else [])
        results = pn.Column(self.cards, *overlay, *self.chart.parts(), self.calculation, limits,
                            sizing_mode="stretch_width",
                            styles={"flex": "1 1 340px", "min-width": "min(340px, 100%)"})
        extra = [TraceUpload(experiment=exp)] if description(exp.slug).uploads_trace else []
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
