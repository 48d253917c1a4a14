"""The grid page at the Bokeh-document level: URL values it does not offer and a dataset that
cannot be read are one plain sentence on the page (escaped, never HTML), not a traceback or a
heatmap of blanks; axes, facets, lines, compare and the query in-process."""

from __future__ import annotations

import shutil

import numpy as np
import panel as pn
import pytest
import xarray as xr
from panel.io.location import Location

from apps.ui.views import grid
from apps.ui.views import grid_heatmap as charts
from apps.ui.views.grid import GridExplorer
from sweeps.store import CorruptDatasetError, open_grid
from tests.sweeps.conftest import write_small


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    """A small decode grid (model × gpu × tp 1, 2, 8 × precision × batch × context)."""
    return write_small(tmp_path_factory.mktemp("grid-page") / "small.zarr")


def page(document, store, search: str = "") -> GridExplorer:
    """The grid page as the server builds it for a request with ``search``."""
    pn.state._locations[document] = Location(search=search)
    view = GridExplorer(dataset=open_grid(store))
    view.__panel__().get_root(document)
    return view


def message(view: GridExplorer) -> str:
    return view.message.object if view.message.visible else ""


@pytest.mark.parametrize(("query", "name", "sentence"), [
    ("tp=abc", "tp", "The link&#x27;s tp=abc is not one of 1, 2, 8, so the page shows tp=1."),
    ("tp=4", "tp", "The link&#x27;s tp=4 is not one of 1, 2, 8, so the page shows tp=1."),
    ("model=nope", "model", "The link&#x27;s model=nope is not one of llama-3.1-8b, qwen3-8b"),
    ("precision=fp4", "precision", "The link&#x27;s precision=fp4 is not one of bf16, fp8"),
    ("variable=step", "variable", "The link&#x27;s variable=step is not one of "),
])
def test_bad_url_value_is_one_sentence_and_not_applied(document, small_store, query, name,
                                                       sentence):
    default = getattr(GridExplorer(dataset=open_grid(small_store)).choices, name)
    view = page(document, small_store, f"?view=grid&{query}")
    assert sentence in message(view)
    assert getattr(view.choices, name) == default
    shown = dict(p.split("=", 1) for p in pn.state.location.search[1:].split("&"))
    assert shown["view"] == "grid" and shown[name] != query.split("=", 1)[1]


def test_script_in_the_url_is_shown_as_text(document, small_store):
    view = page(document, small_store, "?view=grid&variable=%3Cscript%3Ealert(1)%3C/script%3E")
    shown = message(view)
    assert "variable=&lt;script&gt;alert(1)&lt;/script&gt; is not one of" in shown
    assert "<script>" not in shown
    assert view.choices.variable == "step_time_s"


def test_valid_url_values_apply(document, small_store):
    view = page(document, small_store, "?view=grid&tp=2&precision=fp8&variable=hbm_time_s")
    assert (view.choices.tp, view.choices.precision, view.choices.variable) == (
        2, "fp8", "hbm_time_s")
    assert message(view) == ""


def test_dataset_deleted_under_the_page_is_one_sentence(document, small_store, tmp_path):
    store = shutil.copytree(small_store, tmp_path / "small.zarr")
    view = page(document, store)
    shutil.rmtree(store)
    view.choices.model = "qwen3-8b"  # a read (tp alone is cut from the block already read)
    assert "is corrupt (its file " in message(view) and "is missing" in message(view)
    fig = rendered(view)
    assert "No data" in fig.title.text and not fig.renderers  # no heatmap of blanks


def test_unreadable_dataset_is_one_sentence(document, monkeypatch):
    from sweeps import catalog_of_datasets

    def broken(name):
        raise CorruptDatasetError("The dataset at /srv/x.zarr is corrupt (its file "
                                  "step_time_s/c/0 is missing); delete it and run <b>x</b>.")

    monkeypatch.setattr(catalog_of_datasets, "open_named", broken)
    pn.state._locations[document] = Location(search="?view=grid")
    view = GridExplorer()
    view.__panel__().get_root(document)
    assert "is corrupt (its file step_time_s/c/0 is missing)" in message(view)
    assert "&lt;b&gt;x&lt;/b&gt;" in message(view)


