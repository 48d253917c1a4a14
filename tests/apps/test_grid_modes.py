"""The grid explorer's modes and query in-process: the catalog of datasets by name, the
constraint grammar, best cells and frontier against a brute-force answer, facets on one colour
scale, lines, compare, the on-screen CSV, and a signed scale clipped to the headroom."""

from __future__ import annotations

import io
from html import escape

import numpy as np
import pandas as pd
import panel as pn
import pytest
import xarray as xr
from panel.io.location import Location

import lab
from apps.ui.plots.charts import axis_label
from apps.ui.views.grid import GridExplorer, experiment_link
from apps.ui.views.grid_choices import choices_for
from apps.ui.views.grid_heatmap import signed_span
from lab.errors import LabInputError
from sweeps import catalog_of_datasets as catalog
from sweeps.query import QUERY_DEFAULTS, Constraint, pareto, parse_where, run_query
from sweeps.store import open_grid
from tests.sweeps.conftest import write_small


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A datasets folder holding the small decode grid as 'decode' and as a user sweep."""
    root = tmp_path_factory.mktemp("grid-modes")
    write_small(root / "decode.zarr")
    write_small(root / "my-sweep.zarr", name="my-sweep")
    return root


@pytest.fixture
def served(document, folder, monkeypatch):
    """The grid page as the server builds it for a query, over ``folder``."""
    monkeypatch.setenv(catalog.DATASETS_ENV, str(folder))

    def build(search: str = "") -> GridExplorer:
        pn.state._locations[document] = Location(search=search)
        view = GridExplorer()
        view.__panel__().get_root(document)
        return view

    return build


def said(view: GridExplorer) -> str:
    return view.message.object if view.message.visible else ""


def test_catalog_lists_names_and_never_computes(folder):
    names = catalog.dataset_names(folder)
    # every experiment's grid (experiment 12's plan grid too), then the presets, then sweeps
    assert names[:8] == ["decode", "prefill", "prefix", "goodput", "context", "speculative",
                         "plan", "large"]
    assert names[8:] == ["my-sweep"]
    with pytest.raises(LabInputError, match=r"inference-lab sweep --experiment prefill"):
        catalog.open_named("prefill", folder)
    with pytest.raises(LabInputError, match=r"inference-lab sweep --experiment plan"):
        catalog.open_named("plan", folder)
    with pytest.raises(LabInputError, match="--grid large --experiment decode"):
        catalog.open_named("large", folder)
    with pytest.raises(LabInputError, match="There is no dataset"):
        catalog.open_named("../../etc", folder)
    assert not (folder / "prefill.zarr").exists()


@pytest.mark.parametrize("search", ["?dataset=../../etc", "?dataset=/etc/passwd",
                                    "?dataset=decode.zarr"])
def test_a_path_as_dataset_is_one_sentence(served, search):
    view = served(search)
    assert "is not one of decode, prefill" in said(view)
    assert view.dataset == "decode" and view.choices is not None


def test_missing_dataset_names_its_command(served):
    view = served("?dataset=goodput")
    assert "has not been computed yet; run `inference-lab sweep --experiment goodput" in \
        said(view)
    assert view.choices is None
    # the command names the real path, shell-quoted, so it can be pasted (issue 38 item 7)
    command = said(view).split("`")[1]
    assert command.startswith("inference-lab sweep --experiment goodput --out /")


def test_switching_dataset_replaces_its_inputs_in_the_url(served):
    view = served("?dataset=decode&tp=2&x=tp&y=batch")
    assert (view.choices.x, view.choices.y, view.choices.tp) == ("tp", "batch", 2)
    view.dataset = "my-sweep"
    query = pn.state.location.search
    assert "dataset=my-sweep" in query and said(view) == ""
    assert view.choices.x == "batch" and view.choices.tp == 1  # its own defaults


@pytest.mark.parametrize(("search", "words"), [
    ("?x=nope", "x=nope is not one of model, gpu"),
    ("?facet=__class__", "facet=__class__ is not one of none, model"),
    # one sentence (it read "… so the page shows where=: '…' is not a constraint; …")
    ("?where=__import__('os')", "The link&#x27;s where= was not applied (&#x27;__import__("
     "&#x27;os&#x27;)&#x27; is not a constraint; write constraints like "
     "step_time_s&lt;=0.05,fits==1 (a variable, &lt;= &gt;= &lt; &gt; == or !=, a number)), so "
     "the page shows no where= (its default)."),
    ("?where=step_time_s<=0.05;fits==1", "&#x27;step_time_s&lt;=0.05;fits==1&#x27; is not a "
     "constraint; write constraints like step_time_s&lt;=0.05,fits==1"),
    ("?where=nothing<3", "&#x27;nothing&#x27; is not a variable of this dataset; constraints "
     "may name linear_weight_bytes, "),
])
def test_hostile_axes_and_constraints_are_one_sentence(served, search, words):
    view = served(search)
    assert words in said(view)
    assert view.choices.where == "" and view.choices.x == "batch"


def test_constraint_grammar():
    names = ["step_time_s", "fits"]
    assert parse_where("step_time_s<=0.05, fits==1", names) == [
        Constraint("step_time_s", "<=", 0.05), Constraint("fits", "==", 1.0)]
    assert parse_where("fits==true", names) == [Constraint("fits", "==", 1.0)]
    for bad in ("step_time_s<=", "step_time_s=<1", "1<=step_time_s", "step_time_s<=0x10",
                "hbm<=1", "step_time_s<=1e999999"):
        with pytest.raises(LabInputError):
            parse_where(bad, names)


def test_constraints_ring_the_cells_meeting_them(served):
    """A ring on each valid cell within its memory budget that meets the constraints (a cell
    over budget carries its cross and never meets); none when every such cell meets."""
    cells = served("?tp=1").selection()
    deployable = cells["valid"] & cells["fits"]
    times = np.sort(cells["step_time_s"].values[deployable.values])
    limit = float(times[0])  # the fastest deployable cell meets it, not every one
    view = served(f"?tp=1&where=step_time_s<={limit!r}")
    fig = view._area.objects[0].object
    rings = next(r for r in fig.renderers if getattr(r.glyph, "marker", None) == "circle")
    expected = int((deployable & (cells["step_time_s"] <= limit)).sum())
    assert 0 < expected < int(deployable.sum())
    assert len(rings.data_source.data["_x"]) == expected
    everywhere = served(f"?tp=1&where=step_time_s<={float(times[-1])!r}")
    fig = everywhere._area.objects[0].object
    rings = next(r for r in fig.renderers if getattr(r.glyph, "marker", None) == "circle")
    assert len(rings.data_source.data["_x"]) == 0


def test_best_cells_and_frontier_match_brute_force(folder):
    ds = open_grid(folder / "decode.zarr")
    where = [Constraint("step_time_s", "<=", 0.05)]
    result = run_query(ds, "aggregate_tokens_per_s", True,
                       ("step_time_s", "aggregate_tokens_per_s"), where, k=5)
    flat = ds[["aggregate_tokens_per_s", "step_time_s", "valid", "fits"]].to_dataframe()
    # a cell over its memory budget is never a pick (it was ranked best, and counted)
    ok = flat[flat["valid"] & flat["fits"] & (flat["step_time_s"] <= 0.05)]
    assert 0 < result.met == len(ok) < len(flat[flat["valid"] & (flat["step_time_s"] <= 0.05)])
    assert np.allclose(result.best["aggregate_tokens_per_s"],
                       ok["aggregate_tokens_per_s"].nlargest(5))
    # ties go to the lower latency (the frontier's), then to the first cell
    expected = ok.sort_values(["aggregate_tokens_per_s", "step_time_s"],
                              ascending=[False, True], kind="stable").head(5)
    assert np.allclose(result.best["step_time_s"], expected["step_time_s"])
    front = ok.iloc[pareto(ok["step_time_s"].to_numpy(), ok["aggregate_tokens_per_s"].to_numpy())]
    assert np.allclose(np.sort(result.frontier["step_time_s"]), np.sort(front["step_time_s"]))
    row = result.best.iloc[0].to_dict()
    assert flat.loc[tuple(row[d] for d in ds["aggregate_tokens_per_s"].dims),
                    "aggregate_tokens_per_s"] == pytest.approx(row["aggregate_tokens_per_s"])


def test_a_frontier_whose_lower_y_is_better_matches_brute_force(folder):
    """Prefill's ITL against its TTFT: both lower is better (the frontier took every y as a
    throughput, so such a pair drew the wrong corner)."""
    ds = open_grid(folder / "decode.zarr")
    pair = ("step_time_s", "memory_remaining_bytes")  # more batch: slower and less room
    result = run_query(ds, "step_time_s", False, pair, [], k=3, frontier_highest=False)
    flat = ds[[*pair, "valid", "fits"]].to_dataframe()
    ok = flat[flat["valid"] & flat["fits"]]
    x, y = ok[pair[0]].to_numpy(), ok[pair[1]].to_numpy()
    expected = {(a, b) for a, b in zip(x, y, strict=True)
                if not ((x <= a) & (y < b)).any() and not ((x < a) & (y <= b)).any()}
    got = set(zip(result.frontier[pair[0]], result.frontier[pair[1]], strict=True))
    assert got == expected and len(got) > 1


@pytest.mark.parametrize("name", list(QUERY_DEFAULTS))
def test_each_dataset_opens_on_a_query_it_is_about(name):
    """The frontier charted a variable against itself (prefix, context, the plan) or the goodput
    trace's request count as a latency; each dataset now opens on its experiment's pair."""
    ds = lab.open_dataset(name)
    c = choices_for(ds)
    chosen = QUERY_DEFAULTS[name]
    assert (c.objective, c.latency, c.throughput) == (chosen.objective, chosen.x, chosen.y)
    assert c.latency != c.throughput
    assert (c.best == "highest") == chosen.highest
    assert (c.frontier_best == "highest") == chosen.y_highest


def test_table_rows_open_the_experiment_page(served):
    view = served("?scope=dataset&where=step_time_s<=0.05")
    assert view.result is not None and len(view.result.best) > 0
    html = view._query.objects[1].object
    row = view.result.best.iloc[0].to_dict()
    link = experiment_link(view._ds, row)
    assert link.startswith("?view=decode&model=") and f"tp={row['tp']}" in link
    assert link.replace("&", "&amp;") in html


def test_best_cells_table_fits_and_opens_first(served):
    """Issue 37 item 8: at 1440 px the table was clipped at "Ope" and compare mode lost its
    last columns: the link now comes first and a dimension every row shares is said once."""
    view = served("?mode=compare&compare=precision&compare_a=fp8&compare_b=bf16"
                  "&scope=dataset&where=fits==1")
    html = view._query.objects[1].object
    body = html.split("<tbody>")[1]
    rows = body.split("</tr>")[:-1]
    best = view.result.best
    assert len(rows) == len(best) > 1
    assert all(r.startswith('<tr><td><a class="lab-grid-open" href="?view=decode&amp;')
               for r in rows)
    head = html.split("<thead>")[1].split("</thead>")[0]
    dims = [d for d in view._ds.dims if d in best]
    shared = [d for d in dims if best[d].nunique() == 1]
    assert shared and "Every row: " + ", ".join(f"{d} {best[d].iloc[0]}" for d in shared) \
        in html
    assert all(f">{d}</th>" not in head for d in shared)
    assert all(f'<th title="{escape(axis_label(view._ds[d]))}">{d}</th>' in head
               for d in dims if d not in shared)
    c = view.choices
    values = len({c.objective, c.latency, c.throughput})
    assert head.count("<th") == 1 + len(dims) - len(shared) + values  # link, dims, values


def test_facets_share_one_colour_scale(served):
    view = served("?facet=tp&variable=step_time_s")
    figs = [p.object for p in view._area.objects[0].objects]
    assert len(figs) == 3
    mappers = {(f.right[0].color_mapper.low, f.right[0].color_mapper.high) for f in figs}
    assert len(mappers) == 1
    # each panel names the variable with its unit and the facet's value with its own
    label = axis_label(view._ds["step_time_s"])
    assert [f.title.text for f in figs] == [
        f"{label} at tp {tp} {'GPU' if tp == 1 else 'GPUs'}" for tp in view._ds.tp.values]
    assert figs[0].title.text == f"{label} at tp 1 GPU" and "(ms)" in label


def test_lines_draw_one_line_per_value(served):
    view = served("?mode=lines&x=context&y=batch")
    fig = view._area.objects[0].object
    lines = [r for r in fig.renderers if type(r.glyph).__name__ == "Line"]
    assert len(lines) == 3 and fig.legend[0].items[0].label.value == "batch 1"
    # a point over its memory budget is hollow (the lines drew such cells as deployable)
    points = [r for r in fig.renderers if type(r.glyph).__name__ == "Scatter"]
    fits = view.current()["fits"].transpose("batch", "context").values
    drawn = [np.asarray(p.data_source.data["fill_alpha"]) for p in points]
    assert (np.concatenate(drawn) == 0).sum() == (~fits).sum() > 0


def test_compare_is_a_ratio_centred_on_one(served):
    view = served("?mode=compare&compare=precision&compare_a=fp8&compare_b=bf16")
    fig = view._area.objects[0].object
    mapper = fig.right[0].color_mapper
    assert type(mapper).__name__ == "LogColorMapper"
    assert mapper.low * mapper.high == pytest.approx(1.0)
    ds = view.current()
    expected = view.selection().sel(precision="fp8")["step_time_s"] / \
        view.selection().sel(precision="bf16")["step_time_s"]
    assert np.allclose(ds["ratio_step_time_s"].values, expected.values, equal_nan=True)
    view.choices.how = "difference"
    mapper = view._area.objects[0].object.right[0].color_mapper
    assert mapper.low == -mapper.high


def test_a_compared_dimension_on_an_axis_moves_off_it_with_its_values(served):
    """compare=batch with batch on the x axis (a link) was moved to another dimension but kept
    A = 16 and B = 8: a KeyError and a blank page. Moving x onto the compared dimension on the
    page left the old chart under the new controls."""
    view = served("?mode=compare&compare=batch&compare_a=16&compare_b=8")
    c = view.choices
    assert c.compare not in (c.x, c.y) and c.compare_a in c.values[c.compare]
    assert "is compared" in said(view)
    fig = view._area.objects[0].object
    assert f"{c.compare} {c.compare_a}" in fig.title.text
    view = served("?mode=compare&compare=batch&compare_a=16&compare_b=8&x=tp")
    c = view.choices
    assert (c.x, c.compare) == ("tp", "batch")
    c.x = "batch"  # onto the compared dimension: the two swap
    assert (c.x, c.compare) == ("batch", "tp") and c.compare_a in c.values["tp"]
    fig = view._area.objects[0].object
    assert fig.title.text.split(": ")[1].startswith(f"tp {c.compare_a}")
    assert fig.xaxis.axis_label == axis_label(view._ds["batch"])


def test_csv_is_what_is_on_screen(served):
    view = served("?x=tp&y=context&where=step_time_s<=0.01")
    buttons = [b for b in view._downloads.objects if getattr(b, "filename", "").endswith(".csv")]
    text = buttons[0].callback().getvalue()
    frame = pd.read_csv(io.StringIO(text), comment="#")
    assert len(frame) == 3 * 3 and set(frame["tp"]) == {1, 2, 8}
    # issue 37 item 8: the inputs, the query, the objective and units travel as # lines ...
    notes = [line for line in text.splitlines() if line.startswith("#")]
    for line in ("# dataset = decode", "# variable = step_time_s [s]", "# x = tp",
                 "# y = context", f"# batch = {view.choices.batch}",
                 f"# model = {view.choices.model}", "# where = step_time_s<=0.01",
                 "# objective = aggregate_tokens_per_s_per_gpu [1/s], highest first"):
        assert line in notes
    # ... and a meets column says which cells are valid and meet the constraints
    expected = (frame["valid"] & (frame["step_time_s"] <= 0.01)).astype(int)
    assert 0 < frame["meets"].sum() < len(frame)
    assert (frame["meets"] == expected).all()


def test_compare_csv_keeps_its_inputs_and_meets(served):
    view = served("?mode=compare&compare=precision&compare_a=fp8&compare_b=bf16"
                  "&where=fits==1")
    text = view.screen_csv()
    assert "# compare = precision" in text and "# A = fp8" in text and "# B = bf16" in text
    frame = pd.read_csv(io.StringIO(text), comment="#")
    assert {"ratio_step_time_s", "meets"} <= set(frame.columns)


def test_a_refused_where_clears_once_a_good_query_runs(served):
    """Issue 37 item 8: the link's refused where= sentence leaves once constraints that parse
    are queried (another refusal in the same message stays), and so does a typed one."""
    view = served("?x=nope&where=nothing<3")
    assert "&#x27;nothing&#x27; is not a variable" in said(view)
    view.choices.where = "step_time_s<=0.05"
    assert view.result is not None and "is not a variable" not in said(view)
    assert "x=nope is not one of model" in said(view)

    view = served("?where=nothing<3")
    view.choices.where = "bad<"
    assert "&#x27;bad&lt;&#x27; is not a constraint" in said(view)
    assert view.choices.where == ""
    view.choices.where = "fits==1"
    assert said(view) == "" and not view.message.visible


def test_constraint_grammar_is_shown_before_any_error(served):
    view = served()
    help_line = next(w for w in view._controls.objects
                     if "lab-grid-where-help" in getattr(w, "css_classes", []))
    boxes = view._controls.objects
    assert boxes.index(help_line) == next(
        i for i, w in enumerate(boxes) if "lab-grid-where" in getattr(w, "css_classes", [])) + 1
    assert "`step_time_s<=0.05,fits==1`" in help_line.object
    assert "`<= >= < > == !=`" in help_line.object and said(view) == ""


def test_speculative_opens_at_a_k_that_drafts(document):
    """Issue 37 item 8: the speculative grid opened at k = 0 (no drafting: a speed-up of 1
    everywhere) and the goodput grid on its 400 requests, the same in every cell."""
    pn.state._locations.pop(document, None)
    k, alpha = [0, 1, 2, 4, 8], [0.5, 0.8]
    batch, context = [1, 8, 64], [128, 1024]
    shape = (len(batch), len(context), len(k), len(alpha))
    speedup = np.ones(shape) + np.arange(len(k))[None, None, :, None] * \
        np.arange(1, len(batch) + 1)[:, None, None, None] / 10
    spec = xr.Dataset({"expected_tokens": (("batch", "context", "k", "alpha"),
                                           np.broadcast_to(np.array(k, float)[None, None, :,
                                                                              None] + 1, shape)),
                       "speedup": (("batch", "context", "k", "alpha"), speedup)},
                      coords={"batch": batch, "context": context, "k": k, "alpha": alpha},
                      attrs={"experiment": "speculative"})
    view = GridExplorer(spec)
    view.__panel__().get_root(document)
    assert (view.choices.k, view.choices.alpha) == (4, 0.8)  # the page's defaults
    assert view.choices.variable == "speedup"
    drawn = view.current()["speedup"].values
    assert drawn.min() < drawn.max()


def test_goodput_opens_on_a_variable_that_varies(document):
    pn.state._locations.pop(document, None)
    cap, ttft, tpot = [1, 16, 64], [250.0, 1000.0], [6.0, 12.0, 50.0]
    dims = ("batch_cap", "ttft_ms", "tpot_ms")
    good = np.arange(18.0).reshape(3, 2, 3) / 100
    goodput = xr.Dataset({"requests": (dims, np.full((3, 2, 3), 400)),
                          "completed_requests": (dims, np.full((3, 2, 3), 400)),
                          "goodput_rps": (dims, good)},
                         coords={"batch_cap": cap, "ttft_ms": ttft, "tpot_ms": tpot},
                         attrs={"experiment": "goodput"})
    view = GridExplorer(goodput)
    view.__panel__().get_root(document)
    assert view.choices.batch_cap == 64 and view.choices.variable == "goodput_rps"
    assert view.choices.objective == "goodput_rps" and view.choices.best == "highest"


def test_memory_scale_is_clipped_to_the_headroom():
    """Issue 29 item 12: a deficit 1,000 times the largest headroom no longer washes out the
    cells that fit."""
    values = np.array([-15_000.0, -300.0, 5.0, 12.0, np.nan])
    assert signed_span(values) == 12.0
    assert signed_span(np.array([-8.0, -3.0])) == 8.0


def test_notebook_explorer_takes_any_dataset(document):
    pn.state._locations.pop(document, None)
    ds = xr.Dataset({"t": (("a", "b"), np.arange(12.0).reshape(3, 4) + 1)},
                    coords={"a": [1, 2, 3], "b": ["p", "q", "r", "s"]})
    view = GridExplorer(ds)
    view.__panel__().get_root(document)
    assert (view.choices.x, view.choices.y) == ("b", "a")
    fig = view._area.objects[0].object
    assert len(fig.renderers[0].data_source.data["t"]) == 12


def test_serve_datasets_points_the_list_at_a_folder(folder, monkeypatch, tmp_path):
    from cli import serve_cmd
    from cli.main import build_parser

    calls = []
    monkeypatch.delenv(catalog.DATASETS_ENV, raising=False)
    monkeypatch.setattr(serve_cmd.os, "execve", lambda *a: calls.append(a))
    args = build_parser().parse_args(["serve", "--port", "0", "--datasets", str(folder)])
    args.func(args)
    assert calls and calls[0][2][catalog.DATASETS_ENV] == str(folder.resolve())
    assert catalog.DATASETS_ENV not in serve_cmd.os.environ  # the server's, not this process's
    monkeypatch.setenv(catalog.DATASETS_ENV, str(folder.resolve()))  # as the server has it
    assert "my-sweep" in catalog.dataset_names()
    with pytest.raises(LabInputError, match="is not a folder"):
        serve_cmd.checked_datasets(str(tmp_path / "nope"))


def test_best_cells_heading_names_the_objective_with_its_units(served):
    """The heading read "Best cells by aggregate_tokens_per_s_per_gpu": it now gives the
    variable's long name and units, as its axis does."""
    view = served("?scope=dataset&objective=aggregate_tokens_per_s_per_gpu")
    html = view._query.objects[1].object
    heading = html.split("<b>")[1].split("</b>")[0]
    shown = axis_label(view._ds[view.choices.objective])
    assert heading == escape(f"Best cells by {shown} (highest first)")
    assert "_" not in heading and "(" in shown  # long name (unit), no variable name


