"""Issue 37 items 1, 4, 5 and 9 without a browser: every powers-of-two slider sets its input
from the released position the browser sends (an index) and ends at the model's own limit;
grid rows link to a page whose numbers are the row's; the sidebar's derivation link carries
the configuration; a "Not available" reason follows the inputs; experiment 9 offers only the
measured tp degrees and its chart never claims inputs it does not show."""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl

import numpy as np
import panel as pn
import pytest
from panel.io.location import Location

from apps.ui.panel_compat import DimensionSlider
from apps.ui.parts.cards import CardsView
from apps.ui.parts.input_widgets import Select, input_panel
from apps.ui.shell.url_sync import url_inputs, url_text
from apps.ui.shell.url_values import strict_selectors, url_problems
from apps.ui.views.app import (
    carried_values,
    derivation_values,
    navigation_markdown,
    page_content,
)
from apps.ui.views.grid import GridExplorer
from apps.ui.views.live_inputs import shown_inputs
from apps.ui.views.measured_page import STALE, MeasuredPage
from apps.ui.views.pages import DERIVATION, experiment_class
from lab.catalog import get_model
from lab.experiments import all_experiments
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.registry import record
from sweeps import catalog_of_datasets as catalog
from sweeps.grid_files import from_mapping
from sweeps.grid_kinds import grid_kind
from sweeps.runner import Runner
from sweeps.store import write_experiment

PAGES = [c.slug for c in all_experiments()] + [DERIVATION.slug]


def page_sliders(slug: str):
    """The experiment of page ``slug`` and its powers-of-two sliders, built as the page
    builds its inputs."""
    cls = BatchBottleneck if slug == DERIVATION.slug else experiment_class(slug)
    exp = cls()
    names = url_inputs(exp)
    strict_selectors(exp, names)
    panel = input_panel(exp, names if slug == DERIVATION.slug else shown_inputs(exp, names))
    sliders = [w for w in panel.layout.objects
               if any(c.startswith("lab-log-") for c in w.css_classes or [])]
    return exp, sliders


@pytest.fixture
def throttled():
    """Panel set as the lab serves it (``apps/inference_lab.py``): sliders report only their
    released position."""
    with pn.config.set(throttled=True):
        yield


# -- item 1: the sliders work and stop at the model's limit -------------------------------
@pytest.mark.parametrize("slug", PAGES)
def test_every_powers_of_two_slider_sets_its_input_from_a_released_position(slug, caplog,
                                                                            throttled):
    """The browser sends a released position as the option's index (``value_throttled``);
    panel-material-ui's slider read it as an option ("ValueError: 3 not in list")."""
    exp, sliders = page_sliders(slug)
    for slider in sliders:
        name = slider.css_classes[0].removeprefix("lab-log-")
        assert isinstance(slider, DimensionSlider)
        for index in (0, len(slider.options) - 1):
            with caplog.at_level(logging.ERROR):
                slider._process_events({"value_throttled": index})
            assert getattr(exp, name) == slider.options[index], (slug, name, index)
        assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_context_slider_ends_at_the_models_maximum_context():
    exp, sliders = page_sliders("memory")
    context = next(s for s in sliders if "lab-log-context" in s.css_classes)
    assert context.options[-1] == get_model("llama-3.1-8b").max_context == 131_072
    exp.model = "qwen2.5-7b"  # 32,768 tokens
    assert context.options[-1] == get_model("qwen2.5-7b").max_context == 32_768
    assert context.value == 8192 and exp.context == 8192  # the input itself is untouched
    exp.context = 131_072  # typed past this model's limit: the slider shows its end
    assert context.value == 32_768 and exp.error is not None


# -- item 5: the reason follows the inputs ------------------------------------------------
def shown_reason(view: CardsView) -> str:
    return view._pane.object


def test_the_reason_follows_the_inputs_on_page_1():
    exp = BatchBottleneck()
    view = CardsView(experiment=exp)
    exp.context = 262_144
    assert "262,144" in shown_reason(view)
    exp.context = 524_288
    assert "524,288" in shown_reason(view)
    exp.gpu = "a100-sxm-80gb"
    exp.precision = "fp8"
    exp.context = 8192
    assert "no FP8 peak" in shown_reason(view) and "524,288" not in shown_reason(view)
    exp.precision = "bf16"
    assert "Not available" not in shown_reason(view)