def rendered(view: GridExplorer):
    """The Bokeh figure of the grid page's (first) chart as it is drawn now."""
    pane = view._area.objects[0]
    return pane.object if isinstance(pane, pn.pane.Bokeh) else pane.objects[0].object


def colour_mapper(fig):
    return next(r.glyph.fill_color.transform for r in fig.renderers
                if type(r.glyph).__name__ == "Rect")


def test_the_heatmap_shows_the_selection(document, small_store):
    view = page(document, small_store, "?tp=1")
    heat = next(r for r in rendered(view).renderers if type(r.glyph).__name__ == "Rect")
    expected = open_grid(small_store)["step_time_s"].sel(
        model="llama-3.1-8b", gpu="h100-sxm", tp=1, precision="bf16", kv_precision="bf16")
    shown = np.asarray(heat.data_source.data["step_time_s"])
    assert shown.size == expected.size and np.isfinite(expected.values).any()
    assert np.allclose(np.sort(shown[np.isfinite(shown)]),
                       np.sort(expected.values[np.isfinite(expected.values)].ravel()) * 1e3)


def test_switching_variable_redraws_the_whole_heatmap(document, small_store):
    view = page(document, small_store)
    first = rendered(view)
    assert type(colour_mapper(first)).__name__ == "LogColorMapper"
    view.choices.variable = "memory_remaining_bytes"
    fig = rendered(view)
    mapper = colour_mapper(fig)
    assert type(mapper).__name__ == "LinearColorMapper"  # signed: no log scale
    assert mapper.low == -mapper.high  # diverging, centred on 0
    assert "Memory remaining" in fig.title.text
    expected = open_grid(small_store)["step_time_s"].sel(
        model=view.choices.model, gpu=view.choices.gpu, tp=view.choices.tp,
        precision=view.choices.precision, kv_precision=view.choices.kv_precision)
    heat = next(r for r in fig.renderers if type(r.glyph).__name__ == "Rect")
    assert len(heat.data_source.data["_x"]) == expected.size  # every cell, not one


def test_reason_is_categorical_with_its_meanings(document, small_store):
    view = page(document, small_store)
    view.choices.variable = "reason"
    fig = rendered(view)
    bar = next(r for r in fig.right if type(r).__name__ == "ColorBar")
    labels = bar.major_label_overrides
    assert labels[0] == "valid" and "FP8" in labels[4]
    assert bar.ticker.ticks == sorted(labels)


def test_cells_over_budget_are_crossed(document, small_store):
    view = page(document, small_store, "?view=grid&tp=1")
    ds = view.current().load()
    over = int((ds["valid"] & ~ds["fits"]).sum())
    assert over > 0
    fig = rendered(view)
    crosses = [r for r in fig.renderers if type(r.glyph).__name__ == "Scatter"
               and r.glyph.marker == "x"]
    assert len(crosses) == 1 and len(crosses[0].data_source.data["_x"]) == over
    assert any("over the memory budget" in str(item.label) for item in fig.legend[0].items)


@pytest.fixture(scope="module")
def two_kv_store(tmp_path_factory):
    """The small decode grid with both KV-cache precisions (the default preset's axis)."""
    from tests.sweeps.conftest import SMALL_DECODE

    return write_small(tmp_path_factory.mktemp("grid-page-kv") / "small.zarr",
                       {**SMALL_DECODE, "kv_precision": ["bf16", "fp8"]})


def test_kv_precision_is_a_selector_and_selects_its_slice(document, two_kv_store):
    view = page(document, two_kv_store, "?view=grid&kv_precision=fp8")
    c = view.choices
    assert c.param.kv_precision.objects == ["bf16", "fp8"] and c.kv_precision == "fp8"
    assert message(view) == ""
    ds = open_grid(two_kv_store)
    at = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1, "precision": "bf16"}
    assert view.current()["kv_read_bytes"].equals(
        ds.sel({**at, "kv_precision": "fp8"})["kv_read_bytes"])
    view.choices.kv_precision = "bf16"
    assert view.current()["kv_read_bytes"].equals(
        ds.sel({**at, "kv_precision": "bf16"})["kv_read_bytes"])
    bad = page(document, two_kv_store, "?view=grid&kv_precision=int4")
    assert "kv_precision=int4 is not one of bf16, fp8" in message(bad)
    assert bad.choices.kv_precision == "bf16"


