"""Build every page once when the server starts, so no visitor pays for first use.

The first build of a page in a process is several times slower than the next ones: modules
are imported on first use, Bokeh and Panel fill their caches, and the grid explorer opens
(or computes) the default dataset. ``panel serve --warm`` runs the app once for the landing
page only; :func:`warm_up` builds the pages in :data:`WARM_PAGES`, each into a throwaway
document that is cleaned up straight away. ``inference-lab serve`` runs it through Panel's ``--setup`` hook
(``apps/ui/serve_setup.py``), before the server takes its first request. Afterwards everything
allocated so far is moved out of the garbage collector's way (``gc.freeze``): the server's
long-lived objects are then not rescanned by the full collections that would otherwise pause
a page build.
"""

from __future__ import annotations

import time

from bokeh.document import Document
from panel.io.state import set_curdoc

from apps.ui.pages import GRID
from apps.ui.panel_compat import cleanup_doc, freeze_gc

WARM_PAGES = ("decode", "memory", GRID.slug)
"""Pages built at start-up: experiment 1 (the page most readers open first), one HoloViews
experiment (its first build imports and caches what the others share) and the grid
explorer (its dataset). Building all twelve takes about 6 s; these three about 1.5 s."""

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
    freeze_gc()  # Bokeh runs a full collection per destroyed document: keep those short
    for slug in WARM_PAGES:
        doc = Document()
        with set_curdoc(doc):
            build_page(slug).server_doc(doc)
            doc.to_json()
            cleanup_doc(doc)
    freeze_gc()
    return time.perf_counter() - start