def test_twelve_lines_are_twelve_looks():
    """Twelve context lines shared eight colours (128 and 12,288 both dark blue): each round of
    the palette now gets its own dash pattern."""
    import xarray as xr

    from apps.ui.views.grid_heatmap import lines_figure

    ds = xr.Dataset({"step_time_s": (("context", "batch"), np.arange(1.0, 37.0).reshape(12, 3),
                                     {"units": "s", "long_name": "step time"})},
                    coords={"context": 2 ** np.arange(7, 19), "batch": [1, 8, 64]})
    fig = lines_figure(ds, "step_time_s", "batch", "context")
    looks = {(r.glyph.line_color, str(r.glyph.line_dash)) for r in fig.renderers
             if type(r.glyph).__name__ == "Line"}
    assert len(looks) == 12


def test_a_shared_integer_dimension_is_named_as_an_integer(document):
    """An all-numeric dataset's best rows sharing block 128 said "Every row: block 128.0" (a
    row of mixed columns is read as floats)."""
    ds = xr.Dataset({"saved": (("block", "requests"), np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]))},
                    coords={"block": [16, 128], "requests": [1, 2, 3]})
    view = GridExplorer(ds)
    html = view._table_html(run_query(ds.sel(block=[128]), "saved", True, ("saved", "saved"), []))
    assert "Every row: block 128</p>" in html


