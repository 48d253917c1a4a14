"""URL values and typed inputs on an experiment page, at the Bokeh-document level: a value the
page may not take is reported in one sentence and not applied; a file path never reaches the
experiment; valid values apply as before."""

from __future__ import annotations

import json

import panel as pn
import pytest
from panel.io.location import Location

from apps.ui.shell.url_values import accepts, page_value_problem, url_problems
from apps.ui.views.experiment_view import ExperimentView
from apps.ui.views.pages import experiment_class
from lab.points.decode_points import DecodeConfig

DEFAULTS = DecodeConfig()


def page(document, slug: str, search: str = "") -> ExperimentView:
    """An experiment page built as the server builds it for a request with ``search``."""
    pn.state._locations[document] = Location(search=search)
    view = ExperimentView(experiment=experiment_class(slug)())
    view.__panel__().get_root(document)
    return view


def message(view: ExperimentView) -> str:
    return view.message.object if view.message.visible else ""


@pytest.mark.parametrize(("query", "name", "sentence"), [
    ("batch=abc", "batch", "The link's batch=abc is not a whole number from 1 to"),
    ("batch=99999999", "batch", "The link's batch=99999999 is not a whole number from 1 to"),
    ("tp=7", "tp", "The link's tp=7 is not one of 1, 2, 4, 8, so the page shows tp=1."),
    ("tp=true", "tp", "The link's tp=true is not one of 1, 2, 4, 8"),
    ("precision=zzz", "precision", "The link's precision=zzz is not one of bf16, fp8"),
    ("budget=1.5", "budget", "The link's budget=1.5 is not a number from 0.01 to 1"),
    ("reserve_gb=-1", "reserve_gb", "The link's reserve_gb=-1 is not a number from 0 to"),
])
def test_bad_url_value_is_reported_and_not_applied(document, query, name, sentence):
    view = page(document, "batch", f"?view=batch&{query}")
    assert sentence.replace("'", "&#x27;") in message(view)
    assert getattr(view.experiment, name) == getattr(DEFAULTS, name)
    assert view.experiment.error is None and view.experiment.result is not None
    shown = dict(p.split("=", 1) for p in pn.state.location.search[1:].split("&"))
    assert shown["view"] == "batch" and shown[name] != query.split("=", 1)[1]


def test_url_file_paths_never_reach_the_experiment(document, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 4096}))
    gpu = tmp_path / "gpu.toml"
    gpu.write_text("name = 'secret'\n")
    view = page(document, "batch", f"?view=batch&model={config}&gpu={gpu}")
    assert (view.experiment.model, view.experiment.gpu) == (DEFAULTS.model, DEFAULTS.gpu)
    text = message(view)
    assert "The link&#x27;s model=" in text and "The link&#x27;s gpu=" in text
    assert view.experiment.error is None  # nothing about the files: never opened


def test_a_link_naming_experiment_7s_trace_file_is_told_and_the_key_dropped(document):
    """A trace is a file: a link's ``trace=`` is never opened, and the page said nothing while
    the address went on showing ``trace=/etc/passwd`` over the shipped trace's numbers."""
    view = page(document, "goodput", "?view=goodput&trace=/etc/passwd&batch_cap=32")
    shipped = type(view.experiment)().trace
    assert view.experiment.trace == shipped and view.experiment.batch_cap == 32
    assert ("The link&#x27;s trace= names a file, which a page never opens from a link "
            "(upload one on the page), so it was ignored.") in message(view)
    assert "trace" not in dict(p.split("=", 1) for p in pn.state.location.search[1:].split("&"))
    assert "passwd" not in message(view)


@pytest.mark.parametrize(("slug", "key"), [("served", "measurements"), ("measured", "measurements"),
                                         ("plan", "model_config"), ("plan", "candidates")])
def test_a_link_naming_an_upload_only_input_is_told_and_the_key_dropped(document, slug, key):
    """Experiments 9, 11 and 12 take their data set (or a model's config.json) from an upload
    only: a link naming one was kept silently in the address."""
    from apps.ui.views.measured_page import MeasuredPage
    from apps.ui.views.plan_page import PlanPage
    from apps.ui.views.served_page import ServedPage

    pages = {"served": ServedPage, "measured": MeasuredPage, "plan": PlanPage}
    pn.state._locations[document] = Location(search=f"?view={slug}&{key}=/etc/passwd")
    view = pages[slug]()
    view.__panel__().get_root(document)
    assert (f"The link&#x27;s {key}= names a file, which a page never opens from a link "
            "(upload one on the page), so it was ignored.") in view.message.object
    assert key not in dict(p.split("=", 1) for p in pn.state.location.search[1:].split("&"))


