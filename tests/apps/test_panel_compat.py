"""The private Panel hooks of ``apps.ui.panel_compat`` exist in the installed versions.

Pinned: another Panel or panel-material-ui version fails here first, so an upgrade re-checks
each hook (see the module docstring) before the server relies on it.
"""

from __future__ import annotations

import gc
from importlib.metadata import version
from pathlib import Path

import panel as pn
import panel_material_ui as pmui
from bokeh.document import Document

from apps.ui import panel_compat
from apps.ui.parts.input_widgets import IntSlider
from apps.ui.views.app import build_page


def test_installed_versions_are_the_checked_ones():
    assert version("panel") == panel_compat.TESTED_PANEL
    assert version("panel-material-ui") == panel_compat.TESTED_PANEL_MATERIAL_UI


def test_priority_changes_is_a_hook_panel_reads():
    assert isinstance(pn.reactive.Syncable._priority_changes, list)
    assert IntSlider._priority_changes == ["value", "value_throttled"]


def test_page_busy_is_detached_from_the_process_state():
    def busy_watchers():
        return [w for ws in pn.state.param.watchers.get("busy", {}).values() for w in ws]

    assert "busy" in pmui.Page.param
    before = len(busy_watchers())
    page = build_page("memory")
    assert page.busy is False
    assert len(busy_watchers()) == before


def test_cleanup_doc_releases_a_document_built_outside_a_session():
    doc = Document()
    pane = pn.pane.Markdown("x")
    pane.server_doc(doc)
    assert pane._models
    panel_compat.cleanup_doc(doc)
    assert not pane._models  # the pane no longer holds the document's model


def test_freeze_gc_moves_live_objects_out_of_collection():
    try:
        panel_compat.freeze_gc()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_the_page_gate_wraps_panels_page_handler():
    import inspect

    from panel.io.server import DocHandler

    assert inspect.iscoroutinefunction(inspect.unwrap(DocHandler.get))
    assert inspect.iscoroutinefunction(inspect.unwrap(DocHandler.get_session))
    assert "_lab_gate" not in vars(DocHandler)  # installed by the server's setup only


def test_the_widget_bundle_imports_nothing_so_the_browser_may_load_it_natively():
    """``native_bundle_import.js`` hands panel-material-ui's bundle to the browser's own
    ``import()``: valid only while the bundle imports no other module (es-module-shims would
    resolve such an import through Panel's import map; the browser would not)."""
    source = panel_compat.BUNDLE_PATH.read_text(encoding="utf-8")
    assert "export{" in source.replace(" ", "")  # an ES module
    assert panel_compat.bundle_imports(source) == []
    assert panel_compat.bundle_imports('x=1;import{a}from"b"') == ['x=1;import{a}from"b"']
    assert panel_compat.bundle_imports('f();import("./c.js")') != []
    assert panel_compat.bundle_imports('s="@import url(x.css)"') == []


def test_every_page_head_loads_the_native_bundle_script():
    from panel.io.resources import Resources

    script = Path(panel_compat.__file__).parent / "native_bundle_import.js"
    assert script.is_file() and "panel-material-ui" in script.read_text(encoding="utf-8")
    files = Resources(mode="server").js_files
    assert any(f.endswith("NativeBundleImport/__javascript__/native_bundle_import.js")
               for f in files), files


def test_every_page_head_loads_the_page_semantics_script():
    """``page_semantics.js`` (card state, empty headings, chart names) is in every page's head,
    pages without inputs included, and ships with the package."""
    from panel.io.resources import Resources

    import apps.ui.views.app  # noqa: F401 (what a served page imports)
    from apps.ui.shell import page_semantics

    script = Path(page_semantics.__file__).with_suffix(".js")
    assert script.is_file() and "aria-expanded" in script.read_text(encoding="utf-8")
    files = Resources(mode="server").js_files
    assert any(f.endswith("PageSemantics/__javascript__/page_semantics.js") for f in files), files
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"ui/shell/page_semantics.js"' in pyproject