def test_a_slider_of_floats_names_1000_as_1000(document):
    """Goodput's TTFT slider read "1e+03" under the slider's own "%.3g"."""
    ds = xr.Dataset({"v": (("a", "b", "ttft_ms"), np.ones((2, 2, 3)))},
                    coords={"a": [1, 2], "b": [1, 2], "ttft_ms": [250.0, 1000.0, 8000.0]})
    view = GridExplorer(ds)
    view.__panel__().get_root(document)
    slider = view._dim_widgets["ttft_ms"]
    shown = slider._process_param_change({"options": slider.options})["options"]
    assert shown == ["250", "1000", "8000"]


def test_a_dataset_it_cannot_draw_downloads_a_sentence_not_a_traceback(document):
    """In a notebook, screen_csv() of a one-dimension dataset raised AttributeError."""
    ds = xr.Dataset({"v": (("a",), np.arange(3.0))}, coords={"a": [1, 2, 3]})
    view = GridExplorer(ds)
    view.__panel__().get_root(document)
    with pytest.raises(LabInputError, match=r"^This dataset has no numeric variable over two "
                                            r"or more dimensions to draw\.$"):
        view.screen_csv()


def test_figures_equal_but_for_rounding_tie_in_the_ranking_and_the_frontier():
    """Batch 512 at 10.33 ms was ranked above batch 384 at 7.75 ms, and kept on the frontier,
    for 49,558.32550700354 against …353 tokens/s: the same figure by two paths of arithmetic."""
    rate = np.array([[49558.32550700354, 49558.32550700353, 40000.0, 49558.32550700355]])
    latency = np.array([[10.33, 7.748, 5.0, 20.66]])
    ds = xr.Dataset({"rate": (("one", "batch"), rate), "step": (("one", "batch"), latency)},
                    coords={"one": [0], "batch": [512, 384, 128, 1024]})
    result = run_query(ds, "rate", True, ("step", "rate"), [], k=3)
    assert list(result.best["batch"]) == [384, 512, 1024]  # the lowest latency first
    assert sorted(result.frontier["batch"]) == [128, 384]
    # 4.4e-16 apart across a rounding edge: still one figure (a fixed rounding split them)
    pair = xr.Dataset({"rate": (("one", "batch"), [[32768.0007358494915, 32768.000735849135]]),
                       "step": (("one", "batch"), [[2.0, 1.0]])},
                      coords={"one": [0], "batch": [8, 4]})
    edge = run_query(pair, "rate", True, ("step", "rate"), [], k=2)
    assert list(edge.best["batch"]) == [4, 8] and list(edge.frontier["batch"]) == [4]
    big = xr.concat([ds] * 3000, dim="one").assign_coords(one=np.arange(3000))  # sampled path
    assert sorted(set(run_query(big, "rate", True, ("step", "rate"), []).frontier["batch"])) \
        == [128, 384]


