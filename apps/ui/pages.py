"""Which pages the lab has: the experiments from ``lab`` plus the four fixed pages."""

from __future__ import annotations

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
MEASURED = PageInfo("measured", "9. Floors against measurements",
                    "Real H100 kernel times beside the lab's floors: where launch cost dominates, "
                    "where they converge, and what is below the floor.")


def experiment_classes() -> list[type[Experiment]]:
    """The experiment classes ``lab`` provides, in order."""
    return list(all_experiments())


def experiment_pages() -> list[PageInfo]:
    """A page per experiment, slug from the class."""
    return [PageInfo(cls.slug, f"{cls.number}. {cls.title}", cls.headline)
            for cls in experiment_classes()]


def all_pages() -> list[PageInfo]:
    """Every page in navigation order."""
    return [HOME, *experiment_pages(), MEASURED, DERIVATION, SOURCES, GRID]


def experiment_class(slug: str) -> type[Experiment] | None:
    """The experiment class with ``slug`` (or a former slug, e.g. ``batch``), or None."""
    found = record(slug)
    return found.experiment_class() if found else None


def page_slug(slug: str) -> str:
    """The current slug of a page asked for by ``slug`` (a former slug maps to its new one)."""
    found = record(slug)
    return found.slug if found else slug


def href(slug: str) -> str:
    """A link to a page, relative to the app's own path (keeps working under any prefix)."""
    return f"?view={slug}" if slug else "?"
