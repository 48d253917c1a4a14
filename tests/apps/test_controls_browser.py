"""Issue 37 items 1, 4, 5, 6 and 9 in headless Chromium against the session's served lab:
powers-of-two sliders move their inputs (and an edit adds no history entry; experiment 9
offers only its measured tp, batch and context values), a grid row opens its own
configuration and the derivation link carries it, and the "Not available" reason follows the
inputs (also after a link set a dropdown).

Cheap by design (seven page loads in all): every wait is on an explicit condition, never a
sleep; one test walks several pages of the one served lab (the session's ``lab_server``);
what needs no browser is in ``test_controls_unit.py``.
"""

from __future__ import annotations

import re
import time

from lab_browser import choose, open_page, set_number, wait_idle
from playwright.sync_api import expect

from apps.ui.parts.input_extras import is_wide_count, powers_of_two, slider_range
from apps.ui.shell.url_sync import url_inputs
from apps.ui.views.live_inputs import shown_inputs
from apps.ui.views.pages import experiment_class
from lab.experiments.base import Experiment

SLIDER_PAGES = ("decode", "measured")
"""Pages whose powers-of-two sliders are moved here: experiment 1, the generic page (batch,
context at the model's own limit, KV page; every other generic page, and the derivation,
builds its sliders with the same code), and experiment 9, a page of its own (its tp, batch
and context sliders over the measured values alone). Every slider of
every page is moved without a browser in ``test_controls_unit.py``, with the very message the
browser sends."""


MEASURED_ENDS = (("tp", (("End", 4),)), ("batch", (("End", 512), ("Home", 1))),
                 ("context", (("End", 131_072), ("Home", 1024))))
"""Experiment 9's sliders moved to their ends: each offers only the values measured for
32-8-128 (and the axes before it), so each end is a measured point."""


def page_url(base: str, view: str, query: str = "") -> str:
    return f"{base}/inference_lab?view={view}{query}"


def log2_inputs(slug: str) -> tuple[Experiment, list[str]]:
    """The default experiment of page ``slug`` and its inputs with a powers-of-two slider."""
    exp = experiment_class(slug)()
    names = shown_inputs(exp, url_inputs(exp))
    return exp, [n for n in names if is_wide_count(type(exp).param[n])]


def move(page, slider, key: str, name: str, value: int, box: bool = True) -> None:
    """Press ``key`` on ``slider`` (focused); the address, the box (if it has one) and a card
    follow."""
    cards = page.locator(".lab-cards-pane").first
    before = cards.inner_text()
    slider.focus()
    page.keyboard.press(key)
    expect(page).to_have_url(re.compile(rf"[?&]{name}={value}(&|$)"))
    if box:
        expect(page.locator(f".lab-input-{name} input").first).to_have_value(
            re.compile(rf"^({value}|{value:,})$"))
    expect(cards).not_to_have_text(before)


def test_powers_of_two_sliders_move_their_inputs_in_place(lab_url, lab_page, lab_log,
                                                           console_errors):
    """Item 1: dragged to an end, a slider read 262144 while the box, the cards and the
    address stayed, and the server logged ``ValueError: … not in list``; the context slider
    offered 262,144, past the model's 131,072. Item 6: each edit added a history entry (Back
    then changed the address only). Item 9: experiment 9's tp ran 1-64 though 1, 2 and 4
    were measured."""
    moved = 0
    for slug in SLIDER_PAGES:
        exp, names = log2_inputs(slug)
        open_page(lab_page, page_url(lab_url, slug))
        entries = lab_page.evaluate("() => history.length")
        if slug == "measured":  # the measured values only, no box: tp 1, 2, 4; batch 1-512
            for name, ends in MEASURED_ENDS:
                slider = lab_page.locator(f".lab-input-{name} input[type=range]").first
                for key, value in ends:
                    move(lab_page, slider, key, name, value, box=False)
                    moved += 1
            lab_page.wait_for_function(f"() => ({TITLE})().endsWith('at tp 4')")
            expect(lab_page.locator(".lab-cards-pane").first).not_to_contain_text(
                "Not available")
            assert lab_page.evaluate("() => history.length") == entries, slug
            continue
        for name in names:
            slider = lab_page.locator(f".lab-log-{name} input[type=range]").first
            if not slider.is_visible():  # an input behind a switch, or another kind's
                continue
            options = powers_of_two(*slider_range(exp, name))
            ends = [("End", options[-1]), ("Home", options[0])]
            if getattr(exp, name) == options[-1]:
                ends.reverse()
            for key, value in ends:
                move(lab_page, slider, key, name, value)
                moved += 1
        if slug == "decode":
            assert slider_range(exp, "context")[1] == 131_072  # Llama 3.1 8B's maximum
        assert lab_page.evaluate("() => history.length") == entries, slug
    assert moved >= 10
    assert "not in list" not in lab_log()  # the session's server log is checked whole at its end
    assert console_errors == []


