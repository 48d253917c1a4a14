"""Build every page once when the server starts, so no visitor pays for first use.

The first build of a page in a process is several times slower than the next ones: modules
are imported on first use, Bokeh and Panel fill their caches, and the grid explorer opens its
dataset. The grid explorer never computes a dataset in a page request: :func:`prepare_datasets`
computes each experiment's default grid here, at start-up, when it is missing (or a stale
default grid the lab wrote), so a fresh clone's explorer has its grids.
``panel serve --warm`` runs the app once for the landing page only; :func:`warm_up` builds the
pages in :data:`WARM_PAGES`, each into a throwaway document that is cleaned up straight away.
``inference-lab serve`` runs it through Panel's ``--setup`` hook (``apps/ui/views/serve_setup.py``),
before the server takes its first request. Afterwards everything allocated so far is moved
out of the garbage collector's way (``gc.freeze``): the server's long-lived objects are then
not rescanned by the full collections that would otherwise pause a page build.
"""

from __future__ import annotations

import logging
import os
import time

from bokeh.document import Document
from panel.io.state import set_curdoc

from apps.ui.panel_compat import cleanup_doc, freeze_gc

WARM_PAGES = ("decode", "memory", "grid")
"""Pages built at start-up: experiment 1 (the page most readers open first), one HoloViews
experiment (its first build imports and caches what the others share) and the grid
explorer (its dataset, :data:`apps.ui.views.pages.GRID`; ``tests/apps/test_app_serve.py`` checks
that each is a page). Building all twelve takes about 6 s; these three about 1.5 s."""

log = logging.getLogger("bokeh")


def prepare_datasets() -> list[str]:
    """Open each experiment's grid in the lab's data directory, computing a missing one (and
    recomputing a stale default grid the lab wrote); one sentence per grid that could not be
    prepared. Nothing is done when ``inference-lab serve --datasets DIR`` points the explorer
    at another folder: the lab writes only into its own data directory."""
    from lab.errors import LabInputError
    from sweeps.catalog_of_datasets import DATASETS_ENV
    from sweeps.datasets import open_dataset
    from sweeps.grid_kinds import GRIDS

    if os.environ.get(DATASETS_ENV):
        return []
    problems = []
    for name in GRIDS:
        try:
            open_dataset(name)
        except (LabInputError, OSError) as error:
            problems.append(f"The {name} grid could not be prepared: {error}")
    return problems


_warmed = False
"""Whether this process has warmed up already."""


def warm_up(build_page) -> float:
    """Build and serialise the :data:`WARM_PAGES` once (``build_page(slug)``); seconds taken.

    Runs once per process; later calls return 0 at once.
    """
    global _warmed
    if _warmed:
        return 0.0
    _warmed = True
    start = time.perf_counter()
    for problem in prepare_datasets():
        log.error("Inference Lab: %s", problem)
    freeze_gc()  # Bokeh runs a full collection per destroyed document: keep those short
    for slug in WARM_PAGES:
        doc = Document()
        with set_curdoc(doc):
            build_page(slug).server_doc(doc)
            doc.to_json()
            cleanup_doc(doc)
    freeze_gc()
    return time.perf_counter() - start