def test_the_reason_follows_the_draft_on_page_10():
    exp = experiment_class("speculative")()
    view = CardsView(experiment=exp)
    exp.draft = "qwen2.5-7b"
    first = shown_reason(view)
    assert "Not available" in first and "Qwen" in first
    exp.draft = "llama-3.1-70b"
    second = shown_reason(view)
    assert "Not available" in second and "Qwen" not in second and second != first


def test_page_10_offers_drafters_by_name_that_it_accepts():
    """Item 10: the draft list showed ids and offered drafters the page then refused (another
    vocabulary, or not smaller than the target)."""
    from apps.ui.parts.input_extras import param_widgets

    exp = experiment_class("speculative")()
    box = param_widgets(input_panel(exp, ["model", "draft"]))["draft"]
    for target in ("llama-3.1-8b", "qwen2.5-72b", "llama-3.1-405b"):
        exp.param.update(model=target, draft="mtp")
        offered = dict(box.options)
        assert offered["MTP head (the target's own)"] == "mtp"
        assert len(offered) > 1
        for label, key in offered.items():
            if key != "mtp":
                assert label == get_model(key).name  # a name, not an id
            exp.draft = key
            assert exp.error is None, (target, key, exp.error)
    exp.param.update(model="llama-3.1-8b", draft="mtp")
    assert "qwen2.5-7b" not in box.options.values()
    assert "llama-3.1-70b" not in box.options.values()  # not smaller than the target
    # a draft in force that the new target cannot use stays, its reason in its name
    exp.draft = "llama-3.2-1b"
    exp.model = "qwen2.5-72b"
    assert "Llama 3.2 1B (another vocabulary than Qwen2.5 72B's)" in box.options
    assert box.value == "llama-3.2-1b" and "vocabulary" in str(exp.error)


def page_dropdowns(content) -> dict[str, Select]:
    """The shown dropdowns of a page's inputs, by input name (the page's own layout)."""
    root = content.__panel__() if hasattr(content, "__panel__") else content
    return {w.css_classes[0].removeprefix("lab-input-"): w for w in root.select(Select)
            if w.visible and w.css_classes and w.css_classes[0].startswith("lab-input-")}


def other_option(box: Select) -> tuple[str, object]:
    """A ``(label, value)`` the dropdown offers other than its value in force."""
    return next((label, value) for label, value in zip(box.labels, box.values, strict=True)
                if value != box.value)


def address(name: str) -> str | None:
    """The value of ``name`` in the page's address."""
    return dict(parse_qsl(pn.state.location.search.lstrip("?"))).get(name)


@pytest.mark.parametrize("slug", PAGES)
def test_every_dropdown_set_by_a_link_follows_the_next_choice(document, slug):
    """Item 5 after a link (every dropdown of every page; page 1's GPU and page 10's draft in
    Chromium: ``test_controls_browser.py``): a link sets each dropdown away from its default,
    then the reader chooses another option in each, as the browser sends it (the option's
    label); the input, the address and the cards follow, and the collapsed "Show the
    calculation" holds no reason of other inputs (it kept the link's one)."""
    pn.state._locations[document] = Location(search=f"?view={slug}")
    defaults = page_dropdowns(page_content(slug))
    link = "&".join(f"{n}={url_text(b.param.value, other_option(b)[1])}"
                    for n, b in defaults.items())
    pn.state._locations[document] = Location(search=f"?view={slug}&{link}")
    content = page_content(slug)
    exp = content.experiment
    boxes = page_dropdowns(content)
    assert boxes.keys() == defaults.keys()
    for name, box in boxes.items():
        label, value = other_option(box)
        box._process_events({"value": label})
        assert getattr(exp, name) == value, (slug, name)
        assert address(name) == url_text(exp.param[name], value), (slug, name)
        assert box.value == value
        for card in content.__panel__().select(pn.Card):
            body = card.objects[0].object if card.objects else ""
            if "lab-calculation" in card.css_classes and exp.error is None:
                assert "lab-error" not in str(body), (slug, name)


INVALID_LINKS = ("gpu=a100-sxm-80gb&precision=fp8", "model=qwen2.5-7b&tp=8")
"""Links to a configuration with no numbers: an FP8 A100, and a tp that does not divide the
heads (experiment 3 keeps that one as an "unavailable" card, not a reason)."""