def test_a_plan_cells_link_opens_its_workload_on_its_gpus():
    """The plan grid's "Open" carried neither the cell's workload nor its GPUs: every row opened
    the default 1024/1024 plan on 8 GPUs. Its predicted latencies are no targets."""
    ds = lab.open_dataset("plan")
    row = {"model": "llama-3.1-70b", "gpu": "h200", "engine": "vllm", "weight_precision": "fp8",
           "layout": "tp4", "serving": "agg", "concurrency": 64, "workload": "8192/1024",
           "gpus": 4, "tpot_ms": 12.5, "ttft_ms": 300.0}
    link = experiment_link(ds, row)
    assert link.startswith("?view=plan&model=llama-3.1-70b&gpu=h200&budget=4&engine=vllm"
                           "&isl=8192&osl=1024")
    assert "tpot_ms" not in link and "ttft_ms" not in link


def test_colour_bars_and_the_frontier_write_plain_numbers(served):
    """The context grid's colour bar read "8.000e+13", the frontier's axes "1.400e+14" and
    "50000"; every one writes plain numbers with thousands separators now."""
    from apps.ui.plots.charts import PLAIN_NUMBER_JS

    view = served("?scope=dataset")
    bar = view._area.objects[0].object.right[0]
    assert bar.formatter.code == PLAIN_NUMBER_JS
    fig = view._query.objects[2].object
    assert fig.xaxis[0].formatter.code == fig.yaxis[0].formatter.code == PLAIN_NUMBER_JS


