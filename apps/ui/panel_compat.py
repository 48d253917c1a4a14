"""Every process-wide side effect and every private Panel hook the apps rely on, in one place.

Panel and panel-material-ui do not promise these internals; :data:`TESTED_PANEL` and
:data:`TESTED_PANEL_MATERIAL_UI` are the versions they were checked against, and
``tests/apps/test_panel_compat.py`` fails when another version is installed, so an upgrade
re-checks each hook here:

- :data:`PRIORITY_CHANGES` (``Syncable._priority_changes``): properties processed on the next
  tick instead of after Panel's 50 ms debounce;
- :func:`cleanup_doc` (``panel.io.document._cleanup_doc``): releases a throwaway document's
  sessions and models after a warm-up build;
- :func:`detach_busy` (``pmui.Page.busy``, read-only, linked to ``pn.state.busy`` by a watcher):
  drops the link and its watcher so a page is not re-walked on every busy toggle;
- :func:`freeze_gc` (``gc.freeze``): moves every object alive now out of later collections;
  called by the server's start-up only (:mod:`apps.ui.warmup`).
"""

from __future__ import annotations

import gc

import panel as pn
import panel_material_ui as pmui
from panel.io.document import _cleanup_doc
from panel.util import edit_readonly

TESTED_PANEL = "1.9.4"
"""The Panel version these hooks were checked against."""
TESTED_PANEL_MATERIAL_UI = "0.16.6"
"""The panel-material-ui version these hooks were checked against."""

PRIORITY_CHANGES = ["value", "value_throttled"]
"""A widget's properties that skip Panel's debounce (``_priority_changes``)."""


def cleanup_doc(doc) -> None:
    """Release a Bokeh document built outside a session (Panel's ``_cleanup_doc``)."""
    _cleanup_doc(doc)


def detach_busy(page: pmui.Page) -> None:
    """Set ``page.busy`` False for good and remove the watcher linking it to ``pn.state``.

    Setting the read-only flag drops the link but not its watcher on ``pn.state``, which then
    holds every page ever served (about 3 MB each) and re-sets each one on every busy toggle.
    """
    with edit_readonly(page):
        page.busy = False
    for watchers in pn.state.param.watchers.get("busy", {}).values():
        for watcher in list(watchers):
            if getattr(getattr(watcher.fn, "__self__", None), "self", None) is page:
                pn.state.param.unwatch(watcher)


def freeze_gc() -> None:
    """Collect, then exempt every object alive now from later collections (process-wide)."""
    gc.collect()
    gc.freeze()