def test_a_grid_without_the_kv_axis_shows_no_kv_selector(document, small_store):
    """A decode grid written before the KV-precision axis still opens: no KV selector."""
    older = open_grid(small_store).sel(kv_precision="bf16", drop=True)
    pn.state._locations[document] = Location(search="")
    view = GridExplorer(dataset=older)
    view.__panel__().get_root(document)
    assert view.choices.dims == ("model", "gpu", "tp", "precision", "batch", "context")
    assert view.current().sizes == {"batch": 3, "context": 3}


def dropdown(layout, name: str):
    """The grid page's select box for ``name``."""
    import panel_material_ui as pmui

    return next(w for w in layout.select(pmui.Select) if f"lab-grid-{name}" in w.css_classes)


def test_dropdowns_show_names_and_the_url_keeps_ids(document, small_store):
    pn.state._locations[document] = Location(search="?view=grid&model=llama-3.1-70b&gpu=l4")
    view = GridExplorer(dataset=open_grid(small_store))
    layout = view.__panel__()
    layout.get_root(document)
    model, gpu = dropdown(layout, "model"), dropdown(layout, "gpu")
    assert model.options == {"Llama 3.1 8B": "llama-3.1-8b", "Llama 3.1 70B": "llama-3.1-70b",
                             "Qwen3 8B": "qwen3-8b"}
    assert gpu.options == {"NVIDIA H100 SXM": "h100-sxm", "NVIDIA L4": "l4",
                           "Google TPU v5e": "tpu-v5e"}
    assert (view.choices.model, view.choices.gpu) == ("llama-3.1-70b", "l4")  # an old URL's ids still apply
    assert (model.value, gpu.value) == ("llama-3.1-70b", "l4")
    model.value = "qwen3-8b"  # what choosing "Qwen3 8B" sends
    assert view.choices.model == "qwen3-8b"
    assert "model=qwen3-8b" in pn.state.location.search


def test_busy_note_shows_through_a_slow_redraw(document, small_store, monkeypatch):
    import time

    view = page(document, small_store)
    during = []
    original = grid.charts.Heatmap.show

    def slow_view(*args, **kwargs):
        time.sleep(0.4)
        during.append(view.busy.visible)
        return original(*args, **kwargs)

    monkeypatch.setattr(grid.charts.Heatmap, "show", slow_view)
    assert not view.busy.visible
    view.choices.variable = "hbm_time_s"
    assert during == [True] and not view.busy.visible


def test_variable_dropdown_shows_what_each_variable_is(document, small_store):
    pn.state._locations[document] = Location(search="?view=grid&variable=hbm_time_s")
    view = GridExplorer(dataset=open_grid(small_store))
    layout = view.__panel__()
    layout.get_root(document)
    variable = dropdown(layout, "variable")
    assert variable.options["Ideal decode step time (ms) [step_time_s]"] == "step_time_s"
    assert variable.options["HBM time of the weight reads (ms) [hbm_time_s]"] == "hbm_time_s"
    assert variable.value == view.choices.variable == "hbm_time_s"  # the URL's name still applies
    variable.value = "kv_read_bytes"  # what choosing "KV cache reads per GPU (GB) …" sends
    assert view.choices.variable == "kv_read_bytes"
    assert "variable=kv_read_bytes" in pn.state.location.search


def heat_source(fig):
    return next(r for r in fig.renderers if type(r.glyph).__name__ == "Rect").data_source


