"""Which pages the lab has: the experiments from ``lab``'s registry plus the fixed pages.

An experiment's page is the generic :class:`~apps.ui.views.experiment_view.ExperimentView` unless
:func:`own_pages` registers a builder of its own for its slug (e.g. experiment 9's
:class:`~apps.ui.views.measured_page.MeasuredPage`); either is called with
``experiment=<an instance of its param class>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.experiments import all_experiments
from lab.experiments.base import Experiment
from lab.experiments.registry import count_words, record


@dataclass(frozen=True)
class PageInfo:
    """One page of the lab: its query slug, title and one-line summary."""

    slug: str
    title: str
    summary: str


HOME = PageInfo("", "Inference Lab",
                f"{count_words().capitalize()} experiments in LLM inference engineering.")
DERIVATION = PageInfo("derivation", "Work through the decode derivation",
                      "From weight bytes to the aggregate ceiling, with live numbers.")
SOURCES = PageInfo("sources", "Model boundaries and primary sources",
                   "What each model leaves out; every catalog figure with its source.")
GRID = PageInfo("grid", "Grid explorer",
                "Heatmaps of any decode variable over batch × context from the precomputed grid.")


FIXED_PAGES = (DERIVATION, SOURCES, GRID)
"""The pages after the experiments that are not experiments, in navigation order."""


def experiment_classes() -> list[type[Experiment]]:
    """The experiment classes ``lab`` provides, in order."""
    return list(all_experiments())


def experiment_pages() -> list[PageInfo]:
    """A page per experiment, slug from the class."""
    return [PageInfo(cls.slug, f"{cls.number}. {cls.title}", cls.headline)
            for cls in experiment_classes()]


def all_pages() -> list[PageInfo]:
    """Every page in navigation order."""
    return [HOME, *experiment_pages(), *FIXED_PAGES]


def experiment_class(slug: str) -> type[Experiment] | None:
    """The experiment class with ``slug`` (or a former slug, e.g. ``batch``), or None."""
    found = record(slug)
    return found.experiment_class() if found else None


def own_pages() -> dict[str, Callable]:
    """The experiments with a page of their own: its builder by experiment slug (imported on
    first use, like the generic view)."""
    from apps.ui.views.measured_page import MeasuredPage
    from apps.ui.views.plan_page import PlanPage
    from apps.ui.views.served_page import ServedPage

    return {"measured": MeasuredPage, "served": ServedPage, "plan": PlanPage}


def generic_page() -> Callable:
    """The page of an experiment with no page of its own."""
    from apps.ui.views.experiment_view import ExperimentView

    return ExperimentView


def page_builder(slug: str) -> Callable | None:
    """What builds the page of the experiment ``slug`` (or a former slug), called with
    ``experiment=<an instance of its class>``: its own page (:func:`own_pages`), else the
    generic view; None when ``slug`` names no experiment."""
    found = record(slug)
    if found is None:
        return None
    return own_pages().get(found.slug) or generic_page()


def page_slug(slug: str) -> str:
    """The current slug of a page asked for by ``slug``: a former slug maps to its new one, and
    a name typed in capitals or with spaces around it to the page it names (``?view=DECODE``
    said "No page called 'DECODE'"); a name of no page is returned as given."""
    for asked in (slug, slug.strip().lower()):
        if (found := record(asked)) is not None:
            return found.slug
        if asked in {page.slug for page in FIXED_PAGES}:
            return asked
    return slug


def href(slug: str) -> str:
    """A link to a page, relative to the app's own path (keeps working under any prefix)."""
    return f"?view={slug}" if slug else "?"