def test_an_empty_table_says_why_without_constraints(served):
    """"No cell meets the constraints." with the constraints box empty (memory was why)."""
    from sweeps.query import QueryResult

    view = served("?scope=view")
    empty = QueryResult(best=pd.DataFrame(), frontier=pd.DataFrame(), met=0, cells=4)
    assert view._table_html(empty).endswith(">No cell is valid and fits in memory.</p>")
    view.choices.where = "step_time_s<=0"
    assert view._table_html(empty).endswith(
        ">No cell is valid, fits in memory and meets the constraints.</p>")


def test_in_a_notebook_an_axis_onto_the_compared_dimension_swaps_them(document):
    """In a notebook (reads not deferred) the swap raised KeyError: A changed, the redraw ran,
    and B still held the old dimension's value."""
    ds = xr.Dataset({"v": (("a", "b", "c"), np.arange(27.0).reshape(3, 3, 3) + 1)},
                    coords={"a": [1, 2, 3], "b": [10, 20, 30], "c": [5, 6, 7]})
    view = GridExplorer(ds)
    view.__panel__().get_root(document)
    c = view.choices
    c.mode = "compare"
    axis, compared = c.x, c.compare
    c.x = compared
    assert (c.x, c.compare) == (compared, axis)
    assert c.compare_a in c.values[axis] and c.compare_b in c.values[axis]