@pytest.mark.parametrize("link", INVALID_LINKS)
def test_a_page_opened_on_invalid_inputs_loads_and_says_why(document, link):
    """``?view=tp&gpu=a100-sxm-80gb&precision=fp8`` (and ``?view=precision&…``) blanked the
    page: its hidden chart was drawn from the defaults but flagged over budget with the
    link's inputs, which raised; ``?view=tp&model=qwen2.5-7b&tp=8`` raised in the chart data
    and in the over-budget card."""
    values = dict(parse_qsl(link))
    pages = [s for s in PAGES if s != DERIVATION.slug
             and set(values) <= set(url_inputs(experiment_class(s)()))]
    assert len(pages) >= 5
    for slug in pages:
        pn.state._locations[document] = Location(search=f"?view={slug}&{link}")
        exp = page_content(slug).experiment
        assert {n: str(getattr(exp, n)) for n in values} == values, slug
        cards = CardsView(experiment=exp)._html(exp.result)  # page 8 uses them switched on
        assert exp.error is None or "Not available" in cards, slug


def test_experiment_3_draws_a_tp_that_does_not_divide_the_heads(document):
    """Chosen on the page, Qwen2.5 7B at tp 8 is an "unavailable" card with the chart of the
    tp degrees that are valid; the cards and the chart raised instead and kept the last
    numbers."""
    pn.state._locations[document] = Location(search="?view=tp")
    content = page_content("tp")
    exp, boxes = content.experiment, page_dropdowns(content)
    for name, value in (("model", "qwen2.5-7b"), ("tp", 8)):
        boxes[name]._process_events({"value": boxes[name].labels[boxes[name].values.index(
            value)]})
    content.chart._update()  # the redraw a server runs on the next tick
    assert exp.tp == 8 and exp.error is None
    assert "unavailable" in CardsView(experiment=exp)._html(exp.result)
    assert content.chart.data[1]["tp"] == 8
    assert content.chart.data[0]["valid"].values.tolist() == [True, True, True, False]


# -- item 4: grid rows open their own configuration ---------------------------------------
SECTIONS = {
    "decode": {"model": ["llama-3.1-70b", "qwen2.5-7b"], "gpu": ["h200"], "tp": [2, 4],
               "precision": ["fp8"], "batch": [16, 256], "context": [128, 4096], "page": 32,
               "budget": 0.8},
    "prefill": {"chunk": [256, 1024], "prompt": [4096, 8192], "c0_ms": 3.0,
                "deadline_ms": 900.0},
    "prefix": {"prefix": [100, 300], "requests": [8, 64], "block": [16, 32],
               "model": "qwen2.5-7b", "tp": 2, "own": 50},
    "goodput": {"batch_cap": [4, 16], "ttft_ms": [500.0], "tpot_ms": [20.0],
                "model": "llama-3.2-1b", "gpu": "h200", "c0_ms": 3.0},
    "context": {"tokens": [1024, 65536], "window": [0, 4096], "a_ms": 0.02},
    "speculative": {"batch": [4, 64], "context": [1024, 4096], "k": [2, 4], "alpha": [0.7],
                    "model": "llama-3.1-70b", "draft": "llama-3.2-1b", "gpu": "h200",
                    "tp": 4, "precision": "fp8"},
}
"""A small grid per experiment, away from the pages' defaults in its dimensions and its
constants (a link that drops either opens another configuration)."""

FIXED = {"decode": "&model=llama-3.1-70b&tp=4&x=batch&y=context",
         "speculative": "&k=4&x=batch&y=context"}
"""Selectors held away from their first value, so the slice's fixed dimensions matter."""


@pytest.fixture(scope="module")
def grids(tmp_path_factory):
    """A datasets folder with :data:`SECTIONS` written under each experiment's name."""
    root = tmp_path_factory.mktemp("grid-links")
    for slug, section in SECTIONS.items():
        grid = from_mapping({slug: section}, "links", "links")
        write_experiment(grid_kind(slug), grid.resolve(slug), grid.name, root / f"{slug}.zarr",
                         Runner(None, "threads"))
    return root


@pytest.fixture
def explorer(document, grids, monkeypatch):
    monkeypatch.setenv(catalog.DATASETS_ENV, str(grids))

    def build(search: str) -> GridExplorer:
        pn.state._locations[document] = Location(search=search)
        view = GridExplorer()
        view.__panel__().get_root(document)
        return view

    return build