def test_url_changed_later_to_a_path_is_refused(document, tmp_path):
    view = page(document, "memory", "?view=memory")
    pn.state.location.search = f"?view=memory&model={tmp_path}"
    assert view.experiment.model == DEFAULTS.model
    assert "The link&#x27;s model=" in message(view)


def test_valid_url_values_apply_without_a_message(document):
    view = page(document, "batch", "?view=batch&model=qwen2.5-7b&tp=2&batch=64&budget=0.8")
    exp = view.experiment
    assert (exp.model, exp.tp, exp.batch, exp.budget) == ("qwen2.5-7b", 2, 64, 0.8)
    assert message(view) == ""


@pytest.mark.parametrize(("name", "value", "sentence"), [
    ("budget", 1.5, "Memory budget (share of capacity) must be a number from 0.01 to 1"),
    ("reserve_gb", -1.0, "Reserve (GB) must be a number from 0 to 100,000"),
    ("batch", 5000, "Batch (sequences) must be a whole number from 1 to"),
    ("model", "/etc/passwd", "Model must be one of llama-3.2-1b"),
])
def test_typed_value_out_of_range_shows_a_sentence(document, name, value, sentence):
    view = page(document, "batch", "?view=batch")
    widget = view.inputs._widgets[name]
    before = getattr(view.experiment, name)
    widget._process_events({"value": value})  # what the browser sends; raised before the fix
    assert getattr(view.experiment, name) == before == widget.value
    assert sentence in message(view)
    (model, _parent), = widget._models.values()
    # the box in the browser goes back as well (a dropdown shows the value's name, issue 11)
    shown = (widget.labels[widget.values.index(widget.value)] if hasattr(widget, "labels")
             else widget.value)
    assert model.data.value == shown


def test_a_valid_change_after_a_refused_one_clears_the_sentence(document):
    view = page(document, "batch", "?view=batch")
    widget = view.inputs._widgets["budget"]
    widget._process_events({"value": 1.5})
    assert message(view)
    widget._process_events({"value": 0.5})
    assert view.experiment.budget == 0.5 and message(view) == ""


def test_accepted_values_are_the_declared_ones():
    exp = experiment_class("batch")()
    assert accepts(exp.param.tp, 2) and not accepts(exp.param.tp, True)
    assert not accepts(exp.param.tp, 2.0) and not accepts(exp.param.model, "/etc/passwd")
    assert not accepts(exp.param.budget, float("nan"))
    assert page_value_problem(exp.param.batch, 64) is None
    accepted, problems = url_problems(exp, ["batch", "tp"], "?batch=64&tp=3&view=batch")
    assert accepted == {"batch": 64} and len(problems) == 1


def test_page_selectors_are_strict_but_the_classes_keep_paths_for_the_cli(document):
    view = page(document, "batch")
    with pytest.raises(ValueError):
        view.experiment.model = "/etc/passwd"
    cls = experiment_class("batch")
    assert cls.param.model.check_on_set is False  # CLI and notebook: a config.json path


# --- One road from the URL to every page's inputs (issue 33, items 1 and 4) ---------------------

LONG_DIGITS = "9" * 5000
"""Longer than Python's integer-string limit (4,300 digits)."""


def derivation_page(document, search: str):
    """The derivation page built as the server builds it for a request with ``search``."""
    from apps.ui.views.derivation import DerivationView

    pn.state._locations[document] = Location(search=search)
    view = DerivationView()
    view.__panel__().get_root(document)
    return view


def test_derivation_page_never_opens_a_path_from_its_url(document, tmp_path, monkeypatch):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 4096}))
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open",
                        lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    view = derivation_page(document, f"?view=derivation&model=/etc/passwd&gpu={config}"
                                     "&batch=9999999999")
    assert (view.experiment.model, view.experiment.gpu, view.experiment.batch) == (
        DEFAULTS.model, DEFAULTS.gpu, DEFAULTS.batch)
    assert view.experiment.error is None
    assert not [f for f in opened if "passwd" in f or str(config) in f]
    text = view.message.object
    assert "The link&#x27;s model=/etc/passwd is not one of" in text
    assert "The link&#x27;s batch=9999999999 is not a whole number from 1 to" in text
    shown = dict(p.split("=", 1) for p in pn.state.location.search[1:].split("&"))
    assert shown["model"] == DEFAULTS.model and shown["batch"] == str(DEFAULTS.batch)


def test_derivation_page_refuses_a_path_set_later_from_the_url(document):
    view = derivation_page(document, "?view=derivation")
    pn.state.location.search = "?view=derivation&model=/etc/passwd&batch=16"
    assert view.experiment.model == DEFAULTS.model and view.experiment.batch == 16
    assert "model=/etc/passwd" in view.message.object


@pytest.mark.parametrize("slug", [cls.slug for cls in __import__(
    "apps.ui.views.pages", fromlist=["experiment_classes"]).experiment_classes()])