def test_a_link_applied_after_the_page_is_built_is_corrected_as_at_first(served, document):
    """The browser's first address reaches the server after the page is built; its clashing
    compare= and facet= were applied as they were (a KeyError and a TypeError in the log)."""
    view = served("")
    location = pn.state._locations[document]
    location.search = "?mode=compare&compare=batch&compare_a=16&compare_b=8"
    c = view.choices
    assert c.mode == "compare" and c.compare not in (c.x, c.y)
    assert c.compare_a in c.values[c.compare] and c.compare_b in c.values[c.compare]
    assert f"{c.compare} {c.compare_a}" in view._area.objects[0].object.title.text
    location.search = "?mode=heatmap&facet=batch&x=batch"
    assert (c.x, c.facet) == ("batch", "none")
    assert "The small multiples must be a third dimension" in said(view)


def test_an_unknown_key_is_told_once_the_datasets_inputs_exist(served):
    """The grid's keys depend on the dataset (its dimensions), so a misspelt one is judged by
    the dataset's own reader, and a key of the dataset is never called unknown."""
    view = served("?view=grid&dataset=decode&batchh=8&x=tp&tp=2")
    assert ("The link&#x27;s batchh= (did you mean batch=?) is not an input of this page, so "
            "it was ignored.") in said(view)
    keys = [p.split("=", 1)[0] for p in pn.state.location.search[1:].split("&")]
    assert "batchh" not in keys and {"view", "dataset", "x", "tp"} <= set(keys)
    assert view.choices.x == "tp"
    good = served("?view=grid&dataset=decode&x=tp&batch=8&mode=lines")
    assert "not an input" not in said(good)


