"""The shell every experiment page shares: header, prediction, inputs column and results.

:func:`experiment_page` lays out what a page puts in it — the generic
:class:`apps.ui.views.experiment_view.ExperimentView` and the pages of their own
(:class:`apps.ui.views.measured_page.MeasuredPage`, :class:`apps.ui.views.served_page.ServedPage`):

- the header: ``# <number>. <title>``, the headline in bold, then the page's own introduction;
- the prediction (docs/model.md: asked before the numbers);
- the body, a wrapping row: the inputs column (300 px: "Inputs", then the page's message,
  widgets and uploads) beside the results column (the page's parts, closed by the limits and
  their sources), side by side where both fit; on a phone the results wrap below the inputs.

The limits close the results column. The page is as tall as its content
(:data:`apps.ui.shell.theme.MAIN_CSS` lifts Bokeh's cap of a layout at the window's height), so
on a phone the results start below the last input and take none of its taps.
"""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn

from apps.ui.shell.theme import PROSE_CSS
from lab.experiments.base import Experiment

INPUTS_WIDTH = 300
"""Width of the inputs column, px."""
RESULTS_BASIS = 340
"""Width the results column asks for before it wraps below the inputs, px."""


def limits_markdown(experiment: Experiment) -> str:
    """The limits paragraph and the primary sources as Markdown."""
    sources = "\n".join(f"- {s}" for s in experiment.sources)
    return f"### Limits\n\n{experiment.limits}\n\n**Sources**\n\n{sources}"


def experiment_page(experiment: Experiment, *, prediction: Sequence, inputs: Sequence,
                    results: Sequence, intro: str = "",
                    stylesheets: Sequence[str] = ()) -> pn.Column:
    """The page: header (with ``intro`` after the headline, if any), the ``prediction`` parts,
    and the body — the ``inputs`` below the "Inputs" heading, the ``results`` then the limits
    (``stylesheets`` on the results column)."""
    exp = experiment
    header = pn.pane.Markdown(f"# {exp.number}. {exp.title}\n\n**{exp.headline}**"
                              + (f"\n\n{intro}" if intro else ""), sizing_mode="stretch_width")
    limits = pn.pane.Markdown(limits_markdown(exp), stylesheets=[PROSE_CSS],
                              sizing_mode="stretch_width")
    results_column = pn.Column(*results, limits,
                               **({"stylesheets": list(stylesheets)} if stylesheets else {}),
                               sizing_mode="stretch_width",
                               styles={"flex": f"1 1 {RESULTS_BASIS}px",
                                       "min-width": f"min({RESULTS_BASIS}px, 100%)"})
    inputs_column = pn.Column(pn.pane.Markdown("### Inputs"), *inputs, width=INPUTS_WIDTH,
                              css_classes=["lab-inputs-column"],
                              styles={"flex": f"0 0 {INPUTS_WIDTH}px"})
    body = pn.FlexBox(inputs_column, results_column, flex_wrap="wrap", align_items="flex-start",
                      sizing_mode="stretch_width", css_classes=["lab-experiment-body"])
    return pn.Column(header, *prediction, body, sizing_mode="stretch_width")