def test_a_change_updates_the_heatmap_in_place(document, small_store):
    """Issue 24 speed: a selector, axis or variable change puts new data, factors and colour
    scale into the figure on screen (the browser gets data, not a new figure); a change of
    layout (small multiples, lines) draws new figures."""
    view = page(document, small_store, "?tp=1")
    fig, source = rendered(view), heat_source(rendered(view))
    before = np.asarray(source.data["step_time_s"]).copy()
    view.choices.precision = "fp8"
    assert rendered(view) is fig and heat_source(fig) is source
    assert not np.allclose(before, source.data["step_time_s"], equal_nan=True)
    view.choices.x = "tp"
    assert rendered(view) is fig and list(fig.x_range.factors) == ["1", "2", "8"]
    assert "ensor" in fig.xaxis[0].axis_label and len(source.data["_x"]) == 3 * len(
        fig.y_range.factors)
    view.choices.variable = "reason"
    assert rendered(view) is fig and fig.right[0].ticker.ticks == sorted(
        fig.right[0].major_label_overrides)
    view.choices.variable = "step_time_s"
    assert type(colour_mapper(fig)).__name__ == "LogColorMapper"
    assert type(fig.right[0].ticker).__name__ == "BasicTicker"
    assert not fig.right[0].major_label_overrides
    view.choices.param.update(x="batch", facet="precision")
    facets = [p.object for p in view._area.objects[0].objects]
    assert len(facets) == 2 and fig not in facets
    view.choices.param.update(facet="gpu" if len(view.choices.values["gpu"]) == 2 else
                              "precision", variable="memory_remaining_bytes")
    assert [p.object for p in view._area.objects[0].objects] == facets  # same layout
    view.choices.mode = "lines"
    assert any(type(r.glyph).__name__ == "Line" for r in rendered(view).renderers)


def test_a_long_categorical_axis_labels_every_kth_value():
    """Issue 24: 64 values on the y axis no longer overlap: every k-th is labelled, at least
    14 px apart. Both axes are thinned in the browser, for the size drawn (issue 37 item 10:
    a phone's heatmap is a third of a desktop's, and ``major_label_overrides`` of a categorical
    axis never reached the canvas: small multiples printed all 20 contexts in 150 px)."""
    from bokeh.document import Document

    ds = xr.Dataset({"t": (("a", "b"), np.arange(64.0 * 3).reshape(64, 3) + 1)},
                    coords={"a": [f"m{i}" for i in range(64)], "b": [1, 2, 3]})
    pn.state._locations.pop(doc := Document(), None)
    view = GridExplorer(ds)
    view.__panel__().get_root(doc)
    fig = rendered(view)
    assert (view.choices.x, view.choices.y) == ("b", "a")
    for axis, side in ((fig.xaxis[0], "inner_width"), (fig.yaxis[0], "inner_height")):
        assert side in axis.formatter.code and axis.formatter.args["fig"] is fig
        assert not axis.major_label_overrides
    room = charts.LABEL_ROOM_PX["y"]
    assert f"Math.ceil({room} /" in fig.yaxis[0].formatter.code


def test_small_multiples_are_one_a_row_as_wide_as_the_column(document, small_store):
    """Issue 37 item 8: four 330 × 300 px panels side by side left 150 px of plot for 20 × 20
    cells, ticks overprinted and a cross in every cell; and a constraint every cell meets
    ringed them all."""
    view = page(document, small_store, "?view=grid&facet=tp&where=fits%3E%3D0")
    column = view._area.objects[0]
    assert isinstance(column, pn.Column) and len(column.objects) == 3
    for pane in column.objects:
        fig = pane.object
        assert pane.sizing_mode == fig.sizing_mode == "stretch_width"
        assert fig.height == charts.FACET_HEIGHT
        cross = next(r for r in fig.renderers if getattr(r.glyph, "marker", None) == "x")
        ring = next(r for r in fig.renderers if getattr(r.glyph, "marker", None) == "circle")
        assert cross.glyph.size == charts.FACET_MARKER_SIZE
        assert not ring.visible and not ring.data_source.data["_x"]  # every valid cell meets


def test_a_slider_step_reaches_the_selection(document, small_store, monkeypatch):
    """Issue 24: under ``pn.extension(throttled=True)`` (as served) a slider reports its
    released value as the option's index; the tp slider maps it to its value and redraws."""
    monkeypatch.setattr(pn.config, "throttled", True)
    view = page(document, small_store, "?tp=1")
    slider = view._dim_widgets["tp"]
    fig = rendered(view)
    before = np.asarray(heat_source(fig).data["step_time_s"]).copy()
    root = slider._models[next(iter(slider._models))][0]
    assert root.data.value == root.data.value_throttled == 0  # the browser gets the index
    slider._process_events({"value_throttled": 1})
    assert view.choices.tp == 2 and "tp=2" in pn.state.location.search
    assert not np.allclose(before, heat_source(fig).data["step_time_s"], equal_nan=True)
    view.choices.tp = 8
    assert root.data.value == root.data.value_throttled == 2


