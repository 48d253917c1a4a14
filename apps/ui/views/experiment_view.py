"""One experiment page: the seven elements (docs/model.md) around one ``lab`` experiment object."""

from __future__ import annotations

import param
from panel.viewable import Viewer

from apps.ui.parts.calculation import CalculationView
from apps.ui.parts.cards import CardsView
from apps.ui.parts.input_widgets import InputMessage, input_panel
from apps.ui.parts.prediction import PredictionView
from apps.ui.parts.trace_upload import TraceUpload
from apps.ui.plots.chart_view import ChartView
from apps.ui.plots.measured_overlay import MeasuredOverlay
from apps.ui.plots.page_descriptions import description
from apps.ui.shell.held_size import hold_sizes
from apps.ui.shell.url_sync import UrlInputs, upload_only, url_inputs
from apps.ui.shell.url_values import strict_selectors
from apps.ui.views.live_inputs import follow_switches, shown_inputs
from apps.ui.views.page_shell import experiment_page
from lab.experiments.base import Experiment


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
        self.url = (UrlInputs(exp, names, self.message.say, unlinkable=upload_only(exp, names))
                    if self.sync_url else None)
        self.inputs = input_panel(exp, shown_inputs(exp, names), report=self.message.say)
        follow_switches(exp, self.inputs)
        self.cards = CardsView(experiment=exp)
        self.chart = ChartView(experiment=exp)
        self.prediction = PredictionView(experiment=exp)
        self.calculation = CalculationView(experiment=exp)

    def __panel__(self):
        exp = self.experiment
        # Each component's parts go straight into the page's columns: every layout level
        # costs the browser a full re-layout of the page each time its size changes while
        # the page renders (Bokeh re-lays out from the top for every resized view).
        overlay = (MeasuredOverlay(experiment=exp, chart=self.chart).parts()  # experiment 9
                   if description(exp.slug).chart == "batch" else [])
        results = [self.cards, *overlay, *self.chart.parts(), self.calculation]
        extra = [TraceUpload(experiment=exp)] if description(exp.slug).uploads_trace else []
        inputs = [self.message, *self.inputs.layout.objects, *extra]
        # Each widget's drawn size is held from the start, so React drawing the widgets one
        # after another does not re-lay out the page (and its charts) each time.
        return hold_sizes(experiment_page(exp, prediction=self.prediction.parts(),
                                          inputs=inputs, results=results))