def test_a_5000_digit_value_is_refused_in_one_sentence_on_every_experiment_page(document, slug):
    from apps.ui.views.pages import page_builder

    cls = experiment_class(slug)
    names = [n for n in cls.input_names() if n in ("batch", "context", "tp", "m", "prompt_tokens")]
    name = names[0] if names else cls.input_names()[0]
    pn.state._locations[document] = Location(search=f"?view={slug}&{name}={LONG_DIGITS}")
    view = page_builder(slug)(experiment=cls())
    view.__panel__().get_root(document)
    assert f"The link&#x27;s {name}= value is 5,000 characters long" in view.message.object
    assert view.experiment.error is None
    assert LONG_DIGITS not in pn.state.location.search


def test_panels_location_survives_a_5000_digit_value():
    from apps.ui.panel_compat import parse_query_value_by_value

    parse_query_value_by_value()
    location = Location(search=f"?view=decode&batch={LONG_DIGITS}&tp=2")
    assert location.query_params == {"view": "decode", "tp": 2}


def test_url_values_of_nan_and_markup_are_refused_on_the_derivation_page(document):
    view = derivation_page(document, "?view=derivation&batch=nan&context=<b>x</b>&tp=NaN"
                                     "&precision=<script>alert(1)</script>&budget=nan")
    exp = view.experiment
    assert (exp.batch, exp.context, exp.tp, exp.precision, exp.budget) == (
        DEFAULTS.batch, DEFAULTS.context, DEFAULTS.tp, DEFAULTS.precision, DEFAULTS.budget)
    assert "<script>" not in view.message.object and "&lt;script&gt;" in view.message.object
    assert exp.error is None


def query_keys() -> list[str]:
    return [p.split("=", 1)[0] for p in pn.state.location.search[1:].split("&")]


def test_a_misspelt_key_is_told_with_the_input_it_meant_and_dropped(document):
    """``?bacth=64`` changed nothing and the page said nothing: a reader saw batch 1 and could
    not tell why. The key is named, the likely input offered, and the address cleaned."""
    view = page(document, "batch", "?view=batch&bacth=64&tp=2")
    assert view.experiment.tp == 2 and view.experiment.batch == DEFAULTS.batch
    assert ("The link&#x27;s bacth= (did you mean batch=?) is not an input of this page, so it "
            "was ignored.") in message(view)
    assert "bacth" not in query_keys() and "tp" in query_keys()


def test_several_unknown_keys_make_one_sentence_and_a_later_address_is_judged_too(document):
    view = page(document, "batch", "?view=batch&a=1&b=2&c=3&d=4&e=5")
    assert ("The link&#x27;s a=, b=, c= and 2 more keys are not inputs of this page, so they "
            "were ignored.") in message(view)
    pn.state.location.search = "?view=batch&Model=qwen2.5-7b"
    assert ("The link&#x27;s Model= (did you mean model=?) is not an input of this page, so it "
            "was ignored.") in message(view)
    assert "a=" not in message(view)  # the first address's sentence is replaced
    assert view.experiment.model == DEFAULTS.model and "Model" not in query_keys()


def test_the_keys_a_sidebar_link_carries_are_not_unknown_on_a_page_without_them(document):
    """The sidebar carries model, GPU and precision (and the theme) to every page; a page
    without one of those inputs ignores it without a word."""
    view = page(document, "goodput", "?view=goodput&theme=dark&precision=fp8&model=llama-3.1-8b")
    assert "not an input" not in message(view)



def test_a_tiny_lower_bound_is_written_as_it_is_and_a_box_steps_by_the_inputs_size(document):
    """c_ms=0 was refused as "not a number from 0 to 1,000,000,000" (its bound, 1e-200, printed
    with six decimals); c's box stepped by 0.1 ms from 0.0000005 ms."""
    view = page(document, "context", "?view=context&c_ms=0")
    assert "c_ms=0 is not a number from 1e-200 to 1,000,000,000" in message(view)
    steps = {w.name: w.step for w in view.inputs.select() if hasattr(w, "step")}
    assert steps["c (ms per pair)"] == 1e-7 and steps["a (ms per token)"] == 0.001


def test_a_repeated_page_name_is_told_and_the_address_keeps_the_page_shown(document):
    """``?view=batch&view=memory`` showed experiment 1 while the address became view=memory:
    a reload or a shared link opened another page."""
    view = page(document, "batch", "?view=batch&view=memory")
    assert ("The link gives view= 2 times, so the first, &#x27;batch&#x27;, is used."
            in message(view))
    assert [v for k, v in (p.split("=", 1) for p in pn.state.location.search[1:].split("&"))
            if k == "view"] == ["batch"]