def test_selections_are_cut_from_one_block_of_whole_chunks(document, small_store):
    """Issue 24 speed: the chunk block around the selection (here one model: every other
    dimension is whole in a chunk) is read once; a change of tp, precision or the axes reads
    nothing more and shows the same cells a direct read of the store does."""
    view = page(document, small_store, "?tp=1")
    block = view._block
    assert block is not None and dict(block[0][1]) == {"model": "llama-3.1-8b"}
    store = open_grid(small_store)
    for change in ({"precision": "fp8"}, {"tp": 8}, {"x": "tp"}, {"gpu": "l4"}):
        view.choices.param.update(**change)
        assert view._block is block  # nothing read again
        shown = view.selection()
        direct = store.sel(view.choices.at()).load()
        xr.testing.assert_identical(shown, direct.transpose(*shown.dims))
    view.choices.model = "qwen3-8b"
    assert view._block is not block


def test_selectors_of_dimensions_on_an_axis_are_greyed_and_say_where(document, small_store):
    """An axis change greys the selector of the dimension it takes (its label says which
    axis) and frees the one it leaves; none is hidden, so the page keeps its layout."""
    view = page(document, small_store)
    widgets = view._dim_widgets
    assert widgets["batch"].disabled and widgets["batch"].label.endswith("— on the x axis")
    assert widgets["context"].disabled and widgets["context"].label.endswith("— on the y axis")
    assert not widgets["tp"].disabled and "—" not in widgets["tp"].label
    view.choices.x = "tp"
    assert widgets["tp"].disabled and widgets["tp"].label.endswith("— on the x axis")
    assert not widgets["batch"].disabled and "—" not in widgets["batch"].label
    assert all(w.visible for w in widgets.values())


def test_a_chunk_that_disagrees_with_its_data_is_one_sentence(document, small_store, tmp_path):
    """Issue 38 item 2: a store whose metadata claims another chunk shape than its chunks hold
    (checksums recomputed) is a sentence on the page, not a traceback and a blank page."""
    import json

    from sweeps.build import file_digest

    store = shutil.copytree(small_store, tmp_path / "small.zarr")
    meta_path = store / "step_time_s" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["chunk_grid"]["configuration"]["chunk_shape"][0] = 2  # the chunks hold 1 model
    meta_path.write_text(json.dumps(meta))
    root = json.loads((store / "zarr.json").read_text())
    root["attributes"]["file_digests"]["step_time_s/zarr.json"] = file_digest(
        meta_path.read_bytes())
    (store / "zarr.json").write_text(json.dumps(root))
    view = page(document, store)
    shown = message(view)
    assert "is corrupt" in shown and "step_time_s" in shown, shown
    assert "Traceback" not in shown
    fig = rendered(view)
    assert "No data" in fig.title.text


# -- issue 38 item 7: the sentences ----------------------------------------------------------
@pytest.mark.parametrize(("where", "sentence"), [
    (",".join(["step_time_s<=1"] * 9), "at most 8 constraints are read"),
    ("step_time_s<=" + "1" * 210, "the constraints are 223 characters long; at most 200"),
])
def test_a_where_too_long_or_with_too_many_clauses_gets_its_own_sentence(document, small_store,
                                                                        where, sentence):
    from urllib.parse import quote

    view = page(document, small_store, f"?view=grid&where={quote(where)}")
    assert "The link&#x27;s where= was not applied" in message(view)
    assert sentence in message(view) and view.choices.where == ""


def test_a_key_given_twice_is_refused_in_one_sentence(document, small_store):
    view = page(document, small_store, "?view=grid&tp=2&tp=8")
    assert "The link gives tp= 2 times, so none of its values was applied." in message(view)
    assert view.choices.tp == 1


def test_a_bidi_control_in_a_url_value_is_shown_escaped(document, small_store):
    view = page(document, small_store, "?view=grid&model=%E2%80%AEevil")
    shown = message(view)
    assert "\u202e" not in shown and "\\u202eevil" in shown, shown