@pytest.mark.parametrize("slug", list(SECTIONS))
def test_every_grid_row_opens_a_page_with_the_rows_numbers(explorer, slug):
    """Item 4: a row linked to ``?view=decode&batch=256&context=128`` (page 1 then opened on
    its defaults, Llama 3.1 8B on an H100 at tp 1 in BF16)."""
    view = explorer(f"?dataset={slug}{FIXED.get(slug, '')}")
    assert view.result is not None and len(view.result.best) > 0
    html = view._query.objects[1].object
    links = [h.replace("&amp;", "&") for h in
             re.findall(r'class="lab-grid-open" href="([^"]+)"', html)]
    assert len(links) == len(view.result.best)
    cls = record(slug).experiment_class()
    for link, row in zip(links, view.result.best.to_dict("records"), strict=True):
        query = dict(parse_qsl(link[1:]))
        assert query["view"] == slug
        exp = cls()
        names = url_inputs(exp)
        strict_selectors(exp, names)
        accepted, problems = url_problems(exp, names, link)
        assert problems == [], link
        exp.param.update(accepted)
        assert exp.error is None, (link, exp.error)
        compared = [v for v in row if v in exp.result and v in view._ds.data_vars]
        assert compared, row
        for v in compared:
            assert float(exp.result[v]) == pytest.approx(float(row[v]), rel=1e-9,
                                                         nan_ok=True), (link, v)
        for d, value in view.choices.at().items():  # every fixed dimension travelled
            if d in names:
                assert str(query[d]) == str(row.get(d, value)).lower() or \
                    np.isclose(float(query[d]), float(row.get(d, value))), (link, d)


def test_the_derivation_link_carries_the_decode_configuration():
    class Holder:
        experiment = BatchBottleneck(model="llama-3.1-70b", tp=4, batch=64, context=2048,
                                     kv_precision="fp8")

    text = navigation_markdown("decode", carried_values(Holder(), dark=False),
                               derivation_values(Holder(), dark=False))
    link = next(line for line in text.splitlines() if "decode derivation" in line)
    for pair in ("model=llama-3.1-70b", "tp=4", "batch=64", "context=2048",
                 "kv_precision=fp8"):
        assert pair in link, link
    memory = next(line for line in text.splitlines() if "view=memory" in line)
    assert "tp=4" not in memory  # the other links carry what they always did


def test_the_derivation_link_carries_only_what_the_derivation_accepts():
    class Measured:  # experiment 9's tp runs to 64; the derivation's is one of 1, 2, 4, 8
        experiment = experiment_class("measured")()

    Measured.experiment.tp = 64
    values = derivation_values(Measured(), dark=False)
    assert "tp" not in values and "kind" not in values
    assert values["batch"] == str(Measured.experiment.batch)


# -- item 9: experiment 9's tp and chart title --------------------------------------------
def test_measured_tp_offers_only_measured_degrees(document, throttled):
    page = MeasuredPage()
    exp = page.experiment
    assert page.tp_slider.options == exp.tps() == [1, 2, 4]
    page.tp_slider._process_events({"value_throttled": 2})
    assert exp.tp == 4 and exp.error is None


def test_measured_chart_title_never_names_other_inputs_as_its_own(document):
    page = MeasuredPage()
    exp = page.experiment

    def title() -> str:
        return page.chart.object.opts.get().kwargs.get("title", "")

    exp.tp = 2
    assert title().endswith("at tp 2")
    exp.tp = 3  # set directly (a link's tp=3 moves to 4): not measured
    assert exp.error is not None
    assert title().endswith(STALE) and "tp 3" not in title()


def test_engines_are_named_as_their_projects_write_them_and_all_comes_first():
    """The plan's and the served page's engine dropdowns read "vllm", "trtllm"; experiment 11's
    model and GPU filters listed "all" last, its mode and workload filters first."""
    from apps.ui.parts.input_extras import catalog_options

    assert list(catalog_options("engine", ["all", "trtllm", "vllm", "sglang"]).items()) == [
        ("all", "all"), ("TensorRT-LLM", "trtllm"), ("vLLM", "vllm"), ("SGLang", "sglang")]
    assert catalog_options("engine", ["ideal"]) == {"Ideal (the lab's floor)": "ideal"}
    gpus = list(catalog_options("gpu", ["h200", "all", "h100-sxm"]).items())
    assert gpus == [("all", "all"), ("NVIDIA H100 SXM", "h100-sxm"), ("NVIDIA H200 SXM", "h200")]
    assert list(catalog_options("model", ["org/unknown", "llama-3.1-8b"]).values()) == [
        "llama-3.1-8b", "org/unknown"]  # an id the catalog does not know: as itself, last
