"""The landing page: what the lab is, how to use it, the experiments as cards."""

from __future__ import annotations

from html import escape

import panel as pn

from apps.ui.shell.theme import FONT_STACK, PROSE_CSS
from apps.ui.views.pages import FIXED_PAGES, experiment_classes, href
from lab.experiments.registry import count_words

LANDING_CSS = """
.lab-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(250px, 1fr));
  gap: 14px; font-family: FONT; }
.lab-exp { display: block; border: 1px solid rgba(127,127,127,0.35); border-radius: 10px;
  padding: 14px 16px; color: inherit; text-decoration: none; }
.lab-exp:hover { border-color: #0072B2; box-shadow: 0 1px 6px rgba(0,114,178,0.25); }
.lab-exp .num { font-size: 0.8rem; opacity: 0.7; }
.lab-exp .title { font-size: 1.1rem; font-weight: 650; margin: 2px 0 6px; }
.lab-exp .headline { font-size: 0.95rem; }
.lab-exp .question { font-size: 0.85rem; opacity: 0.8; margin-top: 6px; }
""".replace("FONT", FONT_STACK)

INTRO = """
# Change the inputs. Understand the tradeoff.

{count} interactive experiments in inference engineering. Each one works the same way:

1. **Predict.** Answer the question before you look.
2. **Move a constraint.** Change batch, context, GPU, precision or tensor parallelism and watch
   the headline figures and the chart move.
3. **Follow the arithmetic.** Open *Show the calculation* to see every step with the numbers
   substituted.

Every result is an analytical model with explicit limits, not a measurement; experiments 9
and 11 set it beside public measurements of real kernels and engines, and experiments 11 and
12 fit their terms on those measurements.
"""


def experiment_cards_html() -> str:
    """One linked card per experiment: number, title, headline and the prediction question."""
    cards = []
    for cls in experiment_classes():
        cards.append(
            f'<a class="lab-exp" href="{href(cls.slug)}" data-slug="{escape(cls.slug)}">'
            f'<div class="num">Experiment {cls.number}</div>'
            f'<div class="title">{escape(cls.title)}</div>'
            f'<div class="headline">{escape(cls.headline)}</div>'
            f'<div class="question">{escape(cls.prediction.question)}</div></a>')
    return f'<div class="lab-grid">{"".join(cards)}</div>'


def landing_page() -> pn.Column:
    """The landing page's content (no computation beyond reading class attributes)."""
    more = "### Also in the lab\n\n" + "\n".join(
        f"- [{page.title}]({href(page.slug)}): {page.summary}"
        for page in FIXED_PAGES)
    return pn.Column(
        pn.pane.Markdown(INTRO.replace("{count}", count_words().capitalize()),
                         stylesheets=[PROSE_CSS], sizing_mode="stretch_width"),
        pn.pane.HTML(experiment_cards_html(), stylesheets=[LANDING_CSS],
                     sizing_mode="stretch_width"),
        pn.pane.Markdown(more, sizing_mode="stretch_width"),
        sizing_mode="stretch_width")