TITLE = ("() => { let t = ''; for (const d of Bokeh.documents) for (const m of "
         "d._all_models.values()) if (m.type === 'Title' && /^Measured/.test(m.text)) "
         "t = m.text; return t; }")
"""The title of experiment 9's chart (the newest title model: a replaced one may linger)."""


def card_value(page, label: str, timeout_s: float = 30.0) -> float:
    """The number on the card labelled ``label`` (its unit dropped), read once it shows one:
    the card can be between two renders (no number yet) at any read, so each read is parsed
    on its own until one holds a number."""
    card = page.locator(".lab-card").filter(
        has=page.locator(".label", has_text=re.compile(rf"^{re.escape(label)}$"))).first
    number = re.compile(r"^\s*-?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = card.locator(".value").text_content() or ""
        found = number.match(text)
        if found:
            return float(found.group(0).replace(",", ""))
        page.wait_for_timeout(100)
    raise AssertionError(f"the card {label!r} showed no number in {timeout_s:.0f} s: {text!r}")


def cell_number(text: str) -> float:
    return float(text.replace(",", "").strip())


def column(heads: list[str], name: str) -> int:
    """The index of the table's column for ``name`` (a dimension, shown as itself or as
    ``Label [name]``; a variable, by the start of its label)."""
    return next(i for i, h in enumerate(heads) if h == name or h.endswith(f"[{name}]")
                or h.lower().startswith(name))


def test_grid_rows_open_their_own_configuration(lab_url, lab_page, console_errors):
    """Item 4: from a 70B-on-H200 slice the top row linked to ``?view=decode&batch=256&
    context=128``, and page 1 opened on Llama 3.1 8B on an H100 at tp 1 in BF16; the
    sidebar's derivation link dropped tp, batch and context."""
    grid = page_url(lab_url, "grid", "&dataset=decode&model=llama-3.1-70b&gpu=h200&tp=4"
                    "&precision=fp8")
    open_page(lab_page, grid)
    # The slice in force, as the grid page wrote it into its address (a test server's grid
    # may lack a requested value): each fixed dimension must travel with the row's link.
    fixed = [m.group(0).lstrip("?&") for m in re.finditer(
        r"[?&](model|gpu|tp|precision)=[^&]*", lab_page.url)]
    assert len(fixed) == 4, lab_page.url
    table = lab_page.locator(".lab-grid-best table").first
    expect(table).to_be_visible()
    heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    row = table.locator("tbody tr").first  # every row of every grid: test_controls_unit.py
    cells = row.locator("td").all_inner_texts()
    values = {n: cells[column(heads, n)].replace(",", "") for n in ("batch", "context")}
    step_ms = cell_number(cells[column(heads, "ideal decode step")])
    row.locator("a.lab-grid-open").click()
    expect(lab_page).to_have_url(re.compile(r"view=decode&"))
    wait_idle(lab_page)
    for pair in (*fixed, f"batch={values['batch']}", f"context={values['context']}"):
        expect(lab_page).to_have_url(re.compile(rf"[?&]{re.escape(pair)}(&|$)"))
    assert abs(card_value(lab_page, "Ideal step time") - step_ms) <= 0.006 * step_ms
    derivation = lab_page.locator(".lab-nav a", has_text="Work through the decode derivation")
    expect(derivation.first).to_have_attribute("href", re.compile(
        rf"{next(p for p in fixed if p.startswith('tp='))}&batch={values['batch']}"
        rf"&context={values['context']}\b"))
    assert console_errors == []


def test_the_not_available_reason_follows_the_inputs(lab_url, lab_page, console_errors):
    """Item 5: the reason kept naming context 262,144 after the context, GPU and precision
    changed (page 1), and the Qwen vocabulary after another draft was chosen (page 10)."""
    reason = lab_page.locator(".lab-error").first
    open_page(lab_page, page_url(lab_url, "decode"))
    set_number(lab_page, "context", 262144)
    expect(reason).to_contain_text("262,144")
    set_number(lab_page, "context", 524288)
    expect(reason).to_contain_text("524,288")
    choose(lab_page, "gpu", "a100-sxm-80gb")
    choose(lab_page, "precision", "fp8")
    set_number(lab_page, "context", 8192)
    expect(reason).to_contain_text("no FP8 peak")
    expect(reason).not_to_contain_text("524,288")
    assert console_errors == []


def test_a_dropdown_set_by_a_link_follows_the_next_choice(lab_url, lab_page, console_errors):
    """Item 5 after a link: page 10 opened with a Qwen draft (page 1 with an FP8 A100) shows
    the link's reason; choosing another draft (GPU) in the list must put it in the address and
    replace the reason with cards, with no copy of the old reason left anywhere on the page:
    the collapsed "Show the calculation" kept it (and showed it for a moment when opened).
    Every dropdown of every page, set by a link and then chosen: ``test_controls_unit.py``."""
    cases = (("speculative", "&draft=qwen2.5-7b", "Qwen", "draft", ("llama-3.2-1b",
                                                                    "llama-3.2-3b")),
             ("decode", "&gpu=a100-sxm-80gb&precision=fp8", "no FP8 peak", "gpu",
              ("h100-sxm", "h200")))
    cards = lab_page.locator(".lab-cards-pane").first
    for view, link, reason, name, options in cases:
        open_page(lab_page, page_url(lab_url, view, link))
        expect(cards.locator(".lab-error")).to_contain_text(reason)
        for option in options:  # off the link's reason, then from one set of cards to another
            before = cards.inner_text()
            choose(lab_page, name, option)
            expect(lab_page).to_have_url(re.compile(rf"[?&]{name}={re.escape(option)}(&|$)"))
            expect(cards).not_to_have_text(before)
            expect(cards.locator(".lab-card").first).to_be_visible()
            expect(lab_page.locator(".lab-error", has_text=reason)).to_have_count(0)
    assert console_errors == []


def test_a_number_box_entered_by_the_keyboard_is_replaced_by_what_is_typed(lab_url, lab_page,
                                                                            console_errors):
    """A number box entered with Tab (here: from the number box before it) has its text selected,
    as a plain text box does, so what is typed replaces it: the box showed "2,000", entering
    it reformatted it to "2000" with the cursor at its end, and "1" typed then applied 20001.
    A click still places the cursor where it lands (nothing selected)."""
    open_page(lab_page, page_url(lab_url, "plan"))
    boxes = lab_page.locator(".MuiInputBase-root[inputmode=decimal] input")
    target = lab_page.locator(".lab-input-ttft_ms input").first.element_handle()
    at = next(i for i in range(boxes.count())
              if boxes.nth(i).evaluate("(b, t) => b === t", target))
    boxes.nth(at - 1).click()
    box = boxes.nth(at)
    for _ in range(8):  # past any control between the two boxes
        lab_page.keyboard.press("Tab")
        if box.evaluate("b => b.getRootNode().activeElement === b"):
            break
    expect(box).to_be_focused()
    lab_page.keyboard.type("1500")
    expect(box).to_have_value("1500")
    lab_page.keyboard.press("Enter")
    expect(lab_page).to_have_url(re.compile(r"[?&]ttft_ms=1500(&|$)"))
    box.click()  # a click: the cursor where it lands, nothing selected
    assert box.evaluate("b => b.selectionEnd - b.selectionStart") == 0
    assert console_errors == []