def test_a_facets_title_shows_its_value_in_the_units_it_names():
    """A facet over a dimension stored in seconds was titled "at slo 0.05 ms"."""
    from apps.ui.views.grid import facet_title

    ds = xr.Dataset({"y": (("slo", "batch"), np.ones((2, 2)), {"units": "s", "long_name": "t"})},
                    coords={"slo": ("slo", [0.05, 1.0], {"units": "s"}), "batch": [1, 2]})
    assert facet_title(ds, "y", "slo", ds.slo.values[0]) == "T (ms) at slo 50 ms"
    assert facet_title(ds, "y", "batch", ds.batch.values[0]) == "T (ms) at batch 1 sequence"


def test_a_repeated_axis_is_applied_by_neither_value_as_the_page_says(served):
    """``x=batch&x=context`` said "none of its values was applied" while x became context: the
    dataset's reader had rewritten the address, keeping the last, before the axes' reader read
    it."""
    default_x = served("?view=grid&dataset=decode").choices.x
    view = served("?view=grid&dataset=decode&x=tp&x=context")
    assert "The link gives x= 2 times, so none of its values was applied." in said(view)
    assert view.choices.x == default_x
    assert pn.state.location.search.count("x=") == 1


def test_the_best_cells_table_writes_each_column_with_one_number_of_decimals(served):
    """The table read 7.748, 10.33, 15.5, 20.66 in one column and batch 1024 beside 49,560;
    each row's link had no heading and read only "Open"."""
    from apps.ui.views.grid import column_decimals, table_number, table_text

    assert column_decimals(np.array([7.748, 10.33, 15.5, 20.66])) == 2
    assert column_decimals(np.array([49_558.3, 1_000.0])) == 0
    assert column_decimals(np.array([0.000123, np.nan])) == 6
    assert table_text(np.int64(1024)) == "1,024" and table_text("fp8") == "fp8"
    assert table_number(0.4, 0) == "0.4" and table_number(12_000.2, 0) == "12,000"
    assert table_number(0.0, 0) == "0" and table_number(7.748, 2) == "7.75"
    view = served("?view=grid&dataset=decode")
    html = next(p.object for p in view._query.objects
                if "lab-grid-table" in str(getattr(p, "object", "")))
    assert "<th>Page</th>" in html and 'aria-label="Open this cell on its experiment page"' in html
    cells = [c for c in html.split("<td>")[1:] if c[:1].isdigit()]
    assert cells and all("e+" not in c for c in cells)


def test_an_unknown_key_in_an_address_changed_later_is_judged_too(served):
    """The dataset's reader, which judges no key, took an address it left as it was for its
    own write, and the axes' reader then skipped it: ``zz=`` stayed, unreported."""
    view = served("?view=grid&dataset=decode")
    pn.state.location.search = pn.state.location.search + "&zz=1"
    assert "The link&#x27;s zz= is not an input of this page" in said(view)
    assert "zz=" not in pn.state.location.search
